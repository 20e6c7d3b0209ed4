/*
 * fuzz_llm.c -- fuzz target: the LLM provider response parser
 * (llm_wire_parse) for both wire formats, the tool-results echo built from
 * a parsed response, and the error classifier (llm_wire_classify).
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "../../src/llm/wire.h"
#include "fuzz_main.h"

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

/* Parse body as provider p's answer; echo tool results when it parsed. */
static void
fuzz_one(enum llm_provider p, const char *body, size_t len, long status)
{
	struct llm_wire_resp	 r;
	struct llm_error	 err;
	json_object		*msgs;
	char			*res[4] = { "ok", "{\"x\":1}", "", "erro" };
	int			 iserr[4] = { 0, 0, 1, 1 };
	char			*results[64];
	int			 is_error[64];
	size_t			 i;

	memset(&err, 0, sizeof err);
	if (llm_wire_parse(p, body, len, &r, &err) == 0) {
		if (r.text == NULL)
			abort();
		for (i = 0; i < r.ncalls && i < 64; i++) {
			results[i] = res[i % 4];
			is_error[i] = iserr[i % 4];
		}
		if (r.ncalls <= 64 && (msgs = json_object_new_array()) != NULL) {
			llm_wire_results(p, msgs, &r, results, is_error);
			json_object_put(msgs);
		}
		llm_wire_resp_clear(&r);
	} else if (strnlen(err.message, sizeof err.message) ==
	    sizeof err.message)
		abort();
	memset(&err, 0, sizeof err);
	llm_wire_classify(p, status, body, len, &err);
}

/* Byte 0 picks the HTTP status for the classifier; the rest is the body
 * (NUL-terminated copy, as the HTTP client hands it over). */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const long	 st[8] = { 400, 401, 403, 404, 429, 500, 529, 503 };
	char			*body;
	long			 status;

	if (size == 0)
		return 0;
	status = st[data[0] & 7];
	if ((body = malloc(size)) == NULL)
		return 0;
	memcpy(body, data + 1, size - 1);
	body[size - 1] = '\0';
	fuzz_one(LLM_ANTHROPIC, body, size - 1, status);
	fuzz_one(LLM_OPENAI, body, size - 1, status);
	free(body);
	return 0;
}
