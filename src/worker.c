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
 * sender in their own transaction (sql/0009), so the reply is posted as
 * soon as the commit answers.
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "config.h"
#include "log.h"
#include "rules.h"
#include "sender.h"
#include "turn.h"
#include "worker.h"

#define WORKER_TICK_MS		200
#define WORKER_CLAIM_BATCH	100
#define WORKER_HISTORY		"20"	/* messages of transcript */

static struct worker	*worker_self;	/* for worker_kick */

static void	worker_claim(struct worker *);

/* The first column of the first row as JSON, or NULL (logged). */
json_object *
turn_result_json(PGresult *res, const char *err)
{
	json_object	*o;

	if (res == NULL || PQresultStatus(res) != PGRES_TUPLES_OK ||
	    PQntuples(res) < 1 || PQgetisnull(res, 0, 0)) {
		log_warnx("worker: query failed: %s", err != NULL ? err :
		    res != NULL ? PQresultErrorMessage(res) : "no result");
		return NULL;
	}
	if ((o = json_tokener_parse(PQgetvalue(res, 0, 0))) == NULL)
		log_warnx("worker: query returned no JSON");
	return o;
}

void
turn_hold(struct turn *t)
{
	t->refs++;
}

/* Drop a reference; the last one frees the turn. */
void
turn_release(struct turn *t)
{
	struct worker	*w = t->w;

	if (--t->refs > 0)
		return;
	if (t->prev != NULL)
		t->prev->next = t->next;
	else
		w->turns = t->next;
	if (t->next != NULL)
		t->next->prev = t->prev;
	if (t->renew != NULL)
		event_free(t->renew);
	json_object_put(t->ctx);
	commit_free(&t->c);
	turn_plan_free(&t->plan);
	free(t->in_msgs);
	free(t->ids_s);
	free(t->msgs);
	free(t->system);
	free(t->calls_text);
	json_object_put(t->scratch);
	json_object_put(t->prompt);
	free(t);
	w->inflight--;
	if (w->again)
		worker_claim(w);
}

/* Queue a query for t (held until cb calls turn_release). */
int
turn_query(struct turn *t, const char *sql, int n, const char *const *params,
    db_result_cb cb)
{
	if (dbq_query(t->w->q, sql, n, params, cb, t) == -1)
		return -1;
	turn_hold(t);
	return 0;
}

/* The turn ends: stop renewing its lease. */
static void
turn_finish(struct turn *t)
{
	t->finished = true;
	if (t->renew != NULL)
		event_del(t->renew);
}

/* mg_fail_turn answered. */
static void
turn_fail_cb(PGresult *res, const char *err, void *arg)
{
	struct turn	*t = arg;
	json_object	*o = turn_result_json(res, err);

	log_warnx("worker: conversation %s: turn failed%s", t->conv_s,
	    o == NULL ? " and could not be recorded (lease will expire)" : "");
	json_object_put(o);
	turn_release(t);
}

/* A transient failure: back off (mg_fail_turn), or let the lease expire
 * when even that cannot be queued. */
void
turn_fail(struct turn *t, const char *error)
{
	char		 att[16];
	const char	*p[5];

	if (t->finished)
		return;
	turn_finish(t);
	metrics_turn_result("failed");
	snprintf(att, sizeof att, "%d", t->w->cfg->max_attempts);
	p[0] = t->w->name;
	p[1] = t->conv_s;
	p[2] = t->ids_s;
	p[3] = error;
	p[4] = att;
	if (turn_query(t, "SELECT mg_fail_turn($1, $2::bigint, $3::bigint[], "
	    "$4, $5::int)::text", 5, p, turn_fail_cb) == -1)
		log_warnx("worker: conversation %s: cannot record failure",
		    t->conv_s);
}

/*
 * Hand the rows an answer leased to our sender ("send") to it; when
 * fewer than the made rows came (the sender was full, the conversation
 * has an earlier message in flight, the window closed), the sender's own
 * claim takes the rest.
 */
