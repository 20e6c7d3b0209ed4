/*
 * test_turn.c -- whole turns through turn_decide on the default rules:
 * control, age, types, policy blocks and their actions, the router with
 * the flag on, off and in shadow, the reply choice, a bridge made mid-turn
 * and the guard's verdict. Links libcore.a only.
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ruleset_flat.h"

#define NOW	((int64_t)1800000000 * 1000)
#define MIN	((int64_t)60 * 1000)

static struct ruleset	rs;

static int
setup(void **state)
{
	return ruleset_flat_load(&rs);
}

static int
teardown(void **state)
{
	ruleset_flat_free(&rs);
	return 0;
}

/* A conversation in mode m, AI in control, flag f. */
static void
conv(struct turn_conv *c, enum mode m, enum turn_flag f)
{
	memset(c, 0, sizeof *c);
	mode_state_init(&c->st, NOW - 60 * MIN);
	c->st.mode = m;
	c->flag = f;
	c->last_inbound_at = NOW - MIN;
}

/* Decide texts (one message each, type text, sent now) on c. */
static void
decide(const struct turn_conv *c, struct turn_plan *p, size_t n, ...)
{
	struct turn_msg		m[8];
	struct turn_input	in;
	va_list			ap;
	size_t			i;

	va_start(ap, n);
	for (i = 0; i < n; i++) {
		memset(&m[i], 0, sizeof m[i]);
		m[i].id = (int64_t)i + 1;
		m[i].type = "text";
		m[i].text = va_arg(ap, const char *);
		m[i].at_ms = NOW;
	}
	va_end(ap);
	memset(&in, 0, sizeof in);
	in.conv = *c;
	in.msgs = m;
	in.nmsgs = n;
	in.now_ms = NOW;
	in.max_age_ms = 24 * 60 * MIN;
	assert_int_equal(turn_decide(&rs, &in, p), 0);
}

static void
test_interest_goes_pending_then_confirms(void **state)
{
	struct turn_conv	c;
	struct turn_plan	p;

	conv(&c, MODE_DISCOVERY, TURN_FLAG_ON);
	decide(&c, &p, 1, "Quero saber de vagas!");
	assert_int_equal(p.msgs[0].fate, FATE_ANSWER);
	assert_true(p.msgs[0].routed);
	assert_int_equal(p.msgs[0].route.r.decision, TRANS_PENDING);
	assert_int_equal(p.st.mode, MODE_DISCOVERY);
	assert_int_equal(p.st.pending, MODE_OFERTA);
	assert_true(p.set.state);
	assert_int_equal(p.reply, REPLY_LLM);
	assert_true(p.mark_read);
	assert_non_null(strstr(p.constraints, "MICRO-CONFIRMAÇÃO"));
	/* discovery's layer 1: no buscar_vagas offered */
	assert_false(p.tools_offered & (1u << TOOL_BUSCAR_VAGAS));
	/* the funnel counts interest when it is first shown */
	assert_int_equal(p.nfunnel, 1);
	assert_string_equal(p.funnel[0].status, "interesse_confirmado");
	c.st = p.st;
	turn_plan_free(&p);

	decide(&c, &p, 1, "Sim, tenho CRM ativo");
	assert_int_equal(p.msgs[0].route.r.decision, TRANS_CONFIRM);
	assert_int_equal(p.st.mode, MODE_OFERTA);
	assert_int_equal(p.st.pending, -1);
	assert_null(strstr(p.constraints, "MICRO-CONFIRMAÇÃO"));
	assert_true(p.tools_offered & (1u << TOOL_BUSCAR_VAGAS));
	assert_int_equal(p.nfunnel, 0);
	turn_plan_free(&p);
}

