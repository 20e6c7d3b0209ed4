/*
 * gate.c -- the capabilities gate: loading mode/capabilities.json and
 * composing the constraints text of a turn.
 * Pure: no I/O.
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gate.h"

struct gate_mode {
	unsigned	 tools;
	char		*claims[GATE_LIST_MAX];
	size_t		 nclaims;
	char		*behavior[GATE_LIST_MAX];
	size_t		 nbehavior;
	char		*prompt[MODE__COUNT];	/* by target mode */
};

struct gate {
	struct gate_mode	 m[MODE__COUNT];
	char			*revisit;	/* objection_revisit; NULL */
	char			*file;		/* for cross-file checks */
	int			 oom;
};

/* A copy of s, noting allocation failure in g. */
static char *
gate_strdup(struct gate *g, const char *s)
{
	char	*p;

	if ((p = strdup(s)) == NULL)
		g->oom = 1;
	return p;
}

/* Read the string array modes.<mode>.<key> into list. */
static size_t
load_list(struct gate *g, const struct flat *f, const char *mode,
    const char *key, char **list, struct diag *d)
{
	const char	*s;
	size_t		 i, n = 0;

	for (i = 0; (s = flat_str(f, "modes.%s.%s.%zu", mode, key, i)) !=
	    NULL; i++) {
		if (n == GATE_LIST_MAX) {
			diag_add(d, f->file, "", "modes.%s.%s: more than %d",
			    mode, key, GATE_LIST_MAX);
			break;
		}
		list[n++] = gate_strdup(g, s);
	}
	return n;
}

/* Layer 1 of one mode: known tool names only. */
static void
load_tools(struct gate *g, const struct flat *f, const char *mode, int m,
    struct diag *d)
{
	const char	*s;
	size_t		 i;
	int		 t;

	if (flat_get(f, "modes.%s.tools", mode) == NULL &&
	    flat_str(f, "modes.%s.tools.0", mode) == NULL)
		diag_add(d, f->file, "", "modes.%s.tools: missing", mode);
	for (i = 0; (s = flat_str(f, "modes.%s.tools.%zu", mode, i)) !=
	    NULL; i++) {
		if ((t = tool_from_name(s)) == -1)
			diag_add(d, f->file, "", "modes.%s.tools.%zu: unknown "
			    "tool \"%s\"", mode, i, s);
		else
			g->m[m].tools |= 1u << t;
	}
}

/* The micro-confirmation prompts of one mode, keyed by target mode. */
static void
load_prompts(struct gate *g, const struct flat *f, const char *mode, int m,
    struct diag *d)
{
	char		 names[MODE__COUNT + 4][FLAT_NAME_MAX], key[96];
	const char	*s;
	size_t		 n, i;
	int		 to;

	snprintf(key, sizeof key, "modes.%s.micro_confirmation", mode);
	n = flat_children(f, key, names, MODE__COUNT + 4);
	for (i = 0; i < n && i < MODE__COUNT + 4; i++) {
		if ((to = mode_from_name(names[i])) == -1 || to == m) {
			diag_add(d, f->file, "", "%s.%s: unknown target mode",
			    key, names[i]);
			continue;
		}
		if ((s = flat_str(f, "%s.%s", key, names[i])) == NULL ||
		    *s == '\0')
			diag_add(d, f->file, "", "%s.%s: must be a non-empty "
			    "string", key, names[i]);
		else
			g->m[m].prompt[to] = gate_strdup(g, s);
	}
}

/* One mode's block; every key must be known. */
static void
load_mode(struct gate *g, const struct flat *f, const char *mode, int m,
    struct diag *d)
{
	char	names[8][FLAT_NAME_MAX], key[64];
	size_t	n, i;

	snprintf(key, sizeof key, "modes.%s", mode);
	n = flat_children(f, key, names, 8);
	for (i = 0; i < n && i < 8; i++)
		if (strcmp(names[i], "tools") != 0 &&
		    strcmp(names[i], "forbidden_claims") != 0 &&
		    strcmp(names[i], "required_behavior") != 0 &&
		    strcmp(names[i], "micro_confirmation") != 0)
			diag_add(d, f->file, key, "unknown key \"%s\"",
			    names[i]);
	load_tools(g, f, mode, m, d);
	g->m[m].nclaims = load_list(g, f, mode, "forbidden_claims",
	    g->m[m].claims, d);
	g->m[m].nbehavior = load_list(g, f, mode, "required_behavior",
	    g->m[m].behavior, d);
	load_prompts(g, f, mode, m, d);
}

