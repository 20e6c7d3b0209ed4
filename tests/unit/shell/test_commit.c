/*
 * test_commit.c -- the typed encoder of mg_commit_turn's payload: its keys
 * and conversation columns are exactly the ones the SQL reads (the newest
 * definitions of mg_commit_turn and mg_apply_conversation under sql/), a
 * tool fragment with an unknown key is refused whole, a reply is cut to
 * WhatsApp's 4,096 characters, and a plan's rows come out in order.
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <dirent.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../../src/turn/commit.h"

#define SQL_MAX	(1 << 20)

/* The body of the newest definition of function fn in the .sql files of
 * dir and dir/functions (later files win), into buf. */
static int
newest_body(const char *fn, char *buf, size_t len)
{
	static const char *const dirs[] = { "sql", "sql/functions" };
	struct dirent	**ents;
	char		 path[512], head[128], *text, *p, *end;
	FILE		*f;
	size_t		 n, d;
	int		 k, i, found = 0;

	snprintf(head, sizeof head, "FUNCTION %s(", fn);
	if ((text = malloc(SQL_MAX)) == NULL)
		return -1;
	for (d = 0; d < 2; d++) {
		if ((k = scandir(dirs[d], &ents, NULL, alphasort)) < 0)
			continue;
		for (i = 0; i < k; i++) {
			n = strlen(ents[i]->d_name);
			snprintf(path, sizeof path, "%s/%s", dirs[d],
			    ents[i]->d_name);
			free(ents[i]);
			if (n < 5 || strcmp(path + strlen(path) - 4, ".sql") != 0 ||
			    (f = fopen(path, "r")) == NULL)
				continue;
			n = fread(text, 1, SQL_MAX - 1, f);
			fclose(f);
			text[n] = '\0';
			for (p = text; (p = strstr(p, head)) != NULL; p++) {
				if ((end = strstr(p, "$$;")) == NULL)
					break;
				snprintf(buf, len, "%.*s", (int)(end - p), p);
				found = 1;
			}
		}
		free(ents);
	}
	free(text);
	return found ? 0 : -1;
}

/* Every distinct first group of re in s, into set (NUL-separated). */
static size_t
matches(const char *s, const char *re, char set[][64], size_t max)
{
	regex_t		 r;
	regmatch_t	 m[2];
	size_t		 n = 0, i;
	char		 w[64];

	assert_int_equal(regcomp(&r, re, REG_EXTENDED), 0);
	while (regexec(&r, s, 2, m, 0) == 0) {
		snprintf(w, sizeof w, "%.*s", (int)(m[1].rm_eo - m[1].rm_so),
		    s + m[1].rm_so);
		for (i = 0; i < n && strcmp(set[i], w) != 0; i++)
			;
		if (i == n && n < max)
			strcpy(set[n++], w);
		s += m[0].rm_eo;
	}
	regfree(&r);
	return n;
}

/* Does names[0..n) hold exactly the words of set[0..k)? */
static void
same_set(const char *const *names, size_t n, char set[][64], size_t k,
    const char *what)
{
	size_t	i, j;

	for (i = 0; i < n; i++) {
		for (j = 0; j < k && strcmp(set[j], names[i]) != 0; j++)
			;
		if (j == k)
			fail_msg("%s: the encoder writes \"%s\", the SQL does "
			    "not read it", what, names[i]);
	}
	for (j = 0; j < k; j++) {
		for (i = 0; i < n && strcmp(set[j], names[i]) != 0; i++)
			;
		if (i == n)
			fail_msg("%s: the SQL reads \"%s\", the encoder has no "
			    "such key", what, set[j]);
	}
}

static void
test_keys_are_what_mg_commit_turn_reads(void **state)
{
	static char	body[SQL_MAX];
	char		set[64][64];
	size_t		k;

	assert_int_equal(newest_body("mg_commit_turn", body, sizeof body), 0);
	k = matches(body, "p_turn[, >-]+'([a-z_]+)'", set, 64);
	same_set(commit_key_names, COMMIT_KEY__COUNT, set, k, "keys");
}

static void
test_columns_are_what_mg_apply_conversation_takes(void **state)
{
	static char	body[SQL_MAX];
	char		set[64][64], *in, *end;
	size_t		k;

	assert_int_equal(newest_body("mg_apply_conversation", body,
	    sizeof body), 0);
	assert_non_null(in = strstr(body, "NOT IN ("));
	assert_non_null(end = strchr(in, ')'));
	*end = '\0';
	k = matches(in, "'([a-z_]+)'", set, 64);
	same_set(commit_col_names, COMMIT_COL__COUNT, set, k, "columns");
}

static void
test_unknown_fragment_refused_whole(void **state)
{
	struct commit	 c;
	json_object	*frag, *a;

	assert_int_equal(commit_init(&c, 0), 0);
	frag = json_tokener_parse("{\"memory\":[\"x\"],\"nope\":[1]}");
	assert_int_equal(commit_merge(&c, frag), -1);
	assert_false(json_object_object_get_ex(c.o, "memory", NULL));
	json_object_put(frag);
	frag = json_tokener_parse("{\"conversation\":{\"regiao\":\"sul\"},"
	    "\"memory\":[\"x\"]}");
	assert_int_equal(commit_merge(&c, frag), 0);
	assert_true(json_object_object_get_ex(c.o, "memory", &a));
	assert_int_equal(json_object_array_length(a), 1);
	json_object_put(frag);
	frag = json_tokener_parse("{\"conversation\":{\"lease_owner\":\"x\"}}");
	assert_int_equal(commit_merge(&c, frag), -1);
	json_object_put(frag);
	commit_free(&c);
}

