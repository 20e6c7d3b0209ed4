/*
 * turn.h -- internals shared by worker.c (claims, leases, commit) and
 * turn.c (one turn: messages, LLM, tools, guard). Not a public API.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_TURN_H
#define MG_TURN_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/event.h>
#include <json-c/json.h>

#include "dbq.h"
#include "llm.h"
#include "metrics_turn.h"
#include "commit.h"
#include "ruleset.h"

struct config;

struct worker {
	struct event_base	*base;
	const struct config	*cfg;
	struct dbq		*q;
	struct curlev		*cv;
	struct llm		*llm;
	struct ruleset		 rs;
	bool			 rs_loaded;
	char			*persona;	/* mode/julia.md */
	char			 name[96];	/* lease owner */
	struct event		*tick;
	struct event		*kick;
	bool			 claiming;
	bool			 again;		/* claim again when done */
	bool			 draining;	/* shutdown: claim no more */
	bool			 claim_err;	/* the last claim failed */
	size_t			 inflight;
	struct turn		*turns;		/* list of turns in flight */
};

struct turn {
	struct worker		*w;
	struct turn		*next, *prev;
	int			 refs;		/* queries, LLM, timers */
	bool			 finished;	/* committed, failed or lost */
	bool			 reading;	/* read receipt being queued */
	bool			 commit_due;	/* commit once it is */
	int64_t			 conv;
	char			 conv_s[24];
	char			*ids_s;		/* "{1,2}" claimed inbox ids */
	json_object		*ctx;		/* the claim's context */
	struct turn_msg		*in_msgs;	/* the core's input; strings in ctx */
	struct turn_plan	 plan;		/* the core's decision */
	struct commit		 c;		/* the mg_commit_turn payload */
	struct event		*renew;
	int64_t			 first_id;
	const char		*wamid;		/* last message; in ctx */
	const char		*outcome;	/* for the log line */
	/* LLM */
	struct llm_msg		*msgs;
	size_t			 nmsgs;
	char			*system;
	struct llm_tool		 tools[TOOL__COUNT];
	size_t			 ntools;
	int			 regen;
	char			*calls_text;	/* tool calls, for feedback */
	json_object		*scratch;	/* strings msgs point into */
	json_object		*prompt;	/* for the llm audit row */
	double			 mt_start;	/* metrics: claimed at */
	double			 mt_mark;	/* metrics: this step began */
};

/* turn.c */
void	 turn_prepare(struct turn *);
void	 turn_reply(struct turn *, const char *text, const char *kind);
const char *turn_text(const struct worker *, const char *key);
const char *turn_jstr(json_object *, const char *key);

/* turn_llm.c */
void	 turn_llm_start(struct turn *);

/* worker.c */
void	 turn_hold(struct turn *);
void	 turn_release(struct turn *);
void	 turn_commit(struct turn *);
void	 turn_fail(struct turn *, const char *error);
void	 turn_enqueue_read(struct turn *);
int	 turn_query(struct turn *, const char *sql, int n,
	    const char *const *params, db_result_cb cb) MG_MUSTCHECK;
json_object *turn_result_json(PGresult *, const char *err);

#endif
