/*
 * cmd_guard.c -- modegate guard --mode M: check replies, one a line on
 * stdin, against the claims forbidden in mode M (the core's
 * turn_claims_made, as the worker's guard), and print "OK" or
 * "VIOLATION<TAB>id[,id...]" a line (every violated claim, in
 * claims.json's order).
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "base/config.h"
#include "rules/flatfile.h"
#include "rules/ruleset.h"

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

/* Read stdin line by line and print the core's verdict on each. */
static int
guard_lines(const struct ruleset *rs, enum mode m)
{
	const char	*ids[TURN_VIOLATIONS_MAX];
	char		*line = NULL;
	size_t		 cap = 0, nv, i;
	ssize_t		 len;

	while ((len = getline(&line, &cap, stdin)) != -1) {
		while (len > 0 && (line[len - 1] == '\n' ||
		    line[len - 1] == '\r'))
			line[--len] = '\0';
		nv = turn_claims_made(rs, 1u << m, line, ids,
		    TURN_VIOLATIONS_MAX);
		if (nv == 0) {
			puts("OK");
			continue;
		}
		fputs("VIOLATION\t", stdout);
		for (i = 0; i < nv && i < TURN_VIOLATIONS_MAX; i++)
			printf("%s%s", i > 0 ? "," : "", ids[i]);
		putchar('\n');
	}
	free(line);
	return ferror(stdin) ? 1 : 0;
}

/* Load one rule file of dir into f; -1 with the problem in d. */
static int
guard_read(const char *dir, const char *label, struct flat *f,
    struct diag *d)
{
	char	path[4096];

	snprintf(path, sizeof path, "%s/%s", dir, label);
	return rules_read_flat(path, label, f, d);
}

/*
 * The two rule files the guard needs, claims.json and capabilities.json
 * (a partial rules folder will do), and mode/guard.model when present,
 * into rs; 0, or -1 with every problem
 * in d.
 */
static int
guard_load(const char *dir, struct ruleset *rs, struct diag *d)
{
	const char	*labels[MODEL_MAX_LABELS];
	struct flat	 f;
	bool		 absent;

	memset(rs, 0, sizeof *rs);
	if (guard_read(dir, CLAIMS_LABEL, &f, d) == 0) {
		rs->claims = claims_load(&f, d);
		flat_free(&f);
	}
	/* The learned guard, when its weights file is there. */
	if (rs->claims != NULL) {
		rs->guard_model = ruleset_load_model(dir, "mode/guard.model",
		    "guard", labels, ruleset_guard_labels(rs->claims, labels),
		    &absent, d);
		claims_set_model(rs->claims, rs->guard_model);
	}
	if (guard_read(dir, CAPS_LABEL, &f, d) == 0) {
		rs->gate = gate_load(&f, d);
		flat_free(&f);
	}
	if (rs->gate != NULL && rs->claims != NULL)
		gate_check_claims(rs->gate, turn_claim_text, rs->claims, d);
	return d->n + d->dropped > 0 || rs->gate == NULL ||
	    rs->claims == NULL ? -1 : 0;
}

int
cmd_guard(int argc, char **argv)
{
	struct diag	 d;
	struct ruleset	 rs;
	const char	*dir, *mode = NULL;
	int		 rc = EX_CONFIG_CODE, m = -1;

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
	if (guard_load(dir, &rs, &d) == 0)
		rc = guard_lines(&rs, (enum mode)m);
	else
		guard_print_diag(&d);
	claims_free(rs.claims);
	model_free(rs.guard_model);
	gate_free(rs.gate);
	return rc;
}
