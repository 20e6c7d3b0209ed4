/*
 * cmd_intent.c -- modegate intent: classify one message a line from stdin,
 * printing INTENT<TAB>confidence<TAB>message a line. Rules come from
 * $MODEGATE_RULES_DIR/mode/intents.json (default: the build's rules dir).
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../mode/intent.h"
#include "cmd/cmd.h"
#include "base/config.h"
#include "rules/flatfile.h"

#ifndef MG_RULES_DIR
#define MG_RULES_DIR "."
#endif

/* Load the lexicon from the rules dir; prints problems. NULL on error. */
static struct lexicon *
intent_load_lexicon(void)
{
	struct flat	 f;
	struct diag	 d;
	struct lexicon	*lex = NULL;
	const char	*dir;
	char		 path[4096];
	size_t		 i;

	if ((dir = getenv("MODEGATE_RULES_DIR")) == NULL || *dir == '\0')
		dir = MG_RULES_DIR;
	snprintf(path, sizeof path, "%s/mode/intents.json", dir);
	diag_init(&d);
	if (rules_read_flat(path, "mode/intents.json", &f, &d) == 0) {
		lex = lexicon_load(&f, &d);
		flat_free(&f);
	}
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
	struct intent_result	 r;
	char			*line = NULL;
	size_t			 cap = 0;
	ssize_t			 n;

	if (argc != 1) {
		fprintf(stderr, "usage: modegate intent < messages\n");
		return EX_USAGE_CODE;
	}
	if ((lex = intent_load_lexicon()) == NULL)
		return EX_CONFIG_CODE;
	while ((n = getline(&line, &cap, stdin)) != -1) {
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		intent_detect(lex, line, (size_t)n, &r);
		printf("%s\t%.2f\t%s\n", intent_name(r.intent), r.confidence,
		    line);
	}
	free(line);
	lexicon_free(lex);
	return 0;
}
