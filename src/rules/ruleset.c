/*
 * ruleset.c -- load all rule files of a rules directory through
 * rules_read_flat and the core loaders, collecting every problem.
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <string.h>

#include "rules/flatfile.h"
#include "rules/ruleset.h"

/* Read dir/label into f; 0 when it parsed. */
static int
read_rule(const char *dir, const char *label, struct flat *f,
    struct diag *d)
{
	char	path[4096];

	if (snprintf(path, sizeof path, "%s/%s", dir, label) >=
	    (int)sizeof path) {
		diag_add(d, label, "", "rules directory path too long");
		return -1;
	}
	return rules_read_flat(path, label, f, d);
}

/* Julia's prompt (mode/julia.md) is not a rule file, but serve needs it:
 * present, readable and not empty. */
static void
ruleset_check_persona(const char *dir, struct diag *d)
{
	char	 path[4096];
	FILE	*f;
	int	 c = EOF;

	snprintf(path, sizeof path, "%s/mode/julia.md", dir);
	if ((f = fopen(path, "r")) == NULL) {
		diag_add(d, "mode/julia.md", "", "missing or unreadable");
		return;
	}
	while ((c = fgetc(f)) != EOF && (c == ' ' || c == '\n' ||
	    c == '\t' || c == '\r'))
		;
	if (c == EOF)
		diag_add(d, "mode/julia.md", "", "empty");
	fclose(f);
}

int
ruleset_load(struct ruleset *rs, const char *dir, struct diag *d)
{
	struct flat	f;
	size_t		before = d->n + d->dropped;

	memset(rs, 0, sizeof *rs);
	if (read_rule(dir, "mode/intents.json", &f, d) == 0) {
		rs->lex = lexicon_load(&f, d);
		flat_free(&f);
	}
	if (read_rule(dir, "mode/claims.json", &f, d) == 0) {
		rs->claims = claims_load(&f, d);
		flat_free(&f);
	}
	if (read_rule(dir, "mode/transitions.json", &f, d) == 0) {
		rs->matrix = matrix_load(&f, d);
		flat_free(&f);
	}
	if (read_rule(dir, "mode/capabilities.json", &f, d) == 0) {
		rs->gate = gate_load(&f, d);
		flat_free(&f);
	}
	if (read_rule(dir, "mode/messages.json", &f, d) == 0) {
		rs->messages = messages_load(&f, d);
		flat_free(&f);
	}
	if (read_rule(dir, "policy/policy.json", &f, d) == 0) {
		rs->policy = policy_load(&f, d);
		flat_free(&f);
	}
	ruleset_check_persona(dir, d);
	if (rs->gate != NULL && rs->matrix != NULL)
		gate_check_prompts(rs->gate, rs->matrix, d);
	if (rs->gate != NULL && rs->claims != NULL)
		gate_check_claims(rs->gate, turn_claim_text, rs->claims, d);
	if (d->n + d->dropped != before) {
		ruleset_free(rs);
		return -1;
	}
	return 0;
}

void
ruleset_free(struct ruleset *rs)
{
	lexicon_free(rs->lex);
	claims_free(rs->claims);
	matrix_free(rs->matrix);
	gate_free(rs->gate);
	policy_free(rs->policy);
	messages_free(rs->messages);
	memset(rs, 0, sizeof *rs);
}
