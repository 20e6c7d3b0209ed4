/*
 * review.c -- modegate review: the review loop of the intent detector.
 *
 *	review list [--since YYYY-MM-DD] [--max-confidence P]
 *		the production messages the detector was unsure of (confidence
 *		below P, default 0.6, or rules and model disagreeing) since the
 *		date (default: 7 days ago), not yet labelled, with the
 *		conversation's mode and the decision taken (mg_review_list,
 *		sql/0013_review.sql)
 *	review label ID INTENT [--corpus DIR] [--by WHO]
 *		append message ID, anonymised (mode/anon.h), with Julia's
 *		message before it, to DIR/messages/review.tsv (default
 *		tests/corpus) as a labelled example, its source on the comment
 *		line above it; recorded in review_labels. `make train` then
 *		learns from it.
 * SPDX-License-Identifier: MIT
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../mode/anon.h"
#include "cmd/cmd.h"
#include "db/cliconn.h"

#define REVIEW_TEXT_MAX	4096

static const char review_usage[] =
    "usage: modegate review list [--since YYYY-MM-DD] [--max-confidence P]\n"
    "       modegate review label ID INTENT [--corpus DIR] [--by WHO]\n";

static const char review_list_sql[] =
    "SELECT inbox_id AS id, to_char(at, 'YYYY-MM-DD HH24:MI') AS at, mode, "
    "intent, round(confidence, 2) AS confidence, rule_intent AS rules, "
    "model_intent AS model, decision, left(regexp_replace(text, "
    "'[\\t\\r\\n]+', ' ', 'g'), 80) AS message "
    "FROM mg_review_list(coalesce($1::date, current_date - 7), "
    "coalesce($2::numeric, 0.6))";

static const char review_item_sql[] =
    "SELECT text, julia_before, profile_name, detected "
    "FROM mg_review_item($1::bigint)";

static const char review_insert_sql[] =
    "INSERT INTO review_labels (inbox_id, intent, detected, labelled_by, "
    "corpus_file) VALUES ($1::bigint, $2, $3, $4, $5) "
    "ON CONFLICT (inbox_id) DO NOTHING RETURNING inbox_id";

/* s looks like YYYY-MM-DD (the database checks the calendar). */
static int
review_date_ok(const char *s)
{
	int	i;

	if (strlen(s) != 10 || s[4] != '-' || s[7] != '-')
		return 0;
	for (i = 0; i < 10; i++)
		if (i != 4 && i != 7 && !isdigit((unsigned char)s[i]))
			return 0;
	return 1;
}

/* review list */
static int
review_list(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "since", required_argument, NULL, 's' },
		{ "max-confidence", required_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 }
	};
	const char	*p[2] = { NULL, NULL };
	PGconn		*pg;
	PGresult	*res;
	char		*end;
	double		 v;
	int		 c, rc = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 's' && review_date_ok(optarg))
			p[0] = optarg;
		else if (c == 'c' && (v = strtod(optarg, &end), *end == '\0' &&
		    end != optarg && v >= 0 && v <= 1))
			p[1] = optarg;
		else {
			if (c == 's' || c == 'c')
				fprintf(stderr, "review: --%s %s: %s\n", c ==
				    's' ? "since" : "max-confidence", optarg,
				    c == 's' ? "not a date (YYYY-MM-DD)" :
				    "not a number from 0 to 1");
			fputs(review_usage, stderr);
			return EX_USAGE_CODE;
		}
	}
	if (optind != argc) {
		fputs(review_usage, stderr);
		return EX_USAGE_CODE;
	}
	if ((pg = opsdb_connect("review", &rc)) == NULL)
		return rc;
	if ((res = opsdb_query(pg, "review", review_list_sql, 2, p, &rc)) !=
	    NULL) {
		opsdb_print(stdout, res);
		PQclear(res);
	}
	PQfinish(pg);
	return rc;
}

/* Append the example (and its source line) to path; -1 on error. */
static int
review_append(const char *path, const char *id, const char *intent,
    const char *detected, const char *by, const char *text, const char *ctx)
{
	FILE	*fp;
	int	 rc = 0;

	if ((fp = fopen(path, "a")) == NULL)
		return -1;
	if (fprintf(fp, "# review inbox=%s detected=%s by=%s\n%s\t%s\t%s\n",
	    id, detected, by, intent, text, ctx) < 0)
		rc = -1;
	if (fclose(fp) != 0)
		rc = -1;
	return rc;
}

