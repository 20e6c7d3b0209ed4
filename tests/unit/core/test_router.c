/*
 * test_router.c -- the transition matrix and validator with the default
 * mode/transitions.json: the seed's cases, expiry, events, inactivity,
 * manual moves, objections, the loader's diagnostics, determinism.
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "rules_flat.h"
#include "../../../mode/intent.h"
#include "../../../mode/router.h"

#define T0	((int64_t)1700000000000)
#define MIN	((int64_t)60 * 1000)
#define SEC	((int64_t)1000)
#define DAY	(24 * 60 * MIN)

static struct matrix	*mx;
static struct lexicon	*lex;	/* loaded by the first route_text */

static int
setup(void **state)
{
	struct flat	f;
	struct diag	d;

	diag_init(&d);
	if (rules_flat_load("mode/transitions.json", &f, &d) != 0)
		return -1;
	mx = matrix_load(&f, &d);
	flat_free(&f);
	return mx == NULL || d.n > 0 ? -1 : 0;
}

static int
teardown(void **state)
{
	matrix_free(mx);
	lexicon_free(lex);
	return 0;
}

/* An input for a message with an intent at time now, nothing else. */
static struct router_input
msg(int intent, int64_t now)
{
	struct router_input	in;

	memset(&in, 0, sizeof in);
	in.intent = intent;
	in.manual_target = -1;
	in.now_ms = now;
	in.last_message_at_ms = now - MIN;
	return in;
}

/* A state in mode m, with pending p (or -1) set at pending_at. */
static struct mode_state
state_in(enum mode m, int p, int64_t pending_at)
{
	struct mode_state	st;

	mode_state_init(&st, T0 - DAY);
	st.mode = m;
	st.pending = p;
	st.pending_at_ms = p >= 0 ? pending_at : 0;
	return st;
}

static void
test_interest_in_discovery_is_pending(void **state)
{
	struct mode_state	st = state_in(MODE_DISCOVERY, -1, 0);
	struct router_input	in = msg(INTENT_INTERESSE_VAGA, T0);
	struct router_result	r;

	router_route(mx, &st, &in, &r);
	assert_int_equal(r.decision, TRANS_PENDING);
	assert_int_equal(r.state.mode, MODE_DISCOVERY);
	assert_int_equal(r.state.pending, MODE_OFERTA);
	assert_true(r.state.pending_at_ms == T0);
	assert_int_equal(r.proposal, MODE_OFERTA);
	assert_string_equal(r.reason,
	    "matrix:discovery->oferta:INTERESSE_VAGA:confirm");
	assert_string_equal(r.state.reason, r.reason);
	assert_false(r.expired);
}

static void
test_confirmation_confirms(void **state)
{
	struct mode_state	st = state_in(MODE_DISCOVERY, MODE_OFERTA, T0);
	struct router_input	in = msg(INTENT_CONFIRMACAO, T0 + 2 * MIN);
	struct router_result	r;

	router_route(mx, &st, &in, &r);
	assert_int_equal(r.decision, TRANS_CONFIRM);
	assert_int_equal(r.state.mode, MODE_OFERTA);
	assert_int_equal(r.state.pending, -1);
	assert_true(r.state.pending_at_ms == 0);
	assert_string_equal(r.reason, "pending:confirmed_by_CONFIRMACAO");

	/* A neutral answer to the qualification question confirms too. */
	in = msg(INTENT_NEUTRO, T0 + 2 * MIN);
	router_route(mx, &st, &in, &r);
	assert_int_equal(r.decision, TRANS_CONFIRM);
	assert_int_equal(r.state.mode, MODE_OFERTA);
	assert_string_equal(r.reason, "pending:confirmed_by_neutral_answer");
}

static void
test_negative_reply_cancels(void **state)
{
	static const int	cancel[] = { INTENT_RECUSA, INTENT_OBJECAO,
	    INTENT_OPT_OUT };
	struct mode_state	st = state_in(MODE_FOLLOWUP, MODE_OFERTA, T0);
	struct router_input	in;
	struct router_result	r;
	size_t			i;

	for (i = 0; i < 3; i++) {
		in = msg(cancel[i], T0 + MIN);
		router_route(mx, &st, &in, &r);
		assert_int_equal(r.decision, TRANS_CANCEL);
		assert_int_equal(r.state.mode, MODE_FOLLOWUP);
		assert_int_equal(r.state.pending, -1);
	}
	assert_string_equal(r.reason, "pending:cancelled_by_OPT_OUT");
}

