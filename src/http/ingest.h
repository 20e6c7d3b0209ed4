/*
 * ingest.h -- group commit: verified webhook requests wait in a queue; an
 * idle database connection takes everything queued (up to a row cap) and
 * stores it with ONE statement, then each request of the batch is
 * answered: its success code once committed, 503 on failure.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_INGEST_H
#define MG_INGEST_H

#include <stddef.h>

#include "../../mode/core.h"

struct evhttp_request;
struct db_pool;
struct metrics;
struct wa_payload;
struct ingest;
struct ingest_item;

#define INGEST_BATCH_ROWS	1000	/* rows per statement (soft cap) */
#define INGEST_QUEUE_ROWS	100000	/* beyond this, answer 503 at once */

/* The group-commit statement; the pool prepares it as "ingest". */
extern const char ingest_sql[];

/* Answer req with code; t0 is when the request was read (seconds). */
typedef void (*ingest_reply_cb)(struct evhttp_request *req, int code,
    double t0, void *arg);

/* pool and m are borrowed and must outlive the ingest. */
struct ingest	*ingest_new(struct db_pool *, struct metrics *,
		    ingest_reply_cb, void *arg);

/* Answer everything still queued with 503 and free. NULL-safe. */
void		 ingest_free(struct ingest *);

/*
 * A new item for req (borrowed until answered); code is the answer once
 * its rows are committed (200, or 400 for a kept failure). NULL on
 * allocation failure.
 */
struct ingest_item *ingest_item_new(struct evhttp_request *, double t0,
		    int code);

/* Add the rows of a parsed payload (copied). */
void		 ingest_item_payload(struct ingest_item *,
		    const struct wa_payload *);

/* Add a webhook_failures row: the raw bytes and why (both copied). */
void		 ingest_item_failure(struct ingest_item *, const char *why,
		    const void *body, size_t len);

/* Rows the item holds. */
size_t		 ingest_item_rows(const struct ingest_item *);
void		 ingest_item_free(struct ingest_item *);

/*
 * Queue the item (ownership passes to the ingest) and start a batch if a
 * connection is idle. Returns -1 (item not taken) when the queue is full
 * or no connection is up: answer 503.
 */
int		 ingest_submit(struct ingest *, struct ingest_item *)
		    MG_MUSTCHECK;

/* Start batches on idle connections; fail the queue when none is up.
 * Call whenever the pool changes state. */
void		 ingest_kick(struct ingest *);

/* Requests queued or in flight. */
size_t		 ingest_pending(const struct ingest *);

#endif
