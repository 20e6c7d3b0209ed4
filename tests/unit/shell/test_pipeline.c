/*
 * test_pipeline.c -- the per-message decision shared by explain and the
 * worker, on the default rules: policy blocks stop the router, the flag
 * keeps the router off, the seed's micro-confirmation, and the guard for
 * a mode.
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../../src/pipeline.h"

#define NOW	((int64_t)1800000000 * 1000)

static struct ruleset	rs;

static int
setup(void **state)
{
	struct diag	d;

	diag_init(&d);
	return ruleset_load(&rs, ".", &d);
}

static int
teardown(void **state)
{
	ruleset_free(&rs);
	return 0;
}

/* Decide text in state st with the router on or off. */
static void
decide(const char *text, const struct mode_state *st, bool route,
    struct pipeline_result *out)
{
	struct pipeline_input	in;

	memset(&in, 0, sizeof in);
	in.text = text;
	in.len = strlen(text);
	in.state = *st;
	in.route = route;
	in.now_ms = NOW;
	in.last_message_at_ms = NOW - 60000;
	pipeline_decide(&rs, &in, out);
}

static void
test_interest_goes_pending_with_prompt(void **state)
{
	struct mode_state	st;
	struct pipeline_result	r;

	mode_state_init(&st, NOW);
	decide("Quero saber de vagas!", &st, true, &r);
	assert_true(r.routed);
	assert_int_equal(r.route.decision, TRANS_PENDING);
	assert_int_equal(r.state.mode, MODE_DISCOVERY);
	assert_int_equal(r.state.pending, MODE_OFERTA);
	assert_non_null(strstr(r.constraints, "MICRO-CONFIRMAÇÃO"));
	decide("Sim, tenho CRM ativo", &r.state, true, &r);
	assert_int_equal(r.route.decision, TRANS_CONFIRM);
	assert_int_equal(r.state.mode, MODE_OFERTA);
	assert_int_equal(r.state.pending, -1);
	assert_null(strstr(r.constraints, "MICRO-CONFIRMAÇÃO"));
}

static void
test_flag_off_keeps_the_mode(void **state)
{
	struct mode_state	st;
	struct pipeline_result	r;

	mode_state_init(&st, NOW);
	decide("Quero saber de vagas!", &st, false, &r);
	assert_false(r.routed);
	assert_int_equal(r.state.mode, MODE_DISCOVERY);
	assert_int_equal(r.state.pending, -1);
}

static void
test_opt_out_blocks_before_the_router(void **state)
{
	struct mode_state	st;
	struct pipeline_result	r;

	mode_state_init(&st, NOW);
	decide("PARA DE ME MANDAR MENSAGEM", &st, true, &r);
	assert_int_equal(r.policy.decision, POLICY_BLOCK);
	assert_false(r.routed);
	assert_true(r.policy.actions & (1u << POLICY_ACT_RECORD_OPT_OUT));
}

static void
test_guard_per_mode(void **state)
{
	const char	*ids[4];

	assert_int_equal(pipeline_guard(&rs, MODE_DISCOVERY,
	    "Seu plantão está confirmado para sábado!", ids, 4) > 0, 1);
	assert_int_equal(pipeline_guard(&rs, MODE_DISCOVERY,
	    "Que legal! Vc já tem CRM ativo em SP?", ids, 4), 0);
	assert_int_equal(pipeline_guard(&rs, MODE_OFERTA,
	    "Seu plantão está confirmado para sábado!", ids, 4), 1);
	assert_string_equal(ids[0], "confirma_reserva");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interest_goes_pending_with_prompt),
		cmocka_unit_test(test_flag_off_keeps_the_mode),
		cmocka_unit_test(test_opt_out_blocks_before_the_router),
		cmocka_unit_test(test_guard_per_mode),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
