/*
 * test_rules.c -- JSON rule files flattened for the core.
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../../src/rules/flatfile.h"

static void
test_flatten_round_trip(void **state)
{
	static const char json[] = "{\"a\":{\"b\":[\"x\\ty\",\"l1\\nl2\"],"
	    "\"e\":[],\"o\":{}},\"n\":30,\"t\":true,\"z\":null}";
	struct diag	 d;
	struct flat	 f;
	size_t		 len;
	char		*buf;

	diag_init(&d);
	buf = rules_flatten(json, strlen(json), "t.json", &len, &d);
	assert_non_null(buf);
	assert_string_equal(buf, "a.b.0\tsx\\ty\na.b.1\tsl1\\nl2\na.e\ta\n"
	    "a.o\to\nn\tn30\nt\tbtrue\nz\tz\n");
	assert_int_equal(flat_parse(&f, "t.json", buf, len, &d), 0);
	assert_string_equal(flat_str(&f, "a.b.1"), "l1\nl2");
	flat_free(&f);
	free(buf);
}

static void
test_invalid_json_names_line(void **state)
{
	static const char json[] = "{\n\"a\": 1,\n\"b\": ]\n}";
	struct diag	 d;
	size_t		 len;

	diag_init(&d);
	assert_null(rules_flatten(json, strlen(json), "mode/x.json", &len,
	    &d));
	assert_int_equal(d.n, 1);
	assert_non_null(strstr(d.msg[0], "mode/x.json: line 3: invalid JSON"));
}

static void
test_missing_file(void **state)
{
	struct diag	d;
	struct flat	f;

	diag_init(&d);
	assert_int_equal(rules_read_flat("/nonexistent/r.json", "r.json", &f,
	    &d), -1);
	assert_non_null(strstr(d.msg[0], "r.json: cannot open"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flatten_round_trip),
		cmocka_unit_test(test_invalid_json_names_line),
		cmocka_unit_test(test_missing_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
