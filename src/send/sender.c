/*
 * sender.c -- the outbox sender on the event loop: claim due rows
 * (mg_claim_outbox, a lease), post each prepared body through graph.c,
 * record the answer (mg_outbox_result). Several posts in flight; the SQL
 * keeps one row per conversation in flight and a closed 24-hour window
 * off the free-text path. A turn's read receipt and reply usually never
 * wait for a claim: the worker's queries that create them lease them to
 * this sender in the same transaction (sender_lease, sender_take).
 *
 * Exactly-once boundary. Everything up to the outbox row is committed
 * once, with the turn. A row is then leased ('sending') for
 * MODEGATE_SEND_LEASE_S while it is posted; the HTTP timeout is shorter
 * than the lease. Every message carries biz_opaque_callback_data naming
 * its row (sql/functions/40_outbox.sql), which Meta echoes in the
 * status webhooks of that message. If the process dies after the Graph
 * API accepted the message and before mg_outbox_result commits, the
 * row's lease expires with no answer recorded: it is ambiguous. The
 * claim leaves it alone for MODEGATE_SEND_RECONCILE_S more seconds; a
 * status naming it settles it (ingest, mg_settle_outbox) and it is never
 * posted again. Only silence leads to a second post (audited "repost",
 * counted). The sender narrows the window by posting a row as soon as
 * it is leased, recording the answer at once, and retrying the record
 * (not the post) while the lease lasts when the database blips.
 *
 * Stop errors (190 token, 368 blocked account, HTTP 401) fail their row
 * and pause the sender until restart: a new token or an unblocked account
 * needs an operator anyway, and posting more would only fail more rows.
 * /readyz answers 503 with the reason; modegate_sender_paused says so.
 * SPDX-License-Identifier: MIT
 */
#include <sys/queue.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <json-c/json.h>

#include "base/config.h"
#include "db/queue.h"
#include "send/graph.h"
#include "base/log.h"
#include "send/sender.h"

#define SENDER_TICK_MS		250
#define SENDER_DB_CONNS		2
#define SENDER_MAX_DELAY_S	900	/* 15 min */
#define SENDER_NCOUNTS		64

static const char claim_sql[] =
    "SELECT mg_claim_outbox($1, $2::int, $3::int, $4::int)";
/* Recorded in batches when the database is busy (dbq_batch). */
static const char result_sql[] =
    "SELECT mg_outbox_result($1::bigint, $2::jsonb)::text";
static const char template_sql[] =
    "INSERT INTO wa_templates (purpose, payload) VALUES ('window_closed', "
    "jsonb_build_object('type', 'template', 'template', "
    "jsonb_build_object('name', $1::text, 'language', "
    "jsonb_build_object('code', $2::text, 'policy', 'deterministic')))) "
    "ON CONFLICT (purpose) DO UPDATE SET payload = EXCLUDED.payload, "
    "updated_at = now()";

struct sender_row {
	TAILQ_ENTRY(sender_row)	 entry;
	struct sender		*s;
	char			 id[24];
	char			 kind[16];
	char			*pnid;
	char			*payload;
	int			 attempts;
	char			*result;	/* mg_outbox_result argument */
	double			 deadline;	/* lease end: stop recording */
	struct event		*again;		/* retry the record */
};

struct sender_count {
	char		outcome[16];
	long		code;
	unsigned long long n;
};

struct sender {
	struct event_base	*base;
	struct dbq		*db;
	struct curlev		*cv;
	struct graph		*g;
	struct event		*timer, *kick;
	TAILQ_HEAD(, sender_row) rows;		/* posting or recording */
	TAILQ_HEAD(, sender_row) waiting;	/* leased, for a free slot */
	size_t			 inflight, nwaiting;
	double			 post_timeout_s;
	char			 worker[96];
	char			*tpl_name, *tpl_lang;
	int			 tpl_done, tpl_busy;
	int			 dry_run, concurrency, lease_s, reconcile_s;
	long			 retry_base_ms;
	int			 claiming, again, draining, db_err;
	int			 paused;
	long			 pause_code;
	char			 pause_why[200];
	struct sender_count	 counts[SENDER_NCOUNTS];
	size_t			 ncounts;
};


static void	sender_poll(struct sender *);
static void	sender_record(struct sender_row *);