static void
test_flag_off_and_shadow_keep_the_mode(void **state)
{
	struct turn_conv	c;
	struct turn_plan	p;

	conv(&c, MODE_DISCOVERY, TURN_FLAG_OFF);
	decide(&c, &p, 1, "Quero saber de vagas!");
	assert_false(p.msgs[0].routed);
	assert_false(p.set.state);
	assert_int_equal(p.tools_offered, (1u << TOOL__COUNT) - 1);
	turn_plan_free(&p);

	c.flag = TURN_FLAG_SHADOW;
	decide(&c, &p, 1, "Quero saber de vagas!");
	assert_true(p.msgs[0].routed);		/* measured */
	assert_false(p.msgs[0].route.applied);	/* not applied */
	assert_false(p.set.state);		/* the real state stays */
	assert_true(p.set.shadow_state);	/* shadow's own moves */
	assert_int_equal(p.st.pending, MODE_OFERTA);
	assert_int_equal(p.real_mode, MODE_DISCOVERY);
	turn_plan_free(&p);

	/* the next message confirms in shadow's state: CONFIRM measured */
	c.has_shadow = true;
	c.shadow_st = c.st;
	c.shadow_st.pending = MODE_OFERTA;
	c.shadow_st.pending_at_ms = NOW - MIN;
	decide(&c, &p, 1, "sim, tenho CRM");
	assert_int_equal(p.msgs[0].route.r.decision, TRANS_CONFIRM);
	assert_int_equal(p.st.mode, MODE_OFERTA);
	assert_true(p.set.shadow_state);
	assert_false(p.set.state);
	assert_int_equal(p.nfunnel, 0);		/* nothing real recorded */
	assert_int_equal(p.tools_offered, (1u << TOOL__COUNT) - 1);
	turn_plan_free(&p);
}

static void
test_opt_out_confirmed_once_and_silent_after(void **state)
{
	struct turn_conv	c;
	struct turn_plan	p;

	conv(&c, MODE_OFERTA, TURN_FLAG_ON);
	decide(&c, &p, 2, "PARA DE ME MANDAR MENSAGEM", "sério, me tira");
	assert_int_equal(p.msgs[0].fate, FATE_BLOCKED);
	assert_false(p.msgs[0].routed);
	assert_string_equal(p.msgs[0].policy.rule, "opt_out_request");
	assert_true(p.set.opted_out);
	assert_true(p.set.opt_out_confirmed);
	assert_int_equal(p.reply, REPLY_CANNED);
	assert_string_equal(p.canned, "opt_out_confirmation");
	assert_int_equal(p.reply_to, 1);	/* the opt-out is answered */
	turn_plan_free(&p);

	c.opted_out_at = NOW - MIN;
	c.opt_out_confirmed = true;
	decide(&c, &p, 1, "oi, tem vaga?");
	assert_int_equal(p.msgs[0].fate, FATE_BLOCKED);
	assert_string_equal(p.msgs[0].policy.rule, "opted_out");
	assert_int_equal(p.reply, REPLY_NONE);
	assert_false(p.mark_read);
	turn_plan_free(&p);
}

/* "sim" after Julia asked whether to stop is an opt-out, through the
 * whole decision: the policy blocks, the canned confirmation answers. */
static void
test_yes_to_stop_is_an_opt_out(void **state)
{
	struct turn_conv	c;
	struct turn_plan	p;
	struct turn_msg		m;
	struct turn_input	in;

	conv(&c, MODE_OFERTA, TURN_FLAG_ON);
	memset(&m, 0, sizeof m);
	m.id = 1;
	m.type = "text";
	m.text = "sim";
	m.at_ms = NOW;
	memset(&in, 0, sizeof in);
	in.conv = c;
	in.msgs = &m;
	in.nmsgs = 1;
	in.now_ms = NOW;
	in.max_age_ms = 24 * 60 * MIN;
	in.julia_before = "Entendi, doutor. Quer que eu pare de te mandar "
	    "vagas?";
	assert_int_equal(turn_decide(&rs, &in, &p), 0);
	assert_int_equal(p.msgs[0].fate, FATE_BLOCKED);
	assert_string_equal(p.msgs[0].policy.rule, "opt_out_request");
	assert_true(p.set.opted_out);
	assert_string_equal(p.canned, "opt_out_confirmation");
	turn_plan_free(&p);

	/* The same "sim" after an offer is a yes, not an opt-out. */
	in.julia_before = "Posso passar seu contato pro coordenador?";
	assert_int_equal(turn_decide(&rs, &in, &p), 0);
	assert_false(p.set.opted_out);
	assert_int_not_equal(p.msgs[0].fate, FATE_BLOCKED);
	turn_plan_free(&p);
}