static void
test_other_reply_keeps_pending(void **state)
{
	struct mode_state	st = state_in(MODE_DISCOVERY, MODE_OFERTA, T0);
	struct router_input	in = msg(INTENT_SAUDACAO, T0 + MIN);
	struct router_result	r;

	router_route(mx, &st, &in, &r);
	assert_int_equal(r.decision, TRANS_NONE);
	assert_int_equal(r.state.pending, MODE_OFERTA);
	assert_true(r.state.pending_at_ms == T0);
	assert_string_equal(r.state.reason, st.reason);
}

static void
test_expiry_at_thirty_minutes(void **state)
{
	struct mode_state	st = state_in(MODE_DISCOVERY, MODE_OFERTA, T0);
	struct router_input	in;
	struct router_result	r;

	in = msg(INTENT_CONFIRMACAO, T0 + 29 * MIN + 59 * SEC);
	router_route(mx, &st, &in, &r);
	assert_false(r.expired);
	assert_int_equal(r.decision, TRANS_CONFIRM);
	assert_int_equal(r.state.mode, MODE_OFERTA);

	in = msg(INTENT_CONFIRMACAO, T0 + 30 * MIN);
	router_route(mx, &st, &in, &r);
	assert_true(r.expired);
	assert_int_equal(r.decision, TRANS_NONE);
	assert_int_equal(r.state.mode, MODE_DISCOVERY);
	assert_int_equal(r.state.pending, -1);
	assert_string_equal(r.reason, "pending:expired;no_transition");
	assert_string_equal(r.state.reason, "pending:expired");

	/* Routed afresh: renewed interest opens a new pending. */
	in = msg(INTENT_INTERESSE_VAGA, T0 + 31 * MIN);
	router_route(mx, &st, &in, &r);
	assert_true(r.expired);
	assert_int_equal(r.decision, TRANS_PENDING);
	assert_true(r.state.pending_at_ms == T0 + 31 * MIN);
}

static void
test_seed_three_messages(void **state)
{
	struct mode_state	st = state_in(MODE_DISCOVERY, -1, 0);
	struct router_input	in;
	struct router_result	r;

	in = msg(INTENT_INTERESSE_VAGA, T0);	/* "Quero saber de vagas!" */
	router_route(mx, &st, &in, &r);
	assert_int_equal(r.decision, TRANS_PENDING);
	st = r.state;
	in = msg(INTENT_CONFIRMACAO, T0 + MIN); /* "Sim, tenho CRM ativo" */
	router_route(mx, &st, &in, &r);
	assert_int_equal(r.decision, TRANS_CONFIRM);
	assert_int_equal(r.state.mode, MODE_OFERTA);
	st = r.state;
	in = msg(-1, T0 + 2 * MIN);		/* the bridge is made */
	in.events = ROUTER_EV(EVENT_BRIDGE_MADE);
	router_route(mx, &st, &in, &r);
	assert_int_equal(r.decision, TRANS_APPLY);
	assert_int_equal(r.state.mode, MODE_FOLLOWUP);
	assert_string_equal(r.reason, "event:bridge_made");
	assert_string_equal(r.state.source, "inbound");
}

static void
test_event_not_in_matrix_rejected(void **state)
{
	struct mode_state	st = state_in(MODE_DISCOVERY, -1, 0);
	struct router_input	in = msg(-1, T0);
	struct router_result	r;

	in.events = ROUTER_EV(EVENT_BRIDGE_MADE);
	router_route(mx, &st, &in, &r);
	assert_int_equal(r.decision, TRANS_REJECT);
	assert_int_equal(r.state.mode, MODE_DISCOVERY);
	assert_string_equal(r.reason, "reject:event:bridge_made:from_discovery");
}

static void
test_inactivity_then_any_reply(void **state)
{
	struct mode_state	st = state_in(MODE_OFERTA, -1, 0);
	struct router_input	in = msg(INTENT_SAUDACAO, T0);
	struct router_result	r;

	in.last_message_at_ms = T0 - 35 * DAY;
	router_route(mx, &st, &in, &r);
	assert_int_equal(r.decision, TRANS_APPLY);
	assert_int_equal(r.state.mode, MODE_REATIVACAO);
	assert_string_equal(r.reason, "inactivity:35d");
	/* 29 days is not inactive: the greeting stays in oferta. */
	in.last_message_at_ms = T0 - 29 * DAY;
	router_route(mx, &st, &in, &r);
	assert_int_equal(r.decision, TRANS_NONE);
	/* In reativacao, any reply goes back to discovery. */
	st = state_in(MODE_REATIVACAO, -1, 0);
	in = msg(INTENT_NEUTRO, T0);
	router_route(mx, &st, &in, &r);
	assert_int_equal(r.decision, TRANS_APPLY);
	assert_int_equal(r.state.mode, MODE_DISCOVERY);
	assert_string_equal(r.reason, "matrix:reativacao->discovery:any:auto");
}

