/*
 * test_metrics_turn.c -- the turn metrics' exposition: labelled counters
 * keep a bounded set of names (the rest is "other", a name that would
 * need escaping never goes out raw), histograms are cumulative, unknown
 * database gauges stay out until the status query has answered.
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <event2/buffer.h>

#include "../../../mode/core.h"
#include "../../../src/llm/llm.h"
#include "../../../src/turn/metrics_turn.h"

/* The exposition text; caller frees. */
static char *
render(void)
{
	struct evbuffer	*b = evbuffer_new();
	size_t		 n;
	char		*s;

	metrics_turn_render(b);
	n = evbuffer_get_length(b);
	s = malloc(n + 1);
	evbuffer_remove(b, s, n);
	s[n] = '\0';
	evbuffer_free(b);
	return s;
}

static int
has(const char *text, const char *line)
{
	char	buf[512];

	snprintf(buf, sizeof buf, "\n%s\n", line);
	return strstr(text, buf) != NULL;
}

static void
test_labels_bounded_and_safe(void **state)
{
	char	name[32], *s;
	int	i;

	metrics_turn_reset();
	metrics_turn_policy_block("opt_out_request");
	metrics_turn_policy_block("opt_out_request");
	metrics_turn_policy_block("bad\"rule");
	for (i = 0; i < 40; i++) {
		snprintf(name, sizeof name, "claim_%02d", i);
		metrics_turn_guard_violation(name);
	}
	s = render();
	assert_true(has(s, "modegate_policy_blocks_total{rule=\"opt_out_request\"} 2"));
	assert_true(has(s, "modegate_policy_blocks_total{rule=\"other\"} 1"));
	assert_null(strstr(s, "bad\""));
	assert_true(has(s, "modegate_guard_violations_total{claim=\"claim_00\"} 1"));
	assert_true(has(s, "modegate_guard_violations_total{claim=\"claim_31\"} 1"));
	assert_null(strstr(s, "claim_32"));
	assert_true(has(s, "modegate_guard_violations_total{claim=\"other\"} 8"));
	free(s);
}

static void
test_histograms_and_llm(void **state)
{
	char	*s;

	metrics_turn_reset();
	/* A step that began "now" lands in the first bucket. */
	metrics_turn_step(MT_GUARD, metrics_turn_now());
	metrics_turn_llm(LLM_ANTHROPIC, LLM_ERR_NONE, 0.3);
	metrics_turn_llm(LLM_ANTHROPIC, LLM_ERR_SERVER, 3.0);
	metrics_turn_llm(LLM_ANTHROPIC, LLM_ERR_BREAKER_OPEN, -1);
	metrics_turn_tokens(LLM_ANTHROPIC, 120, 30);
	metrics_turn_decision(TRANS_PENDING);
	s = render();
	assert_true(has(s, "modegate_turn_step_seconds_bucket{step=\"guard\",le=\"0.0005\"} 1"));
	assert_true(has(s, "modegate_turn_step_seconds_count{step=\"guard\"} 1"));
	assert_true(has(s, "modegate_turn_step_seconds_count{step=\"llm\"} 0"));
	assert_true(has(s, "modegate_llm_requests_total{provider=\"anthropic\",outcome=\"ok\"} 1"));
	assert_true(has(s, "modegate_llm_requests_total{provider=\"anthropic\",outcome=\"server\"} 1"));
	assert_true(has(s, "modegate_llm_requests_total{provider=\"anthropic\",outcome=\"breaker_open\"} 1"));
	/* Two attempts timed (the refused one was not): 0.3 and 3.0 s. */
	assert_true(has(s, "modegate_llm_request_seconds_bucket{provider=\"anthropic\",le=\"0.25\"} 0"));
	assert_true(has(s, "modegate_llm_request_seconds_bucket{provider=\"anthropic\",le=\"0.5\"} 1"));
	assert_true(has(s, "modegate_llm_request_seconds_bucket{provider=\"anthropic\",le=\"5\"} 2"));
	assert_true(has(s, "modegate_llm_request_seconds_count{provider=\"anthropic\"} 2"));
	assert_true(has(s, "modegate_llm_tokens_total{provider=\"anthropic\",direction=\"input\"} 120"));
	assert_true(has(s, "modegate_llm_tokens_total{provider=\"anthropic\",direction=\"output\"} 30"));
	assert_null(strstr(s, "provider=\"openai\""));
	assert_true(has(s, "modegate_mode_decisions_total{decision=\"PENDING\"} 1"));
	assert_true(has(s, "modegate_mode_decisions_total{decision=\"APPLY\"} 0"));
	free(s);
}

static void
test_db_gauges(void **state)
{
	char	*s;

	metrics_turn_reset();
	s = render();
	assert_null(strstr(s, "modegate_inbox_oldest_pending_seconds"));
	assert_null(strstr(s, "modegate_flag{"));
	free(s);
	metrics_turn_db(2500, "shadow", 40);
	s = render();
	assert_true(has(s, "modegate_inbox_oldest_pending_seconds 2.500"));
	assert_true(has(s, "modegate_flag{name=\"conversation_mode_enabled\",value=\"on\"} 0"));
	assert_true(has(s, "modegate_flag{name=\"conversation_mode_enabled\",value=\"shadow\"} 1"));
	assert_true(has(s, "modegate_flag_percent{name=\"conversation_mode_enabled\"} 40"));
	free(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_labels_bounded_and_safe),
		cmocka_unit_test(test_histograms_and_llm),
		cmocka_unit_test(test_db_gauges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