static void
test_human_control_is_the_policy_rule(void **state)
{
	struct turn_conv	c;
	struct turn_plan	p;

	conv(&c, MODE_OFERTA, TURN_FLAG_ON);
	c.human_control = true;
	decide(&c, &p, 1, "Quero saber de vagas!");
	assert_int_equal(p.msgs[0].fate, FATE_HUMAN);
	assert_string_equal(p.msgs[0].policy.rule, "human_control");
	assert_false(p.msgs[0].decided);
	assert_int_equal(p.reply, REPLY_NONE);
	assert_false(p.mark_read);
	turn_plan_free(&p);
}

static void
test_serious_objection_hands_off(void **state)
{
	struct turn_conv	c;
	struct turn_plan	p;

	conv(&c, MODE_OFERTA, TURN_FLAG_ON);
	decide(&c, &p, 2, "vou denunciar vocês no CRM, isso é assédio",
	    "tem vaga amanhã?");
	assert_int_equal(p.msgs[0].fate, FATE_BLOCKED);
	assert_string_equal(p.set.control_by, "policy");
	assert_true(p.set.serious_objection);
	/* the hand-off of the first message holds the second */
	assert_int_equal(p.msgs[1].fate, FATE_HUMAN);
	assert_int_equal(p.reply, REPLY_NONE);
	turn_plan_free(&p);
}

static void
test_old_and_media_messages(void **state)
{
	struct turn_conv	c;
	struct turn_plan	p;
	struct turn_msg		m[3];
	struct turn_input	in;

	conv(&c, MODE_DISCOVERY, TURN_FLAG_ON);
	memset(m, 0, sizeof m);
	m[0].id = 1; m[0].type = "text"; m[0].text = "oi";
	m[0].at_ms = NOW - 25 * 60 * MIN;
	m[1].id = 2; m[1].type = "audio"; m[1].at_ms = NOW;
	m[2].id = 3; m[2].type = "reaction"; m[2].at_ms = NOW;
	memset(&in, 0, sizeof in);
	in.conv = c;
	in.msgs = m;
	in.nmsgs = 3;
	in.now_ms = NOW;
	in.max_age_ms = 24 * 60 * MIN;
	assert_int_equal(turn_decide(&rs, &in, &p), 0);
	assert_int_equal(p.msgs[0].fate, FATE_TOO_OLD);
	assert_false(turn_in_transcript(&p.msgs[0]));
	assert_int_equal(p.msgs[1].fate, FATE_ASK_TEXT);
	assert_true(turn_in_transcript(&p.msgs[1]));
	assert_int_equal(p.msgs[2].fate, FATE_IGNORED);
	assert_int_equal(p.reply, REPLY_CANNED);
	assert_string_equal(p.canned, "ask_text");
	assert_int_equal(p.reply_to, 2);
	turn_plan_free(&p);
}

static void
test_outcome_reported_in_followup(void **state)
{
	struct turn_conv	c;
	struct turn_plan	p;

	conv(&c, MODE_FOLLOWUP, TURN_FLAG_ON);
	decide(&c, &p, 1, "deu certo, fechei o plantão com ele!");
	assert_int_equal(p.msgs[0].intent.intent, INTENT_DESFECHO_FECHOU);
	assert_int_equal(p.nfunnel, 1);
	assert_string_equal(p.funnel[0].status, "fechado_com_responsavel");
	turn_plan_free(&p);
}

/* A bridge made mid-turn moves oferta to followup; the reply, written
 * under oferta's prompt, is still guarded against oferta's claims. */
