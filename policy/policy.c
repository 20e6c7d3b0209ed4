/*
 * policy.c -- the policy engine and the loader of policy/policy.json.
 *
 * A rule is { "id", "when": { conditions }, "decision": ALLOW|BLOCK,
 * "actions": [...], "constraints": "texto" }. Every condition present must
 * hold: "intent" (an intent name), "control" ("ai" | "human"), and the
 * booleans "opted_out", "cooling_off", "serious_objection_open".
 * Pure: no I/O.
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

#define POLICY_RULES_MAX	32
#define COND_ANY		(-1)

struct policy_rule {
	char			*id;
	char			*constraints;	/* NULL: none */
	enum policy_decision	 decision;
	unsigned		 actions;
	int			 intent;	/* enum intent or COND_ANY */
	int			 human;		/* 0, 1 or COND_ANY */
	int			 opted_out;
	int			 cooling_off;
	int			 serious_open;
	unsigned		 modes;		/* 1u << enum mode; 0: any */
	int			 cooling_off_days;
};

struct policy {
	struct policy_rule	rules[POLICY_RULES_MAX];
	size_t			n;
};

#define MG_NAME_ITEM(e, s) s,
static const char *action_names[] = { POLICY_ACTION_LIST(MG_NAME_ITEM) };
#undef MG_NAME_ITEM

const char *
policy_decision_name(int v)
{
	return v == POLICY_ALLOW ? "ALLOW" : v == POLICY_BLOCK ? "BLOCK" : "?";
}

const char *
policy_action_name(int v)
{
	return v >= 0 && v < POLICY_ACT__COUNT ? action_names[v] : "?";
}

/* A boolean condition: COND_ANY when absent, else 0/1; bad types reported. */
static int
load_bool(const struct flat *f, size_t i, const char *name, struct diag *d)
{
	const struct flat_ent	*e;
	char			 key[96];

	snprintf(key, sizeof key, "rules.%zu.when.%s", i, name);
	if ((e = flat_get(f, "%s", key)) == NULL)
		return COND_ANY;
	if (e->type != 'b') {
		diag_add(d, f->file, key, "must be true or false");
		return COND_ANY;
	}
	return strcmp(e->val, "true") == 0;
}

/* One mode of a "mode" condition (a name or a list of names). */
static void
load_mode(const struct flat *f, size_t i, const char *s,
    struct policy_rule *r, struct diag *d)
{
	int	m;

	if ((m = mode_from_name(s)) == -1)
		diag_add(d, f->file, "", "rules.%zu.when.mode: unknown mode "
		    "\"%s\"", i, s);
	else
		r->modes |= 1u << m;
}

/* The "when" object of rule i: every key must be a known condition. */
static void
load_when(const struct flat *f, size_t i, struct policy_rule *r,
    struct diag *d)
{
	char		 names[16][FLAT_NAME_MAX], prefix[48];
	const char	*s;
	size_t		 n, k;

	snprintf(prefix, sizeof prefix, "rules.%zu.when", i);
	n = flat_children(f, prefix, names, 16);
	for (k = 0; k < n && k < 16; k++)
		if (strcmp(names[k], "intent") != 0 &&
		    strcmp(names[k], "control") != 0 &&
		    strcmp(names[k], "opted_out") != 0 &&
		    strcmp(names[k], "cooling_off") != 0 &&
		    strcmp(names[k], "serious_objection_open") != 0 &&
		    strcmp(names[k], "mode") != 0)
			diag_add(d, f->file, prefix, "unknown condition \"%s\"",
			    names[k]);
	r->intent = COND_ANY;
	if ((s = flat_str(f, "%s.intent", prefix)) != NULL &&
	    (r->intent = intent_from_name(s)) == -1) {
		diag_add(d, f->file, "", "rules.%zu.when.intent: unknown "
		    "intent \"%s\"", i, s);
		r->intent = COND_ANY;
	}
	r->human = COND_ANY;
	if ((s = flat_str(f, "%s.control", prefix)) != NULL) {
		if (strcmp(s, "human") == 0 || strcmp(s, "ai") == 0)
			r->human = strcmp(s, "human") == 0;
		else
			diag_add(d, f->file, "", "rules.%zu.when.control: "
			    "unknown control \"%s\" (ai | human)", i, s);
	}
	r->modes = 0;
	if ((s = flat_str(f, "%s.mode", prefix)) != NULL)
		load_mode(f, i, s, r, d);
	for (k = 0; k < MODE__COUNT; k++)
		if ((s = flat_str(f, "%s.mode.%zu", prefix, k)) != NULL)
			load_mode(f, i, s, r, d);
	r->opted_out = load_bool(f, i, "opted_out", d);
	r->cooling_off = load_bool(f, i, "cooling_off", d);
	r->serious_open = load_bool(f, i, "serious_objection_open", d);
}

/* The "actions" array of rule i as bits. */
static unsigned
load_actions(const struct flat *f, size_t i, struct diag *d)
{
	const char	*s;
	unsigned	 bits = 0;
	size_t		 k;
	int		 a;

	for (k = 0; k < 16; k++) {
		if ((s = flat_str(f, "rules.%zu.actions.%zu", i, k)) == NULL)
			break;
		for (a = 0; a < POLICY_ACT__COUNT; a++)
			if (strcmp(action_names[a], s) == 0)
				break;
		if (a == POLICY_ACT__COUNT)
			diag_add(d, f->file, "", "rules.%zu.actions.%zu: "
			    "unknown action \"%s\"", i, k, s);
		else
			bits |= 1u << a;
	}
	return bits;
}

