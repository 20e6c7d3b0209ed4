/*
 * test_dbq.c -- the queued queries' group commit (src/db/queue.c) against
 * a real PostgreSQL: queries of a batched kind that wait while the
 * connection is busy go out as one statement and each still gets its own
 * answer; one bad query in a batch fails alone; on an idle connection a
 * query goes out on its own. Needs DATABASE_URL (tests/cli/sql_turn.sh
 * runs it on its throwaway cluster); skipped without.
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <event2/event.h>

#include "../../../src/db/queue.h"

#define NQ	20

static const char single_sql[] = "SELECT ($1::int * 2)::text";
/* The batch form records each batch's size. */
static const char many_sql[] = "SELECT n, r FROM dbq_test_many($1::jsonb)";

struct answer {
	int	 done;
	char	 value[32];
	char	 err[128];
};

static struct event_base	*base;
static struct dbq		*q;
static int			 pending;

static void
answered(PGresult *res, const char *err, void *arg)
{
	struct answer	*a = arg;

	a->done++;
	if (res != NULL && PQresultStatus(res) == PGRES_TUPLES_OK &&
	    PQntuples(res) == 1)
		snprintf(a->value, sizeof a->value, "%s", PQgetvalue(res, 0, 0));
	else
		snprintf(a->err, sizeof a->err, "%s", err != NULL ? err :
		    res != NULL ? PQresultErrorMessage(res) : "?");
	if (--pending == 0)
		event_base_loopbreak(base);
}

static void
ignored(PGresult *res, const char *err, void *arg)
{
	(void)res;
	(void)err;
	(void)arg;
	if (--pending == 0)
		event_base_loopbreak(base);
}

/* Run the loop until every query queued has answered (or 10 s). */
static void
wait_all(void)
{
	struct timeval	tv = { 10, 0 };

	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
	assert_int_equal(pending, 0);
}

static PGconn *
conn(void)
{
	char	 err[256];
	PGconn	*pg = db_connect(getenv("DATABASE_URL"), err, sizeof err);

	assert_non_null(pg);
	return pg;
}