static void
test_campaign_and_manual(void **state)
{
	struct mode_state	st = state_in(MODE_FOLLOWUP, MODE_OFERTA, T0);
	struct router_input	in = msg(-1, T0 + MIN);
	struct router_result	r;

	in.events = ROUTER_EV(EVENT_CAMPAIGN);
	in.campaign_id = "c42";
	router_route(mx, &st, &in, &r);
	assert_int_equal(r.decision, TRANS_APPLY);
	assert_int_equal(r.state.mode, MODE_REATIVACAO);
	assert_int_equal(r.state.pending, -1);
	assert_string_equal(r.state.source, "campaign:c42");

	st = state_in(MODE_DISCOVERY, -1, 0);
	in = msg(-1, T0);
	in.manual_target = MODE_FOLLOWUP;
	router_route(mx, &st, &in, &r);
	assert_int_equal(r.decision, TRANS_REJECT);
	assert_int_equal(r.state.mode, MODE_DISCOVERY);
	assert_string_equal(r.reason, "reject:manual:discovery->followup");
	in.manual_target = MODE_OFERTA;
	router_route(mx, &st, &in, &r);
	assert_int_equal(r.decision, TRANS_APPLY);
	assert_int_equal(r.state.mode, MODE_OFERTA);
	assert_string_equal(r.state.source, "manual");
}

static void
test_objection_revisited_then_offer(void **state)
{
	struct mode_state	st = state_in(MODE_OFERTA, -1, 0);
	struct router_input	in = msg(INTENT_OBJECAO, T0);
	struct router_result	r;

	router_route(mx, &st, &in, &r);
	assert_int_equal(r.decision, TRANS_APPLY);
	assert_int_equal(r.state.mode, MODE_DISCOVERY);
	st = r.state;
	in = msg(INTENT_INTERESSE_VAGA, T0 + MIN);
	in.objection_open = true;
	router_route(mx, &st, &in, &r);
	assert_int_equal(r.decision, TRANS_PENDING);
	assert_int_equal(r.state.pending, MODE_OFERTA);
	assert_string_equal(r.reason,
	    "matrix:discovery->oferta:INTERESSE_VAGA:revisit_objection");
	st = r.state;
	in = msg(INTENT_CONFIRMACAO, T0 + 2 * MIN);
	in.objection_open = true;
	router_route(mx, &st, &in, &r);
	assert_int_equal(r.decision, TRANS_CONFIRM);
	assert_int_equal(r.state.mode, MODE_OFERTA);
}

static void
test_booking_confirmed_counts_as_outcome(void **state)
{
	struct mode_state	st = state_in(MODE_OFERTA, -1, 0);
	struct router_input	in = msg(INTENT_SAUDACAO, T0);
	struct router_result	r;

	in.reserva_confirmada = true;
	router_route(mx, &st, &in, &r);
	assert_int_equal(r.decision, TRANS_APPLY);
	assert_int_equal(r.state.mode, MODE_FOLLOWUP);
	assert_string_equal(r.reason, "event:outcome_reported");
}

static void
test_deterministic(void **state)
{
	struct mode_state	st = state_in(MODE_DISCOVERY, MODE_OFERTA, T0);
	struct router_result	a, b;
	struct router_input	in;
	int			i;

	for (i = 0; i < INTENT__COUNT; i++) {
		in = msg(i, T0 + 30 * MIN);
		router_route(mx, &st, &in, &a);
		router_route(mx, &st, &in, &b);
		assert_memory_equal(&a, &b, sizeof a);
	}
}

/* Route a message text through the default lexicon. */
static void
route_text(const struct mode_state *st, const char *text, int64_t now,
    struct router_result *r)
{
	struct intent_result	 ir;
	struct router_input	 in;
	struct flat		 f;
	struct diag		 d;

	if (lex == NULL) {
		diag_init(&d);
		assert_int_equal(rules_flat_load("mode/intents.json", &f, &d),
		    0);
		assert_non_null(lex = lexicon_load(&f, &d));
		flat_free(&f);
	}
	intent_detect(lex, text, strlen(text), &ir);
	in = msg((int)ir.intent, now);
	router_route(mx, st, &in, r);
}

