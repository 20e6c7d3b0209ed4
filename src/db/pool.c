/*
 * db.c -- libpq: blocking helpers for CLI commands, and a pool of
 * non-blocking connections whose sockets are watched by libevent, so the
 * server's event loop never waits on the database.
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "db/pool.h"
#include "base/log.h"

#define DB_BACKOFF_MIN_MS	100
#define DB_BACKOFF_MAX_MS	5000
#define DB_SUMMARY_S		30	/* "still down" at most this often */

enum dbc_state { DBC_DOWN, DBC_CONNECTING, DBC_IDLE, DBC_BUSY };

struct db_conn {
	struct db_pool	*pool;
	int		 idx;
	PGconn		*pg;
	enum dbc_state	 state;
	struct event	*ev;		/* the socket, NULL when none */
	int		 ev_fd;
	short		 ev_what;
	struct event	*timer;		/* reconnect after backoff */
	int		 backoff_ms;
	db_result_cb	 cb;		/* the query in flight */
	void		*arg;
	PGresult	*res;		/* its last result so far */
	int		 prepping;	/* preparing the pool's statement */
	int		 ready_note;	/* prepared: announce it once */
	int		 unprepared;	/* preparing failed: send the text */
	int		 was_up;	/* has been up since it last failed */
};

struct db_pool {
	struct event_base	*base;
	char			*conninfo;
	int			 n;
	struct db_conn		*conns;
	const char		*prep_name;
	const char		*prep_sql;
	db_idle_cb		 on_idle;
	void			*arg;
	char			 name[16];	/* in the log: "db: NAME ..." */
	/* An outage is logged when it starts, every DB_SUMMARY_S while it
	 * lasts, and when every connection is back: not every retry. */
	int			 outage;
	double			 outage_at, summary_at;
	unsigned long		 failures;
	unsigned long		 batches, batched;	/* db_pool_batched */
	struct db_pool		*next;		/* db_pools */
};

static struct db_pool	*db_pools;	/* every pool of the process */

static void	db_conn_start(struct db_conn *);
static void	db_io_cb(evutil_socket_t, short, void *);
static int	db_send_any(struct db_conn *, const char *, const char *,
		    int, const char *const *, db_result_cb, void *);

/* Copy libpq's (possibly multi-line, tab-indented) message into buf as
 * one line: each run of newlines, tabs and spaces becomes one space. */
static void
db_errcpy(char *buf, size_t len, const char *msg)
{
	const char	*s;
	size_t		 n = 0;
	int		 blank = 0;

	if (msg == NULL || *msg == '\0')
		msg = "unknown error";
	for (s = msg; *s != '\0' && n + 1 < len; s++) {
		if (*s == '\n' || *s == '\r' || *s == '\t' || *s == ' ') {
			blank = n > 0;
			continue;
		}
		if (blank && n + 2 < len)
			buf[n++] = ' ';
		blank = 0;
		buf[n++] = *s;
	}
	if (len > 0)
		buf[n] = '\0';
}

/* Monotonic seconds. */
static double
db_now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * libpq's notices (a server WARNING or NOTICE, RAISE in PL/pgSQL) go to the
 * log, not raw to stderr: one line, in the log's format.
 */
static void
db_notice(void *arg, const PGresult *res)
{
	const char	*sev;

	char		 msg[1024];

	sev = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
	db_errcpy(msg, sizeof msg, PQresultErrorMessage(res));
	if (sev == NULL)
		sev = "";
	if (strcmp(sev, "WARNING") == 0)
		log_warnx("db: %s", msg);
	else if (strcmp(sev, "NOTICE") == 0 || strcmp(sev, "INFO") == 0)
		log_info("db: %s", msg);
	else
		log_debug("db: %s", msg);
}

PGconn *
db_connect(const char *conninfo, char *err, size_t errlen)
{
	PGconn	*pg;

	pg = PQconnectdb(conninfo);
	if (pg == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (PQstatus(pg) != CONNECTION_OK) {
		db_errcpy(err, errlen, PQerrorMessage(pg));
		PQfinish(pg);
		return NULL;
	}
	PQsetNoticeReceiver(pg, db_notice, NULL);
	return pg;
}

int
db_exec(PGconn *pg, const char *sql, char *err, size_t errlen)
{
	PGresult	*res;
	int		 st;

	res = PQexec(pg, sql);
	st = PQresultStatus(res);
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		db_errcpy(err, errlen, PQerrorMessage(pg));
		PQclear(res);
		return -1;
	}
	PQclear(res);
	return 0;
}

