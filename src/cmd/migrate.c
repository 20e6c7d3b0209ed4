/*
 * cmd_migrate.c -- modegate migrate: bring the database schema up to the
 * newest sql/NNNN_*.sql and re-apply the files of sql/functions/. Needs
 * only DATABASE_URL (and MODEGATE_RULES_DIR when sql/ is not under the
 * compiled-in default).
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>

#include "cmd/cmd.h"
#include "base/config.h"
#include "db/pool.h"
#include "db/migrate.h"

#ifndef MG_RULES_DIR
#define MG_RULES_DIR "."
#endif

int
cmd_migrate(int argc, char **argv)
{
	const char	*url = getenv("DATABASE_URL");
	const char	*dir = getenv("MODEGATE_RULES_DIR");
	char		 sqldir[4096], err[1024];
	PGconn		*pg;
	int		 applied, functions, rc;

	if (argc > 1) {
		fprintf(stderr, "usage: modegate migrate\n");
		return EX_USAGE_CODE;
	}
	if (url == NULL || *url == '\0') {
		fprintf(stderr, "DATABASE_URL: is required but not set\n");
		return EX_CONFIG_CODE;
	}
	snprintf(sqldir, sizeof sqldir, "%s/sql",
	    dir != NULL && *dir != '\0' ? dir : MG_RULES_DIR);
	if ((pg = db_connect(url, err, sizeof err)) == NULL) {
		fprintf(stderr, "migrate: cannot connect: %s\n", err);
		return 1;
	}
	rc = migrate_run(pg, sqldir, &applied, &functions, err, sizeof err);
	PQfinish(pg);
	if (rc == -1) {
		fprintf(stderr, "migrate: %s\n", err);
		return 1;
	}
	printf("migrate: %d applied, schema up to date; functions: %d files "
	    "re-applied\n", applied, functions);
	return 0;
}