static void
test_seed_messages_as_text(void **state)
{
	struct mode_state	st = state_in(MODE_DISCOVERY, -1, 0);
	struct router_result	r;

	route_text(&st, "Quero saber de vagas!", T0, &r);
	assert_int_equal(r.decision, TRANS_PENDING);
	assert_int_equal(r.state.mode, MODE_DISCOVERY);
	assert_int_equal(r.state.pending, MODE_OFERTA);
	st = r.state;
	route_text(&st, "Sim, tenho CRM ativo", T0 + MIN, &r);
	assert_int_equal(r.decision, TRANS_CONFIRM);
	assert_int_equal(r.state.mode, MODE_OFERTA);
	assert_int_equal(r.state.pending, -1);
	route_text(&st, "não, obrigado", T0 + MIN, &r);
	assert_int_equal(r.decision, TRANS_CANCEL);
	assert_int_equal(r.state.mode, MODE_DISCOVERY);
}

static void
test_loader_reports_everything(void **state)
{
	static const char text[] =
	    "pending_timeout_minutes\tn0\n"
	    "confirm_intents.0\tsCONFIRMACAO\n"
	    "cancel_intents.0\tsNAO\n"
	    "transitions.0.from\tsdiscovry\n"
	    "transitions.0.to\tsoferta\n"
	    "transitions.0.trigger\tsINTERESSE_VAGA\n"
	    "transitions.0.how\tsconfirm\n"
	    "transitions.1.from\tsoferta\n"
	    "transitions.1.to\tsoferta\n"
	    "transitions.1.trigger\tsRECUSA\n"
	    "transitions.1.how\tsauto\n"
	    "transitions.2.from\tsoferta\n"
	    "transitions.2.to\tsdiscovery\n"
	    "transitions.2.trigger\tsINTERSSE\n"
	    "transitions.2.how\tsmaybe\n"
	    "transitions.3.from\tsoferta\n"
	    "transitions.3.to\tsdiscovery\n"
	    "transitions.3.trigger\tsRECUSA\n"
	    "transitions.3.how\tsauto\n"
	    "transitions.4.from\tsoferta\n"
	    "transitions.4.to\tsfollowup\n"
	    "transitions.4.trigger\tsRECUSA\n"
	    "transitions.4.how\tsauto\n";
	static const char *want[] = {
	    "mode/transitions.json: pending_timeout_minutes: must be a whole "
	    "number from 1 to 1440",
	    "mode/transitions.json: cancel_intents.0: unknown intent \"NAO\"",
	    "mode/transitions.json: transitions.0.from: unknown mode "
	    "\"discovry\"",
	    "mode/transitions.json: transitions.1: transition from oferta to "
	    "itself",
	    "mode/transitions.json: transitions.2.trigger: unknown trigger "
	    "\"INTERSSE\" (an intent, an event or any)",
	    "mode/transitions.json: transitions.2.how: unknown how \"maybe\" "
	    "(auto | confirm)",
	    "mode/transitions.json: transitions.4: duplicate of an earlier "
	    "transition out of oferta on the same trigger",
	};
	struct flat	 f;
	struct diag	 d;
	size_t		 i;

	diag_init(&d);
	rules_flat_str("mode/transitions.json", text, &f, &d);
	matrix_free(matrix_load(&f, &d));
	for (i = 0; i < d.n && i < 7; i++)
		assert_string_equal(d.msg[i], want[i]);
	assert_int_equal(d.n, 7);
	flat_free(&f);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interest_in_discovery_is_pending),
		cmocka_unit_test(test_confirmation_confirms),
		cmocka_unit_test(test_negative_reply_cancels),
		cmocka_unit_test(test_other_reply_keeps_pending),
		cmocka_unit_test(test_expiry_at_thirty_minutes),
		cmocka_unit_test(test_seed_three_messages),
		cmocka_unit_test(test_event_not_in_matrix_rejected),
		cmocka_unit_test(test_inactivity_then_any_reply),
		cmocka_unit_test(test_campaign_and_manual),
		cmocka_unit_test(test_objection_revisited_then_offer),
		cmocka_unit_test(test_booking_confirmed_counts_as_outcome),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_seed_messages_as_text),
		cmocka_unit_test(test_loader_reports_everything),
	};

	rules_flat_init(argv[0]);
	return cmocka_run_group_tests(tests, setup, teardown);
}
