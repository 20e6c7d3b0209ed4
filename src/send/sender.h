/*
 * sender.h -- the outbox sender: leases due outbox rows (mg_claim_outbox),
 * posts each prepared body to the Graph API, records the answer
 * (mg_outbox_result). Dry-run without a token; stops sending (paused) on
 * an invalid token (190) or a blocked account (368) until restart.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_SENDER_H
#define MG_SENDER_H

#include <stddef.h>

#include <json-c/json.h>

#include "../../mode/core.h"

struct config;
struct evbuffer;
struct event_base;
struct graph_result;

struct sender;

/*
 * A sender on base (borrowed; must outlive it) with its own small pool of
 * database connections; cfg is read now and not kept. It starts on the
 * loop: upserts the configured window-closed template, then polls every
 * 250 ms and at each sender_kick(). NULL on failure (logged). Whoever
 * creates outbox rows is handed the sender (no process-wide singleton).
 */
struct sender	*sender_new(struct event_base *base, const struct config *cfg);

/* Cancel posts in flight (their rows are posted again once their lease
 * expires) and free. sender_free(NULL) is a no-op. */
void		 sender_free(struct sender *);

/* Wake the sender at once (an outbox row was just committed). Safe to
 * call at any time; NULL (no sender) is a no-op; never blocks. */
void		 sender_kick(struct sender *);

/*
 * Other queries that create outbox rows (a turn's read receipt and
 * commit) lease them to this process's sender in their own transaction
 * (mg_start_read, mg_commit_send), saving the claim's round trip. The
 * lease owner, the lease in seconds and how many rows the sender takes
 * now (0: none; leave them to its own claim): 0, or -1 when no sender
 * runs.
 */
int		 sender_lease(struct sender *, const char **owner, int *lease_s,
		    int *room);

/* Post the rows of such a "send" array (JSON objects as mg_claim_outbox
 * returns them); NULL or empty is a no-op. */
void		 sender_take(struct sender *, json_object *rows);

/* Stop claiming new rows (shutdown); posts in flight finish. */
void		 sender_drain(struct sender *);

/* Rows claimed and not yet recorded (posts in flight). */
size_t		 sender_inflight(const struct sender *);

/* 1 when the sender stopped sending, with the reason into why. */
int		 sender_paused(const struct sender *, char *why, size_t len);

/* Append the sender's Prometheus metrics to out. */
void		 sender_metrics(const struct sender *, struct evbuffer *out);

/*
 * The mg_outbox_result argument for a Graph API answer r to a row posted
 * attempts times before (0 the first time): ok → sent (+ wamid),
 * needs_template → window_closed, backoff → retry after retry-after or
 * 4^attempts s (Meta's pair rate limit rule), retry → retry after
 * base_ms × 2^attempts, permanent and stop → failed; each capped at
 * 15 min. Writes JSON text into buf; returns its length (truncated when
 * >= len).
 */
int		 sender_result_json(const struct graph_result *r,
		    int attempts, long base_ms, char *buf, size_t len);

#endif
