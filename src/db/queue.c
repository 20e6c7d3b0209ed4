/*
 * dbq.c -- queued asynchronous queries over a db_pool (see dbq.h).
 *
 * Group commit: when a connection comes free and several queries of a
 * kind declared with dbq_batch wait, it sends them as one statement, one
 * transaction (its form "many"), and hands each query its own row as a
 * one-row result. Queries only wait while every connection is busy, so
 * an idle database sees them one by one as before; a loaded one commits
 * (and flushes its WAL) once per batch, not once per query.
 * SPDX-License-Identifier: MIT
 */
#include <sys/queue.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <json-c/json.h>

#include "db/queue.h"

#define DBQ_BATCHES	4	/* kinds of query batched */
#define DBQ_BATCH_MAX	100	/* queries a batch */
#define DBQ_BATCH_SCAN	1000	/* waiting queries looked at for one */

struct dbq_kind {
	const char	*sql;		/* the query, as queued */
	const char	*many;		/* the batch (dbq_batch) */
};

struct dbq_item {
	TAILQ_ENTRY(dbq_item)	 entry;
	struct dbq		*q;
	const char		*sql;
	int			 nparams;
	char			*params[DBQ_MAX_PARAMS];
	db_result_cb		 cb;
	void			*arg;
	const struct dbq_kind	*kind;		/* may go in a batch */
};

TAILQ_HEAD(dbq_items, dbq_item);

/* A batch in flight: its queries, by their position in it. */
struct dbq_group {
	TAILQ_ENTRY(dbq_group)	 entry;
	struct dbq		*q;
	size_t			 n;
	struct dbq_item		*items[DBQ_BATCH_MAX];
	char			*json;		/* the parameter */
};

struct dbq {
	struct event_base	*base;
	struct db_pool		*pool;
	struct dbq_items	 waiting;	/* for a connection */
	struct dbq_items	 failed;	/* to be told from the loop */
	struct dbq_items	 busy;		/* sent, awaiting the answer */
	size_t			 nwaiting;
	struct event		*fail_ev;
	struct dbq_kind		 kinds[DBQ_BATCHES];
	int			 nkinds;
	TAILQ_HEAD(, dbq_group)	 groups;	/* batches in flight */
};

static void	dbq_drain(struct dbq *);

static void
dbq_item_free(struct dbq_item *it)
{
	int	i;

	for (i = 0; i < it->nparams; i++)
		free(it->params[i]);
	free(it);
}

/* A query completed: hand the result on, then free the item. */
static void
dbq_done(PGresult *res, const char *err, void *arg)
{
	struct dbq_item	*it = arg;

	TAILQ_REMOVE(&it->q->busy, it, entry);
	it->cb(res, err, it->arg);
	dbq_item_free(it);
}

/* Tell every failed item, from the loop (never inside dbq_query). */
static void
dbq_fail_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct dbq	*q = arg;
	struct dbq_item	*it;

	(void)fd;
	(void)ev;
	while ((it = TAILQ_FIRST(&q->failed)) != NULL) {
		TAILQ_REMOVE(&q->failed, it, entry);
		it->cb(NULL, "database unavailable", it->arg);
		dbq_item_free(it);
	}
}

/* Move every waiting item to the failed list and schedule the callbacks. */
static void
dbq_fail_waiting(struct dbq *q)
{
	struct dbq_item	*it;

	while ((it = TAILQ_FIRST(&q->waiting)) != NULL) {
		TAILQ_REMOVE(&q->waiting, it, entry);
		q->nwaiting--;
		TAILQ_INSERT_TAIL(&q->failed, it, entry);
	}
	if (!TAILQ_EMPTY(&q->failed))
		event_active(q->fail_ev, EV_TIMEOUT, 0);
}

static void
dbq_group_free(struct dbq_group *g)
{
	size_t	i;

	for (i = 0; i < g->n; i++)
		if (g->items[i] != NULL)
			dbq_item_free(g->items[i]);
	free(g->json);
	free(g);
}

/* Hand one query of a batch its row (n, r) as a one-row result of one
 * text column, as if it had run alone. */
static void
dbq_group_row(struct dbq_item *it, const char *val, int len)
{
	PGresAttDesc	 col = { .name = "r", .typid = 25, .typlen = -1,
			    .atttypmod = -1 };
	PGresult	*r;

	r = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);
	if (r == NULL || !PQsetResultAttrs(r, 1, &col) ||
	    !PQsetvalue(r, 0, 0, (char *)val, val != NULL ? len : -1)) {
		PQclear(r);
		it->cb(NULL, "out of memory", it->arg);
		return;
	}
	it->cb(r, NULL, it->arg);
	PQclear(r);
}