/* Watch the connection's socket for what (persistent); NULL-safe reuse. */
static int
db_watch(struct db_conn *c, short what)
{
	int	fd = PQsocket(c->pg);

	if (c->ev != NULL && c->ev_fd == fd && c->ev_what == what)
		return 0;
	if (c->ev != NULL)
		event_free(c->ev);
	c->ev = event_new(c->pool->base, fd, what | EV_PERSIST, db_io_cb, c);
	if (c->ev == NULL || event_add(c->ev, NULL) == -1)
		return -1;
	c->ev_fd = fd;
	c->ev_what = what;
	return 0;
}

/* Tell the pool's owner that a connection changed state. */
static void
db_notify(struct db_conn *c)
{
	if (c->pool->on_idle != NULL)
		c->pool->on_idle(c->pool, c->pool->arg);
}

/* Count the pool's connections up (idle or busy). */
static int
db_count_up(const struct db_pool *p)
{
	int	i, up = 0;

	for (i = 0; i < p->n; i++)
		if (p->conns[i].state == DBC_IDLE ||
		    p->conns[i].state == DBC_BUSY)
			up++;
	return up;
}

/*
 * A connection failed (c->state still says what it was): a warning when
 * one that was up is lost or the pool's outage starts, a summary every
 * DB_SUMMARY_S while it lasts; each retry only at debug.
 */
static void
db_log_down(struct db_conn *c, const char *msg)
{
	struct db_pool	*p = c->pool;
	double		 now = db_now();
	int		 was_up;

	p->failures++;
	was_up = c->was_up;
	c->was_up = 0;
	if (!p->outage)
		log_warnx("db: %s connection %d %s: %s (reconnecting; a summary "
		    "every %d s until the pool is whole again)", p->name,
		    c->idx, was_up ? "lost" : "down", msg, DB_SUMMARY_S);
	else if (now - p->summary_at >= DB_SUMMARY_S)
		log_warnx("db: %s still down: %d of %d connections up after "
		    "%.0f s, %lu failed attempts; last: %s", p->name,
		    db_count_up(p) - (c->state == DBC_IDLE ||
		    c->state == DBC_BUSY), p->n, now - p->outage_at,
		    p->failures, msg);
	else {
		log_debug("db: %s connection %d down: %s (attempt %lu, retry "
		    "in %d ms)", p->name, c->idx, msg, p->failures,
		    c->backoff_ms);
		return;
	}
	if (!p->outage) {
		p->outage = 1;
		p->outage_at = now;
		p->failures = 1;
	}
	p->summary_at = now;
}

/* Drop the connection, fail its query if any, and retry after backoff. */
static void
db_conn_fail(struct db_conn *c, const char *why)
{
	struct timeval	 tv;
	db_result_cb	 cb = c->cb;
	void		*arg = c->arg;
	char		 msg[256];

	db_errcpy(msg, sizeof msg, why);
	db_log_down(c, msg);
	if (c->ev != NULL)
		event_free(c->ev);
	c->ev = NULL;
	PQclear(c->res);
	c->res = NULL;
	if (c->pg != NULL)
		PQfinish(c->pg);
	c->pg = NULL;
	c->state = DBC_DOWN;
	c->cb = NULL;
	tv.tv_sec = c->backoff_ms / 1000;
	tv.tv_usec = (c->backoff_ms % 1000) * 1000;
	evtimer_add(c->timer, &tv);
	c->backoff_ms = c->backoff_ms * 2 > DB_BACKOFF_MAX_MS ?
	    DB_BACKOFF_MAX_MS : c->backoff_ms * 2;
	if (cb != NULL)
		cb(NULL, msg, arg);
	db_notify(c);
}

/* Fail with the connection's current libpq message. */
static void
db_conn_fail_pq(struct db_conn *c)
{
	char	msg[256];

	db_errcpy(msg, sizeof msg, c->pg ? PQerrorMessage(c->pg) : NULL);
	db_conn_fail(c, msg);
}

/* Timer: start (or restart) a connection attempt. */
static void
db_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	db_conn_start(arg);
}

/* Begin a non-blocking connection attempt. */
static void
db_conn_start(struct db_conn *c)
{
	c->unprepared = 0;
	c->pg = PQconnectStart(c->pool->conninfo);
	if (c->pg == NULL || PQstatus(c->pg) == CONNECTION_BAD) {
		db_conn_fail_pq(c);
		return;
	}
	PQsetNoticeReceiver(c->pg, db_notice, NULL);
	c->state = DBC_CONNECTING;
	if (db_watch(c, EV_WRITE) == -1)
		db_conn_fail(c, "cannot watch socket");
}

/* The connection is ready for queries. */
static void
db_up(struct db_conn *c)
{
	struct db_pool	*p = c->pool;

	/* In an outage one line says when the pool is whole again. */
	if (p->outage)
		log_debug("db: %s connection %d up", p->name, c->idx);
	else
		log_info("db: %s connection %d up", p->name, c->idx);
	c->was_up = 1;
	c->backoff_ms = DB_BACKOFF_MIN_MS;
	if (p->outage && db_count_up(p) == p->n) {
		log_info("db: %s: all %d connections up again after %.0f s "
		    "(%lu failed attempts)", p->name, p->n,
		    db_now() - p->outage_at, p->failures);
		p->outage = 0;
		p->failures = 0;
	}
	db_notify(c);
}