/* A waiting turn's rows kept as text: the payload is the same, and rows
 * added afterwards still land after them. */
static void
test_packed_rows_written_as_they_were(void **state)
{
	struct commit	 c;
	json_object	*d = json_object_new_object();
	char		*before;

	assert_int_equal(commit_init(&c, 0), 0);
	json_object_object_add(d, "tools", json_tokener_parse(
	    "[\"buscar_vagas\",\"ação/é\"]"));
	commit_audit(&c, "gate", "oferta", "enforced", d, 3);
	commit_set(&c, COL_REGIAO, "sul");
	commit_audit(&c, "message", "ignore", NULL, NULL, 0);
	assert_non_null(before = strdup(commit_json(&c)));
	commit_pack(&c);
	assert_string_equal(commit_json(&c), before);
	commit_audit(&c, "llm", "ok", "end_turn", NULL, 3);
	assert_non_null(strstr(commit_json(&c), "\"reason\":null,\"details"
	    "\":{},\"inbox_id\":null},{\"step\":\"llm\""));
	free(before);
	commit_free(&c);
}

/* The writes of a turn, packed after step n of them (0: never): columns
 * set again, rows, a tool's fragment, the reply. */
static char *
turn_writes(int n)
{
	struct commit	 c;
	json_object	*frag;
	char		*s;

	assert_int_equal(commit_init(&c, 0), 0);
	commit_set(&c, COL_MODE, "oferta");
	commit_audit(&c, "gate", "oferta", "enforced", NULL, 3);
	if (n == 1)
		commit_pack(&c);
	commit_set(&c, COL_REGIAO, "sul");
	commit_set(&c, COL_MODE, "followup");
	frag = json_tokener_parse("{\"memory\":[{\"fato\":\"pediatra/SP\","
	    "\"peso\":0.85}],\"conversation\":{\"especialidade\":"
	    "\"Pediatria\"}}");
	assert_int_equal(commit_merge(&c, frag), 0);
	json_object_put(frag);
	if (n == 2)
		commit_pack(&c);
	commit_audit(&c, "llm", "ok", "end_turn", NULL, 3);
	if (n == 2)
		commit_pack(&c);
	commit_reply(&c, "Oi!", "llm", 3);
	assert_non_null(s = strdup(commit_json(&c)));
	commit_free(&c);
	return s;
}

/* Packed once or twice, anywhere, the payload is the one written. */
static void
test_packed_payload_is_the_written_one(void **state)
{
	char	*want = turn_writes(0), *got;
	int	 n;

	for (n = 1; n <= 2; n++) {
		got = turn_writes(n);
		assert_string_equal(got, want);
		free(got);
	}
	assert_non_null(strstr(want, "\"mode\":\"followup\""));
	free(want);
}

static void
test_reply_cut_to_whatsapps_limit(void **state)
{
	struct commit	 c;
	char		*s = malloc(5000 * 2 + 1);
	size_t		 i;

	for (i = 0; i < 5000; i++)
		memcpy(s + 2 * i, "\xc3\xa9", 2);	/* é */
	s[10000] = '\0';
	assert_int_equal(commit_init(&c, 0), 0);
	assert_int_equal(commit_reply(&c, s, "llm", 7), 4096);
	assert_true(commit_has_outbox(&c));
	assert_non_null(strstr(commit_json(&c), "\"inbox_id\":7"));
	commit_free(&c);
	free(s);
}

static void
test_plan_rows(void **state)
{
	struct commit		c;
	struct turn_plan	p;
	struct turn_msg_plan	m[2];
	const char		*j;

	memset(&p, 0, sizeof p);
	memset(m, 0, sizeof m);
	m[0].id = 1;
	m[0].fate = FATE_TOO_OLD;
	m[1].id = 2;
	m[1].fate = FATE_HUMAN;
	p.msgs = m;
	p.nmsgs = 2;
	p.set.opted_out = true;
	mode_state_init(&p.st, 0);
	assert_int_equal(commit_init(&c, (int64_t)1800000000 * 1000), 0);
	commit_plan(&c, &p);
	j = commit_json(&c);
	assert_non_null(strstr(j, "\"inbox\":[{\"id\":1,\"state\":\"skipped\","
	    "\"reason\":\"too_old\"}]"));
	assert_non_null(strstr(j, "\"step\":\"age\""));
	assert_true(strstr(j, "\"step\":\"age\"") <
	    strstr(j, "\"step\":\"control\""));
	assert_non_null(strstr(j, "\"opted_out_at\":\"2027-01-15T08:00:00.000Z\""));
	assert_null(strstr(j, "\"mode\""));	/* the state did not move */
	commit_free(&c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys_are_what_mg_commit_turn_reads),
		cmocka_unit_test(test_columns_are_what_mg_apply_conversation_takes),
		cmocka_unit_test(test_unknown_fragment_refused_whole),
		cmocka_unit_test(test_packed_rows_written_as_they_were),
		cmocka_unit_test(test_packed_payload_is_the_written_one),
		cmocka_unit_test(test_reply_cut_to_whatsapps_limit),
		cmocka_unit_test(test_plan_rows),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