/* The batches seen so far, as "size,size,...". */
static void
batches(char *buf, size_t len)
{
	PGconn		*pg = conn();
	PGresult	*r;

	r = PQexec(pg, "SELECT coalesce(string_agg(size::text, ',' "
	    "ORDER BY id), '') FROM dbq_test_batches");
	assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
	snprintf(buf, len, "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	PQfinish(pg);
}

static int
setup(void **state)
{
	char	 err[256];
	PGconn	*pg;
	int	 i;

	(void)state;
	if (getenv("DATABASE_URL") == NULL)
		return 0;
	pg = conn();
	if (db_exec(pg, "DROP TABLE IF EXISTS dbq_test_batches; "
	    "CREATE TABLE dbq_test_batches (id serial, size int); "
	    "CREATE OR REPLACE FUNCTION dbq_test_many(p jsonb) "
	    "RETURNS TABLE (n bigint, r text) LANGUAGE plpgsql AS $$ "
	    "BEGIN INSERT INTO dbq_test_batches (size) "
	    "VALUES (jsonb_array_length(p)); "
	    "RETURN QUERY SELECT x.n, ((x.e ->> 0)::int * 2)::text "
	    "FROM jsonb_array_elements(p) WITH ORDINALITY x(e, n); END $$",
	    err, sizeof err) == -1)
		fail_msg("setup: %s", err);
	PQfinish(pg);
	base = event_base_new();
	q = dbq_new(base, "test", getenv("DATABASE_URL"), 1);
	assert_non_null(q);
	assert_int_equal(dbq_batch(q, single_sql, many_sql), 0);
	/* Queries are refused until a connection is up. */
	for (i = 0; i < 500 && dbq_up(q) == 0; i++) {
		struct timeval	tv = { 0, 10000 };

		event_base_loopexit(base, &tv);
		event_base_dispatch(base);
	}
	assert_int_equal(dbq_up(q), 1);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	dbq_free(q);
	if (base != NULL)
		event_base_free(base);
	return 0;
}

static void
reset(void)
{
	char	 err[256];
	PGconn	*pg = conn();

	if (db_exec(pg, "TRUNCATE dbq_test_batches", err, sizeof err) == -1)
		fail_msg("truncate: %s", err);
	PQfinish(pg);
}

/* The "test" pool's group commits so far, as "batches/queries". */
static void
pool_batches(const struct db_pool_stats *st, void *arg)
{
	if (strcmp(st->name, "test") == 0)
		snprintf(arg, 32, "%lu/%lu", st->batches, st->batched);
}

/* Keep the connection busy for 0.3 s and queue NQ doubling queries
 * behind it, query bad (if >= 0) with a parameter that is no number;
 * return once every one has answered. */
static void
queue_behind_busy(struct answer *a, int bad)
{
	char		 p[16];
	const char	*param = p;
	int		 i;

	reset();
	memset(a, 0, NQ * sizeof *a);
	pending = 1 + NQ;
	assert_int_equal(dbq_query(q, "SELECT pg_sleep(0.3)", 0, NULL,
	    ignored, NULL), 0);
	for (i = 0; i < NQ; i++) {
		if (i == bad)
			snprintf(p, sizeof p, "seven");
		else
			snprintf(p, sizeof p, "%d", i);
		assert_int_equal(dbq_query(q, single_sql, 1, &param, answered,
		    &a[i]), 0);
	}
	wait_all();
}

/* What is queued of the batched kind while the connection is busy goes
 * out as one statement, and each query gets its own answer, as alone. */
static void
test_queued_queries_go_as_one_batch(void **state)
{
	struct answer	 a[NQ];
	char		 want[16], got[256];
	int		 i;

	(void)state;
	if (getenv("DATABASE_URL") == NULL)
		skip();
	queue_behind_busy(a, -1);
	for (i = 0; i < NQ; i++) {
		snprintf(want, sizeof want, "%d", 2 * i);
		assert_int_equal(a[i].done, 1);
		assert_string_equal(a[i].value, want);
	}
	batches(got, sizeof got);
	assert_string_equal(got, "20");
	db_pools_each(pool_batches, got);	/* as /metrics counts them */
	assert_string_equal(got, "1/20");
}

/* One bad query in a batch rolls the batch back: each query is then sent
 * on its own, so only the bad one fails. */
static void
test_bad_query_fails_alone(void **state)
{
	struct answer	 a[NQ];
	char		 want[16], got[256];
	int		 i;

	(void)state;
	if (getenv("DATABASE_URL") == NULL)
		skip();
	queue_behind_busy(a, 7);
	for (i = 0; i < NQ; i++) {
		assert_int_equal(a[i].done, 1);
		if (i == 7) {
			assert_string_equal(a[i].value, "");
			assert_non_null(strstr(a[i].err, "invalid input"));
			continue;
		}
		snprintf(want, sizeof want, "%d", 2 * i);
		assert_string_equal(a[i].value, want);
	}
	/* The batch was tried (and rolled back with its record), then
	 * every query went alone. */
	batches(got, sizeof got);
	assert_string_equal(got, "");
}

/* Nothing waits on an idle connection: a query goes out on its own. */
static void
test_idle_query_goes_alone(void **state)
{
	struct answer	 a;
	const char	*param = "21";
	char		 got[256];

	(void)state;
	if (getenv("DATABASE_URL") == NULL)
		skip();
	reset();
	memset(&a, 0, sizeof a);
	pending = 1;
	assert_int_equal(dbq_query(q, single_sql, 1, &param, answered, &a), 0);
	wait_all();
	assert_string_equal(a.value, "42");
	batches(got, sizeof got);
	assert_string_equal(got, "");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_queued_queries_go_as_one_batch),
		cmocka_unit_test(test_bad_query_fails_alone),
		cmocka_unit_test(test_idle_query_goes_alone),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
