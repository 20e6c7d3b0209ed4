/*
 * turn.h -- the turn part of the shell, in layers: worker.c (claims) ->
 * turn.c (decode, the core's decision, the reply choice) -> answer.c (the
 * LLM, tools, guard) -> job.c (a turn in flight: references, lease,
 * queries, commit). Each calls only the ones below it; a job tells the
 * worker it ended through worker->turn_ended. Not a public API.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_TURN_H
#define MG_TURN_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/event.h>
#include <json-c/json.h>

#include "db/queue.h"
#include "llm/llm.h"
#include "turn/metrics_turn.h"
#include "turn/commit.h"
#include "rules/ruleset.h"
#include "send/sender.h"

struct config;

struct worker {
	struct event_base	*base;
	struct sender		*sender;	/* borrowed; NULL: none */
	void			(*turn_ended)(struct worker *);
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
	size_t			 claim_lim;	/* turns it may return */
	double			 claim_t0;	/* metrics: sent at */
	bool			 again;		/* claim again when done */
	bool			 draining;	/* shutdown: claim no more */
	bool			 claim_err;	/* the last claim failed */
	size_t			 inflight;
	size_t			 reserved;	/* room held by claims in flight
						 * and turns not yet started */
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
	/* The claim's context and the core's input (its strings in ctx, as
	 * the plan's msgs[].type): released once the LLM request is built
	 * (job_forget), as a turn then waits seconds, thousands at once. */
	json_object		*ctx;
	struct turn_msg		*in_msgs;
	char			*wa_id;		/* the doctor, for the log */
	struct turn_plan	 plan;		/* the core's decision */
	struct commit		 c;		/* the mg_commit_turn payload */
	struct event		*renew;
	int64_t			 first_id;
	char			*wamid;		/* last message */
	const char		*outcome;	/* for the log line */
	/* LLM */
	struct llm_msg		*msgs;		/* the texts in the block too */
	size_t			 nmsgs;
	char			*base;		/* the system prompt, kept once
						 * a reply is regenerated */
	unsigned		 tools_sent;	/* 1u << tool: offered */
	int			 regen;
	char			*calls_text;	/* tool calls, for feedback */
	double			 mt_start;	/* metrics: claimed at */
	double			 mt_mark;	/* metrics: this step began */
};

/* job.c: a turn in flight (its references, lease, queries, end). */
int	 job_batch(struct dbq *) MG_MUSTCHECK;
struct turn *job_new(struct worker *, json_object *claim_row);
void	 job_hold(struct turn *);
void	 job_release(struct turn *);
int	 job_query(struct turn *, const char *sql, int n,
	    const char *const *params, db_result_cb cb) MG_MUSTCHECK;
json_object *job_result_json(PGresult *, const char *err);
void	 job_forget(struct turn *);
void	 job_read(struct turn *);
void	 job_commit(struct turn *);
void	 job_fail(struct turn *, const char *error);
const char *job_text(const struct turn *, const char *key);
const char *job_jstr(json_object *, const char *key);
void	 job_reply(struct turn *, const char *text, const char *kind);

/* turn.c: decode the claim, let the core decide, carry out the plan. */
void	 turn_run(struct turn *);

/* answer.c: Julia's LLM reply with the plan's tools, guarded. */
void	 answer_start(struct turn *);

#endif
