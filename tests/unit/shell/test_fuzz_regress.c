/*
 * test_fuzz_regress.c -- inputs the fuzzers (tests/fuzz/) found crashing,
 * each replayed through the function that crashed, with the answer a
 * caller relies on.
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../../src/llm/wire.h"

/* Parse body as p's 2xx answer; returns llm_wire_parse's result. */
static int
parse(enum llm_provider p, const char *body, struct llm_error *err)
{
	struct llm_wire_resp	r;
	int			rc;

	memset(err, 0, sizeof *err);
	rc = llm_wire_parse(p, body, strlen(body), &r, err);
	if (rc == 0)
		llm_wire_resp_clear(&r);
	return rc;
}

/* fuzz_llm: an OpenAI-style 2xx body without "choices" (here an error
 * object, as some compatible servers send with status 200) aborted in
 * json-c; it is a malformed, retryable answer. */
static void
test_openai_without_choices_is_malformed(void **state)
{
	static const char *bodies[] = {
		"{\"error\":{\"message\":\"bad\",\"type\":\"server_error\"}}",
		"{\"choices\":{\"0\":{}}}",
		"{\"choices\":\"x\"}",
		"{\"choices\":[]}",
		"{\"choices\":null}",
	};
	struct llm_error	err;
	size_t			i;

	for (i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
		assert_int_equal(parse(LLM_OPENAI, bodies[i], &err), -1);
		assert_int_equal(err.cls, LLM_ERR_MALFORMED);
		assert_true(err.retryable);
	}
	assert_int_equal(parse(LLM_OPENAI, "{\"choices\":[{\"message\":"
	    "{\"content\":\"Oi\"},\"finish_reason\":\"stop\"}]}", &err), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_openai_without_choices_is_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
