/*
 * ruleset.c -- load all rule files of a rules directory through
 * rules_read_flat and the core loaders, collecting every problem.
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
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

size_t
ruleset_intent_labels(const char **labels)
{
	size_t	i;

	if (INTENT__COUNT > MODEL_MAX_LABELS)
		return 0;
	for (i = 0; i < INTENT__COUNT; i++)
		labels[i] = intent_name((int)i);
	return INTENT__COUNT;
}

size_t
ruleset_guard_labels(const struct claims *cl, const char **labels)
{
	size_t	i, n = claims_count(cl);

	if (n + 1 > MODEL_MAX_LABELS)
		return 0;
	labels[0] = "OK";
	for (i = 0; i < n; i++)
		labels[i + 1] = claims_id(cl, (int)i);
	return n + 1;
}

struct model *
ruleset_load_model(const char *dir, const char *label, const char *kind,
    const char *const *labels, size_t n, bool *absent, struct diag *d)
{
	struct model	*m = NULL;
	FILE		*fp;
	char		 path[4096], *buf;
	size_t		 len;

	*absent = false;
	snprintf(path, sizeof path, "%s/%s", dir, label);
	if ((fp = fopen(path, "r")) == NULL) {
		if (errno == ENOENT)
			*absent = true;
		else
			diag_add(d, label, "", "%s", strerror(errno));
		return NULL;
	}
	if ((buf = malloc(MODEL_MAX_BYTES + 1)) == NULL) {
		fclose(fp);
		diag_add(d, label, "", "out of memory");
		return NULL;
	}
	len = fread(buf, 1, MODEL_MAX_BYTES + 1, fp);
	if (ferror(fp))
		diag_add(d, label, "", "read error");
	else if (len > MODEL_MAX_BYTES)
		diag_add(d, label, "", "larger than %u bytes", MODEL_MAX_BYTES);
	else if (n == 0)
		diag_add(d, label, "", "too many labels for a model");
	else
		m = model_load(buf, len, label, kind, labels, n, d);
	fclose(fp);
	free(buf);
	return m;
}

struct lexicon *
ruleset_load_intent(const char *dir, struct model **model, struct diag *d)
{
	const char	*labels[MODEL_MAX_LABELS];
	struct lexicon	*lex = NULL;
	struct flat	 f;
	bool		 absent;

	*model = NULL;
	if (read_rule(dir, "mode/intents.json", &f, d) == 0) {
		lex = lexicon_load(&f, d);
		flat_free(&f);
	}
	if (lex == NULL)
		return NULL;
	*model = ruleset_load_model(dir, "mode/intent.model", "intent", labels,
	    ruleset_intent_labels(labels), &absent, d);
	if (*model == NULL && !absent) {
		lexicon_free(lex);
		return NULL;
	}
	lexicon_set_model(lex, *model);
	return lex;
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
	return ruleset_load_opts(rs, dir, true, d);
}

int
ruleset_load_opts(struct ruleset *rs, const char *dir, bool models,
    struct diag *d)
{
	const char	*labels[MODEL_MAX_LABELS];
	struct flat	 f;
	size_t		 before = d->n + d->dropped;
	bool		 absent;

	memset(rs, 0, sizeof *rs);
	if (models)
		rs->lex = ruleset_load_intent(dir, &rs->intent_model, d);
	else if (read_rule(dir, "mode/intents.json", &f, d) == 0) {
		rs->lex = lexicon_load(&f, d);
		flat_free(&f);
	}
	if (read_rule(dir, "mode/claims.json", &f, d) == 0) {
		rs->claims = claims_load(&f, d);
		flat_free(&f);
	}
	if (rs->claims != NULL && models) {
		rs->guard_model = ruleset_load_model(dir, "mode/guard.model",
		    "guard", labels, ruleset_guard_labels(rs->claims, labels),
		    &absent, d);
		claims_set_model(rs->claims, rs->guard_model);
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
	model_free(rs->intent_model);
	claims_free(rs->claims);
	model_free(rs->guard_model);
	matrix_free(rs->matrix);
	gate_free(rs->gate);
	policy_free(rs->policy);
	messages_free(rs->messages);
	memset(rs, 0, sizeof *rs);
}