/* Fetch, anonymise, record and append one labelled message. */
static int
review_do_label(PGconn *pg, const char *id, const char *intent,
    const char *corpus, const char *by)
{
	static char	 text[REVIEW_TEXT_MAX], ctx[REVIEW_TEXT_MAX];
	PGresult	*res, *ins;
	const char	*p[5], *raw, *before, *profile, *detected;
	char		 path[4096];
	int		 rc = 0;

	snprintf(path, sizeof path, "%s/messages/review.tsv", corpus);
	p[0] = id;
	if ((res = opsdb_query(pg, "review", review_item_sql, 1, p, &rc)) ==
	    NULL)
		return rc;
	if (PQntuples(res) == 0) {
		fprintf(stderr, "review: no message with id %s\n", id);
		PQclear(res);
		return 1;
	}
	raw = PQgetvalue(res, 0, 0);
	before = PQgetisnull(res, 0, 1) ? "" : PQgetvalue(res, 0, 1);
	profile = PQgetisnull(res, 0, 2) ? NULL : PQgetvalue(res, 0, 2);
	detected = PQgetisnull(res, 0, 3) ? "-" : PQgetvalue(res, 0, 3);
	anon_text(raw, strlen(raw), profile, text, sizeof text);
	anon_text(before, strlen(before), profile, ctx, sizeof ctx);
	p[1] = intent;
	p[2] = detected;
	p[3] = by;
	p[4] = path;
	if ((ins = opsdb_query(pg, "review", review_insert_sql, 5, p, &rc)) ==
	    NULL) {
		PQclear(res);
		return rc;
	}
	if (PQntuples(ins) == 0) {
		fprintf(stderr, "review: message %s is already labelled\n", id);
		rc = 1;
	} else if (review_append(path, id, intent, detected, by, text,
	    ctx) == -1) {
		fprintf(stderr, "review: %s: %s\n", path, strerror(errno));
		PQclear(opsdb_query(pg, "review", "DELETE FROM review_labels "
		    "WHERE inbox_id = $1::bigint", 1, p, &rc));
		rc = 1;
	} else
		printf("review: message %s labelled %s (was %s), appended to "
		    "%s; run `make train` to learn it\n", id, intent, detected,
		    path);
	PQclear(ins);
	PQclear(res);
	return rc;
}

/* review label ID INTENT [--corpus DIR] [--by WHO] */
static int
review_label(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "corpus", required_argument, NULL, 'c' },
		{ "by", required_argument, NULL, 'b' },
		{ NULL, 0, NULL, 0 }
	};
	const char	*corpus = "tests/corpus", *by = "operator";
	PGconn		*pg;
	char		*end;
	int		 c, rc = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'c')
			corpus = optarg;
		else if (c == 'b' && strpbrk(optarg, "\t\n") == NULL)
			by = optarg;
		else {
			fputs(review_usage, stderr);
			return EX_USAGE_CODE;
		}
	}
	if (argc - optind != 2) {
		fputs(review_usage, stderr);
		return EX_USAGE_CODE;
	}
	(void)strtoll(argv[optind], &end, 10);
	if (*argv[optind] == '\0' || *end != '\0') {
		fprintf(stderr, "review: %s: not a message id\n", argv[optind]);
		return EX_USAGE_CODE;
	}
	if (intent_from_name(argv[optind + 1]) == -1) {
		fprintf(stderr, "review: unknown intent \"%s\"\n",
		    argv[optind + 1]);
		return EX_USAGE_CODE;
	}
	if ((pg = opsdb_connect("review", &rc)) == NULL)
		return rc;
	rc = review_do_label(pg, argv[optind], argv[optind + 1], corpus, by);
	PQfinish(pg);
	return rc;
}

int
cmd_review(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "list") == 0)
		return review_list(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "label") == 0)
		return review_label(argc - 1, argv + 1);
	fputs(review_usage, stderr);
	return EX_USAGE_CODE;
}