/*
 * A batch answered. Each query gets its row. When the batch failed as a
 * statement (one query's error rolls back all of them), each query is
 * queued again on its own, ahead of the rest, so only the one at fault
 * fails; when the connection broke, each query is told, as alone.
 */
static void
dbq_group_done(PGresult *res, const char *err, void *arg)
{
	struct dbq_group	*g = arg;
	struct dbq		*q = g->q;
	struct dbq_item		*it;
	size_t			 i, k;

	TAILQ_REMOVE(&q->groups, g, entry);
	if (res != NULL && PQresultStatus(res) == PGRES_TUPLES_OK &&
	    PQntuples(res) == (int)g->n) {
		for (i = 0; i < g->n; i++) {
			k = strtoul(PQgetvalue(res, (int)i, 0), NULL, 10);
			if (k < 1 || k > g->n || (it = g->items[k - 1]) == NULL)
				continue;
			g->items[k - 1] = NULL;
			dbq_group_row(it, PQgetisnull(res, (int)i, 1) ? NULL :
			    PQgetvalue(res, (int)i, 1),
			    PQgetlength(res, (int)i, 1));
			dbq_item_free(it);
		}
		/* A row missing from the answer: that query failed. */
		for (i = 0; i < g->n; i++)
			if ((it = g->items[i]) != NULL) {
				g->items[i] = NULL;
				it->cb(NULL, "no row in its batch", it->arg);
				dbq_item_free(it);
			}
	} else if (res != NULL) {
		for (i = g->n; i-- > 0; ) {
			it = g->items[i];
			g->items[i] = NULL;
			it->kind = NULL;
			TAILQ_INSERT_HEAD(&q->waiting, it, entry);
			q->nwaiting++;
		}
	} else
		for (i = 0; i < g->n; i++) {
			it = g->items[i];
			g->items[i] = NULL;
			it->cb(NULL, err, it->arg);
			dbq_item_free(it);
		}
	dbq_group_free(g);
	dbq_drain(q);
}

/*
 * Send it and the other waiting queries of its kind as one batch on c:
 * 0 when sent (or failed, told from the loop), -1 when it is alone of its
 * kind (send it as it is). The batch's parameter is a JSON array of each
 * query's parameters (an array of strings and nulls), in queue order.
 */
static int
dbq_send_group(struct dbq *q, struct db_conn *c, struct dbq_item *it)
{
	struct dbq_group	*g;
	struct dbq_item		*x, *nx;
	json_object		*all, *one;
	const char		*param;
	size_t			 scan = 0;
	int			 i;

	for (x = TAILQ_NEXT(it, entry); x != NULL && x->kind != it->kind &&
	    ++scan < DBQ_BATCH_SCAN; x = TAILQ_NEXT(x, entry))
		;
	if (x == NULL || x->kind != it->kind ||
	    (g = calloc(1, sizeof *g)) == NULL)
		return -1;
	g->q = q;
	if ((all = json_object_new_array()) == NULL) {
		free(g);
		return -1;
	}
	scan = 0;
	for (x = it; x != NULL && g->n < DBQ_BATCH_MAX &&
	    scan++ < DBQ_BATCH_SCAN; x = nx) {
		nx = TAILQ_NEXT(x, entry);
		if (x->kind != it->kind)
			continue;
		if ((one = json_object_new_array()) == NULL ||
		    json_object_array_add(all, one) != 0) {
			json_object_put(one);
			break;
		}
		for (i = 0; i < x->nparams; i++)
			json_object_array_add(one, x->params[i] == NULL ? NULL :
			    json_object_new_string(x->params[i]));
		TAILQ_REMOVE(&q->waiting, x, entry);
		q->nwaiting--;
		g->items[g->n++] = x;
	}
	param = json_object_to_json_string_ext(all, JSON_C_TO_STRING_PLAIN);
	g->json = param != NULL ? strdup(param) : NULL;
	json_object_put(all);
	TAILQ_INSERT_TAIL(&q->groups, g, entry);
	param = g->json;
	if (param != NULL && db_send(c, it->kind->many, 1, &param,
	    dbq_group_done, g) == 0)
		db_pool_batched(q->pool, g->n);
	else {
		/* As a broken connection: each query is told (from the
		 * loop, never inside dbq_query). */
		TAILQ_REMOVE(&q->groups, g, entry);
		while (g->n > 0) {
			x = g->items[--g->n];
			TAILQ_INSERT_HEAD(&q->failed, x, entry);
		}
		dbq_group_free(g);
		event_active(q->fail_ev, EV_TIMEOUT, 0);
	}
	return 0;
}