static void
turn_send(json_object *o, size_t made)
{
	json_object	*send = NULL;

	json_object_object_get_ex(o, "send", &send);
	sender_take(send);
	if (!json_object_is_type(send, json_type_array) ||
	    json_object_array_length(send) < made)
		sender_kick();
}

/* The sender parameters of mg_start_read and mg_commit_send. */
static void
turn_send_params(const char **p, char *lease, char *room, size_t len)
{
	const char	*owner;
	int		 l, r;

	if (sender_lease(&owner, &l, &r) == -1) {
		p[0] = NULL;
		l = r = 0;
	} else
		p[0] = owner;
	snprintf(lease, len, "%d", l);
	snprintf(room, len, "%d", r);
	p[1] = lease;
	p[2] = room;
}

/* mg_commit_send answered. */
static void
turn_commit_cb(PGresult *res, const char *err, void *arg)
{
	struct turn	*t = arg;
	json_object	*o = turn_result_json(res, err), *v;
	char		 mask[64];
	const char	*wa = NULL;

	if (json_object_object_get_ex(t->ctx, "conversation", &v) &&
	    json_object_object_get_ex(v, "wa_id", &v))
		wa = json_object_get_string(v);
	if (o == NULL) {
		t->finished = false;
		turn_fail(t, err != NULL ? err : "commit failed");
	} else if (!json_object_object_get_ex(o, "ok", &v) ||
	    !json_object_get_boolean(v)) {
		metrics_turn_result("lease_lost");
		log_warnx("worker: conversation %s: lease lost, turn dropped",
		    t->conv_s);
	} else {
		turn_send(o, json_object_object_get_ex(o, "outbox_ids", &v) ?
		    json_object_array_length(v) : 0);
		metrics_turn_step(MT_COMMIT, t->mt_mark);
		metrics_turn_step(MT_TOTAL, t->mt_start);
		metrics_turn_result("committed");
		log_info("turn: conversation %s wamid %s from %s: %s",
		    t->conv_s, t->wamid != NULL ? t->wamid : "-",
		    log_mask(wa != NULL ? wa : "", mask, sizeof mask),
		    t->outcome != NULL ? t->outcome : "done");
	}
	json_object_put(o);
	turn_release(t);
}

/* Commit the turn: one transaction, lease checked by the database;
 * after the read receipt's row, when one is being queued. */
void
turn_commit(struct turn *t)
{
	const char	*p[6];
	char		 lease[16], room[16];

	if (t->finished)
		return;
	if (t->reading) {
		t->commit_due = true;
		return;
	}
	turn_finish(t);
	t->mt_mark = metrics_turn_now();
	p[0] = t->w->name;
	p[1] = t->conv_s;
	p[2] = commit_json(&t->c);
	turn_send_params(p + 3, lease, room, sizeof lease);
	if (turn_query(t, "SELECT mg_commit_send($1, $2::bigint, $3::jsonb, "
	    "$4, $5::int, $6::int)::text", 6, p, turn_commit_cb) == -1)
		log_warnx("worker: conversation %s: cannot commit (lease will "
		    "expire)", t->conv_s);
}

/* mg_start_read answered: the receipt goes out; a commit that waited
 * for it goes on. */
static void
turn_read_cb(PGresult *res, const char *err, void *arg)
{
	struct turn	*t = arg;
	json_object	*o = turn_result_json(res, err), *v;

	t->reading = false;
	if (o == NULL)
		turn_fail(t, err != NULL ? err : "enqueue read failed");
	else if (!json_object_object_get_ex(o, "ok", &v) ||
	    !json_object_get_boolean(v))
		turn_finish(t);		/* lease lost: someone else redoes it */
	else
		turn_send(o, 1);	/* read + typing indicator */
	if (t->commit_due) {
		t->commit_due = false;
		turn_commit(t);
	}
	json_object_put(o);
	turn_release(t);
}

/* Mark the last message as read (typing indicator); the turn goes on
 * meanwhile (the LLM), and its commit waits for the receipt's row, so it
 * comes first in the outbox. */
