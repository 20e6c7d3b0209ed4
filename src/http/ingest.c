/*
 * ingest.c -- group commit of webhook rows. Each request becomes one JSON
 * object {"m":[messages],"s":[statuses],"e":[events],"f":[failures]}; a
 * batch is the JSON array of its items, sent as the single jsonb
 * parameter of one statement (one round trip, atomic, nothing
 * concatenated into SQL), deduplicated by the tables' unique keys.
 * SPDX-License-Identifier: MIT
 */
#include <sys/queue.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <libpq-fe.h>

#include "db/pool.h"
#include "http/ingest.h"
#include "base/log.h"
#include "base/metrics.h"
#include "http/wa.h"

const char ingest_sql[] =
    "WITH b AS (SELECT i.v FROM jsonb_array_elements($1::jsonb) AS i(v)),\n"
    "m AS (INSERT INTO inbox (wamid, phone_number_id, sender_key, wa_id,\n"
    "    user_id, profile_name, msg_type, wa_timestamp, raw)\n"
    "  SELECT r.w, r.p, r.k, r.wa, r.u, r.n, r.t, to_timestamp(r.ts), r.raw\n"
    "  FROM b, jsonb_to_recordset(b.v->'m') AS r(w text, p text, k text,\n"
    "    wa text, u text, n text, t text, ts bigint, raw jsonb)\n"
    "  ON CONFLICT (wamid) DO NOTHING RETURNING 1),\n"
    "s AS (INSERT INTO message_statuses (wamid, status, wa_timestamp,\n"
    "    recipient, error_code, callback_data, raw)\n"
    "  SELECT r.w, r.st, to_timestamp(r.ts), r.rc, r.ec, r.cb, r.raw\n"
    "  FROM b, jsonb_to_recordset(b.v->'s') AS r(w text, st text,\n"
    "    ts bigint, rc text, ec int, cb text, raw jsonb)\n"
    "  ON CONFLICT (wamid, status) DO NOTHING RETURNING 1),\n"
    "e AS (INSERT INTO webhook_events (field, raw)\n"
    "  SELECT r.f, r.raw FROM b, jsonb_to_recordset(b.v->'e')\n"
    "    AS r(f text, raw jsonb)\n"
    "  ON CONFLICT DO NOTHING RETURNING 1),\n"
    "f AS (INSERT INTO webhook_failures (reason, body)\n"
    "  SELECT r.why, decode(r.hex, 'hex') FROM b,\n"
    "    jsonb_to_recordset(b.v->'f') AS r(why text, hex text)\n"
    "  ON CONFLICT DO NOTHING RETURNING 1)\n"
    "SELECT (SELECT count(*) FROM m), (SELECT count(*) FROM s),\n"
    "  (SELECT count(*) FROM e), (SELECT count(*) FROM f)";

struct ingest_item {
	TAILQ_ENTRY(ingest_item) entry;
	struct evhttp_request	*req;
	double			 t0;
	int			 code;
	size_t			 rows;
	struct evbuffer		*json;	/* the item's JSON object */
	int			 section;	/* last of m/s/e/f opened */
	size_t			 in_section;
};

TAILQ_HEAD(ingest_items, ingest_item);

struct ingest_batch {
	struct ingest		*ing;
	struct ingest_items	 items;
	size_t			 n, rows;
};

struct ingest {
	struct db_pool		*pool;
	struct metrics		*metrics;
	ingest_reply_cb		 reply;
	void			*arg;
	struct ingest_items	 queue;
	size_t			 queued, queued_rows, inflight;
	int			 kicking;
};

struct ingest *
ingest_new(struct db_pool *pool, struct metrics *m, ingest_reply_cb reply,
    void *arg)
{
	struct ingest	*ing;

	if ((ing = calloc(1, sizeof *ing)) == NULL)
		return NULL;
	ing->pool = pool;
	ing->metrics = m;
	ing->reply = reply;
	ing->arg = arg;
	TAILQ_INIT(&ing->queue);
	return ing;
}

/* Answer every item of a list with code (or its own code) and free it. */
static void
ingest_answer(struct ingest *ing, struct ingest_items *items, int code)
{
	struct ingest_item	*it;

	while ((it = TAILQ_FIRST(items)) != NULL) {
		TAILQ_REMOVE(items, it, entry);
		ing->reply(it->req, code ? code : it->code, it->t0, ing->arg);
		ingest_item_free(it);
	}
}

void
ingest_free(struct ingest *ing)
{
	if (ing == NULL)
		return;
	ingest_answer(ing, &ing->queue, 503);
	free(ing);
}

struct ingest_item *
ingest_item_new(struct evhttp_request *req, double t0, int code)
{
	struct ingest_item	*it;

	if ((it = calloc(1, sizeof *it)) == NULL)
		return NULL;
	if ((it->json = evbuffer_new()) == NULL) {
		free(it);
		return NULL;
	}
	it->req = req;
	it->t0 = t0;
	it->code = code;
	return it;
}

