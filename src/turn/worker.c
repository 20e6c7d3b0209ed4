/*
 * worker.c -- the turn worker's loop: claims (mg_claim) on a timer and
 * when kicked, one lease per conversation renewed while its turn runs,
 * the final mg_commit_turn, and mg_fail_turn for transient failures. What
 * a turn does with its messages is in turn.c.
 *
 * Exactly-once: a turn's effects (state, audit, funnel, reply in the
 * outbox) land in the one transaction of mg_commit_turn, and only while
 * the lease is still held; a process that dies mid-turn leaves nothing
 * behind, and its lease expires (MODEGATE_LEASE_S) and the turn is
 * redone elsewhere. Only the read receipt (mg_start_read, at turn
 * start) may be queued twice in that case.
 *
 * Round trips: the claim returns each turn's context (mg_claim_turns);
 * the read receipt is queued while the LLM already runs; the read
 * receipt and the commit lease their outbox rows to this process's
 * sender in their own transaction (sql/functions/), so the reply is posted as
 * soon as the commit answers.
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "base/config.h"
#include "base/log.h"
#include "rules/flatfile.h"
#include "send/sender.h"
#include "turn/turn.h"
#include "turn/worker.h"

#define WORKER_TICK_MS		200
/* Turns per claim. With a backlog, claims of 500 cost the database
 * 0.19 ms a turn against 0.3 ms in claims of 100, but building 500 turns
 * holds the event loop 50-100 ms while webhooks wait (10,000 arrivals
 * in one second were answered in 2.6 s instead of 1.2-1.6 s): 100. */
#define WORKER_CLAIM_BATCH	100
#define WORKER_HISTORY		"20"	/* messages of transcript */

static void	worker_claim(struct worker *);


/* mg_claim_turns answered: one turn per row, with its context. */
static void
worker_claim_cb(PGresult *res, const char *err, void *arg)
{
	struct worker	*w = arg;
	struct turn	*t;
	json_object	*row;
	int		 i, n = 0;

	w->claiming = false;
	w->reserved -= w->claim_lim;
	metrics_turn_step(MT_CLAIM, w->claim_t0);
	if (res == NULL || PQresultStatus(res) != PGRES_TUPLES_OK) {
		/* Once until a claim works again: the tick retries 5 times
		 * a second. */
		if (!w->claim_err)
			log_warnx("worker: claim failed: %s", err != NULL ?
			    err : res != NULL ? PQresultErrorMessage(res) :
			    "no result");
		w->claim_err = true;
	} else {
		if (w->claim_err)
			log_info("worker: claims work again");
		w->claim_err = false;
		n = PQntuples(res);
	}
	/* The next claim goes out before these turns start (their prompts,
	 * their LLM requests): the database picks the next batch while this
	 * process builds these. Their room stays reserved meanwhile. */
	w->reserved += (size_t)n;
	if (n >= WORKER_CLAIM_BATCH || w->again)
		worker_claim(w);
	w->reserved -= (size_t)n;
	for (i = 0; i < n; i++) {
		if ((row = json_tokener_parse(PQgetvalue(res, i, 0))) == NULL)
			continue;
		if ((t = job_new(w, row)) != NULL) {
			turn_run(t);
			job_release(t);
		}
		json_object_put(row);
	}
}

/* Claim due conversations, up to the turns still allowed in flight. */
static void
worker_claim(struct worker *w)
{
	char		 lease[16], win[16], lim[16], turns[16], per[16];
	char		 att[16];
	const char	*p[8];
	size_t		 room, n;

	if (w->draining)
		return;
	if (w->claiming) {
		w->again = true;
		return;
	}
	w->again = false;
	if (w->inflight + w->reserved >= (size_t)w->cfg->max_turns) {
		w->again = true;	/* when a turn ends */
		return;
	}
	room = (size_t)w->cfg->max_turns - w->inflight - w->reserved;
	n = room < WORKER_CLAIM_BATCH ? room : WORKER_CLAIM_BATCH;
	snprintf(lease, sizeof lease, "%d", w->cfg->lease_s);
	snprintf(win, sizeof win, "%d", w->cfg->coalesce_ms);
	snprintf(lim, sizeof lim, "%zu", n);
	p[0] = w->name;
	p[1] = lease;
	p[2] = win;
	p[3] = lim;
	/* The per-sender turn limit (sql/functions/) counts each claimed turn. */
	snprintf(turns, sizeof turns, "%d", w->cfg->sender_turns);
	snprintf(per, sizeof per, "%d", w->cfg->sender_window_s);
	p[4] = turns;
	p[5] = per;
	p[6] = WORKER_HISTORY;
	snprintf(att, sizeof att, "%d", w->cfg->max_attempts);
	p[7] = att;
	/* Ahead of the queued commits and read receipts (db/queue.h). */
	w->claim_t0 = metrics_turn_now();
	if (dbq_query_first(w->q, "SELECT mg_claim_turns($1, $2::int, $3::int, "
	    "$4::int, $5::int, $6::int, $7::int, $8::int)::text", 8, p,
	    worker_claim_cb, w) == 0) {
		w->claiming = true;
		w->claim_lim = n;
		w->reserved += n;
	}
}