/* The pool's statement is prepared (or not: then start over). */
static void
db_prepared(PGresult *res, const char *err, void *arg)
{
	struct db_conn	*c = arg;
	char		 msg[512];

	c->prepping = 0;
	if (res == NULL)
		return;		/* the connection failed and retries */
	if (PQresultStatus(res) != PGRES_COMMAND_OK) {
		/* E.g. not migrated yet: run it unprepared on this one. */
		db_errcpy(msg, sizeof msg, PQresultErrorField(res,
		    PG_DIAG_MESSAGE_PRIMARY) != NULL ? PQresultErrorField(res,
		    PG_DIAG_MESSAGE_PRIMARY) : PQresultErrorMessage(res));
		log_warnx("db: %s connection %d: cannot prepare %s: %s",
		    c->pool->name, c->idx, c->pool->prep_name, msg);
		c->unprepared = 1;
	}
	else
		log_debug("db: %s connection %d prepared %s", c->pool->name,
		    c->idx, c->pool->prep_name);
	c->ready_note = 1;
}

/* One step of PQconnectPoll. */
static void
db_connect_step(struct db_conn *c)
{
	switch (PQconnectPoll(c->pg)) {
	case PGRES_POLLING_READING:
		if (db_watch(c, EV_READ) == -1)
			db_conn_fail(c, "cannot watch socket");
		return;
	case PGRES_POLLING_WRITING:
		if (db_watch(c, EV_WRITE) == -1)
			db_conn_fail(c, "cannot watch socket");
		return;
	case PGRES_POLLING_OK:
		break;
	default:
		db_conn_fail_pq(c);
		return;
	}
	if (PQsetnonblocking(c->pg, 1) == -1 || db_watch(c, EV_READ) == -1) {
		db_conn_fail_pq(c);
		return;
	}
	c->state = DBC_IDLE;
	if (c->pool->prep_sql != NULL) {
		/* Busy until prepared: db_prepared makes it usable. */
		if (db_send_any(c, c->pool->prep_name, c->pool->prep_sql, -1,
		    NULL, db_prepared, c) == -1)
			return;
		c->prepping = 1;
		return;
	}
	db_up(c);
}

/* Read what the server sent; collect results until the query is done. */
static void
db_busy_step(struct db_conn *c, short what)
{
	PGresult	*r;
	db_result_cb	 cb;
	int		 f;

	if (what & EV_READ && PQconsumeInput(c->pg) == 0) {
		db_conn_fail_pq(c);
		return;
	}
	if ((f = PQflush(c->pg)) == -1) {
		db_conn_fail_pq(c);
		return;
	}
	if (db_watch(c, f == 1 ? EV_READ | EV_WRITE : EV_READ) == -1) {
		db_conn_fail(c, "cannot watch socket");
		return;
	}
	while (!PQisBusy(c->pg)) {
		if ((r = PQgetResult(c->pg)) == NULL) {
			cb = c->cb;
			r = c->res;
			c->cb = NULL;
			c->res = NULL;
			c->state = DBC_IDLE;
			cb(r, NULL, c->arg);
			PQclear(r);
			if (c->ready_note) {
				c->ready_note = 0;
				db_up(c);
			} else
				db_notify(c);
			return;
		}
		PQclear(c->res);
		c->res = r;
	}
	if (PQstatus(c->pg) == CONNECTION_BAD)
		db_conn_fail_pq(c);
}

/* Socket event of any connection. */
static void
db_io_cb(evutil_socket_t fd, short what, void *arg)
{
	struct db_conn	*c = arg;
	PGnotify	*n;

	switch (c->state) {
	case DBC_CONNECTING:
		db_connect_step(c);
		break;
	case DBC_BUSY:
		db_busy_step(c, what);
		break;
	case DBC_IDLE:
		/* Nothing is expected: an error or EOF means the server left. */
		if (PQconsumeInput(c->pg) == 0 ||
		    PQstatus(c->pg) == CONNECTION_BAD) {
			db_conn_fail_pq(c);
			break;
		}
		while ((n = PQnotifies(c->pg)) != NULL)
			PQfreemem(n);
		break;
	case DBC_DOWN:
		break;
	}
}

