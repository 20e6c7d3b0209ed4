/*
 * preflight.c -- the checks `serve` needs passed before it starts, shared
 * with `check-config` (see preflight.h).
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>

#include "db/migrate.h"
#include "cmd/preflight.h"
#include "rules/ruleset.h"

/* sql/: the migrations, whose newest number /readyz compares with. */
static void
preflight_sql(const char *dir, int *latest, struct diag *d)
{
	char	path[4096], err[512];
	int	v = 0;

	snprintf(path, sizeof path, "%s/sql", dir);
	if (migrate_latest(path, &v, err, sizeof err) == -1) {
		diag_add(d, "sql/", "", "missing (the migrations; serve "
		    "compares the database's schema with the newest)");
		return;
	}
	if (v == 0)
		diag_add(d, "sql/", "", "no NNNN_*.sql migration in it");
	if (latest != NULL)
		*latest = v;
}

int
preflight(struct config *cfg, int *latest, struct diag *d)
{
	struct ruleset	rs;
	size_t		before = d->n + d->dropped;

	if (config_load(cfg, d) == -1 && cfg->rules_dir == NULL)
		return -1;
	if (cfg->rules_dir != NULL) {
		if (ruleset_load(&rs, cfg->rules_dir, d) == 0)
			ruleset_free(&rs);
		preflight_sql(cfg->rules_dir, latest, d);
	}
	return d->n + d->dropped == before ? 0 : -1;
}

void
preflight_print(const struct diag *d)
{
	size_t	i;

	for (i = 0; i < d->n; i++)
		fprintf(stderr, "%s\n", d->msg[i]);
	if (d->dropped > 0)
		fprintf(stderr, "... and %zu more problems\n", d->dropped);
}
