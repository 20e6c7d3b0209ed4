/*
 * commit.h -- the one typed encoder of a turn's commit: the payload of
 * mg_commit_turn (sql: its keys and the conversation columns it accepts
 * are the lists below; tests/unit/shell/test_commit.c holds them to the
 * SQL). A plan of the core (mode/turn.h) and what the I/O produced (LLM
 * rows, tool fragments, replies) go in only through these functions.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_COMMIT_H
#define MG_COMMIT_H

#include <stdint.h>

#include <json-c/json.h>

#include "../../mode/turn.h"

/* The top-level keys mg_commit_turn reads. */
#define COMMIT_KEY_LIST(X)						\
	X(COMMIT_CONVERSATION, "conversation")				\
	X(COMMIT_AUDIT, "audit")					\
	X(COMMIT_FUNNEL, "funnel")					\
	X(COMMIT_MEMORY, "memory")					\
	X(COMMIT_HANDOFFS, "handoffs")					\
	X(COMMIT_OUTBOX, "outbox")					\
	X(COMMIT_INBOX, "inbox")

/* The conversation columns it may set (mg_apply_conversation). */
#define COMMIT_COL_LIST(X)						\
	X(COL_MODE, "mode")						\
	X(COL_MODE_UPDATED_REASON, "mode_updated_reason")		\
	X(COL_MODE_SOURCE, "mode_source")				\
	X(COL_PENDING, "pending_transition")				\
	X(COL_PENDING_AT, "pending_transition_at")			\
	X(COL_CONTROL, "control")					\
	X(COL_OPTED_OUT_AT, "opted_out_at")				\
	X(COL_OPT_OUT_CONFIRMED_AT, "opt_out_confirmed_at")		\
	X(COL_SERIOUS_OBJECTION_AT, "serious_objection_at")		\
	X(COL_COOLING_OFF_UNTIL, "cooling_off_until")			\
	X(COL_RESERVA_CONFIRMADA, "reserva_confirmada")			\
	X(COL_OBJECAO_RESOLVIDA, "objecao_resolvida")			\
	X(COL_ESPECIALIDADE, "especialidade")				\
	X(COL_REGIAO, "regiao")						\
	X(COL_PROFILE_NAME, "profile_name")				\
	X(COL_CONTROL_UPDATED_BY, "control_updated_by")		\
	X(COL_OBJECAO_AT, "objecao_at")					\
	X(COL_OBJECAO_MOTIVO, "objecao_motivo")				\
	X(COL_SHADOW_MODE, "shadow_mode")				\
	X(COL_SHADOW_PENDING, "shadow_pending")				\
	X(COL_SHADOW_PENDING_AT, "shadow_pending_at")

#define MG_ENUM_ITEM(e, s) e,
enum commit_key { COMMIT_KEY_LIST(MG_ENUM_ITEM) COMMIT_KEY__COUNT };
enum commit_col { COMMIT_COL_LIST(MG_ENUM_ITEM) COMMIT_COL__COUNT };
#undef MG_ENUM_ITEM

extern const char *const commit_key_names[COMMIT_KEY__COUNT];
extern const char *const commit_col_names[COMMIT_COL__COUNT];

struct commit {
	json_object	*o;		/* the payload, or what was added to
					 * it since it was packed (NULL:
					 * nothing yet) */
	char		*packed;	/* the payload as packed, or NULL */
	int64_t		 now_ms;	/* "now" of the turn's columns */
};

int	 commit_init(struct commit *, int64_t now_ms) MG_MUSTCHECK;
void	 commit_free(struct commit *);
/* The payload as JSON text (owned by c; NULL: out of memory). */
const char *commit_json(struct commit *);
bool	 commit_has_outbox(struct commit *);

/* Keep what was written so far as JSON text only (commit_json writes it
 * as it was, with what is added afterwards): a json-c object costs 700
 * bytes, and a turn waiting for the LLM holds a dozen, thousands of turns
 * at once. */
void	 commit_pack(struct commit *);

/* One audit row (details owned; NULL: {}); inbox_id 0: the turn's last. */
void	 commit_audit(struct commit *, const char *step, const char *decision,
	    const char *reason, json_object *details, int64_t inbox_id);
/* A conversation column: a string (NULL: SQL null), the turn's now, a
 * time in ms. */
void	 commit_set(struct commit *, enum commit_col, const char *);
void	 commit_set_now(struct commit *, enum commit_col);
void	 commit_set_time(struct commit *, enum commit_col, int64_t ms);
/* A text reply (body copied, cut to WhatsApp's 4,096 characters) and its
 * send-enqueue audit row; returns the characters queued. */
size_t	 commit_reply(struct commit *, const char *body, const char *kind,
	    int64_t inbox_id);
/* A tool's commit fragment (only known keys and columns; others are
 * refused: -1 and nothing merged). */
int	 commit_merge(struct commit *, json_object *frag);

/* The plan's part: every message's rows, the state, the funnel. */
void	 commit_plan(struct commit *, const struct turn_plan *);
/* A route decided mid-turn (turn_event), and the state it left. */
void	 commit_route(struct commit *, const struct turn_plan *,
	    const struct turn_route *);

/* ms since the epoch as ISO 8601 UTC. */
void	 commit_iso(int64_t ms, char *buf, size_t len);

#endif
