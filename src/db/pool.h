/*
 * db.h -- PostgreSQL through libpq: blocking helpers for CLI commands and
 * an asynchronous connection pool driven by libevent for the server.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_DB_H
#define MG_DB_H

#include <libpq-fe.h>

#include "../../mode/core.h"

struct event_base;

/* Blocking: connect or return NULL with the reason in err. */
PGconn	*db_connect(const char *conninfo, char *err, size_t errlen);

/*
 * Blocking: run sql (no parameters); 0 when it succeeded, else -1 with
 * libpq's message in err. Any result rows are discarded.
 */
int	 db_exec(PGconn *, const char *sql, char *err, size_t errlen)
	    MG_MUSTCHECK;

/* The asynchronous pool. */
struct db_pool;
struct db_conn;

/*
 * Called once per query: res is the last result (borrowed: cleared after
 * the callback returns) or NULL when the connection failed, with the
 * reason in err. The connection is idle again once this returns.
 */
typedef void (*db_result_cb)(PGresult *res, const char *err, void *arg);

/* Called whenever a connection becomes idle (connected or query done). */
typedef void (*db_idle_cb)(struct db_pool *, void *arg);

/*
 * Open n connections to conninfo (copied) in the background; each
 * reconnects by itself with backoff (100 ms doubling up to 5 s) after a
 * failure. When prep_sql is not NULL, it is prepared as statement
 * prep_name (both borrowed for the pool's life) on every connection
 * before it is used. Returns NULL on allocation failure.
 */
struct db_pool	*db_pool_new(struct event_base *, const char *name,
		    const char *conninfo, int n, const char *prep_name,
		    const char *prep_sql, db_idle_cb, void *arg);

/* What /metrics shows of a pool. */
struct db_pool_stats {
	const char	*name;		/* the one in the log */
	int		 up, n;		/* connections up, in all */
	unsigned long	 batches;	/* group commits (db/queue.c) */
	unsigned long	 batched;	/* queries sent in them */
};

/* Call fn for every pool of the process. */
void		 db_pools_each(void (*fn)(const struct db_pool_stats *,
		    void *arg), void *arg);

/* Count a group commit of n queries sent on the pool. */
void		 db_pool_batched(struct db_pool *, size_t n);
void		 db_pool_free(struct db_pool *);

/* An idle connection, or NULL when all are busy or down. */
struct db_conn	*db_pool_idle(struct db_pool *);

/* How many connections are up (idle or busy). */
int		 db_pool_up(const struct db_pool *);

/* How many connections have a query in flight. */
int		 db_pool_busy(const struct db_pool *);

/*
 * Send one statement with text parameters (borrowed; libpq copies them)
 * on an idle connection; cb runs exactly once when it completes or the
 * connection fails. Returns -1 (cb not called) when sending failed at
 * once; the connection is then reset.
 */
int		 db_send(struct db_conn *, const char *sql, int nparams,
		    const char *const *params, db_result_cb cb, void *arg)
		    MG_MUSTCHECK;

/* The same with the pool's prepared statement (no parse, no plan). */
int		 db_send_prepared(struct db_conn *, int nparams,
		    const char *const *params, db_result_cb cb, void *arg)
		    MG_MUSTCHECK;

#endif
