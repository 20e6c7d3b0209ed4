/*
 * dbq.c -- queued asynchronous queries over a db_pool (see dbq.h).
 * SPDX-License-Identifier: MIT
 */
#include <sys/queue.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "db/queue.h"

struct dbq_item {
	TAILQ_ENTRY(dbq_item)	 entry;
	struct dbq		*q;
	const char		*sql;
	int			 nparams;
	char			*params[DBQ_MAX_PARAMS];
	db_result_cb		 cb;
	void			*arg;
};

TAILQ_HEAD(dbq_items, dbq_item);

struct dbq {
	struct event_base	*base;
	struct db_pool		*pool;
	struct dbq_items	 waiting;	/* for a connection */
	struct dbq_items	 failed;	/* to be told from the loop */
	struct dbq_items	 busy;		/* sent, awaiting the answer */
	size_t			 nwaiting;
	struct event		*fail_ev;
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
	struct dbq_item	*it;

	if (q == NULL)
		return;
	db_pool_free(q->pool);	/* queries in flight: no callback */
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
dbq_up(const struct dbq *q)
{
	return db_pool_up(q->pool);
}

size_t
dbq_waiting(const struct dbq *q)
{
	return q->nwaiting;
}
