/*
 * cmd_funnel.c -- modegate funnel [--since DATE] [--until DATE]: the
 * seed's four funnel metrics (bridge rate, conversion rate, time to
 * bridge, follow-up rate) overall and per day, each beside its target,
 * as an aligned table: mg_funnel_metrics (the view funnel_metrics with a
 * day range; sql/functions/70_funnel.sql).
 * SPDX-License-Identifier: MIT
 */
#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "db/cliconn.h"

static const char funnel_usage[] =
    "usage: modegate funnel [--since YYYY-MM-DD] [--until YYYY-MM-DD]\n";

static const char funnel_sql[] =
    "SELECT period, metric, coalesce(value::text || ' ' || unit, '-') "
    "AS value, target, met, "
    "coalesce(numerator::text || '/', '') || denominator AS n "
    "FROM mg_funnel_metrics($1::date, $2::date) ORDER BY day NULLS FIRST, ord";

/* s looks like YYYY-MM-DD (the database checks the calendar). */
static int
funnel_date_ok(const char *s)
{
	int	i;

	if (strlen(s) != 10 || s[4] != '-' || s[7] != '-')
		return 0;
	for (i = 0; i < 10; i++)
		if (i != 4 && i != 7 && !isdigit((unsigned char)s[i]))
			return 0;
	return 1;
}

int
cmd_funnel(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "since", required_argument, NULL, 's' },
		{ "until", required_argument, NULL, 'u' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char	*p[2] = { NULL, NULL };
	PGconn		*pg;
	PGresult	*res;
	int		 c, rc = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(funnel_usage, stdout);
			return 0;
		}
		if ((c != 's' && c != 'u') || !funnel_date_ok(optarg)) {
			if (c == 's' || c == 'u')
				fprintf(stderr, "funnel: --%s %s: not a date "
				    "(YYYY-MM-DD)\n", c == 's' ? "since" :
				    "until", optarg);
			fputs(funnel_usage, stderr);
			return EX_USAGE_CODE;
		}
		p[c == 's' ? 0 : 1] = optarg;
	}
	if (optind != argc) {
		fputs(funnel_usage, stderr);
		return EX_USAGE_CODE;
	}
	if ((pg = opsdb_connect("funnel", &rc)) == NULL)
		return rc;
	if ((res = opsdb_query(pg, "funnel", funnel_sql, 2, p, &rc)) != NULL) {
		opsdb_print(stdout, res);
		PQclear(res);
	}
	PQfinish(pg);
	return rc;
}