struct gate *
gate_load(const struct flat *f, struct diag *d)
{
	struct gate	*g;
	char		 names[MODE__COUNT + 4][FLAT_NAME_MAX];
	size_t		 n, i;
	int		 m;

	if ((g = calloc(1, sizeof *g)) == NULL) {
		diag_add(d, f->file, "", "out of memory");
		return NULL;
	}
	g->file = gate_strdup(g, f->file);
	n = flat_children(f, "", names, MODE__COUNT + 4);
	for (i = 0; i < n && i < MODE__COUNT + 4; i++)
		if (strcmp(names[i], "modes") != 0 &&
		    strcmp(names[i], "objection_revisit") != 0)
			diag_add(d, f->file, "", "unknown key \"%s\"",
			    names[i]);
	if (flat_get(f, "objection_revisit") != NULL) {
		const char *r = flat_str(f, "objection_revisit");
		if (r == NULL || strstr(r, "{objecao}") == NULL)
			diag_add(d, f->file, "objection_revisit", "must be a "
			    "text naming the objection with {objecao}");
		else
			g->revisit = gate_strdup(g, r);
	}
	n = flat_children(f, "modes", names, MODE__COUNT + 4);
	for (i = 0; i < n && i < MODE__COUNT + 4; i++)
		if (mode_from_name(names[i]) == -1)
			diag_add(d, f->file, "modes", "unknown mode \"%s\"",
			    names[i]);
	for (m = 0; m < MODE__COUNT; m++) {
		for (i = 0; i < n && i < MODE__COUNT + 4; i++)
			if (strcmp(names[i], mode_name(m)) == 0)
				break;
		if (i == n || i == MODE__COUNT + 4)
			diag_add(d, f->file, "", "modes.%s: missing",
			    mode_name(m));
		else
			load_mode(g, f, mode_name(m), m, d);
	}
	if (g->oom) {
		diag_add(d, f->file, "", "out of memory");
		gate_free(g);
		return NULL;
	}
	return g;
}

void
gate_free(struct gate *g)
{
	size_t	i;
	int	m;

	if (g == NULL)
		return;
	free(g->revisit);
	for (m = 0; m < MODE__COUNT; m++) {
		for (i = 0; i < g->m[m].nclaims; i++)
			free(g->m[m].claims[i]);
		for (i = 0; i < g->m[m].nbehavior; i++)
			free(g->m[m].behavior[i]);
		for (i = 0; i < MODE__COUNT; i++)
			free(g->m[m].prompt[i]);
	}
	free(g->file);
	free(g);
}

unsigned
gate_tools(const struct gate *g, enum mode m)
{
	return m < MODE__COUNT ? g->m[m].tools : 0;
}

bool
gate_tool_allowed(const struct gate *g, enum mode m, enum tool t)
{
	return t < TOOL__COUNT && (gate_tools(g, m) & (1u << t)) != 0;
}

size_t
gate_claim_count(const struct gate *g, enum mode m)
{
	return m < MODE__COUNT ? g->m[m].nclaims : 0;
}

const char *
gate_claim(const struct gate *g, enum mode m, size_t i)
{
	return i < gate_claim_count(g, m) ? g->m[m].claims[i] : NULL;
}

size_t
gate_behavior_count(const struct gate *g, enum mode m)
{
	return m < MODE__COUNT ? g->m[m].nbehavior : 0;
}

const char *
gate_behavior(const struct gate *g, enum mode m, size_t i)
{
	return i < gate_behavior_count(g, m) ? g->m[m].behavior[i] : NULL;
}

const char *
gate_confirm_prompt(const struct gate *g, enum mode from, enum mode to)
{
	if (from >= MODE__COUNT || to >= MODE__COUNT)
		return NULL;
	return g->m[from].prompt[to];
}

