/*
 * cmd_guard.c -- modegate guard --mode M: check replies, one a line on
 * stdin, against the claims forbidden in mode M, and print "OK" or
 * "VIOLATION<TAB>id[,id...]" a line (every violated claim, in the order
 * mode/capabilities.json lists them).
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "config.h"
#include "rules.h"
#include "ruleset.h"
#include "../mode/gate.h"
#include "../mode/guard.h"

#ifndef MG_RULES_DIR
#define MG_RULES_DIR "."
#endif

#define CLAIMS_LABEL	"mode/claims.json"
#define CAPS_LABEL	"mode/capabilities.json"

/* Print every diagnostic to stderr. */
static void
guard_print_diag(const struct diag *d)
{
	size_t	i;

	for (i = 0; i < d->n; i++)
		fprintf(stderr, "%s\n", d->msg[i]);
	if (d->dropped > 0)
		fprintf(stderr, "... and %zu more problems\n", d->dropped);
}

/* The prompt of claim id, or NULL when unknown (gate_claim_text_fn). */
static const char *
guard_claim_text(const void *ctx, const char *id)
{
	const struct claims	*cl = ctx;

	return claims_prompt(cl, claims_find(cl, id));
}

/*
 * Load mode/capabilities.json with the gate's loader (every problem, and
 * claim ids unknown to cl, go to d) and fill which with the claims mode m
 * forbids. Returns the count.
 */
static size_t
guard_mode_claims(const struct claims *cl, const char *path, enum mode m,
    int *which, struct diag *d)
{
	struct flat	 caps;
	struct gate	*g;
	size_t		 i, nw = 0;
	int		 idx;

	if (rules_read_flat(path, CAPS_LABEL, &caps, d) == -1)
		return 0;
	g = gate_load(&caps, d);
	flat_free(&caps);
	if (g == NULL)
		return 0;
	gate_check_claims(g, guard_claim_text, cl, d);
	for (i = 0; i < gate_claim_count(g, m) && nw < GUARD_MAX_CLAIMS; i++)
		if ((idx = claims_find(cl, gate_claim(g, m, i))) != -1)
			which[nw++] = idx;
	gate_free(g);
	return nw;
}

/* Read stdin line by line and print the verdict of each. */
static int
guard_lines(const struct claims *cl, const int *which, size_t nwhich)
{
	int	 viol[GUARD_MAX_CLAIMS];
	char	*line = NULL;
	size_t	 cap = 0, nv, i;
	ssize_t	 len;

	while ((len = getline(&line, &cap, stdin)) != -1) {
		while (len > 0 && (line[len - 1] == '\n' ||
		    line[len - 1] == '\r'))
			len--;
		nv = guard_check(cl, which, nwhich, line, (size_t)len, viol,
		    GUARD_MAX_CLAIMS);
		if (nv == 0) {
			puts("OK");
			continue;
		}
		fputs("VIOLATION\t", stdout);
		for (i = 0; i < nv && i < GUARD_MAX_CLAIMS; i++)
			printf("%s%s", i > 0 ? "," : "", claims_id(cl, viol[i]));
		putchar('\n');
	}
	free(line);
	return ferror(stdin) ? 1 : 0;
}

/*
 * Load claims.json and, when present, the mode's forbidden claims from
 * capabilities.json; without it every claim applies (with a warning).
 * Returns the table or NULL with the problems in d.
 */
static struct claims *
guard_load(const char *dir, enum mode mode, int *which, size_t *nwhich,
    struct model **model, struct diag *d)
{
	const char	*labels[MODEL_MAX_LABELS];
	struct flat	 f;
	struct claims	*cl;
	char		 path[4096];
	size_t		 i;
	bool		 absent;

	snprintf(path, sizeof path, "%s/%s", dir, CLAIMS_LABEL);
	if (rules_read_flat(path, CLAIMS_LABEL, &f, d) == -1)
		return NULL;
	cl = claims_load(&f, d);
	flat_free(&f);
	if (cl == NULL)
		return NULL;
	*model = ruleset_load_model(dir, "mode/guard.model", "guard", labels,
	    ruleset_guard_labels(cl, labels), &absent, d);
	if (*model == NULL && !absent) {
		claims_free(cl);
		return NULL;
	}
	claims_set_model(cl, *model);
	snprintf(path, sizeof path, "%s/%s", dir, CAPS_LABEL);
	if (access(path, F_OK) == -1 && errno == ENOENT) {
		fprintf(stderr, "modegate guard: warning: %s not found; "
		    "checking every claim\n", CAPS_LABEL);
		for (i = 0; i < claims_count(cl); i++)
			which[i] = (int)i;
		*nwhich = claims_count(cl);
		return cl;
	}
	*nwhich = guard_mode_claims(cl, path, mode, which, d);
	if (d->n > 0) {
		claims_free(cl);
		model_free(*model);
		*model = NULL;
		return NULL;
	}
	return cl;
}

int
cmd_guard(int argc, char **argv)
{
	struct diag	 d;
	struct claims	*cl;
	struct model	*model = NULL;
	const char	*dir, *mode = NULL;
	int		 which[GUARD_MAX_CLAIMS], rc, m = -1;
	size_t		 nwhich = 0;

	if (argc == 3 && strcmp(argv[1], "--mode") == 0)
		mode = argv[2];
	if (mode == NULL || (m = mode_from_name(mode)) == -1) {
		if (mode != NULL)
			fprintf(stderr, "modegate guard: unknown mode \"%s\"\n",
			    mode);
		fprintf(stderr, "usage: modegate guard --mode "
		    "discovery|oferta|followup|reativacao\n");
		return EX_USAGE_CODE;
	}
	if ((dir = getenv("MODEGATE_RULES_DIR")) == NULL || *dir == '\0')
		dir = MG_RULES_DIR;
	diag_init(&d);
	if ((cl = guard_load(dir, (enum mode)m, which, &nwhich, &model,
	    &d)) == NULL) {
		guard_print_diag(&d);
		return EX_CONFIG_CODE;
	}
	rc = guard_lines(cl, which, nwhich);
	claims_free(cl);
	model_free(model);
	return rc;
}