void
turn_enqueue_read(struct turn *t)
{
	char		 id[24], lease[16], room[16];
	const char	*p[6];

	snprintf(id, sizeof id, "%lld", (long long)t->plan.reply_to);
	p[0] = t->w->name;
	p[1] = t->conv_s;
	p[2] = id;
	turn_send_params(p + 3, lease, room, sizeof lease);
	if (turn_query(t, "SELECT mg_start_read($1, $2::bigint, $3::bigint, "
	    "$4, $5::int, $6::int)::text", 6, p, turn_read_cb) == -1) {
		turn_fail(t, "out of memory");
		return;
	}
	t->reading = true;
}

/* mg_renew_lease answered. */
static void
turn_renew_cb(PGresult *res, const char *err, void *arg)
{
	struct turn	*t = arg;
	json_object	*o = turn_result_json(res, err), *v;

	if (o != NULL && (!json_object_object_get_ex(o, "ok", &v) ||
	    !json_object_get_boolean(v)) && !t->finished) {
		log_warnx("worker: conversation %s: lease lost mid-turn",
		    t->conv_s);
		turn_finish(t);
	}
	json_object_put(o);
	turn_release(t);
}

/* Timer: extend the lease of a long turn. */
static void
turn_renew_tick(evutil_socket_t fd, short what, void *arg)
{
	struct turn	*t = arg;
	char		 s[16];
	const char	*p[3];

	if (t->finished)
		return;
	snprintf(s, sizeof s, "%d", t->w->cfg->lease_s);
	p[0] = t->w->name;
	p[1] = t->conv_s;
	p[2] = s;
	if (turn_query(t, "SELECT mg_renew_lease($1, $2::bigint, $3::int)"
	    "::text", 3, p, turn_renew_cb) == -1)
		log_warnx("worker: cannot renew a lease");
}

/* The claimed inbox ids as a PostgreSQL array literal. */
static char *
turn_ids(json_object *ids, int64_t *first)
{
	size_t	 i, n = json_object_array_length(ids);
	char	*s = malloc(n * 24 + 3), *p = s;

	if (s == NULL)
		return NULL;
	*p++ = '{';
	for (i = 0; i < n; i++) {
		int64_t id = json_object_get_int64(
		    json_object_array_get_idx(ids, i));
		if (i == 0)
			*first = id;
		p += sprintf(p, "%s%lld", i ? "," : "", (long long)id);
	}
	strcpy(p, "}");
	return s;
}

/* Start the turn of one claim row. */
static void
turn_start(struct worker *w, json_object *row)
{
	struct turn	*t;
	json_object	*v;
	struct timeval	 tv = { w->cfg->lease_s / 3 + 1, 0 };

	if (!json_object_object_get_ex(row, "conversation_id", &v) ||
	    (t = calloc(1, sizeof *t)) == NULL)
		return;
	t->w = w;
	t->mt_start = t->mt_mark = metrics_turn_now();
	t->conv = json_object_get_int64(v);
	snprintf(t->conv_s, sizeof t->conv_s, "%lld", (long long)t->conv);
	t->refs = 1;
	if ((t->next = w->turns) != NULL)
		t->next->prev = t;
	w->turns = t;
	w->inflight++;
	if (json_object_object_get_ex(row, "inbox_ids", &v))
		t->ids_s = turn_ids(v, &t->first_id);
	t->renew = event_new(w->base, -1, EV_PERSIST, turn_renew_tick, t);
	if (json_object_object_get_ex(row, "context", &v) &&
	    json_object_is_type(v, json_type_object))
		t->ctx = json_object_get(v);
	if (t->ids_s == NULL || t->renew == NULL ||
	    event_add(t->renew, &tv) == -1)
		turn_fail(t, "out of memory");
	else if (t->ctx == NULL)
		turn_fail(t, "no context");
	else
		turn_prepare(t);
	turn_release(t);
}

