/*
 * fuzz_rules.c -- fuzz target: the rule-file loader. The input is a JSON
 * rule file: rules_flatten turns it into the flat form, flat_parse reads
 * that, and every core loader (intents, claims, transitions,
 * capabilities, policy) runs on it. The input is also fed to flat_parse
 * as a hand-written flat buffer.
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "../../mode/gate.h"
#include "../../mode/guard.h"
#include "../../mode/intent.h"
#include "../../mode/router.h"
#include "../../policy/policy.h"
#include "../../src/rules/flatfile.h"
#include "fuzz_main.h"

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

/* Run every loader on buf as the flat form of a rule file. */
static void
load_all(const char *buf, size_t len)
{
	struct diag		 d;
	struct flat		 f;
	struct lexicon		*lex;
	struct claims		*cl;
	struct matrix		*m;
	struct gate		*g;
	struct policy		*p;

	diag_init(&d);
	if (flat_parse(&f, "fuzz.json", buf, len, &d) == -1)
		return;
	lex = lexicon_load(&f, &d);
	cl = claims_load(&f, &d);
	m = matrix_load(&f, &d);
	g = gate_load(&f, &d);
	p = policy_load(&f, &d);
	if (g != NULL && m != NULL)
		gate_check_prompts(g, m, &d);
	if (d.n > DIAG_MAX)
		abort();
	lexicon_free(lex);
	claims_free(cl);
	matrix_free(m);
	gate_free(g);
	policy_free(p);
	flat_free(&f);
}

/* Flatten data as JSON and load it; then load data as a flat buffer. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct diag	 d;
	char		*flat;
	size_t		 flen = 0;

	diag_init(&d);
	if ((flat = rules_flatten((const char *)data, size, "fuzz.json",
	    &flen, &d)) != NULL) {
		load_all(flat, flen);
		free(flat);
	} else if (d.n == 0)
		abort();
	load_all((const char *)data, size);
	return 0;
}