void
ingest_item_free(struct ingest_item *it)
{
	if (it == NULL)
		return;
	evbuffer_free(it->json);
	free(it);
}

size_t
ingest_item_rows(const struct ingest_item *it)
{
	return it->rows;
}

/* Append s as a JSON string (or null); s is valid UTF-8 from json-c. */
static void
ingest_str(struct evbuffer *b, const char *s)
{
	const char	*run;
	char		 esc[8];

	if (s == NULL) {
		evbuffer_add(b, "null", 4);
		return;
	}
	evbuffer_add(b, "\"", 1);
	for (run = s; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (c != '"' && c != '\\' && c >= 0x20)
			continue;
		evbuffer_add(b, run, (size_t)(s - run));
		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			evbuffer_add(b, esc, 2);
		} else {
			snprintf(esc, sizeof esc, "\\u%04x", c);
			evbuffer_add(b, esc, 6);
		}
		run = s + 1;
	}
	evbuffer_add(b, run, (size_t)(s - run));
	evbuffer_add(b, "\"", 1);
}

/* Start the next row of section (0..3 = m, s, e, f) in the item. */
static void
ingest_row(struct ingest_item *it, int section)
{
	static const char *const names[] = { "m", "s", "e", "f" };

	if (it->rows == 0)
		evbuffer_add(it->json, "{", 1);
	if (it->rows == 0 || it->section != section) {
		evbuffer_add_printf(it->json, "%s\"%s\":[", it->rows ? "]," : "",
		    names[section]);
		it->section = section;
		it->in_section = 0;
	}
	if (it->in_section++ > 0)
		evbuffer_add(it->json, ",", 1);
	it->rows++;
}

/* Append ,"key": and a timestamp (null when unknown). */
static void
ingest_ts(struct evbuffer *b, long long ts)
{
	if (ts < 0)
		evbuffer_add(b, ",\"ts\":null", 10);
	else
		evbuffer_add_printf(b, ",\"ts\":%lld", ts);
}

void
ingest_item_payload(struct ingest_item *it, const struct wa_payload *p)
{
	struct evbuffer	*b = it->json;
	size_t		 i;

	for (i = 0; i < p->nmsgs; i++) {
		ingest_row(it, 0);
		evbuffer_add(b, "{\"w\":", 5);
		ingest_str(b, p->msgs[i].wamid);
		evbuffer_add(b, ",\"p\":", 5);
		ingest_str(b, p->msgs[i].phone_number_id);
		evbuffer_add(b, ",\"k\":", 5);
		ingest_str(b, p->msgs[i].sender_key);
		evbuffer_add(b, ",\"wa\":", 6);
		ingest_str(b, p->msgs[i].wa_id);
		evbuffer_add(b, ",\"u\":", 5);
		ingest_str(b, p->msgs[i].user_id);
		evbuffer_add(b, ",\"n\":", 5);
		ingest_str(b, p->msgs[i].profile_name);
		evbuffer_add(b, ",\"t\":", 5);
		ingest_str(b, p->msgs[i].type);
		ingest_ts(b, (long long)p->msgs[i].timestamp);
		evbuffer_add_printf(b, ",\"raw\":%s}", p->msgs[i].raw);
	}
	for (i = 0; i < p->nstats; i++) {
		ingest_row(it, 1);
		evbuffer_add(b, "{\"w\":", 5);
		ingest_str(b, p->stats[i].wamid);
		evbuffer_add(b, ",\"st\":", 6);
		ingest_str(b, p->stats[i].status);
		evbuffer_add(b, ",\"rc\":", 6);
		ingest_str(b, p->stats[i].recipient);
		if (p->stats[i].callback != NULL) {
			evbuffer_add(b, ",\"cb\":", 6);
			ingest_str(b, p->stats[i].callback);
		}
		ingest_ts(b, (long long)p->stats[i].timestamp);
		if (p->stats[i].has_error)
			evbuffer_add_printf(b, ",\"ec\":%d", p->stats[i].error_code);
		evbuffer_add_printf(b, ",\"raw\":%s}", p->stats[i].raw);
	}
	for (i = 0; i < p->nevents; i++) {
		ingest_row(it, 2);
		evbuffer_add(b, "{\"f\":", 5);
		ingest_str(b, p->events[i].field);
		evbuffer_add_printf(b, ",\"raw\":%s}", p->events[i].raw);
	}
}

