/*
 * cmd_migrate.c -- modegate migrate: bring the database schema up to the
 * newest sql/NNNN_*.sql and re-apply the files of sql/functions/. Needs
 * only DATABASE_URL (and MODEGATE_RULES_DIR when sql/ is not under the
 * compiled-in default).
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>

#include <json-c/json.h>

#include "cmd/cmd.h"
#include "base/config.h"
#include "db/pool.h"
#include "db/migrate.h"

#ifndef MG_RULES_DIR
#define MG_RULES_DIR "."
#endif

/*
 * The rule files' values SQL reads (rule_settings, sql/0010): the
 * router's pending timeout of mode/transitions.json. 0 or -1 with err.
 */
static int
migrate_rule_settings(PGconn *pg, const char *dir, char *err, size_t len)
{
	json_object	*o, *v;
	PGresult	*res;
	char		 path[4096], min[16];
	const char	*p[1] = { min };
	int		 ok;

	snprintf(path, sizeof path, "%s/mode/transitions.json", dir);
	if ((o = json_object_from_file(path)) == NULL) {
		snprintf(err, len, "%.900s: cannot read (modegate check-config "
		    "says why)", path);
		return -1;
	}
	ok = json_object_object_get_ex(o, "pending_timeout_minutes", &v) &&
	    json_object_is_type(v, json_type_int) && json_object_get_int(v) > 0;
	if (ok)
		snprintf(min, sizeof min, "%d", json_object_get_int(v));
	json_object_put(o);
	if (!ok)
		return 0;	/* the router's default stands */
	res = PQexecParams(pg, "SELECT mg_rule_setting_set("
	    "'pending_timeout_minutes', $1, 'mode/transitions.json')", 1, NULL,
	    p, NULL, NULL, 0);
	ok = PQresultStatus(res) == PGRES_TUPLES_OK;
	if (!ok)
		snprintf(err, len, "rule_settings: %s", PQresultErrorField(res,
		    PG_DIAG_MESSAGE_PRIMARY) != NULL ? PQresultErrorField(res,
		    PG_DIAG_MESSAGE_PRIMARY) : "error");
	PQclear(res);
	return ok ? 0 : -1;
}

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
	if (rc == 0)
		rc = migrate_rule_settings(pg, dir != NULL && *dir != '\0' ?
		    dir : MG_RULES_DIR, err, sizeof err);
	PQfinish(pg);
	if (rc == -1) {
		fprintf(stderr, "migrate: %s\n", err);
		return 1;
	}
	printf("migrate: %d applied, schema up to date; functions: %d files "
	    "re-applied\n", applied, functions);
	return 0;
}
