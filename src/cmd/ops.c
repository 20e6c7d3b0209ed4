/*
 * cmd_ops.c -- the operators' commands on one doctor's conversations:
 * modegate takeover | release | set-mode | opt-out | opt-in |
 * cooling-off, and the funnel report:
 * modegate funnel. Each is one call of a function of sql/functions/
 * (audited there).
 *
 * WA_ID may name several conversations (the same doctor on several
 * business numbers): the command acts on all of them and says how many,
 * unless --phone-number-id picks one.
 * SPDX-License-Identifier: MIT
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "db/cliconn.h"

/* The arguments of one operator command. */
struct ops_args {
	const char	*wa_id;
	const char	*mode;		/* set-mode */
	const char	*by;
	const char	*reason;
	const char	*phone_number_id;
	const char	*days;		/* cooling-off; NULL: --clear */
};

/* One verb: its name, usage, options, SQL and what it did. */
struct ops_verb {
	const char	*name;
	const char	*usage;
	int		 with_mode;	/* takes MODE after WA_ID */
	int		 with_reason;
	int		 with_days;	/* --days N | --clear */
	const char	*sql;		/* returns the conversation ids */
	const char	*params;	/* sql's $1, $2...: w wa_id, m mode,
					 * r reason, b by, n phone_number_id,
					 * d days */
	const char	*done;		/* "...: N conversation(s) %s" */
};

static const struct ops_verb ops_verbs[] = {
	{ "takeover", "usage: modegate takeover WA_ID [--by WHO] "
	  "[--reason TEXT] [--phone-number-id ID]\n", 0, 1, 0,
	  "SELECT unnest(mg_takeover($1, $2, $3, $4))", "wbrn",
	  "now under human control (the AI stays silent)" },
	{ "release", "usage: modegate release WA_ID [--by WHO] "
	  "[--phone-number-id ID]\n", 0, 0, 0,
	  "SELECT unnest(mg_release($1, $2, $3))", "wbn",
	  "back under AI control (pending transition cleared, history "
	  "restarts now)" },
	{ "set-mode", "usage: modegate set-mode WA_ID MODE [--reason TEXT] "
	  "[--by WHO] [--phone-number-id ID]\n"
	  "MODE: discovery, oferta, followup or reativacao\n", 1, 1, 0,
	  "SELECT unnest(mg_set_mode($1, $2, $3, $4, $5))", "wmrbn",
	  "set by hand (mode_source manual)" },
	{ "opt-out", "usage: modegate opt-out WA_ID [--by WHO] "
	  "[--phone-number-id ID]\n"
	  "Records that the doctor asked not to be messaged (nothing is "
	  "sent).\n", 0, 0, 0,
	  "SELECT unnest(mg_opt_out($1, $2, $3))", "wbn",
	  "opted out: no message goes to the doctor until opt-in" },
	{ "opt-in", "usage: modegate opt-in WA_ID [--by WHO] "
	  "[--phone-number-id ID]\n"
	  "Clears the doctor's opt-out (the doctor asked to come back).\n",
	  0, 0, 0, "SELECT unnest(mg_opt_in($1, $2, $3))", "wbn",
	  "opted in again" },
	{ "cooling-off", "usage: modegate cooling-off WA_ID (--days N | "
	  "--clear) [--by WHO] [--phone-number-id ID]\n"
	  "--days N: nothing proactive (follow-ups, campaigns) for N days "
	  "(1-3650) from now; inbound\nmessages are still answered, offering "
	  "no shift unless asked. --clear: ends it.\n", 0, 0, 1,
	  "SELECT unnest(mg_cooling_off($1, $2::int, $3, $4))", "wdbn",
	  "cooling-off set (see audit_log step cooling_off)" },
};

/* Parse WA_ID [MODE] and the options; 0 or EX_USAGE_CODE. */
static int
ops_parse(const struct ops_verb *v, int argc, char **argv,
    struct ops_args *a)
{
	static const struct option opts[] = {
		{ "by", required_argument, NULL, 'b' },
		{ "reason", required_argument, NULL, 'r' },
		{ "phone-number-id", required_argument, NULL, 'n' },
		{ "days", required_argument, NULL, 'd' },
		{ "clear", no_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 }
	};
	int	 c, days = 0, clear = 0;