static void
test_bridge_guards_the_prompted_mode(void **state)
{
	const char			*reply = "Passei seu contato pro Dr. "
	    "Paulo! O plantão paga R$ 1.500 e consigo negociar um valor "
	    "maior pra você.";
	struct turn_conv		 c;
	struct turn_plan		 p;
	struct turn_guard_result	 g;
	const struct turn_route		*tr;

	conv(&c, MODE_OFERTA, TURN_FLAG_ON);
	decide(&c, &p, 1, "pode passar meu contato pro responsável");
	assert_int_equal(p.reply, REPLY_LLM);
	assert_int_equal(p.prompt_mode, MODE_OFERTA);
	/* as the shell does while the LLM is awaited */
	turn_plan_forget(&p);
	tr = turn_event(&rs, &p, EVENT_BRIDGE_MADE);
	assert_non_null(tr);
	assert_true(tr->applied);
	assert_int_equal(p.st.mode, MODE_FOLLOWUP);
	assert_true(p.set.state);
	turn_guard(&rs, &p, reply, 0, &g);
	assert_true(g.checked);
	assert_int_equal(g.verdict, VERDICT_REGENERATE);
	assert_false(g.send);
	assert_string_equal(g.ids[0], "negocia_valor");
	/* followup's claims alone would have let it through */
	assert_int_equal(turn_claims_made(&rs, 1u << MODE_FOLLOWUP, reply,
	    g.ids, TURN_VIOLATIONS_MAX), 0);
	turn_guard(&rs, &p, reply, 2, &g);
	assert_int_equal(g.verdict, VERDICT_FALLBACK);
	turn_plan_free(&p);
}

static void
test_guard_shadow_records_what_enforcement_would_do(void **state)
{
	struct turn_conv		c;
	struct turn_plan		p;
	struct turn_guard_result	g;

	conv(&c, MODE_OFERTA, TURN_FLAG_SHADOW);
	decide(&c, &p, 1, "tem vaga?");
	turn_guard(&rs, &p, "Seu plantão está confirmado para sábado!", 0,
	    &g);
	assert_true(g.checked);
	assert_false(g.enforced);
	assert_true(g.send);
	assert_int_equal(g.verdict, VERDICT_REGENERATE);
	assert_string_equal(g.ids[0], "confirma_reserva");
	turn_guard(&rs, &p, "Que legal! Vc já tem CRM ativo em SP?", 0, &g);
	assert_int_equal(g.n, 0);
	assert_int_equal(g.verdict, VERDICT_PASS);
	turn_plan_free(&p);

	c.flag = TURN_FLAG_OFF;
	decide(&c, &p, 1, "tem vaga?");
	assert_null(turn_event(&rs, &p, EVENT_BRIDGE_MADE));
	turn_guard(&rs, &p, "Seu plantão está confirmado!", 0, &g);
	assert_false(g.checked);
	assert_true(g.send);
	turn_plan_free(&p);
}

static void
test_llm_failure(void **state)
{
	assert_string_equal(turn_llm_failed(0, false), "fallback");
	assert_null(turn_llm_failed(0, true));
	assert_string_equal(turn_llm_failed(1, true), "guard_fallback");
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interest_goes_pending_then_confirms),
		cmocka_unit_test(test_flag_off_and_shadow_keep_the_mode),
		cmocka_unit_test(test_opt_out_confirmed_once_and_silent_after),
		cmocka_unit_test(test_yes_to_stop_is_an_opt_out),
		cmocka_unit_test(test_human_control_is_the_policy_rule),
		cmocka_unit_test(test_serious_objection_hands_off),
		cmocka_unit_test(test_old_and_media_messages),
		cmocka_unit_test(test_outcome_reported_in_followup),
		cmocka_unit_test(test_bridge_guards_the_prompted_mode),
		cmocka_unit_test(test_guard_shadow_records_what_enforcement_would_do),
		cmocka_unit_test(test_llm_failure),
	};

	rules_flat_init(argv[0]);
	return cmocka_run_group_tests(tests, setup, teardown);
}