/* mg_claim_turns answered: one turn per row, with its context. */
static void
worker_claim_cb(PGresult *res, const char *err, void *arg)
{
	struct worker	*w = arg;
	json_object	*row;
	int		 i, n = 0;

	w->claiming = false;
	metrics_turn_claim_done();
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
	for (i = 0; i < n; i++) {
		if ((row = json_tokener_parse(PQgetvalue(res, i, 0))) == NULL)
			continue;
		turn_start(w, row);
		json_object_put(row);
	}
	if (n >= WORKER_CLAIM_BATCH || w->again)
		worker_claim(w);
}

/* Claim due conversations, up to the turns still allowed in flight. */
static void
worker_claim(struct worker *w)
{
	char		 lease[16], win[16], lim[16], turns[16], per[16];
	char		 att[16];
	const char	*p[8];
	size_t		 room;

	if (w->draining)
		return;
	if (w->claiming) {
		w->again = true;
		return;
	}
	w->again = false;
	if (w->inflight >= (size_t)w->cfg->max_turns) {
		w->again = true;	/* when a turn ends */
		return;
	}
	room = (size_t)w->cfg->max_turns - w->inflight;
	snprintf(lease, sizeof lease, "%d", w->cfg->lease_s);
	snprintf(win, sizeof win, "%d", w->cfg->coalesce_ms);
	snprintf(lim, sizeof lim, "%zu", room < WORKER_CLAIM_BATCH ? room :
	    (size_t)WORKER_CLAIM_BATCH);
	p[0] = w->name;
	p[1] = lease;
	p[2] = win;
	p[3] = lim;
	/* The per-sender turn limit (sql/0008) counts each claimed turn. */
	snprintf(turns, sizeof turns, "%d", w->cfg->sender_turns);
	snprintf(per, sizeof per, "%d", w->cfg->sender_window_s);
	p[4] = turns;
	p[5] = per;
	p[6] = WORKER_HISTORY;
	snprintf(att, sizeof att, "%d", w->cfg->max_attempts);
	p[7] = att;
	if (dbq_query(w->q, "SELECT mg_claim_turns($1, $2::int, $3::int, "
	    "$4::int, $5::int, $6::int, $7::int, $8::int)::text", 8, p,
	    worker_claim_cb, w) == 0) {
		w->claiming = true;
		metrics_turn_claim_sent();
	}
}

/* Timer (and kick): look for due work. */
static void
worker_tick(evutil_socket_t fd, short what, void *arg)
{
	worker_claim(arg);
}

void
worker_kick(void)
{
	struct worker	*w = worker_self;
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
worker_new(struct event_base *base, const struct config *cfg)
{
	struct worker		*w;
	struct llm_params	 lp;
	struct timeval		 tv = { 0, WORKER_TICK_MS * 1000 };
	char			 host[64];

	if ((w = calloc(1, sizeof *w)) == NULL)
		return NULL;
	w->base = base;
	w->cfg = cfg;
	if (gethostname(host, sizeof host) == -1)
		strcpy(host, "host");
	host[sizeof host - 1] = '\0';
	snprintf(w->name, sizeof w->name, "%s:%ld:%lx", host, (long)getpid(),
	    (long)time(NULL));
	llm_params_from_config(&lp, cfg);
	if (worker_load(w) == -1 ||
	    (w->q = dbq_new(base, cfg->database_url,
	    cfg->worker_db_connections)) == NULL ||
	    (w->cv = curlev_new(base)) == NULL ||
	    (w->llm = llm_new(w->cv, &lp)) == NULL ||
	    (w->tick = event_new(base, -1, EV_PERSIST, worker_tick, w)) ==
	    NULL || (w->kick = evtimer_new(base, worker_tick, w)) == NULL ||
	    event_add(w->tick, &tv) == -1) {
		log_error("worker: cannot start");
		worker_free(w);
		return NULL;
	}
	worker_self = w;
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
	if (worker_self == w)
		worker_self = NULL;
	llm_free(w->llm);		/* drops turns without callbacks */
	dbq_free(w->q);			/* drops queries without callbacks */
	while ((t = w->turns) != NULL) {
		t->refs = 1;
		w->again = false;
		turn_release(t);
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