	memset(a, 0, sizeof *a);
	a->by = getenv("USER");		/* NULL: the database user */
	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'b')
			a->by = optarg;
		else if (c == 'r' && v->with_reason)
			a->reason = optarg;
		else if (c == 'n')
			a->phone_number_id = optarg;
		else if (c == 'd' && v->with_days) {
			a->days = optarg;
			days = 1;
		} else if (c == 'c' && v->with_days)
			clear = 1;
		else
			goto usage;
	}
	if (v->with_days && days + clear != 1) {
		fprintf(stderr, "%s: give --days N or --clear\n", v->name);
		goto usage;
	}
	if (argc - optind != 1 + v->with_mode || *argv[optind] == '\0')
		goto usage;
	a->wa_id = argv[optind];
	if (v->with_mode) {
		a->mode = argv[optind + 1];
		if (mode_from_name(a->mode) < 0) {
			fprintf(stderr, "%s: unknown mode \"%s\" (discovery, "
			    "oferta, followup, reativacao)\n", v->name, a->mode);
			return EX_USAGE_CODE;
		}
	}
	return 0;
usage:
	fputs(v->usage, stderr);
	return EX_USAGE_CODE;
}

/* The argument a parameter letter of struct ops_verb stands for. */
static const char *
ops_param(const struct ops_args *a, char letter)
{
	switch (letter) {
	case 'w':
		return a->wa_id;
	case 'm':
		return a->mode;
	case 'r':
		return a->reason;
	case 'b':
		return a->by;
	case 'd':
		return a->days;
	default:
		return a->phone_number_id;
	}
}

/* Run one verb on the conversations of a->wa_id. */
static int
ops_run(const struct ops_verb *v, const struct ops_args *a)
{
	const char	*p[5];
	PGconn		*pg;
	PGresult	*res;
	int		 rc = 0, i, n;

	for (n = 0; v->params[n] != '\0' && n < 5; n++)
		p[n] = ops_param(a, v->params[n]);
	if ((pg = opsdb_connect(v->name, &rc)) == NULL)
		return rc;
	if ((res = opsdb_query(pg, v->name, v->sql, n, p, &rc)) == NULL)
		goto done;
	if ((n = PQntuples(res)) == 0) {
		fprintf(stderr, "%s: no conversation with wa_id %s%s%s\n",
		    v->name, a->wa_id, a->phone_number_id != NULL ?
		    " on phone_number_id " : "", a->phone_number_id != NULL ?
		    a->phone_number_id : "");
		rc = 1;
	} else {
		printf("%s: %d conversation%s (id", v->name, n,
		    n == 1 ? "" : "s");
		for (i = 0; i < n; i++)
			printf("%s%s", i > 0 ? ", " : " ", PQgetvalue(res, i, 0));
		printf(") %s\n", v->done);
	}
	PQclear(res);
done:
	PQfinish(pg);
	return rc;
}

/* Dispatch to the verb named argv[0]. */
static int
ops_main(const char *name, int argc, char **argv)
{
	const struct ops_verb	*v = NULL;
	struct ops_args		 a;
	size_t			 i;
	int			 rc;

	for (i = 0; i < sizeof ops_verbs / sizeof ops_verbs[0]; i++)
		if (strcmp(ops_verbs[i].name, name) == 0)
			v = &ops_verbs[i];
	if (v == NULL)
		return EX_USAGE_CODE;
	if (argc == 2 && strcmp(argv[1], "--help") == 0) {
		fputs(v->usage, stdout);
		return 0;
	}
	if ((rc = ops_parse(v, argc, argv, &a)) != 0)
		return rc;
	return ops_run(v, &a);
}

int
cmd_opt_out(int argc, char **argv)
{
	return ops_main("opt-out", argc, argv);
}

int
cmd_opt_in(int argc, char **argv)
{
	return ops_main("opt-in", argc, argv);
}

int
cmd_cooling_off(int argc, char **argv)
{
	return ops_main("cooling-off", argc, argv);
}

int
cmd_takeover(int argc, char **argv)
{
	return ops_main("takeover", argc, argv);
}

int
cmd_release(int argc, char **argv)
{
	return ops_main("release", argc, argv);
}

int
cmd_set_mode(int argc, char **argv)
{
	return ops_main("set-mode", argc, argv);
}
