/*
 * cmd_lgpd.c -- the data subject's rights under the LGPD (Art. 18):
 * modegate forget WA_ID erases one doctor's personal data everywhere
 * (mg_forget), modegate export WA_ID prints everything stored about the
 * doctor as JSON (mg_export). Both are audited in SQL
 * (sql/functions/95_lgpd.sql).
 *
 * Exit status: 0 done; 64 bad input; 1 nothing stored about WA_ID, or the
 * database failed; 75 (EX_TEMPFAIL) a turn or a send of the doctor is in
 * flight: nothing was changed, run it again in a minute.
 * SPDX-License-Identifier: MIT
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "db/cliconn.h"

#define EX_TEMPFAIL_CODE	75

static const char forget_usage[] =
    "usage: modegate forget WA_ID [--by WHO] [--reason TEXT]\n";
static const char export_usage[] =
    "usage: modegate export WA_ID [--by WHO]\n";

/* Run sql with params; the result, or NULL with *rc set from SQLSTATE. */
static PGresult *
lgpd_query(PGconn *pg, const char *cmd, const char *sql, int n,
    const char *const *params, int *rc)
{
	PGresult	*res;
	const char	*state, *msg;

	res = PQexecParams(pg, sql, n, NULL, params, NULL, NULL, 0);
	if (res != NULL && PQresultStatus(res) == PGRES_TUPLES_OK &&
	    PQntuples(res) == 1)
		return res;
	state = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	msg = res != NULL ? PQresultErrorField(res,
	    PG_DIAG_MESSAGE_PRIMARY) : NULL;
	if (state != NULL && strcmp(state, "55006") == 0)
		*rc = EX_TEMPFAIL_CODE;
	else if (state != NULL && strncmp(state, "22", 2) == 0)
		*rc = EX_USAGE_CODE;
	else
		*rc = 1;
	fprintf(stderr, "%s: %s%s\n", cmd, msg != NULL ? msg :
	    PQerrorMessage(pg), *rc == EX_TEMPFAIL_CODE ?
	    " (nothing was changed)" : "");
	PQclear(res);
	return NULL;
}

/* Parse WA_ID, --by and (forget) --reason; 0 or EX_USAGE_CODE. */
static int
lgpd_parse(int argc, char **argv, const char *usage, int with_reason,
    const char **wa_id, const char **by, const char **reason)
{
	static const struct option opts[] = {
		{ "by", required_argument, NULL, 'b' },
		{ "reason", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 }
	};
	int	 c;

	*by = getenv("USER");
	*reason = NULL;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'b')
			*by = optarg;
		else if (c == 'r' && with_reason)
			*reason = optarg;
		else
			goto bad;
	}
	if (argc - optind != 1 || *argv[optind] == '\0')
		goto bad;
	*wa_id = argv[optind];
	return 0;
bad:
	fputs(usage, stderr);
	return EX_USAGE_CODE;
}

int
cmd_forget(int argc, char **argv)
{
	const char	*p[3];
	PGconn		*pg;
	PGresult	*res;
	int		 rc = 0;

	if (argc == 2 && strcmp(argv[1], "--help") == 0) {
		fputs(forget_usage, stdout);
		return 0;
	}
	if ((rc = lgpd_parse(argc, argv, forget_usage, 1, &p[0], &p[1],
	    &p[2])) != 0)
		return rc;
	if ((pg = opsdb_connect("forget", &rc)) == NULL)
		return rc;
	res = lgpd_query(pg, "forget", "SELECT r ->> 'pseudonym', "
	    "jsonb_array_length(r -> 'conversations'), (r ->> 'inbox')::int, "
	    "(r ->> 'outbox')::int, (r ->> 'audit_log')::int "
	    "FROM mg_forget($1, $2, $3) r", 3, p, &rc);
	if (res != NULL) {
		printf("forget: %s conversation(s), %s message(s), %s "
		    "reply row(s), %s audit row(s) erased; the number is now "
		    "%s\n", PQgetvalue(res, 0, 1), PQgetvalue(res, 0, 2),
		    PQgetvalue(res, 0, 3), PQgetvalue(res, 0, 4),
		    PQgetvalue(res, 0, 0));
		PQclear(res);
	}
	PQfinish(pg);
	return rc;
}

int
cmd_export(int argc, char **argv)
{
	const char	*p[2], *reason;
	PGconn		*pg;
	PGresult	*res;
	int		 rc = 0;

	if (argc == 2 && strcmp(argv[1], "--help") == 0) {
		fputs(export_usage, stdout);
		return 0;
	}
	if ((rc = lgpd_parse(argc, argv, export_usage, 0, &p[0], &p[1],
	    &reason)) != 0)
		return rc;
	if ((pg = opsdb_connect("export", &rc)) == NULL)
		return rc;
	res = lgpd_query(pg, "export", "SELECT jsonb_pretty(mg_export($1, $2))",
	    2, p, &rc);
	if (res != NULL) {
		printf("%s\n", PQgetvalue(res, 0, 0));
		PQclear(res);
	}
	PQfinish(pg);
	return rc;
}
