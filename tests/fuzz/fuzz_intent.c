/*
 * fuzz_intent.c -- fuzz target: the text normaliser (text_normalize,
 * intent_normalize) and intent detection on the default lexicon
 * (mode/intents.json under MG_RULES_DIR, or $MODEGATE_RULES_DIR).
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "../../mode/intent.h"
#include "../../mode/normalize.h"
#include "../../src/rules/flatfile.h"
#include "fuzz_main.h"

#ifndef MG_RULES_DIR
#define MG_RULES_DIR "."
#endif

static struct lexicon	*lex;

/* Load the default lexicon once; exit when it does not load. */
int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct diag	 d;
	struct flat	 f;
	char		 path[4096];
	const char	*dir = getenv("MODEGATE_RULES_DIR");

	diag_init(&d);
	snprintf(path, sizeof path, "%s/mode/intents.json",
	    dir != NULL && *dir != '\0' ? dir : MG_RULES_DIR);
	if (rules_read_flat(path, "mode/intents.json", &f, &d) == -1 ||
	    (lex = lexicon_load(&f, &d)) == NULL) {
		fprintf(stderr, "fuzz_intent: %s: %s\n", path,
		    d.n ? d.msg[0] : "cannot load");
		exit(1);
	}
	flat_free(&f);
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
	struct intent_result	 r, r2;
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
	return 0;
}
