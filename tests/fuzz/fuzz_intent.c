/*
 * fuzz_intent.c -- fuzz target: the text normaliser (text_normalize,
 * intent_normalize) and intent detection on the default lexicon and
 * learned model (mode/intents.json and mode/intent.model under
 * MG_RULES_DIR, or $MODEGATE_RULES_DIR), with and without context, and
 * the explanation.
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "../../mode/intent.h"
#include "../../mode/normalize.h"
#include "../../src/rules/flatfile.h"
#include "../../src/rules/ruleset.h"
#include "fuzz_main.h"

#ifndef MG_RULES_DIR
#define MG_RULES_DIR "."
#endif

static struct lexicon	*lex;
static struct model	*model;

/* Load the default lexicon once; exit when it does not load. */
int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct diag	 d;
	const char	*dir = getenv("MODEGATE_RULES_DIR");

	diag_init(&d);
	if ((lex = ruleset_load_intent(dir != NULL && *dir != '\0' ? dir :
	    MG_RULES_DIR, &model, &d)) == NULL) {
		fprintf(stderr, "fuzz_intent: %s\n", d.n ? d.msg[0] :
		    "cannot load");
		exit(1);
	}
	return 0;
}

/* Check the normalised text fits, is NUL-terminated and is stable. */
static void
check_norm(const char *out, size_t n, size_t outlen)
{
	if (outlen > 0 && (n >= outlen || strlen(out) != n))
		abort();
}

/* Byte 0 picks the output size of the normaliser; the rest is text. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char		 out[4096], again[4096];
	struct intent_result	 r, r2, r3;
	const char		*text;
	size_t			 outlen, n, len;

	if (size == 0)
		return 0;
	outlen = data[0] == 0 ? sizeof out : (size_t)data[0];
	text = (const char *)data + 1;
	len = size - 1;
	n = text_normalize(text, len, out, outlen);
	check_norm(out, n, outlen);
	n = text_normalize(text, len, out, sizeof out);
	check_norm(out, n, sizeof out);
	n = intent_normalize(lex, text, len, out, outlen);
	check_norm(out, n, outlen);
	n = intent_normalize(lex, text, len, again, sizeof again);
	check_norm(again, n, sizeof again);
	intent_detect(lex, text, len, &r);
	intent_detect(lex, text, len, &r2);
	if (r.intent != r2.intent || r.confidence != r2.confidence ||
	    r.confidence < 0 || r.confidence > 1 ||
	    strnlen(r.evidence, sizeof r.evidence) == sizeof r.evidence)
		abort();
	/* The explanation changes the evidence, never the verdict; the
	 * second half of the input as Julia's message before. */
	(void)intent_explain(lex, text, len, NULL, 0, &r3);
	if (r3.intent != r.intent || r3.confidence != r.confidence ||
	    r3.runner_up == r3.intent ||
	    strnlen(r3.evidence, sizeof r3.evidence) == sizeof r3.evidence)
		abort();
	intent_detect_ctx(lex, text, len / 2, text + len / 2, len - len / 2,
	    &r3);
	if (r3.confidence < 0 || r3.confidence > 1)
		abort();
	return 0;
}