void
gate_check_prompts(const struct gate *g, const struct matrix *mx,
    struct diag *d)
{
	const struct transition	*t;
	size_t			 i;

	for (i = 0; i < matrix_count(mx); i++) {
		t = matrix_at(mx, i);
		if (t->how == HOW_CONFIRM &&
		    gate_confirm_prompt(g, t->from, t->to) == NULL)
			diag_add(d, g->file, "", "modes.%s.micro_confirmation."
			    "%s: missing (the transition %s -> %s needs "
			    "confirmation)", mode_name(t->from),
			    mode_name(t->to), mode_name(t->from),
			    mode_name(t->to));
	}
}

void
gate_check_claims(const struct gate *g, gate_claim_text_fn fn,
    const void *ctx, struct diag *d)
{
	size_t	i;
	int	m;

	for (m = 0; m < MODE__COUNT; m++)
		for (i = 0; i < g->m[m].nclaims; i++)
			if (fn(ctx, g->m[m].claims[i]) == NULL)
				diag_add(d, g->file, "", "modes.%s."
				    "forbidden_claims.%zu: unknown claim "
				    "\"%s\"", mode_name(m), i,
				    g->m[m].claims[i]);
}

/* Append s to out at *len, keeping it NUL-terminated and bounded. */
static void
text_add(char *out, size_t outlen, size_t *len, const char *s)
{
	size_t	n = strlen(s);

	if (*len + 1 >= outlen)
		return;
	if (n > outlen - *len - 1)
		n = outlen - *len - 1;
	memcpy(out + *len, s, n);
	*len += n;
	out[*len] = '\0';
}

size_t
gate_join(const char *const *parts, size_t n, char *out, size_t outlen)
{
	size_t	i, len = 0;
	int	any = 0;

	if (outlen == 0)
		return 0;
	out[0] = '\0';
	for (i = 0; i < n; i++) {
		if (parts[i] == NULL || parts[i][0] == '\0')
			continue;
		if (any)
			text_add(out, outlen, &len, GATE_SEPARATOR);
		text_add(out, outlen, &len, parts[i]);
		any = 1;
	}
	return len;
}

size_t
gate_mode_text(const struct gate *g, enum mode m, gate_claim_text_fn fn,
    const void *ctx, char *out, size_t outlen)
{
	const char	*s;
	size_t		 i, len = 0;

	if (outlen == 0)
		return 0;
	out[0] = '\0';
	text_add(out, outlen, &len, "## MODO ATUAL: ");
	text_add(out, outlen, &len, mode_name(m));
	if (gate_claim_count(g, m) > 0)
		text_add(out, outlen, &len, "\n\nVocê NÃO pode:");
	for (i = 0; i < gate_claim_count(g, m); i++) {
		s = fn != NULL ? fn(ctx, gate_claim(g, m, i)) : NULL;
		text_add(out, outlen, &len, "\n- ");
		text_add(out, outlen, &len, s != NULL ? s :
		    gate_claim(g, m, i));
	}
	if (gate_behavior_count(g, m) > 0)
		text_add(out, outlen, &len, "\n\nVocê DEVE:");
	for (i = 0; i < gate_behavior_count(g, m); i++) {
		text_add(out, outlen, &len, "\n- ");
		text_add(out, outlen, &len, gate_behavior(g, m, i));
	}
	return len;
}

const char *
gate_revisit_prompt(const struct gate *g)
{
	return g->revisit;
}

size_t
gate_constraints(const struct gate *g, enum mode m, int pending,
    const char *policy_constraints, gate_claim_text_fn fn, const void *ctx,
    char *out, size_t outlen)
{
	char		 modetext[GATE_TEXT_MAX];
	const char	*parts[3];

	gate_mode_text(g, m, fn, ctx, modetext, sizeof modetext);
	parts[0] = policy_constraints;
	parts[1] = modetext;
	parts[2] = pending >= 0 && pending < MODE__COUNT ?
	    gate_confirm_prompt(g, m, (enum mode)pending) : NULL;
	return gate_join(parts, 3, out, outlen);
}