/* Send waiting items on idle connections; fail them when none is up. */
static void
dbq_drain(struct dbq *q)
{
	struct db_conn	*c;
	struct dbq_item	*it;

	if (db_pool_up(q->pool) == 0) {
		dbq_fail_waiting(q);
		return;
	}
	while ((it = TAILQ_FIRST(&q->waiting)) != NULL &&
	    (c = db_pool_idle(q->pool)) != NULL) {
		if (it->kind != NULL && dbq_send_group(q, c, it) == 0)
			continue;
		TAILQ_REMOVE(&q->waiting, it, entry);
		q->nwaiting--;
		TAILQ_INSERT_TAIL(&q->busy, it, entry);
		if (db_send(c, it->sql, it->nparams,
		    (const char *const *)it->params, dbq_done, it) == -1) {
			TAILQ_REMOVE(&q->busy, it, entry);
			TAILQ_INSERT_TAIL(&q->failed, it, entry);
			event_active(q->fail_ev, EV_TIMEOUT, 0);
		}
	}
}

static void
dbq_idle_cb(struct db_pool *pool, void *arg)
{
	(void)pool;
	dbq_drain(arg);
}

struct dbq *
dbq_new(struct event_base *base, const char *name, const char *conninfo,
    int n)
{
	struct dbq	*q;

	if ((q = calloc(1, sizeof *q)) == NULL)
		return NULL;
	q->base = base;
	TAILQ_INIT(&q->waiting);
	TAILQ_INIT(&q->failed);
	TAILQ_INIT(&q->busy);
	TAILQ_INIT(&q->groups);
	q->fail_ev = event_new(base, -1, 0, dbq_fail_cb, q);
	q->pool = db_pool_new(base, name, conninfo, n, NULL, NULL, dbq_idle_cb,
	    q);
	if (q->fail_ev == NULL || q->pool == NULL) {
		dbq_free(q);
		return NULL;
	}
	return q;
}

void
dbq_free(struct dbq *q)
{
	struct dbq_item		*it;
	struct dbq_group	*g;

	if (q == NULL)
		return;
	db_pool_free(q->pool);	/* queries in flight: no callback */
	while ((g = TAILQ_FIRST(&q->groups)) != NULL) {
		TAILQ_REMOVE(&q->groups, g, entry);
		dbq_group_free(g);
	}
	while ((it = TAILQ_FIRST(&q->busy)) != NULL) {
		TAILQ_REMOVE(&q->busy, it, entry);
		dbq_item_free(it);
	}
	while ((it = TAILQ_FIRST(&q->waiting)) != NULL) {
		TAILQ_REMOVE(&q->waiting, it, entry);
		dbq_item_free(it);
	}
	while ((it = TAILQ_FIRST(&q->failed)) != NULL) {
		TAILQ_REMOVE(&q->failed, it, entry);
		dbq_item_free(it);
	}
	if (q->fail_ev != NULL)
		event_free(q->fail_ev);
	free(q);
}

/* Queue one item, at the head of the waiting queue or at its tail. */
static int
dbq_enqueue(struct dbq *q, int first, const char *sql, int nparams,
    const char *const *params, db_result_cb cb, void *arg)
{
	struct dbq_item	*it;
	int		 i;

	if (nparams < 0 || nparams > DBQ_MAX_PARAMS ||
	    (it = calloc(1, sizeof *it)) == NULL)
		return -1;
	it->q = q;
	it->sql = sql;
	it->cb = cb;
	it->arg = arg;
	for (i = 0; i < nparams; i++) {
		if (params[i] != NULL &&
		    (it->params[i] = strdup(params[i])) == NULL) {
			it->nparams = i;
			dbq_item_free(it);
			return -1;
		}
	}
	it->nparams = nparams;
	for (i = 0; i < q->nkinds; i++)
		if (strcmp(q->kinds[i].sql, sql) == 0)
			it->kind = &q->kinds[i];
	if (first)
		TAILQ_INSERT_HEAD(&q->waiting, it, entry);
	else
		TAILQ_INSERT_TAIL(&q->waiting, it, entry);
	q->nwaiting++;
	dbq_drain(q);
	return 0;
}

int
dbq_query(struct dbq *q, const char *sql, int nparams,
    const char *const *params, db_result_cb cb, void *arg)
{
	return dbq_enqueue(q, 0, sql, nparams, params, cb, arg);
}

int
dbq_query_first(struct dbq *q, const char *sql, int nparams,
    const char *const *params, db_result_cb cb, void *arg)
{
	return dbq_enqueue(q, 1, sql, nparams, params, cb, arg);
}

int
dbq_batch(struct dbq *q, const char *sql, const char *many)
{
	if (q->nkinds == DBQ_BATCHES)
		return -1;
	q->kinds[q->nkinds].sql = sql;
	q->kinds[q->nkinds].many = many;
	q->nkinds++;
	return 0;
}

int
dbq_up(const struct dbq *q)
{
	return db_pool_up(q->pool);
}

size_t
dbq_waiting(const struct dbq *q)
{
	return q->nwaiting;
}
