/*
 * cmd_intent.c -- modegate intent: classify one message a line from stdin,
 * printing INTENT<TAB>confidence<TAB>message a line. Rules come from
 * $MODEGATE_RULES_DIR/mode/intents.json and, when present,
 * mode/intent.model (default: the build's rules dir).
 *
 *	--context	input lines are MESSAGE<TAB>JULIA_BEFORE
 *	--explain	four more fields: source (rules|model|both),
 *			runner-up, its probability, the evidence
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../mode/intent.h"
#include "cmd/cmd.h"
#include "base/config.h"
#include "rules/ruleset.h"

#ifndef MG_RULES_DIR
#define MG_RULES_DIR "."
#endif

/* Load the lexicon and model from the rules dir; prints problems. */
static struct lexicon *
intent_load(struct model **model)
{
	struct diag	 d;
	struct lexicon	*lex;
	const char	*dir;
	size_t		 i;

	if ((dir = getenv("MODEGATE_RULES_DIR")) == NULL || *dir == '\0')
		dir = MG_RULES_DIR;
	diag_init(&d);
	lex = ruleset_load_intent(dir, model, &d);
	for (i = 0; i < d.n; i++)
		fprintf(stderr, "%s\n", d.msg[i]);
	if (d.dropped > 0)
		fprintf(stderr, "(%zu more problems)\n", d.dropped);
	return lex;
}

int
cmd_intent(int argc, char **argv)
{
	struct lexicon		*lex;
	struct model		*model;
	struct intent_result	 r;
	char			*line = NULL, *ctx;
	size_t			 cap = 0, clen;
	ssize_t			 n;
	bool			 context = false, explain = false;
	int			 a;

	for (a = 1; a < argc; a++) {
		if (strcmp(argv[a], "--context") == 0)
			context = true;
		else if (strcmp(argv[a], "--explain") == 0)
			explain = true;
		else {
			fprintf(stderr, "usage: modegate intent [--context] "
			    "[--explain] < messages\n");
			return EX_USAGE_CODE;
		}
	}
	if ((lex = intent_load(&model)) == NULL)
		return EX_CONFIG_CODE;
	while ((n = getline(&line, &cap, stdin)) != -1) {
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		ctx = NULL;
		clen = 0;
		if (context && (ctx = strchr(line, '\t')) != NULL) {
			*ctx++ = '\0';
			clen = strlen(ctx);
			n = (ssize_t)strlen(line);
		}
		if (explain)
			(void)intent_explain(lex, line, (size_t)n, ctx, clen,
			    &r);
		else
			intent_detect_ctx(lex, line, (size_t)n, ctx, clen, &r);
		printf("%s\t%.2f\t%s", intent_name(r.intent), r.confidence,
		    line);
		if (explain)
			printf("\t%s\t%s\t%.2f\t%s", intent_source_name(r.source),
			    intent_name(r.runner_up), r.runner_up_score,
			    r.evidence);
		putchar('\n');
	}
	free(line);
	lexicon_free(lex);
	model_free(model);
	return 0;
}