/* Load rule i into r; returns -1 on allocation failure only. */
static int
load_rule(const struct flat *f, size_t i, struct policy_rule *r,
    struct diag *d)
{
	const struct flat_ent	*e;
	const char		*id, *dec, *text;

	if ((id = flat_str(f, "rules.%zu.id", i)) == NULL || *id == '\0') {
		diag_add(d, f->file, "", "rules.%zu.id: missing", i);
		id = "?";
	}
	dec = flat_str(f, "rules.%zu.decision", i);
	if (dec != NULL && strcmp(dec, "BLOCK") == 0)
		r->decision = POLICY_BLOCK;
	else if (dec != NULL && strcmp(dec, "ALLOW") == 0)
		r->decision = POLICY_ALLOW;
	else if (dec == NULL)
		diag_add(d, f->file, "", "rules.%zu.decision: missing", i);
	else
		diag_add(d, f->file, "", "rules.%zu.decision: unknown "
		    "decision \"%s\" (ALLOW | BLOCK)", i, dec);
	load_when(f, i, r, d);
	r->actions = load_actions(f, i, d);
	if ((e = flat_get(f, "rules.%zu.cooling_off_days", i)) != NULL &&
	    (e->type != 'n' || (r->cooling_off_days = (int)strtol(e->val, NULL, 10)) < 1 ||
	    r->cooling_off_days > 3650))
		diag_add(d, f->file, "", "rules.%zu.cooling_off_days: a whole "
		    "number of days, 1 to 3650", i);
	if ((r->actions & (1u << POLICY_ACT_START_COOLING_OFF)) &&
	    r->cooling_off_days == 0)
		diag_add(d, f->file, "", "rules.%zu: start_cooling_off needs "
		    "cooling_off_days", i);
	text = flat_str(f, "rules.%zu.constraints", i);
	if ((r->id = strdup(id)) == NULL ||
	    (text != NULL && (r->constraints = strdup(text)) == NULL))
		return -1;
	return 0;
}

struct policy *
policy_load(const struct flat *f, struct diag *d)
{
	struct policy	*p;
	size_t		 before = d->n + d->dropped, i, n;
	char		 names[1][FLAT_NAME_MAX];

	if ((p = calloc(1, sizeof *p)) == NULL) {
		diag_add(d, f->file, "", "out of memory");
		return NULL;
	}
	n = flat_children(f, "rules", names, 1);
	if (n == 0)
		diag_add(d, f->file, "rules", "missing or empty");
	if (n > POLICY_RULES_MAX) {
		diag_add(d, f->file, "rules", "more than %d rules",
		    POLICY_RULES_MAX);
		n = POLICY_RULES_MAX;
	}
	for (i = 0; i < n; i++, p->n++)
		if (load_rule(f, i, &p->rules[i], d) == -1) {
			diag_add(d, f->file, "", "out of memory");
			break;
		}
	if (d->n + d->dropped != before) {
		policy_free(p);
		return NULL;
	}
	return p;
}

void
policy_free(struct policy *p)
{
	size_t	i;

	if (p == NULL)
		return;
	for (i = 0; i <= p->n && i < POLICY_RULES_MAX; i++) {
		free(p->rules[i].id);
		free(p->rules[i].constraints);
	}
	free(p);
}

/* Does a condition (COND_ANY, 0 or 1) accept the fact? */
static bool
cond_ok(int cond, bool fact)
{
	return cond == COND_ANY || cond == (int)fact;
}

/* Do all the conditions of r hold for in? */
static bool
rule_matches(const struct policy_rule *r, const struct policy_input *in)
{
	return (r->intent == COND_ANY || r->intent == in->intent) &&
	    cond_ok(r->human, in->human_control) &&
	    cond_ok(r->opted_out, in->opted_out_at != 0) &&
	    cond_ok(r->cooling_off, in->cooling_off_until > in->now_ms) &&
	    cond_ok(r->serious_open, in->serious_objection_open) &&
	    (r->modes == 0 || (in->mode >= 0 && (r->modes & (1u << in->mode))));
}

void
policy_eval(const struct policy *p, const struct policy_input *in,
    struct policy_result *out)
{
	const struct policy_rule	*r;
	size_t				 i, len = 0;

	memset(out, 0, sizeof *out);
	out->decision = POLICY_ALLOW;
	out->rule = "default";
	for (i = 0; i < p->n; i++) {
		r = &p->rules[i];
		if (!rule_matches(r, in))
			continue;
		if (r->decision == POLICY_BLOCK) {
			out->decision = POLICY_BLOCK;
			out->rule = r->id;
			out->actions = r->actions;
			out->cooling_off_days = r->cooling_off_days;
			out->constraints[0] = '\0';
			return;
		}
		if (strcmp(out->rule, "default") == 0)
			out->rule = r->id;
		out->actions |= r->actions;
		if (r->cooling_off_days > out->cooling_off_days)
			out->cooling_off_days = r->cooling_off_days;
		if (r->constraints != NULL && len < sizeof out->constraints)
			len += (size_t)snprintf(out->constraints + len,
			    sizeof out->constraints - len, "%s%s",
			    len > 0 ? "\n" : "", r->constraints);
	}
}
