/*
 * opsdb.c -- blocking database helpers for the operators' commands:
 * connect, one parameterised statement, an aligned table.
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "base/config.h"
#include "db/pool.h"
#include "db/cliconn.h"

#define OPSDB_MAXCOLS	32

/* Connect to $DATABASE_URL or say why not. */
PGconn *
opsdb_connect(const char *cmd, int *rc)
{
	const char	*url = getenv("DATABASE_URL");
	char		 err[1024];
	PGconn		*pg;

	if (url == NULL || *url == '\0') {
		fprintf(stderr, "%s: DATABASE_URL: is required but not set\n",
		    cmd);
		*rc = EX_CONFIG_CODE;
		return NULL;
	}
	if ((pg = db_connect(url, err, sizeof err)) == NULL) {
		fprintf(stderr, "%s: cannot connect: %s\n", cmd, err);
		*rc = 1;
	}
	return pg;
}

/* One statement with text parameters; errors printed, classified. */
PGresult *
opsdb_query(PGconn *pg, const char *cmd, const char *sql, int n,
    const char *const *params, int *rc)
{
	PGresult	*res;
	const char	*state, *msg;

	res = PQexecParams(pg, sql, n, NULL, params, NULL, NULL, 0);
	if (res != NULL && (PQresultStatus(res) == PGRES_TUPLES_OK ||
	    PQresultStatus(res) == PGRES_COMMAND_OK))
		return res;
	state = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	msg = res != NULL ? PQresultErrorField(res,
	    PG_DIAG_MESSAGE_PRIMARY) : NULL;
	fprintf(stderr, "%s: %s\n", cmd, msg != NULL ? msg :
	    PQerrorMessage(pg));
	*rc = state != NULL && strncmp(state, "22", 2) == 0 ?
	    EX_USAGE_CODE : 1;
	PQclear(res);
	return NULL;
}

/* The text to show for one cell. */
static const char *
opsdb_cell(const PGresult *res, int r, int c)
{
	const char	*v;

	if (PQgetisnull(res, r, c))
		return "-";
	v = PQgetvalue(res, r, c);
	if (PQftype(res, c) == 16)	/* BOOLOID */
		return strcmp(v, "t") == 0 ? "yes" : "no";
	return v;
}

/* Print a result as an aligned table. */
void
opsdb_print(FILE *fp, const PGresult *res)
{
	size_t	w[OPSDB_MAXCOLS], len;
	int	nc = PQnfields(res), nr = PQntuples(res), r, c;

	if (nc > OPSDB_MAXCOLS)
		nc = OPSDB_MAXCOLS;
	for (c = 0; c < nc; c++) {
		w[c] = strlen(PQfname(res, c));
		for (r = 0; r < nr; r++)
			if ((len = strlen(opsdb_cell(res, r, c))) > w[c])
				w[c] = len;
	}
	for (c = 0; c < nc; c++)
		fprintf(fp, "%-*s%s", c + 1 < nc ? (int)w[c] : 0,
		    PQfname(res, c), c + 1 < nc ? "  " : "\n");
	for (c = 0; c < nc; c++) {
		for (len = 0; len < w[c]; len++)
			fputc('-', fp);
		fputs(c + 1 < nc ? "  " : "\n", fp);
	}
	for (r = 0; r < nr; r++)
		for (c = 0; c < nc; c++)
			fprintf(fp, "%-*s%s", c + 1 < nc ? (int)w[c] : 0,
			    opsdb_cell(res, r, c), c + 1 < nc ? "  " : "\n");
}
