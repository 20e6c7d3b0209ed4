/*
 * dbq.h -- queued asynchronous queries over a db_pool, for the worker and
 * the sender: a query waits for an idle connection instead of failing.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_DBQ_H
#define MG_DBQ_H

#include "db/pool.h"

struct dbq;

/* Open a pool of n connections to conninfo for queued queries. Returns
 * NULL on allocation failure. */
struct dbq	*dbq_new(struct event_base *, const char *name,
		    const char *conninfo, int n);

/* Free the pool; queued queries are dropped without their callbacks. */
void		 dbq_free(struct dbq *);

#define DBQ_MAX_PARAMS	8

/*
 * Queue one statement with up to DBQ_MAX_PARAMS text parameters (copied;
 * NULL is SQL NULL). cb runs exactly once, always from the event loop and
 * never from inside this call: with the result, or with res NULL and the
 * reason in err (the database is down, the connection broke). Returns -1
 * only on allocation failure (cb not called).
 */
int		 dbq_query(struct dbq *, const char *sql, int nparams,
		    const char *const *params, db_result_cb cb, void *arg)
		    MG_MUSTCHECK;

/* The same, sent before every query already waiting (the worker's claim:
 * behind a thousand commits it would leave the LLM idle while turns wait
 * in the inbox; one claim runs at a time, so commits wait at most one). */
int		 dbq_query_first(struct dbq *, const char *sql, int nparams,
		    const char *const *params, db_result_cb cb, void *arg)
		    MG_MUSTCHECK;

/*
 * Queries whose text is sql may be sent together, as the one statement
 * many (group commit): its $1 is a JSON array with one array of text
 * parameters (strings and nulls) per query, in queue order; it returns
 * one row per query, (n, r): n its 1-based position in $1, r what the
 * query alone returns as its one column of text. Each query's callback
 * gets its row as a one-row result of one column; a batch that fails is
 * sent again query by query. Both strings are kept, not copied. At most
 * 4 kinds; -1 when full.
 */
int		 dbq_batch(struct dbq *, const char *sql, const char *many)
		    MG_MUSTCHECK;

/* Connections up, and queries waiting for a connection. */
int		 dbq_up(const struct dbq *);
size_t		 dbq_waiting(const struct dbq *);

#endif
