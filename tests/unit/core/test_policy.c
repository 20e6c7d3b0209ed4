/*
 * test_policy.c -- the policy engine with the default policy/policy.json,
 * and its loader's diagnostics.
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "rules_flat.h"
#include "../../../policy/policy.h"

#define NOW	((int64_t)1700000000000)

static struct policy	*pol;

static int
setup(void **state)
{
	struct flat	f;
	struct diag	d;

	diag_init(&d);
	if (rules_flat_load("policy/policy.json", &f, &d) != 0)
		return -1;
	pol = policy_load(&f, &d);
	flat_free(&f);
	return pol == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	policy_free(pol);
	return 0;
}

/* Evaluate an intent against a doctor with no recorded state, AI control. */
static void
eval(int intent, struct policy_input *in, struct policy_result *out)
{
	in->intent = intent;
	in->now_ms = NOW;
	policy_eval(pol, in, out);
}

static void
test_plain_message_allowed(void **state)
{
	struct policy_input	in = { 0 };
	struct policy_result	out;

	eval(INTENT_INTERESSE_VAGA, &in, &out);
	assert_int_equal(out.decision, POLICY_ALLOW);
	assert_string_equal(out.rule, "default");
	assert_string_equal(out.constraints, "");
	assert_int_equal(out.actions, 0);
}

static void
test_opt_out_blocks_records_and_confirms(void **state)
{
	struct policy_input	in = { 0 };
	struct policy_result	out;

	eval(INTENT_OPT_OUT, &in, &out);
	assert_int_equal(out.decision, POLICY_BLOCK);
	assert_string_equal(out.rule, "opt_out_request");
	assert_int_equal(out.actions, (1u << POLICY_ACT_RECORD_OPT_OUT) |
	    (1u << POLICY_ACT_SEND_CONFIRMATION_ONCE));
	/* Once recorded, any later message is blocked with no new action. */
	in.opted_out_at = NOW - 1000;
	eval(INTENT_INTERESSE_VAGA, &in, &out);
	assert_int_equal(out.decision, POLICY_BLOCK);
	assert_string_equal(out.rule, "opted_out");
	assert_int_equal(out.actions, 0);
}

static void
test_human_control_first(void **state)
{
	struct policy_input	in = { 0 };
	struct policy_result	out;

	in.human_control = true;
	eval(INTENT_OPT_OUT, &in, &out);
	assert_int_equal(out.decision, POLICY_BLOCK);
	assert_string_equal(out.rule, "human_control");
}

static void
test_cooling_off_until_its_end(void **state)
{
	struct policy_input	in = { 0 };
	struct policy_result	out;

	/* answered, but no shift offered unless asked */
	in.cooling_off_until = NOW + 1;
	eval(INTENT_SAUDACAO, &in, &out);
	assert_int_equal(out.decision, POLICY_ALLOW);
	assert_string_equal(out.rule, "cooling_off");
	assert_non_null(strstr(out.constraints, "NÃO ofereça plantões"));
	in.cooling_off_until = NOW;
	eval(INTENT_SAUDACAO, &in, &out);
	assert_int_equal(out.decision, POLICY_ALLOW);
	assert_string_equal(out.rule, "default");
}

static void
test_refusal_cools_off_in_oferta_only(void **state)
{
	struct policy_input	in = { 0 };
	struct policy_result	out;

	in.mode = MODE_OFERTA;
	eval(INTENT_RECUSA, &in, &out);
	assert_int_equal(out.decision, POLICY_ALLOW);
	assert_true(out.actions & (1u << POLICY_ACT_START_COOLING_OFF));
	assert_int_equal(out.cooling_off_days, 7);
	in.mode = MODE_REATIVACAO;
	eval(INTENT_RECUSA, &in, &out);
	assert_int_equal(out.cooling_off_days, 7);
	in.mode = MODE_DISCOVERY;
	eval(INTENT_RECUSA, &in, &out);
	assert_false(out.actions & (1u << POLICY_ACT_START_COOLING_OFF));
	assert_string_equal(out.rule, "refusal");
}

