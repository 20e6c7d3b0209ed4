/*
 * job.c -- one turn in flight, the transaction side: its references, its
 * lease (renewed while it runs), the queries it makes, the read receipt,
 * and its end: mg_commit_send (state, audit, funnel, reply in one
 * transaction, leased to this process's sender) or mg_fail_turn. The
 * worker creates jobs from its claims and hears of their end through
 * worker->turn_ended; what a turn decides is turn.c's (and the core's).
 *
 * Exactly-once: a turn's effects land in the one transaction of its
 * commit, and only while the lease is still held; a process that dies
 * mid-turn leaves nothing behind, and its lease expires (MODEGATE_LEASE_S)
 * and the turn is redone elsewhere. Only the read receipt (mg_start_read,
 * at turn start) may be queued twice in that case.
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/log.h"
#include "send/sender.h"
#include "turn/turn.h"

static const char job_read_sql[] = "SELECT mg_start_read($1, $2::bigint, "
    "$3::bigint, $4, $5::int, $6::int)::text";
static const char job_commit_sql[] = "SELECT mg_commit_send($1, $2::bigint, "
    "$3::jsonb, $4, $5::int, $6::int)::text";

/*
 * Let the worker's queue batch the commits (group commit, db/queue.c).
 * Not the read receipts: batched, a burst of 10,000 new doctors started
 * its LLM calls over 7 s instead of 4 s (the receipts' batches of 100
 * took the database from the claims), for a smaller backlog at 800
 * turns/s.
 */
int
job_batch(struct dbq *q)
{
	return dbq_batch(q, job_commit_sql, "SELECT n, r FROM "
	    "mg_commit_send_many($1::jsonb)");
}

/* The first column of the first row as JSON, or NULL (logged). */
json_object *
job_result_json(PGresult *res, const char *err)
{
	json_object	*o;

	if (res == NULL || PQresultStatus(res) != PGRES_TUPLES_OK ||
	    PQntuples(res) < 1 || PQgetisnull(res, 0, 0)) {
		log_warnx("turn: query failed: %s", err != NULL ? err :
		    res != NULL ? PQresultErrorMessage(res) : "no result");
		return NULL;
	}
	if ((o = json_tokener_parse(PQgetvalue(res, 0, 0))) == NULL)
		log_warnx("turn: query returned no JSON");
	return o;
}

void
job_hold(struct turn *t)
{
	t->refs++;
}

/* Drop a reference; the last one frees the turn. */
void
job_release(struct turn *t)
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
	free(t->wa_id);
	free(t->wamid);
	free(t->msgs);
	free(t->base);
	free(t->calls_text);
	free(t);
	w->inflight--;
	w->turn_ended(w);
}

/* Queue a query for t (held until cb calls job_release). */
int
job_query(struct turn *t, const char *sql, int n, const char *const *params,
    db_result_cb cb)
{
	if (dbq_query(t->w->q, sql, n, params, cb, t) == -1)
		return -1;
	job_hold(t);
	return 0;
}

/* The turn ends: stop renewing its lease. */
static void
job_finish(struct turn *t)
{
	t->finished = true;
	if (t->renew != NULL)
		event_del(t->renew);
}

/* mg_fail_turn answered. */
static void
job_fail_cb(PGresult *res, const char *err, void *arg)
{
	struct turn	*t = arg;
	json_object	*o = job_result_json(res, err);

	log_warnx("turn: conversation %s: turn failed%s", t->conv_s,
	    o == NULL ? " and could not be recorded (lease will expire)" : "");
	json_object_put(o);
	job_release(t);
}

/* A transient failure: back off (mg_fail_turn), or let the lease expire
 * when even that cannot be queued. */
void
job_fail(struct turn *t, const char *error)
{
	char		 att[16];
	const char	*p[5];

	if (t->finished)
		return;
	job_finish(t);
	metrics_turn_result("failed");
	snprintf(att, sizeof att, "%d", t->w->cfg->max_attempts);
	p[0] = t->w->name;
	p[1] = t->conv_s;
	p[2] = t->ids_s;
	p[3] = error;
	p[4] = att;
	if (job_query(t, "SELECT mg_fail_turn($1, $2::bigint, $3::bigint[], "
	    "$4, $5::int)::text", 5, p, job_fail_cb) == -1)
		log_warnx("turn: conversation %s: cannot record failure",
		    t->conv_s);
}