/* The LLM client's attempts, counted on /metrics. */
static void
worker_llm_observe(void *arg, const struct llm_attempt *a)
{
	metrics_turn_llm(a->provider, a->err, a->seconds);
	if (a->err == LLM_ERR_NONE)
		metrics_turn_tokens(a->provider, a->input_tokens,
		    a->output_tokens);
}

/* /metrics reads the LLM breaker through this. */
static const char *
worker_breaker(const void *llm)
{
	return llm_breaker_state((struct llm *)llm);
}

/* A turn ended (job_release): claim again if a claim waited for room. */
static void
worker_turn_ended(struct worker *w)
{
	if (w->again)
		worker_claim(w);
}

/* Timer (and kick): look for due work. */
static void
worker_tick(evutil_socket_t fd, short what, void *arg)
{
	worker_claim(arg);
}

void
worker_kick(void *arg)
{
	struct worker	*w = arg;
	struct timeval	 tv;

	if (w == NULL || evtimer_pending(w->kick, NULL))
		return;
	/* Messages become due once the double-texting window has passed
	 * (measured from their commit, which came before this kick; a
	 * database clock running behind ours is caught by the tick). */
	tv.tv_sec = w->cfg->coalesce_ms / 1000;
	tv.tv_usec = (w->cfg->coalesce_ms % 1000) * 1000;
	evtimer_add(w->kick, &tv);
}

size_t
worker_inflight(const struct worker *w)
{
	return w != NULL ? w->inflight : 0;
}

void
worker_drain(struct worker *w)
{
	if (w != NULL)
		w->draining = true;
}

/* Read a whole text file; NULL on failure (logged). */
static char *
worker_read_file(const char *path)
{
	FILE	*f = fopen(path, "r");
	char	*s = NULL;
	long	 n;

	if (f == NULL || fseek(f, 0, SEEK_END) == -1 || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) == -1 || (s = malloc((size_t)n + 1)) == NULL ||
	    fread(s, 1, (size_t)n, f) != (size_t)n) {
		log_warn("worker: %s", path);
		free(s);
		s = NULL;
	} else
		s[n] = '\0';
	if (f != NULL)
		fclose(f);
	return s;
}

/* The rules (canned replies included) and Julia's prompt; 0 or -1
 * (logged). */
static int
worker_load(struct worker *w)
{
	struct diag	 d;
	char		 path[4096];
	size_t		 i;

	diag_init(&d);
	if (ruleset_load(&w->rs, w->cfg->rules_dir, &d) == -1) {
		for (i = 0; i < d.n; i++)
			log_error("worker: %s", d.msg[i]);
		return -1;
	}
	w->rs_loaded = true;
	snprintf(path, sizeof path, "%s/mode/julia.md", w->cfg->rules_dir);
	if ((w->persona = worker_read_file(path)) == NULL)
		return -1;
	return 0;
}

struct worker *
worker_new(struct event_base *base, const struct config *cfg,
    struct sender *sender)
{
	struct worker		*w;
	struct llm_params	 lp;
	struct timeval		 tv = { 0, WORKER_TICK_MS * 1000 };
	char			 host[64];

	if ((w = calloc(1, sizeof *w)) == NULL)
		return NULL;
	w->base = base;
	w->cfg = cfg;
	w->sender = sender;
	w->turn_ended = worker_turn_ended;
	if (gethostname(host, sizeof host) == -1)
		strcpy(host, "host");
	host[sizeof host - 1] = '\0';
	snprintf(w->name, sizeof w->name, "%s:%ld:%lx", host, (long)getpid(),
	    (long)time(NULL));
	llm_params_from_config(&lp, cfg);
	lp.observe = worker_llm_observe;
	if (worker_load(w) == -1 ||
	    (w->q = dbq_new(base, "worker", cfg->database_url,
	    cfg->worker_db_connections)) == NULL || job_batch(w->q) == -1 ||
	    (w->cv = curlev_new(base)) == NULL ||
	    (w->llm = llm_new(w->cv, &lp)) == NULL ||
	    (w->tick = event_new(base, -1, EV_PERSIST, worker_tick, w)) ==
	    NULL || (w->kick = evtimer_new(base, worker_tick, w)) == NULL ||
	    event_add(w->tick, &tv) == -1) {
		log_error("worker: cannot start");
		worker_free(w);
		return NULL;
	}
	metrics_turn_llm_breaker(worker_breaker, w->llm);
	log_info("worker: %s, %d database connections, at most %d turns, "
	    "LLM %s", w->name, cfg->worker_db_connections, cfg->max_turns,
	    llm_provider_name(lp.provider));
	return w;
}

void
worker_free(struct worker *w)
{
	struct turn	*t;

	if (w == NULL)
		return;
	metrics_turn_llm_gone(w->llm);
	llm_free(w->llm);		/* drops turns without callbacks */
	dbq_free(w->q);			/* drops queries without callbacks */
	while ((t = w->turns) != NULL) {
		t->refs = 1;
		w->again = false;
		job_release(t);
	}
	curlev_free(w->cv);
	if (w->tick != NULL)
		event_free(w->tick);
	if (w->kick != NULL)
		event_free(w->kick);
	if (w->rs_loaded)
		ruleset_free(&w->rs);
	free(w->persona);
	free(w);
}