struct db_pool *
db_pool_new(struct event_base *base, const char *name, const char *conninfo,
    int n, const char *prep_name, const char *prep_sql, db_idle_cb on_idle,
    void *arg)
{
	struct db_pool	*p;
	int		 i;

	if ((p = calloc(1, sizeof *p)) == NULL)
		return NULL;
	snprintf(p->name, sizeof p->name, "%s", name);
	p->next = db_pools;
	db_pools = p;
	p->base = base;
	p->n = n;
	p->on_idle = on_idle;
	p->arg = arg;
	p->prep_name = prep_name;
	p->prep_sql = prep_sql;
	p->conninfo = strdup(conninfo);
	p->conns = calloc((size_t)n, sizeof *p->conns);
	if (p->conninfo == NULL || p->conns == NULL)
		goto fail;
	for (i = 0; i < n; i++) {
		p->conns[i].pool = p;
		p->conns[i].idx = i;
		p->conns[i].backoff_ms = DB_BACKOFF_MIN_MS;
		p->conns[i].timer = evtimer_new(base, db_timer_cb,
		    &p->conns[i]);
		if (p->conns[i].timer == NULL)
			goto fail;
	}
	/*
	 * The first attempts run from the loop, like every retry: a
	 * connection that fails at once (no socket, DNS, bad conninfo)
	 * then notifies an owner that already holds the pool, never one
	 * still inside its constructor.
	 */
	for (i = 0; i < n; i++)
		event_active(p->conns[i].timer, EV_TIMEOUT, 0);
	return p;
fail:
	db_pool_free(p);
	return NULL;
}

void
db_pool_free(struct db_pool *p)
{
	struct db_conn	*c;
	int		 i;

	struct db_pool	**pp;

	if (p == NULL)
		return;
	for (pp = &db_pools; *pp != NULL; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	for (i = 0; p->conns != NULL && i < p->n; i++) {
		c = &p->conns[i];
		if (c->ev != NULL)
			event_free(c->ev);
		if (c->timer != NULL)
			event_free(c->timer);
		PQclear(c->res);
		if (c->pg != NULL)
			PQfinish(c->pg);
	}
	free(p->conns);
	free(p->conninfo);
	free(p);
}

struct db_conn *
db_pool_idle(struct db_pool *p)
{
	int	i;

	for (i = 0; i < p->n; i++)
		if (p->conns[i].state == DBC_IDLE && !p->conns[i].prepping)
			return &p->conns[i];
	return NULL;
}

int
db_pool_up(const struct db_pool *p)
{
	return db_count_up(p);
}

void
db_pools_each(void (*fn)(const struct db_pool_stats *, void *), void *arg)
{
	const struct db_pool	*p;
	struct db_pool_stats	 st;

	for (p = db_pools; p != NULL; p = p->next) {
		st.name = p->name;
		st.up = db_count_up(p);
		st.n = p->n;
		st.batches = p->batches;
		st.batched = p->batched;
		fn(&st, arg);
	}
}

void
db_pool_batched(struct db_pool *p, size_t n)
{
	p->batches++;
	p->batched += n;
}

int
db_pool_busy(const struct db_pool *p)
{
	int	i, busy = 0;

	for (i = 0; i < p->n; i++)
		if (p->conns[i].state == DBC_BUSY)
			busy++;
	return busy;
}

/*
 * Send on an idle connection: a statement to prepare as name (nparams
 * -1), the prepared statement (sql NULL), or sql with parameters.
 */
static int
db_send_any(struct db_conn *c, const char *name, const char *sql,
    int nparams, const char *const *params, db_result_cb cb, void *arg)
{
	int	f, ok;

	if (c->state != DBC_IDLE)
		return -1;
	if (nparams == -1)
		ok = PQsendPrepare(c->pg, name, sql, 1, NULL);
	else if (sql == NULL)
		ok = PQsendQueryPrepared(c->pg, name, nparams, params, NULL,
		    NULL, 0);
	else
		ok = PQsendQueryParams(c->pg, sql, nparams, NULL, params, NULL,
		    NULL, 0);
	if (ok == 0 || (f = PQflush(c->pg)) == -1) {
		db_conn_fail_pq(c);
		return -1;
	}
	c->state = DBC_BUSY;
	c->cb = cb;
	c->arg = arg;
	if (db_watch(c, f == 1 ? EV_READ | EV_WRITE : EV_READ) == -1) {
		db_conn_fail(c, "cannot watch socket");
		return 0;	/* cb has run */
	}
	return 0;
}

int
db_send(struct db_conn *c, const char *sql, int nparams,
    const char *const *params, db_result_cb cb, void *arg)
{
	return db_send_any(c, NULL, sql, nparams, params, cb, arg);
}

int
db_send_prepared(struct db_conn *c, int nparams, const char *const *params,
    db_result_cb cb, void *arg)
{
	if (c->pool->prep_name == NULL)
		return -1;
	if (c->unprepared)
		return db_send_any(c, NULL, c->pool->prep_sql, nparams, params,
		    cb, arg);
	return db_send_any(c, c->pool->prep_name, NULL, nparams, params, cb,
	    arg);
}