/*
 * Hand the rows an answer leased to our sender ("send") to it; when
 * fewer than the made rows came (the sender was full, the conversation
 * has an earlier message in flight, the window closed), the sender's own
 * claim takes the rest.
 */
static void
job_send(struct turn *t, json_object *o, size_t made)
{
	json_object	*send = NULL;

	json_object_object_get_ex(o, "send", &send);
	sender_take(t->w->sender, send);
	if (!json_object_is_type(send, json_type_array) ||
	    json_object_array_length(send) < made)
		sender_kick(t->w->sender);
}

/* The sender parameters of mg_start_read and mg_commit_send. */
static void
job_send_params(struct turn *t, const char **p, char *lease, char *room,
    size_t len)
{
	const char	*owner;
	int		 l, r;

	if (sender_lease(t->w->sender, &owner, &l, &r) == -1) {
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
job_commit_cb(PGresult *res, const char *err, void *arg)
{
	struct turn	*t = arg;
	json_object	*o = job_result_json(res, err), *v;
	char		 mask[64];

	if (o == NULL) {
		t->finished = false;
		job_fail(t, err != NULL ? err : "commit failed");
	} else if (!json_object_object_get_ex(o, "ok", &v) ||
	    !json_object_get_boolean(v)) {
		metrics_turn_result("lease_lost");
		log_warnx("turn: conversation %s: lease lost, turn dropped",
		    t->conv_s);
	} else {
		job_send(t, o, json_object_object_get_ex(o, "outbox_ids", &v) ?
		    json_object_array_length(v) : 0);
		metrics_turn_step(MT_COMMIT, t->mt_mark);
		metrics_turn_step(MT_TOTAL, t->mt_start);
		metrics_turn_result("committed");
		log_info("turn: conversation %s wamid %s from %s: %s",
		    t->conv_s, t->wamid != NULL ? t->wamid : "-",
		    log_mask(t->wa_id != NULL ? t->wa_id : "", mask,
		    sizeof mask),
		    t->outcome != NULL ? t->outcome : "done");
	}
	json_object_put(o);
	job_release(t);
}

/* Once its commit is queued (the queue keeps its own copy), a turn needs
 * only its names for the log and the end: the rest goes, as thousands of
 * turns can wait for the database at once. */
static void
job_shed(struct turn *t)
{
	commit_free(&t->c);
	turn_plan_free(&t->plan);
	free(t->msgs);
	t->msgs = NULL;
	t->nmsgs = 0;
	free(t->base);
	t->base = NULL;
	free(t->calls_text);
	t->calls_text = NULL;
}

/* Commit the turn: one transaction, lease checked by the database;
 * after the read receipt's row, when one is being queued. */
void
job_commit(struct turn *t)
{
	const char	*p[6];
	char		 lease[16], room[16];

	if (t->finished)
		return;
	if (t->reading) {
		t->commit_due = true;
		return;
	}
	if ((p[2] = commit_json(&t->c)) == NULL) {
		job_fail(t, "out of memory");
		return;
	}
	job_finish(t);
	t->mt_mark = metrics_turn_now();
	p[0] = t->w->name;
	p[1] = t->conv_s;
	job_send_params(t, p + 3, lease, room, sizeof lease);
	if (job_query(t, job_commit_sql, 6, p, job_commit_cb) == -1)
		log_warnx("turn: conversation %s: cannot commit (lease will "
		    "expire)", t->conv_s);
	job_shed(t);
}

/* The context, the core's input and the plan's messages and constraints
 * are no longer read (the LLM request is built): let them go while the
 * turn waits. */
void
job_forget(struct turn *t)
{
	turn_plan_forget(&t->plan);
	json_object_put(t->ctx);
	t->ctx = NULL;
	free(t->in_msgs);
	t->in_msgs = NULL;
}

/* mg_start_read answered: the receipt goes out; a commit that waited
 * for it goes on. */
static void
job_read_cb(PGresult *res, const char *err, void *arg)
{
	struct turn	*t = arg;
	json_object	*o = job_result_json(res, err), *v;

	t->reading = false;
	if (o == NULL)
		job_fail(t, err != NULL ? err : "enqueue read failed");
	else if (!json_object_object_get_ex(o, "ok", &v) ||
	    !json_object_get_boolean(v))
		job_finish(t);		/* lease lost: someone else redoes it */
	else
		job_send(t, o, 1);	/* read + typing indicator */
	if (t->commit_due) {
		t->commit_due = false;
		job_commit(t);
	}
	json_object_put(o);
	job_release(t);
}

/* Mark the last message as read (typing indicator); the turn goes on
 * meanwhile (the LLM), and its commit waits for the receipt's row, so it
 * comes first in the outbox. */
void
job_read(struct turn *t)
{
	char		 id[24], lease[16], room[16];
	const char	*p[6];

	snprintf(id, sizeof id, "%lld", (long long)t->plan.reply_to);
	p[0] = t->w->name;
	p[1] = t->conv_s;
	p[2] = id;
	job_send_params(t, p + 3, lease, room, sizeof lease);
	if (job_query(t, job_read_sql, 6, p, job_read_cb) == -1) {
		job_fail(t, "out of memory");
		return;
	}
	t->reading = true;
}

/* mg_renew_lease answered. */
static void
job_renew_cb(PGresult *res, const char *err, void *arg)
{
	struct turn	*t = arg;
	json_object	*o = job_result_json(res, err), *v;

	if (o != NULL && (!json_object_object_get_ex(o, "ok", &v) ||
	    !json_object_get_boolean(v)) && !t->finished) {
		log_warnx("turn: conversation %s: lease lost mid-turn",
		    t->conv_s);
		job_finish(t);
	}
	json_object_put(o);
	job_release(t);
}

/* Timer: extend the lease of a long turn. */
static void
job_renew_tick(evutil_socket_t fd, short what, void *arg)
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
	if (job_query(t, "SELECT mg_renew_lease($1, $2::bigint, $3::int)"
	    "::text", 3, p, job_renew_cb) == -1)
		log_warnx("turn: cannot renew a lease");
}

/* The claimed inbox ids as a PostgreSQL array literal. */
static char *
job_ids(json_object *ids, int64_t *first)
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

struct turn *
job_new(struct worker *w, json_object *row)
{
	struct turn	*t;
	json_object	*v;
	struct timeval	 tv = { w->cfg->lease_s / 3 + 1, 0 };

	if (!json_object_object_get_ex(row, "conversation_id", &v) ||
	    (t = calloc(1, sizeof *t)) == NULL)
		return NULL;
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
		t->ids_s = job_ids(v, &t->first_id);
	t->renew = event_new(w->base, -1, EV_PERSIST, job_renew_tick, t);
	if (json_object_object_get_ex(row, "context", &v) &&
	    json_object_is_type(v, json_type_object)) {
		t->ctx = json_object_get(v);
		if (json_object_object_get_ex(v, "conversation", &v) &&
		    json_object_object_get_ex(v, "wa_id", &v))
			t->wa_id = strdup(json_object_get_string(v));
	}
	if (t->ids_s == NULL || t->renew == NULL ||
	    event_add(t->renew, &tv) == -1)
		job_fail(t, "out of memory");
	else if (t->ctx == NULL)
		job_fail(t, "no context");
	else
		return t;
	job_release(t);
	return NULL;
}

const char *
job_jstr(json_object *o, const char *key)
{
	json_object	*v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

const char *
job_text(const struct turn *t, const char *key)
{
	return messages_reply(t->w->rs.messages, key);
}

void
job_reply(struct turn *t, const char *text, const char *kind)
{
	commit_reply(&t->c, text, kind, t->plan.reply_to);
	t->outcome = kind;
}