static void
test_human_request_and_opt_in(void **state)
{
	struct policy_input	in = { 0 };
	struct policy_result	out;

	eval(INTENT_PEDIDO_HUMANO, &in, &out);
	assert_int_equal(out.decision, POLICY_BLOCK);
	assert_int_equal(out.actions, (1u << POLICY_ACT_HANDOFF_HUMAN) |
	    (1u << POLICY_ACT_SEND_HANDOFF_MESSAGE));
	in.opted_out_at = NOW - 1;
	eval(INTENT_OPT_IN, &in, &out);
	assert_string_equal(out.rule, "opt_in");
	assert_int_equal(out.actions, (1u << POLICY_ACT_CLEAR_OPT_OUT) |
	    (1u << POLICY_ACT_SEND_OPT_IN_CONFIRMATION));
	eval(INTENT_INTERESSE_VAGA, &in, &out);
	assert_string_equal(out.rule, "opted_out");
}

static void
test_serious_objection(void **state)
{
	struct policy_input	in = { 0 };
	struct policy_result	out;

	eval(INTENT_OBJECAO_GRAVE, &in, &out);
	assert_int_equal(out.decision, POLICY_BLOCK);
	assert_string_equal(out.rule, "serious_objection");
	assert_int_equal(out.actions, (1u << POLICY_ACT_HANDOFF_HUMAN) |
	    (1u << POLICY_ACT_RECORD_SERIOUS_OBJECTION) |
	    (1u << POLICY_ACT_START_COOLING_OFF));
	assert_int_equal(out.cooling_off_days, 30);
	in.serious_objection_open = true;
	eval(INTENT_CONFIRMACAO, &in, &out);
	assert_int_equal(out.decision, POLICY_BLOCK);
	assert_string_equal(out.rule, "serious_objection_open");
}

static void
test_soft_objection_constrains(void **state)
{
	struct policy_input	in = { 0 };
	struct policy_result	out;

	eval(INTENT_OBJECAO, &in, &out);
	assert_int_equal(out.decision, POLICY_ALLOW);
	assert_string_equal(out.rule, "soft_objection");
	assert_non_null(strstr(out.constraints, "Não insista"));
	eval(INTENT_RECUSA, &in, &out);
	assert_string_equal(out.rule, "refusal");
	assert_non_null(strstr(out.constraints, "Respeite"));
}

static void
test_loader_reports_everything(void **state)
{
	static const char text[] =
	    "rules.0.id\tsa\n"
	    "rules.0.when.intent\tsINTERSSE\n"
	    "rules.0.decision\tsBLOCK\n"
	    "rules.1.when.control\tshuman\n"
	    "rules.1.decision\tsDENY\n"
	    "rules.2.id\tsc\n"
	    "rules.2.when.mood\tsbad\n"
	    "rules.2.decision\tsALLOW\n"
	    "rules.2.actions.0\tsshout\n";
	struct flat	 f;
	struct diag	 d;

	diag_init(&d);
	rules_flat_str("policy/policy.json", text, &f, &d);
	assert_null(policy_load(&f, &d));
	assert_int_equal(d.n, 5);
	assert_string_equal(d.msg[0], "policy/policy.json: rules.0.when.intent: "
	    "unknown intent \"INTERSSE\"");
	assert_string_equal(d.msg[1], "policy/policy.json: rules.1.id: missing");
	assert_string_equal(d.msg[2], "policy/policy.json: rules.1.decision: "
	    "unknown decision \"DENY\" (ALLOW | BLOCK)");
	assert_string_equal(d.msg[3], "policy/policy.json: rules.2.when: "
	    "unknown condition \"mood\"");
	assert_string_equal(d.msg[4], "policy/policy.json: rules.2.actions.0: "
	    "unknown action \"shout\"");
	flat_free(&f);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_message_allowed),
		cmocka_unit_test(test_opt_out_blocks_records_and_confirms),
		cmocka_unit_test(test_human_control_first),
		cmocka_unit_test(test_cooling_off_until_its_end),
		cmocka_unit_test(test_serious_objection),
		cmocka_unit_test(test_refusal_cools_off_in_oferta_only),
		cmocka_unit_test(test_human_request_and_opt_in),
		cmocka_unit_test(test_soft_objection_constrains),
		cmocka_unit_test(test_loader_reports_everything),
	};

	rules_flat_init(argv[0]);
	return cmocka_run_group_tests(tests, setup, teardown);
}