/* Seconds on a monotonic clock. */
static double
sender_now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Count one send outcome with its WhatsApp error code (0: none). */
static void
sender_count(struct sender *s, const char *outcome, long code)
{
	size_t	i;

	for (i = 0; i < s->ncounts; i++)
		if (s->counts[i].code == code &&
		    strcmp(s->counts[i].outcome, outcome) == 0)
			break;
	if (i == s->ncounts) {
		if (s->ncounts == SENDER_NCOUNTS)
			i = 0;	/* full: lump into the first */
		else {
			s->ncounts++;
			snprintf(s->counts[i].outcome,
			    sizeof s->counts[i].outcome, "%s", outcome);
			s->counts[i].code = code;
		}
	}
	s->counts[i].n++;
}

/* Delay before the next attempt, seconds: base × factor^attempts, capped. */
static double
sender_delay(double base_s, double factor, int attempts)
{
	double	d = base_s;
	int	i;

	for (i = 0; i < attempts && d < SENDER_MAX_DELAY_S; i++)
		d *= factor;
	return d < SENDER_MAX_DELAY_S ? d : SENDER_MAX_DELAY_S;
}

int
sender_result_json(const struct graph_result *r, int attempts, long base_ms,
    char *buf, size_t len)
{
	json_object	*o = json_object_new_object();
	const char	*res;
	double		 after = -1;
	int		 n;

	switch (r->cls) {
	case GRAPH_OK:
		res = "sent";
		if (r->wamid[0] != '\0')
			json_object_object_add(o, "wamid",
			    json_object_new_string(r->wamid));
		break;
	case GRAPH_NEEDS_TEMPLATE:
		res = "window_closed";
		break;
	case GRAPH_BACKOFF:
		res = "retry";
		after = r->retry_after_s > 0 ? (double)r->retry_after_s :
		    sender_delay(1, 4, attempts);
		if (after > SENDER_MAX_DELAY_S)
			after = SENDER_MAX_DELAY_S;
		break;
	case GRAPH_RETRY:
		res = "retry";
		after = sender_delay((double)base_ms / 1000, 2, attempts);
		break;
	default:
		res = "failed";
		break;
	}
	json_object_object_add(o, "result", json_object_new_string(res));
	if (r->cls != GRAPH_OK) {
		if (r->code != 0)
			json_object_object_add(o, "error_code",
			    json_object_new_int64(r->code));
		json_object_object_add(o, "error_detail",
		    json_object_new_string(r->message));
	}
	if (after >= 0)
		json_object_object_add(o, "retry_after_s",
		    json_object_new_double(after));
	n = snprintf(buf, len, "%s", json_object_to_json_string_ext(o,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return n;
}

static void
sender_row_destroy(struct sender_row *row)
{
	if (row->again != NULL)
		event_free(row->again);
	free(row->pnid);
	free(row->payload);
	free(row->result);
	free(row);
}

/* Forget a row: its result is recorded, or can no longer be. */
static void
sender_row_free(struct sender_row *row)
{
	struct sender	*s = row->s;

	TAILQ_REMOVE(&s->rows, row, entry);
	s->inflight--;
	sender_row_destroy(row);
}

/* Stop sending until restart (190, 368, 401): readiness says why. */
static void
sender_pause(struct sender *s, const struct graph_result *r)
{
	if (s->paused)
		return;
	s->paused = 1;
	s->pause_code = r->code != 0 ? r->code : r->http_status;
	snprintf(s->pause_why, sizeof s->pause_why, "sender paused: Graph API "
	    "error %ld (%s); fix WHATSAPP_TOKEN or the account, then restart",
	    s->pause_code, r->code == 368 ? "account blocked for policy "
	    "violations" : "access token invalid or expired");
	log_error("%s", s->pause_why);
}

/* Event callback: try recording a row's result again. */
static void
sender_record_again(evutil_socket_t fd, short what, void *arg)
{
	sender_record(arg);
}

/* The record came back: done, or try again while the lease lasts. */
static void
sender_record_done(PGresult *res, const char *err, void *arg)
{
	struct sender_row	*row = arg;
	struct sender		*s = row->s;
	struct timeval		 tv = { 1, 0 };
	const char		*v;
	int			 kick;

	if (res == NULL || PQresultStatus(res) != PGRES_TUPLES_OK) {
		log_warnx("sender: outbox %s: result not recorded: %s",
		    row->id, res == NULL ? err : PQresultErrorMessage(res));
		if (sender_now() + 1 < row->deadline &&
		    (row->again != NULL || (row->again = event_new(s->base,
		    -1, 0, sender_record_again, row)) != NULL) &&
		    event_add(row->again, &tv) == 0)
			return;
		log_warnx("sender: outbox %s: lease over; the row will be "
		    "posted again", row->id);
		sender_row_free(row);
		return;
	}
	v = PQntuples(res) > 0 ? PQgetvalue(res, 0, 0) : "";
	if (strstr(v, "\"ok\": true") == NULL)
		log_warnx("sender: outbox %s: %s", row->id, v);
	/* Claim again when this may let something go: a message done
	 * frees its conversation's next one; a slot freed by a full sender
	 * serves a waiting row or one left pending for want of room. A
	 * read receipt of a sender with room holds back nothing. */
	kick = strcmp(row->kind, "read") != 0 || s->nwaiting > 0 ||
	    s->inflight >= (size_t)s->concurrency;
	sender_row_free(row);
	if (kick)
		event_active(s->kick, EV_TIMEOUT, 0);
}

/* Record row->result with mg_outbox_result. */
static void
sender_record(struct sender_row *row)
{
	const char	*p[2] = { row->id, row->result };

	if (dbq_query(row->s->db, result_sql, 2, p, sender_record_done,
	    row) == -1) {
		log_warnx("sender: outbox %s: out of memory", row->id);
		sender_row_free(row);
	}
}

/* Keep the result text of a row and record it. */
static void
sender_finish(struct sender_row *row, const char *json)
{
	if ((row->result = strdup(json)) == NULL) {
		sender_row_free(row);
		return;
	}
	sender_record(row);
}

/* True when a failed post may still have been accepted: the request went
 * out but no answer came back (timeout, connection cut while waiting). */
static int
sender_maybe_sent(const struct graph_result *r, const char *kind)
{
	if (r->http_status != 0 || strcmp(kind, "read") == 0)
		return 0;
	switch (r->curl_code) {
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_GOT_NOTHING:
	case CURLE_RECV_ERROR:
	case CURLE_PARTIAL_FILE:
		return 1;
	default:
		return 0;
	}
}

/* The Graph API answered a post. */
static void
sender_posted(const struct graph_result *r, void *arg)
{
	struct sender_row	*row = arg;
	struct sender		*s = row->s;
	struct graph_result	 rr = *r;
	char			 buf[1024];

	if (rr.cls == GRAPH_OK && rr.wamid[0] == '\0' &&
	    strcmp(row->kind, "read") != 0) {
		/* Accepted, but no id to track: may be delivered, never
		 * post it again. */
		rr.cls = GRAPH_PERMANENT;
		snprintf(rr.message, sizeof rr.message, "accepted without a "
		    "message id (HTTP %ld); not posted again", rr.http_status);
	}
	if (rr.cls == GRAPH_STOP)
		sender_pause(s, &rr);
	if (rr.cls == GRAPH_RETRY && sender_maybe_sent(&rr, row->kind) &&
	    s->reconcile_s > 0) {
		/* The request may have reached Meta: give its status webhook
		 * the reconcile window before posting it again. */
		rr.retry_after_s = s->reconcile_s;
		rr.cls = GRAPH_BACKOFF;
	}
	sender_result_json(&rr, row->attempts, s->retry_base_ms, buf,
	    sizeof buf);
	sender_count(s, rr.cls == GRAPH_OK ? "sent" :
	    rr.cls == GRAPH_NEEDS_TEMPLATE ? "window_closed" :
	    rr.cls == GRAPH_RETRY || rr.cls == GRAPH_BACKOFF ? "retry" :
	    "failed", rr.code);
	log_debug("sender: outbox %s (%s): %s", row->id, row->kind, buf);
	sender_finish(row, buf);
}

/* Post one claimed row (or mark it dry-run). */
static void
sender_start(struct sender *s, struct sender_row *row)
{
	struct graph_result	r;
	char			buf[512];

	if (s->dry_run) {
		sender_count(s, "dry_run", 0);
		sender_finish(row, "{\"result\":\"dry_run\"}");
		return;
	}
	if (graph_send_payload(s->g, row->pnid, row->payload, sender_posted,
	    row) == 0)
		return;
	memset(&r, 0, sizeof r);
	r.cls = GRAPH_RETRY;
	snprintf(r.message, sizeof r.message, "could not start the request");
	sender_result_json(&r, row->attempts, s->retry_base_ms, buf,
	    sizeof buf);
	sender_count(s, "retry", 0);
	sender_finish(row, buf);
}

/* A string member of o, or "" when absent. */
static const char *
sender_str(json_object *o, const char *key)
{
	json_object	*v;

	if (json_object_object_get_ex(o, key, &v) && v != NULL)
		return json_object_get_string(v);
	return "";
}

/* A row from one mg_claim_outbox value; NULL on failure. */
static struct sender_row *
sender_row_new(struct sender *s, json_object *o)
{
	struct sender_row	*row;
	json_object		*v;

	if ((row = calloc(1, sizeof *row)) == NULL)
		return NULL;
	row->s = s;
	snprintf(row->id, sizeof row->id, "%s", sender_str(o, "id"));
	snprintf(row->kind, sizeof row->kind, "%s", sender_str(o, "kind"));
	if (json_object_object_get_ex(o, "attempts", &v))
		row->attempts = json_object_get_int(v);
	if (json_object_object_get_ex(o, "reposted", &v) &&
	    json_object_get_boolean(v)) {
		log_info("sender: outbox %s: no status named it within %d s "
		    "of its lease; posting it again", row->id, s->reconcile_s);
		sender_count(s, "reposted", 0);
	}
	row->pnid = strdup(sender_str(o, "phone_number_id"));
	if (json_object_object_get_ex(o, "payload", &v))
		row->payload = strdup(json_object_to_json_string_ext(v,
		    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	if (row->pnid == NULL || row->payload == NULL) {
		free(row->pnid);
		free(row->payload);
		free(row);
		row = NULL;
	}
	/* Stop recording a little before another process may take it. */
	if (row != NULL)
		row->deadline = sender_now() + s->lease_s - 1;
	return row;
}

/* Post a leased row now, or when a slot frees (MODEGATE_SEND_CONCURRENCY
 * posts at once). */
static void
sender_add(struct sender *s, json_object *o)
{
	struct sender_row	*row;

	if (o == NULL || (row = sender_row_new(s, o)) == NULL) {
		log_warnx("sender: unreadable claimed row; posted again after "
		    "its lease");
		return;
	}
	if (s->inflight >= (size_t)s->concurrency) {
		TAILQ_INSERT_TAIL(&s->waiting, row, entry);
		s->nwaiting++;
		return;
	}
	TAILQ_INSERT_TAIL(&s->rows, row, entry);
	s->inflight++;
	sender_start(s, row);
}

/* Start waiting rows in the free slots; a row whose lease would end
 * before its post could be answered is left to expire (it is posted
 * again after it, by whoever claims it). */
static void
sender_start_waiting(struct sender *s)
{
	struct sender_row	*row;

	while (s->inflight < (size_t)s->concurrency &&
	    (row = TAILQ_FIRST(&s->waiting)) != NULL) {
		TAILQ_REMOVE(&s->waiting, row, entry);
		s->nwaiting--;
		TAILQ_INSERT_TAIL(&s->rows, row, entry);
		s->inflight++;
		if (sender_now() + s->post_timeout_s < row->deadline)
			sender_start(s, row);
		else {
			log_warnx("sender: outbox %s: lease too short to post "
			    "now; posted again after it", row->id);
			sender_row_free(row);
		}
	}
}

/* mg_claim_outbox answered: post every row it leased to us. */
static void
sender_claimed(PGresult *res, const char *err, void *arg)
{
	struct sender		*s = arg;
	json_object		*o;
	int			 i, n;

	s->claiming = 0;
	if (res == NULL || PQresultStatus(res) != PGRES_TUPLES_OK) {
		if (!s->db_err)
			log_warnx("sender: claim failed: %s", res == NULL ?
			    err : PQresultErrorMessage(res));
		s->db_err = 1;
		return;
	}
	s->db_err = 0;
	n = PQntuples(res);
	for (i = 0; i < n; i++) {
		o = json_tokener_parse(PQgetvalue(res, i, 0));
		sender_add(s, o);
		json_object_put(o);
	}
	if (n > 0 || s->again)
		event_active(s->kick, EV_TIMEOUT, 0);
	s->again = 0;
}

/* The template upsert answered: start claiming either way. */
static void
sender_template_done(PGresult *res, const char *err, void *arg)
{
	struct sender	*s = arg;

	s->tpl_busy = 0;
	if (res == NULL)
		return;		/* no connection yet: next tick */
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		log_warnx("sender: window-closed template not stored: %s",
		    PQresultErrorMessage(res));
	else
		log_info("sender: window-closed template %s (%s)",
		    s->tpl_name, s->tpl_lang);
	s->tpl_done = 1;
	event_active(s->kick, EV_TIMEOUT, 0);
}

/* Claim due rows when there is room for more posts. */
static void
sender_poll(struct sender *s)
{
	char		 lease[16], lim[16], rec[16];
	const char	*p[4] = { s->worker, lease, lim, rec };

	if (!s->tpl_done) {
		p[0] = s->tpl_name;
		p[1] = s->tpl_lang;
		if (!s->tpl_busy && dbq_query(s->db, template_sql, 2, p,
		    sender_template_done, s) == 0)
			s->tpl_busy = 1;
		return;
	}
	if (s->paused)
		return;
	sender_start_waiting(s);
	if (s->draining)
		return;
	if (s->claiming) {
		s->again = 1;
		return;
	}
	if (s->inflight >= (size_t)s->concurrency)
		return;
	snprintf(lease, sizeof lease, "%d", s->lease_s);
	snprintf(lim, sizeof lim, "%zu", (size_t)s->concurrency - s->inflight);
	snprintf(rec, sizeof rec, "%d", s->reconcile_s);
	if (dbq_query(s->db, claim_sql, 4, p, sender_claimed, s) == 0)
		s->claiming = 1;
}

/* The timer and the kick. */
static void
sender_wake(evutil_socket_t fd, short what, void *arg)
{
	sender_poll(arg);
}

void
sender_kick(struct sender *s)
{
	if (s != NULL && s->kick != NULL)
		event_active(s->kick, EV_TIMEOUT, 0);
}

int
sender_lease(struct sender *s, const char **owner, int *lease_s, int *room)
{
	if (s == NULL)
		return -1;
	*owner = s->worker;
	*lease_s = s->lease_s;
	/* Draining takes them too: the turns still in flight at a
	 * graceful stop get their replies out before it exits. */
	*room = !s->tpl_done || s->paused ||
	    s->inflight >= (size_t)s->concurrency ? 0 :
	    s->concurrency - (int)s->inflight;
	return 0;
}

void
sender_take(struct sender *s, json_object *rows)
{
	size_t	i, n;

	if (s == NULL || !json_object_is_type(rows, json_type_array))
		return;
	n = json_object_array_length(rows);
	if (n > 0 && s->paused) {
		/* Leased before the pause: posting now would fail them too. */
		log_warnx("sender: paused; %zu leased rows left for after the "
		    "restart (posted once their lease expires)", n);
		return;
	}
	for (i = 0; i < n; i++)
		sender_add(s, json_object_array_get_idx(rows, i));
}

/* Split "name:language" into the sender; 0, or -1 when malformed. */
static int
sender_template(struct sender *s, const char *spec)
{
	const char	*colon = strrchr(spec, ':');

	if (spec[0] == '\0') {
		s->tpl_done = 1;
		return 0;
	}
	if (colon == NULL || colon == spec || colon[1] == '\0')
		return -1;
	s->tpl_name = strndup(spec, (size_t)(colon - spec));
	s->tpl_lang = strdup(colon + 1);
	return s->tpl_name != NULL && s->tpl_lang != NULL ? 0 : -1;
}

struct sender *
sender_new(struct event_base *base, const struct config *cfg)
{
	struct sender		*s;
	struct graph_params	 gp;
	struct timeval		 tv = { 0, SENDER_TICK_MS * 1000 };
	char			 host[64];

	if ((s = calloc(1, sizeof *s)) == NULL)
		return NULL;
	s->base = base;
	TAILQ_INIT(&s->rows);
	TAILQ_INIT(&s->waiting);
	s->dry_run = cfg->wa_token == NULL || cfg->wa_token[0] == '\0';
	s->concurrency = cfg->send_concurrency > 0 ? cfg->send_concurrency :
	    32;
	s->lease_s = cfg->send_lease_s >= 2 ? cfg->send_lease_s : 30;
	s->reconcile_s = cfg->send_reconcile_s >= 0 ? cfg->send_reconcile_s :
	    30;
	s->retry_base_ms = cfg->send_retry_base_ms > 0 ?
	    cfg->send_retry_base_ms : 2000;
	if (gethostname(host, sizeof host) == -1)
		snprintf(host, sizeof host, "host");
	host[sizeof host - 1] = '\0';
	snprintf(s->worker, sizeof s->worker, "sender:%s:%ld", host,
	    (long)getpid());
	if (sender_template(s, cfg->wa_template_closed ?
	    cfg->wa_template_closed : "") == -1) {
		log_error("sender: WHATSAPP_TEMPLATE_WINDOW_CLOSED must be "
		    "NAME:LANGUAGE");
		goto fail;
	}
	memset(&gp, 0, sizeof gp);
	gp.api_base = cfg->wa_api_base;
	gp.token = cfg->wa_token;
	gp.connect_timeout_ms = 5000;
	/* The answer must come back before the lease ends. */
	gp.timeout_ms = s->lease_s > 16 ? 15000 : (s->lease_s - 1) * 1000L;
	s->post_timeout_s = (double)gp.timeout_ms / 1000;
	if ((s->db = dbq_new(base, "sender", cfg->database_url,
	    SENDER_DB_CONNS)) == NULL || dbq_batch(s->db, result_sql,
	    "SELECT n, r FROM mg_outbox_result_many($1::jsonb)") == -1 ||
	    (s->cv = curlev_new(base)) == NULL ||
	    (s->g = graph_new(s->cv, &gp)) == NULL ||
	    (s->timer = event_new(base, -1, EV_PERSIST, sender_wake, s)) ==
	    NULL || (s->kick = event_new(base, -1, 0, sender_wake, s)) ==
	    NULL || event_add(s->timer, &tv) == -1)
		goto fail;
	if (s->dry_run)
		log_info("sender: dry-run: replies are recorded, not sent");
	else
		log_info("sender: posting to %s, %d at once", cfg->wa_api_base,
		    s->concurrency);
	return s;
fail:
	sender_free(s);
	return NULL;
}

void
sender_free(struct sender *s)
{
	struct sender_row	*row;

	if (s == NULL)
		return;
	dbq_free(s->db);	/* no callback runs after this */
	graph_free(s->g);
	curlev_free(s->cv);
	while ((row = TAILQ_FIRST(&s->rows)) != NULL)
		sender_row_free(row);
	while ((row = TAILQ_FIRST(&s->waiting)) != NULL) {
		TAILQ_REMOVE(&s->waiting, row, entry);
		sender_row_destroy(row);
	}
	if (s->timer != NULL)
		event_free(s->timer);
	if (s->kick != NULL)
		event_free(s->kick);
	free(s->tpl_name);
	free(s->tpl_lang);
	free(s);
}

void
sender_drain(struct sender *s)
{
	if (s != NULL)
		s->draining = 1;
}

size_t
sender_inflight(const struct sender *s)
{
	return s != NULL ? s->inflight + s->nwaiting : 0;
}

int
sender_paused(const struct sender *s, char *why, size_t len)
{
	if (s == NULL || !s->paused)
		return 0;
	snprintf(why, len, "%s", s->pause_why);
	return 1;
}

void
sender_metrics(const struct sender *s, struct evbuffer *out)
{
	size_t	i;

	evbuffer_add_printf(out, "# HELP modegate_sends_total Outbox rows "
	    "handled by the sender, by outcome and WhatsApp error code.\n"
	    "# TYPE modegate_sends_total counter\n");
	for (i = 0; i < s->ncounts; i++) {
		if (s->counts[i].code != 0)
			evbuffer_add_printf(out, "modegate_sends_total{outcome="
			    "\"%s\",code=\"%ld\"} %llu\n", s->counts[i].outcome,
			    s->counts[i].code, s->counts[i].n);
		else
			evbuffer_add_printf(out, "modegate_sends_total{outcome="
			    "\"%s\"} %llu\n", s->counts[i].outcome,
			    s->counts[i].n);
	}
	evbuffer_add_printf(out, "# HELP modegate_sender_paused 1 when the "
	    "sender stopped sending (token or account error) until restart."
	    "\n# TYPE modegate_sender_paused gauge\n");
	if (s->paused)
		evbuffer_add_printf(out, "modegate_sender_paused{reason="
		    "\"%ld\"} 1\n", s->pause_code);
	else
		evbuffer_add_printf(out, "modegate_sender_paused 0\n");
	evbuffer_add_printf(out, "# HELP modegate_sender_inflight Outbox rows "
	    "being posted.\n# TYPE modegate_sender_inflight gauge\n"
	    "modegate_sender_inflight %zu\n# HELP modegate_sender_dry_run 1 "
	    "when no WHATSAPP_TOKEN is set: rows are recorded, not posted.\n"
	    "# TYPE modegate_sender_dry_run gauge\nmodegate_sender_dry_run "
	    "%d\n", s->inflight, s->dry_run);
}
