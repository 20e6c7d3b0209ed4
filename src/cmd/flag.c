/*
 * cmd_flag.c -- modegate flag list | get NAME | set NAME on|off|shadow
 * [--percent N] [--by WHO] [--reason TEXT]: the runtime feature flags
 * (table feature_flags). A change goes through mg_flag_set (sql/functions/):
 * the database records it in feature_flag_changes and NOTIFYs every
 * running modegate.
 * SPDX-License-Identifier: MIT
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "db/cliconn.h"

#define FLAG_COLS "name, value, percent, " \
	"to_char(updated_at, 'YYYY-MM-DD HH24:MI:SSOF') AS updated_at, " \
	"updated_by, reason"

static const char flag_usage[] =
    "usage: modegate flag list\n"
    "       modegate flag get NAME\n"
    "       modegate flag set NAME on|off|shadow [--percent N] [--by WHO] "
    "[--reason TEXT]\n";

/* Print the rows of sql (one parameter or none); 1 row required if one. */
static int
flag_show(PGconn *pg, const char *sql, const char *name)
{
	PGresult	*res;
	int		 rc = 0;

	if ((res = opsdb_query(pg, "flag", sql, name != NULL ? 1 : 0,
	    &name, &rc)) == NULL)
		return rc;
	if (name != NULL && PQntuples(res) == 0) {
		fprintf(stderr, "flag: unknown flag \"%s\"\n", name);
		rc = 1;
	} else
		opsdb_print(stdout, res);
	PQclear(res);
	return rc;
}

/* A percentage 0..100, or -1. */
static int
flag_percent(const char *s)
{
	char	*end;
	long	 v;

	v = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || v < 0 || v > 100)
		return -1;
	return (int)v;
}

/* Parse flag set NAME VALUE [options] into p[5] (mg_flag_set's
 * parameters); 0 or EX_USAGE_CODE after saying why. */
static int
flag_set_parse(int argc, char **argv, const char **p)
{
	static const struct option opts[] = {
		{ "percent", required_argument, NULL, 'p' },
		{ "by", required_argument, NULL, 'b' },
		{ "reason", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 }
	};
	int	 c;

	p[3] = getenv("USER");		/* NULL: the database user */
	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'p' && flag_percent(optarg) >= 0)
			p[2] = optarg;
		else if (c == 'p') {
			fprintf(stderr, "flag: --percent %s: must be a whole "
			    "number from 0 to 100\n", optarg);
			return EX_USAGE_CODE;
		} else if (c == 'b')
			p[3] = optarg;
		else if (c == 'r')
			p[4] = optarg;
		else {
			fputs(flag_usage, stderr);
			return EX_USAGE_CODE;
		}
	}
	if (argc - optind != 2) {
		fputs(flag_usage, stderr);
		return EX_USAGE_CODE;
	}
	p[0] = argv[optind];
	p[1] = argv[optind + 1];
	if (strcmp(p[1], "on") != 0 && strcmp(p[1], "off") != 0 &&
	    strcmp(p[1], "shadow") != 0) {
		fprintf(stderr, "flag: value \"%s\": use on, off or shadow\n",
		    p[1]);
		return EX_USAGE_CODE;
	}
	return 0;
}

/* Set a flag (parameters from flag_set_parse) and print its new state. */
static int
flag_set(PGconn *pg, const char *const *p)
{
	PGresult	*res;
	int		 rc = 0;

	if ((res = opsdb_query(pg, "flag", "SELECT " FLAG_COLS " FROM "
	    "mg_flag_set($1, $2, $3::int, $4, $5)", 5, p, &rc)) == NULL)
		return rc;
	opsdb_print(stdout, res);
	PQclear(res);
	return 0;
}

/* Check the verb's arguments before connecting: 0 or EX_USAGE_CODE. */
static int
flag_check(int argc, char **argv)
{
	if (argc < 2)
		return EX_USAGE_CODE;
	if (strcmp(argv[1], "list") == 0)
		return argc == 2 ? 0 : EX_USAGE_CODE;
	if (strcmp(argv[1], "get") == 0)
		return argc == 3 ? 0 : EX_USAGE_CODE;
	return EX_USAGE_CODE;
}

int
cmd_flag(int argc, char **argv)
{
	const char	*p[5] = { NULL, NULL, NULL, NULL, NULL };
	PGconn		*pg;
	int		 rc;

	if (argc == 2 && strcmp(argv[1], "--help") == 0) {
		fputs(flag_usage, stdout);
		return 0;
	}
	if (argc >= 2 && strcmp(argv[1], "set") == 0) {
		if (flag_set_parse(argc - 1, argv + 1, p) != 0)
			return EX_USAGE_CODE;
	} else if (flag_check(argc, argv) != 0) {
		fputs(flag_usage, stderr);
		return EX_USAGE_CODE;
	}
	if ((pg = opsdb_connect("flag", &rc)) == NULL)
		return rc;
	if (strcmp(argv[1], "list") == 0)
		rc = flag_show(pg, "SELECT " FLAG_COLS " FROM feature_flags "
		    "ORDER BY name", NULL);
	else if (strcmp(argv[1], "get") == 0)
		rc = flag_show(pg, "SELECT " FLAG_COLS " FROM feature_flags "
		    "WHERE name = $1", argv[2]);
	else
		rc = flag_set(pg, p);
	PQfinish(pg);
	return rc;
}
