/*
 * campaign.c -- modegate campaign start | status: an approved template to
 * a list of doctors, once per doctor per campaign (mg_campaign_start in
 * sql/functions/85_campaign.sql: skips, pacing, reativacao), and the
 * campaign's figures (mg_campaign_status).
 * SPDX-License-Identifier: MIT
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "db/cliconn.h"

#define CAMPAIGN_USAGE							\
	"usage: modegate campaign start ID --template NAME:LANG "		\
	"[--phone-number-id ID] [--rate N] (WA_ID... | --file F)\n"		\
	"       modegate campaign status ID\n"				\
	"start: sends the approved template NAME:LANG once to each listed "	\
	"doctor (WA_IDs, or\n"							\
	"one a line in F), skipping opted-out, cooling-off and "		\
	"human-controlled ones;\n"						\
	"a doctor without a conversation gets one on --phone-number-id. "	\
	"Reached\n"								\
	"conversations move to reativacao (mode_source campaign:ID). "	\
	"--rate: sends a\n"							\
	"minute (default 30). Running it again sends nothing new.\n"		\
	"status: queued, sent, replied, and skipped by reason.\n"

/* A PostgreSQL text[] literal of the doctors: argv's, then F's lines. */
static char *
campaign_list(char **ids, int n, const char *file)
{
	size_t	 cap = 64, len = 0, k;
	char	*s = malloc(cap), *line = NULL, *np, *w;
	size_t	 lcap = 0;
	ssize_t	 got;
	FILE	*fp = NULL;
	int	 i = 0, first = 1;

	if (s == NULL)
		return NULL;
	s[len++] = '{';
	if (file != NULL && (fp = strcmp(file, "-") == 0 ? stdin :
	    fopen(file, "r")) == NULL) {
		fprintf(stderr, "campaign: %s: cannot open\n", file);
		free(s);
		return NULL;
	}
	for (;;) {
		if (i < n)
			w = ids[i++];
		else if (fp != NULL && (got = getline(&line, &lcap, fp)) != -1) {
			line[strcspn(line, "\r\n")] = '\0';
			w = line;
		} else
			break;
		if (*w == '\0')
			continue;
		for (k = 0; w[k] != '\0'; k++)
			if (!(w[k] >= '0' && w[k] <= '9') &&
			    !(w[k] >= 'A' && w[k] <= 'Z') &&
			    !(w[k] >= 'a' && w[k] <= 'z') && w[k] != '.' &&
			    w[k] != '-' && w[k] != '_') {
				fprintf(stderr, "campaign: \"%s\" is not a "
				    "WA_ID\n", w);
				free(s);
				s = NULL;
				goto done;
			}
		if (len + k + 4 > cap) {
			cap = (len + k + 4) * 2;
			if ((np = realloc(s, cap)) == NULL) {
				free(s);
				s = NULL;
				goto done;
			}
			s = np;
		}
		len += (size_t)snprintf(s + len, cap - len, "%s%s",
		    first ? "" : ",", w);
		first = 0;
	}
	if (first) {
		fprintf(stderr, "campaign: no doctors listed\n");
		free(s);
		s = NULL;
		goto done;
	}
	snprintf(s + len, cap - len, "}");
done:
	if (fp != NULL && fp != stdin)
		fclose(fp);
	free(line);
	return s;
}

static int
campaign_start(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "template", required_argument, NULL, 't' },
		{ "phone-number-id", required_argument, NULL, 'n' },
		{ "rate", required_argument, NULL, 'r' },
		{ "file", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 }
	};
	const char	*tpl = NULL, *pnid = NULL, *rate = "30", *file = NULL;
	const char	*p[5];
	char		*list, *end;
	PGconn		*pg;
	PGresult	*res;
	int		 c, rc = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 't')
			tpl = optarg;
		else if (c == 'n')
			pnid = optarg;
		else if (c == 'r')
			rate = optarg;
		else if (c == 'f')
			file = optarg;
		else
			goto usage;
	}
	if (optind >= argc || tpl == NULL || strchr(tpl, ':') == NULL ||
	    strtol(rate, &end, 10) < 1 || *end != '\0')
		goto usage;
	if ((list = campaign_list(argv + optind + 1, argc - optind - 1,
	    file)) == NULL)
		return EX_USAGE_CODE;
	p[0] = argv[optind];
	p[1] = tpl;
	p[2] = pnid;
	p[3] = list;
	p[4] = rate;
	if ((pg = opsdb_connect("campaign", &rc)) != NULL) {
		if ((res = opsdb_query(pg, "campaign", "SELECT "
		    "mg_campaign_start($1, $2, $3, $4::text[], $5::int)", 5, p,
		    &rc)) != NULL) {
			printf("campaign %s: %s\n", argv[optind],
			    PQgetvalue(res, 0, 0));
			PQclear(res);
		}
		PQfinish(pg);
	}
	free(list);
	return rc;
usage:
	fputs(CAMPAIGN_USAGE, stderr);
	return EX_USAGE_CODE;
}

static int
campaign_status(int argc, char **argv)
{
	const char	*p[1];
	PGconn		*pg;
	PGresult	*res;
	int		 rc = 0, i;

	if (argc != 2) {
		fputs(CAMPAIGN_USAGE, stderr);
		return EX_USAGE_CODE;
	}
	p[0] = argv[1];
	if ((pg = opsdb_connect("campaign", &rc)) == NULL)
		return rc;
	if ((res = opsdb_query(pg, "campaign", "SELECT what, n FROM "
	    "mg_campaign_status($1)", 1, p, &rc)) != NULL) {
		for (i = 0; i < PQntuples(res); i++)
			printf("%-24s %s\n", PQgetvalue(res, i, 0),
			    PQgetvalue(res, i, 1));
		PQclear(res);
	}
	PQfinish(pg);
	return rc;
}

int
cmd_campaign(int argc, char **argv)
{
	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0)) {
		fputs(CAMPAIGN_USAGE, stdout);
		return 0;
	}
	if (argc >= 2 && strcmp(argv[1], "start") == 0)
		return campaign_start(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "status") == 0)
		return campaign_status(argc - 1, argv + 1);
	fputs(CAMPAIGN_USAGE, stderr);
	return EX_USAGE_CODE;
}
