/*
 * test_flat.c -- the flat rule form and the name tables of the core.
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "../../../mode/flat.h"

static const char sample[] =
    "modes.discovery.tools.0\tssalvar_memoria\n"
    "modes.discovery.tools.1\tsencaminhar_humano\n"
    "modes.oferta.tools\ta\n"
    "modes.oferta.prompt\tsline one\\nline\\ttwo \\\\ end\n"
    "max\tn30\n"
    "flag\tbtrue\n";

static void
test_parse_and_lookup(void **state)
{
	struct flat	f;
	struct diag	d;
	char		names[8][FLAT_NAME_MAX];

	diag_init(&d);
	assert_int_equal(flat_parse(&f, "x.json", sample, strlen(sample), &d),
	    0);
	assert_int_equal(d.n, 0);
	assert_int_equal(f.n, 6);
	assert_string_equal(flat_str(&f, "modes.%s.tools.%d", "discovery", 1),
	    "encaminhar_humano");
	assert_string_equal(flat_str(&f, "modes.oferta.prompt"),
	    "line one\nline\ttwo \\ end");
	assert_int_equal(flat_get(&f, "modes.oferta.tools")->type, 'a');
	assert_null(flat_str(&f, "max"));	/* a number, not a string */
	assert_string_equal(flat_get(&f, "max")->val, "30");
	assert_null(flat_get(&f, "nope"));

	assert_int_equal(flat_children(&f, "", names, 8), 3);
	assert_string_equal(names[0], "modes");
	assert_string_equal(names[1], "max");
	assert_string_equal(names[2], "flag");
	assert_int_equal(flat_children(&f, "modes", names, 8), 2);
	assert_string_equal(names[1], "oferta");
	assert_int_equal(flat_children(&f, "modes.discovery.tools", names, 8),
	    2);
	assert_string_equal(names[1], "1");
	/* A prefix that is only a string prefix of a key is not a parent. */
	assert_int_equal(flat_children(&f, "mode", names, 8), 0);
	flat_free(&f);
}

static void
test_malformed_lines_reported(void **state)
{
	static const char bad[] = "ok\tsfine\nno tab here\nbadtype\tqx\n";
	struct flat	f;
	struct diag	d;

	diag_init(&d);
	assert_int_equal(flat_parse(&f, "r.json", bad, strlen(bad), &d), 0);
	assert_int_equal(f.n, 1);
	assert_int_equal(d.n, 2);
	assert_string_equal(d.msg[0], "r.json: flat line 2 is malformed");
	flat_free(&f);
}

static void
test_names_round_trip(void **state)
{
	int	i;

	for (i = 0; i < MODE__COUNT; i++)
		assert_int_equal(mode_from_name(mode_name(i)), i);
	for (i = 0; i < INTENT__COUNT; i++)
		assert_int_equal(intent_from_name(intent_name(i)), i);
	for (i = 0; i < TRANS__COUNT; i++)
		assert_int_equal(decision_from_name(decision_name(i)), i);
	for (i = 0; i < TOOL__COUNT; i++)
		assert_int_equal(tool_from_name(tool_name(i)), i);
	assert_string_equal(mode_name(MODE_OFERTA), "oferta");
	assert_string_equal(intent_name(INTENT_OPT_OUT), "OPT_OUT");
	assert_int_equal(mode_from_name("ofera"), -1);
	assert_int_equal(mode_from_name(NULL), -1);
	assert_string_equal(mode_name(99), "?");
}

static void
test_diag_bounded(void **state)
{
	struct diag	d;
	int		i;

	diag_init(&d);
	for (i = 0; i < DIAG_MAX + 5; i++)
		diag_add(&d, "f", "k", "problem %d", i);
	assert_int_equal(d.n, DIAG_MAX);
	assert_int_equal(d.dropped, 5);
	assert_string_equal(d.msg[0], "f: k: problem 0");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_and_lookup),
		cmocka_unit_test(test_malformed_lines_reported),
		cmocka_unit_test(test_names_round_trip),
		cmocka_unit_test(test_diag_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
