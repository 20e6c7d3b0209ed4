/*
 * worker.h -- the turn worker of `modegate serve`: claims conversations
 * with due inbound messages (mg_claim: a lease, in order per
 * conversation, also across processes), runs one turn per conversation
 * (context, per-message decisions, LLM with tools, output guard) and
 * commits everything with mg_commit_turn in one transaction. Transient
 * failures go to mg_fail_turn (backoff, dead after MODEGATE_MAX_ATTEMPTS).
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_WORKER_H
#define MG_WORKER_H

#include <stddef.h>

#include "../../mode/core.h"

struct config;
struct event_base;
struct sender;
struct worker;

/* Start a worker on base with its own database pool and LLM client;
 * cfg is borrowed and must outlive it. Loads the rules of
 * cfg->rules_dir. NULL on failure (logged). */
struct worker	*worker_new(struct event_base *, const struct config *,
		    struct sender *);

/* Drop every turn in flight (their leases expire and are retaken) and
 * free. NULL is a no-op. */
void		 worker_free(struct worker *);

/* New inbound messages were stored: claim soon (arg: the worker; the
 * HTTP server's on_stored callback). NULL is a no-op. */
void		 worker_kick(void *);

/* Turns in flight. */
size_t		 worker_inflight(const struct worker *);

/* Stop claiming (shutdown): the turns in flight go on to their commit. */
void		 worker_drain(struct worker *);

#endif