void
ingest_item_failure(struct ingest_item *it, const char *why,
    const void *body, size_t len)
{
	static const char	 hex[] = "0123456789abcdef";
	const unsigned char	*p = body;
	struct evbuffer_iovec	 v;
	size_t			 i;

	ingest_row(it, 3);
	evbuffer_add(it->json, "{\"why\":", 7);
	ingest_str(it->json, why);
	evbuffer_add(it->json, ",\"hex\":\"", 8);
	if (len > 0 && evbuffer_reserve_space(it->json, (ev_ssize_t)(2 * len),
	    &v, 1) == 1) {
		for (i = 0; i < len; i++) {
			((char *)v.iov_base)[2 * i] = hex[p[i] >> 4];
			((char *)v.iov_base)[2 * i + 1] = hex[p[i] & 15];
		}
		v.iov_len = 2 * len;
		evbuffer_commit_space(it->json, &v, 1);
	}
	evbuffer_add(it->json, "\"}", 2);
}

/* Database answered a batch: answer its requests. */
static void
ingest_done(PGresult *res, const char *err, void *arg)
{
	struct ingest_batch	*b = arg;
	struct ingest		*ing = b->ing;
	int			 ok;

	ok = res != NULL && PQresultStatus(res) == PGRES_TUPLES_OK &&
	    PQntuples(res) == 1;
	if (ok)
		log_debug("ingest: committed %zu requests: %s new messages, "
		    "%s statuses, %s events, %s failures", b->n,
		    PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1),
		    PQgetvalue(res, 0, 2), PQgetvalue(res, 0, 3));
	else {
		ing->metrics->batch_failures++;
		log_warnx("ingest: batch of %zu requests failed: %s", b->n,
		    err ? err : PQresultErrorMessage(res));
	}
	ing->inflight -= b->n;
	ingest_answer(ing, &b->items, ok ? 0 : 503);
	free(b);
}

/* Move queued items into a new batch, up to the row cap. */
static struct ingest_batch *
ingest_take(struct ingest *ing, struct evbuffer *json)
{
	struct ingest_batch	*b;
	struct ingest_item	*it;

	if ((b = calloc(1, sizeof *b)) == NULL)
		return NULL;
	b->ing = ing;
	TAILQ_INIT(&b->items);
	evbuffer_add(json, "[", 1);
	while ((it = TAILQ_FIRST(&ing->queue)) != NULL &&
	    (b->n == 0 || b->rows + it->rows <= INGEST_BATCH_ROWS)) {
		TAILQ_REMOVE(&ing->queue, it, entry);
		ing->queued--;
		ing->queued_rows -= it->rows;
		if (b->n > 0)
			evbuffer_add(json, ",", 1);
		evbuffer_add_buffer(json, it->json);
		TAILQ_INSERT_TAIL(&b->items, it, entry);
		b->n++;
		b->rows += it->rows;
	}
	evbuffer_add(json, "]", 2);	/* with the NUL */
	return b;
}

/* Send one batch on c. */
static void
ingest_send(struct ingest *ing, struct db_conn *c)
{
	struct ingest_batch	*b;
	struct evbuffer		*json;
	const char		*param;

	if ((json = evbuffer_new()) == NULL)
		return;
	if ((b = ingest_take(ing, json)) == NULL) {
		evbuffer_free(json);
		return;
	}
	ing->inflight += b->n;
	ing->metrics->batches++;
	ing->metrics->batch_rows += b->rows;
	param = (const char *)evbuffer_pullup(json, -1);
	if (param == NULL || db_send_prepared(c, 1, &param, ingest_done,
	    b) == -1) {
		ing->metrics->batch_failures++;
		ing->inflight -= b->n;
		ingest_answer(ing, &b->items, 503);
		free(b);
	}
	evbuffer_free(json);
}

void
ingest_kick(struct ingest *ing)
{
	struct db_conn		*c;
	struct ingest_items	 failed;

	if (ing->kicking)	/* db_send failures call back here */
		return;
	ing->kicking = 1;
	while (!TAILQ_EMPTY(&ing->queue) &&
	    (c = db_pool_idle(ing->pool)) != NULL)
		ingest_send(ing, c);
	if (!TAILQ_EMPTY(&ing->queue) && db_pool_up(ing->pool) == 0) {
		TAILQ_INIT(&failed);
		TAILQ_CONCAT(&failed, &ing->queue, entry);
		ing->queued = ing->queued_rows = 0;
		ingest_answer(ing, &failed, 503);
	}
	ing->kicking = 0;
}

int
ingest_submit(struct ingest *ing, struct ingest_item *it)
{
	if (db_pool_up(ing->pool) == 0 ||
	    ing->queued_rows + it->rows > INGEST_QUEUE_ROWS)
		return -1;
	if (it->rows > 0)
		evbuffer_add(it->json, "]}", 2);
	else
		evbuffer_add(it->json, "{}", 2);
	TAILQ_INSERT_TAIL(&ing->queue, it, entry);
	ing->queued++;
	ing->queued_rows += it->rows;
	ingest_kick(ing);
	return 0;
}

size_t
ingest_pending(const struct ingest *ing)
{
	return ing->queued + ing->inflight;
}
