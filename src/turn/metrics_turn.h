/*
 * metrics_turn.h -- the turn's Prometheus metrics: step latencies, LLM
 * requests, tokens and latency, mode decisions, policy blocks, guard
 * violations, the LLM breaker, and the database-derived gauges (oldest
 * pending message, conversation_mode_enabled). Counters live in process
 * memory and are bumped where the events happen; GET /metrics renders them.
 * One set per process (a serve process has one worker and one LLM client).
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_METRICS_TURN_H
#define MG_METRICS_TURN_H

#include <stdint.h>

struct evbuffer;
struct llm;

#define MT_STEP_LIST(X)							\
	X(MT_CLAIM, "claim")						\
	X(MT_PIPELINE, "pipeline")					\
	X(MT_LLM, "llm")						\
	X(MT_GUARD, "guard")						\
	X(MT_COMMIT, "commit")						\
	X(MT_TOTAL, "total")

#define MT_ENUM2(e, s) e,
enum mt_step { MT_STEP_LIST(MT_ENUM2) MT__STEPS };
#undef MT_ENUM2

/* Seconds on a monotonic clock. */
double	metrics_turn_now(void);

/* One step took now - since seconds. */
void	metrics_turn_step(enum mt_step, double since);

/* A turn ended: result is "committed", "lease_lost" or "failed". */
void	metrics_turn_result(const char *result);

/* One LLM HTTP attempt (or offline answer): provider and error class
 * (enum llm_provider, enum llm_err; LLM_ERR_NONE is "ok"), its latency;
 * a call refused by the open breaker has seconds < 0 (not observed). */
void	metrics_turn_llm(int provider, int err, double seconds);
void	metrics_turn_tokens(int provider, long input, long output);

/* How /metrics reads the LLM client's breaker ("closed", "open",
 * "half-open"): the client registers its reader and drops it when freed
 * (arg borrowed). Metrics never call the client directly. */
void	metrics_turn_llm_breaker(const char *(*state)(const void *),
	    const void *arg);
void	metrics_turn_llm_gone(const void *arg);

/* A router decision (enum decision), a policy block by rule id, a guard
 * violation by claim id (names copied; a bounded number of distinct ones,
 * the rest counted as "other"). */
void	metrics_turn_decision(int decision);
void	metrics_turn_policy_block(const char *rule);
void	metrics_turn_guard_violation(const char *claim);

/* From the status query: the oldest pending inbox message's age in ms
 * (0: none), the oldest unsent outbox row's age in ms (pending or being
 * posted; 0: none), and conversation_mode_enabled's value and percent
 * (value NULL: unknown). */
void	metrics_turn_db(int64_t oldest_pending_ms, int64_t oldest_unsent_ms,
	    const char *flag_value, int flag_percent);

/* Append the exposition text to out. */
void	metrics_turn_render(struct evbuffer *out);

/* Forget everything (tests). */
void	metrics_turn_reset(void);

#endif
