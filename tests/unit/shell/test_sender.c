/*
 * test_sender.c -- what the sender records for each Graph API answer:
 * the error code → outcome table of the issue (131047 → window_closed,
 * 130429/131056/4/80007 → retry after 4^X s, transient codes → retry
 * with doubling delays, 190/368 and permanent codes → failed) and the
 * retry delays, retry-after and the 15-minute cap.
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <json-c/json.h>

#include "../../../src/send/graph.h"
#include "../../../src/send/sender.h"

/* The result JSON for (http, code, wamid, retry-after, attempts, base). */
static json_object *
result_for(long http, long code, const char *wamid, long retry_after,
    int attempts, long base_ms)
{
	struct graph_result	r;
	char			buf[1024];
	json_object		*o;

	memset(&r, 0, sizeof r);
	r.http_status = http;
	r.code = code;
	r.cls = graph_classify(http, code);
	r.retry_after_s = retry_after;
	snprintf(r.wamid, sizeof r.wamid, "%s", wamid ? wamid : "");
	snprintf(r.message, sizeof r.message, "(#%ld) detail", code);
	assert_true(sender_result_json(&r, attempts, base_ms, buf,
	    sizeof buf) < (int)sizeof buf);
	o = json_tokener_parse(buf);
	assert_non_null(o);
	return o;
}

static const char *
str(json_object *o, const char *k)
{
	json_object	*v;

	return json_object_object_get_ex(o, k, &v) ?
	    json_object_get_string(v) : NULL;
}

static double
num(json_object *o, const char *k)
{
	json_object	*v;

	return json_object_object_get_ex(o, k, &v) ?
	    json_object_get_double(v) : -1;
}

/* Every error code of the issue lands on the right outcome. */
static void
test_code_table(void **state)
{
	static const struct {
		long		 http, code;
		const char	*result;
	} cases[] = {
		{ 200, 0, "sent" },
		{ 400, 131047, "window_closed" },
		{ 400, 130429, "retry" }, { 400, 131056, "retry" },
		{ 400, 4, "retry" }, { 400, 80007, "retry" },
		{ 500, 1, "retry" }, { 500, 2, "retry" },
		{ 500, 131000, "retry" }, { 503, 131016, "retry" },
		{ 502, 0, "retry" }, { 0, 0, "retry" },
		{ 400, 131026, "failed" }, { 400, 100, "failed" },
		{ 400, 131050, "failed" }, { 400, 132000, "failed" },
		{ 401, 190, "failed" }, { 403, 368, "failed" },
	};
	json_object	*o;
	size_t		 i;
	char		 what[64];

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		o = result_for(cases[i].http, cases[i].code,
		    cases[i].http == 200 ? "wamid.X" : NULL, 0, 0, 1000);
		snprintf(what, sizeof what, "%ld/%ld", cases[i].http,
		    cases[i].code);
		if (strcmp(str(o, "result"), cases[i].result) != 0)
			fail_msg("%s: got %s, want %s", what, str(o, "result"),
			    cases[i].result);
		if (cases[i].code != 0)
			assert_int_equal((long)num(o, "error_code"),
			    cases[i].code);
		json_object_put(o);
	}
}

/* A success carries the wamid and no error fields. */
static void
test_sent_carries_wamid(void **state)
{
	json_object	*o = result_for(200, 0, "wamid.HBgL1", 0, 0, 1000);

	assert_string_equal(str(o, "wamid"), "wamid.HBgL1");
	assert_null(str(o, "error_code"));
	assert_null(str(o, "retry_after_s"));
	json_object_put(o);
}

/* Throttling: 4^X seconds (Meta's pair rate limit rule), or retry-after. */
static void
test_backoff_delays(void **state)
{
	static const struct {
		int	attempts;
		long	retry_after;
		double	want;
	} cases[] = {
		{ 0, 0, 1 }, { 1, 0, 4 }, { 2, 0, 16 }, { 4, 0, 256 },
		{ 5, 0, 900 }, { 40, 0, 900 }, { 0, 7, 7 }, { 3, 7, 7 },
		{ 0, 99999, 900 },
	};
	json_object	*o;
	size_t		 i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		o = result_for(400, 131056, NULL, cases[i].retry_after,
		    cases[i].attempts, 1000);
		if (num(o, "retry_after_s") != cases[i].want)
			fail_msg("attempts %d retry-after %ld: got %g, want %g",
			    cases[i].attempts, cases[i].retry_after,
			    num(o, "retry_after_s"), cases[i].want);
		json_object_put(o);
	}
}

/* Transient errors: base × 2^attempts, capped at 15 minutes. */
static void
test_retry_delays(void **state)
{
	json_object	*o;

	o = result_for(500, 131000, NULL, 0, 0, 2000);
	assert_true(num(o, "retry_after_s") == 2);
	json_object_put(o);
	o = result_for(500, 131000, NULL, 0, 3, 2000);
	assert_true(num(o, "retry_after_s") == 16);
	json_object_put(o);
	o = result_for(0, 0, NULL, 0, 60, 2000);
	assert_true(num(o, "retry_after_s") == 900);
	json_object_put(o);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_code_table),
		cmocka_unit_test(test_sent_carries_wamid),
		cmocka_unit_test(test_backoff_delays),
		cmocka_unit_test(test_retry_delays),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
