/*
 * followup.c -- the scheduler: mg_followup_sweep on a libevent timer.
 * All the decisions live in SQL (sql/functions/), in one short
 * transaction per pass, so that every process may run it: rows are taken
 * with FOR UPDATE SKIP LOCKED and a follow-up is unique per bridge. The
 * follow-up goes out through the outbox like a reply (same sender, same
 * per-conversation order, template when the 24-hour window is closed).
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <json-c/json.h>

#include "base/config.h"
#include "db/queue.h"
#include "send/followup.h"
#include "base/log.h"
#include "send/sender.h"

#define FOLLOWUP_LIMIT	"100"	/* conversations / rows per step and pass */

static const char sweep_sql[] =
    "SELECT mg_followup_sweep($1, $2::int, $3::int, $4::int, $5, $6::int)";
static const char template_sql[] =
    "INSERT INTO wa_templates (purpose, payload) VALUES ('followup', "
    "jsonb_build_object('type', 'template', 'template', "
    "jsonb_build_object('name', $1::text, 'language', "
    "jsonb_build_object('code', $2::text, 'policy', 'deterministic')))) "
    "ON CONFLICT (purpose) DO UPDATE SET payload = EXCLUDED.payload, "
    "updated_at = now()";

struct followup {
	struct event_base	*base;
	struct sender		*sender;	/* borrowed; NULL: none */
	const struct config	*cfg;
	struct dbq		*db;		/* opened at the first pass */
	struct event		*timer, *first;
	char			 owner[96];
	char			*text;		/* messages.json replies.followup */
	char			 after_s[16], no_answer_s[16];
	char			 pending_s[16];	/* "": the SQL setting */
	char			*tpl_name, *tpl_lang;
	int			 tpl_done, busy, db_err;
};

/* The follow-up text of mode/messages.json; a new string or NULL. */
static char *
followup_load_text(const char *dir)
{
	json_object	*o, *r, *v;
	char		 path[4096], *s = NULL;

	snprintf(path, sizeof path, "%s/mode/messages.json", dir);
	if ((o = json_object_from_file(path)) == NULL) {
		log_error("followup: %s: not valid JSON", path);
		return NULL;
	}
	if (json_object_object_get_ex(o, "replies", &r) &&
	    json_object_object_get_ex(r, "followup", &v) &&
	    json_object_is_type(v, json_type_string) &&
	    json_object_get_string_len(v) > 0)
		s = strdup(json_object_get_string(v));
	else
		log_error("followup: %s: replies.followup: missing", path);
	json_object_put(o);
	return s;
}

/* The router's pending timeout (mode/transitions.json), seconds, into
 * buf; left empty (the SQL default) when the file does not say. */
static void
followup_load_pending(const char *dir, char *buf, size_t len)
{
	json_object	*o, *v;
	char		 path[4096];

	buf[0] = '\0';
	snprintf(path, sizeof path, "%s/mode/transitions.json", dir);
	if ((o = json_object_from_file(path)) == NULL)
		return;
	if (json_object_object_get_ex(o, "pending_timeout_minutes", &v) &&
	    json_object_is_type(v, json_type_int) && json_object_get_int(v) > 0)
		snprintf(buf, len, "%d", json_object_get_int(v) * 60);
	json_object_put(o);
}

/* Split "name:language"; 0, or -1 when malformed. "" is no template. */
static int
followup_template(struct followup *f, const char *spec)
{
	const char	*colon = strrchr(spec, ':');

	if (spec[0] == '\0') {
		f->tpl_done = 1;
		return 0;
	}
	if (colon == NULL || colon == spec || colon[1] == '\0')
		return -1;
	f->tpl_name = strndup(spec, (size_t)(colon - spec));
	f->tpl_lang = strdup(colon + 1);
	return f->tpl_name != NULL && f->tpl_lang != NULL ? 0 : -1;
}

/* One counter of the sweep's answer, or 0. */
static int
followup_count(json_object *o, const char *key)
{
	json_object	*v;

	return json_object_object_get_ex(o, key, &v) ?
	    json_object_get_int(v) : 0;
}

/* A pass answered: log what it did, wake the sender when it queued. */
static void
followup_swept(PGresult *res, const char *err, void *arg)
{
	struct followup	*f = arg;
	json_object	*o;

	f->busy = 0;
	if (res == NULL || PQresultStatus(res) != PGRES_TUPLES_OK ||
	    PQntuples(res) != 1) {
		/* Once per outage: the next pass retries by itself. */
		if (!f->db_err)
			log_warnx("followup: sweep failed: %s", res == NULL ?
			    err : PQresultErrorMessage(res));
		f->db_err = 1;
		return;
	}
	f->db_err = 0;
	if ((o = json_tokener_parse(PQgetvalue(res, 0, 0))) == NULL)
		return;
	if (followup_count(o, "queued") > 0)
		sender_kick(f->sender);
	if (followup_count(o, "queued") + followup_count(o, "skipped") +
	    followup_count(o, "sent") + followup_count(o, "failed") +
	    followup_count(o, "answered") + followup_count(o, "sem_resposta") +
	    followup_count(o, "expired") > 0)
		log_info("followup: queued=%d skipped=%d sent=%d failed=%d "
		    "answered=%d sem_resposta=%d expired_pendings=%d",
		    followup_count(o, "queued"), followup_count(o, "skipped"),
		    followup_count(o, "sent"), followup_count(o, "failed"),
		    followup_count(o, "answered"),
		    followup_count(o, "sem_resposta"),
		    followup_count(o, "expired"));
	json_object_put(o);
}

/* The template upsert answered: sweep either way. */
static void
followup_template_done(PGresult *res, const char *err, void *arg)
{
	struct followup	*f = arg;

	f->busy = 0;
	if (res == NULL)
		return;		/* no connection yet: next tick */
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		log_warnx("followup: template not stored: %s",
		    PQresultErrorMessage(res));
	else
		log_info("followup: template %s (%s)", f->tpl_name,
		    f->tpl_lang);
	f->tpl_done = 1;
	event_active(f->timer, EV_TIMEOUT, 0);
}

/* The timer: one pass at a time. */
static void
followup_tick(evutil_socket_t fd, short what, void *arg)
{
	struct followup	*f = arg;
	const char	*p[6] = { f->owner, f->after_s, f->no_answer_s,
			    f->pending_s[0] != '\0' ? f->pending_s : NULL,
			    f->text, FOLLOWUP_LIMIT };

	if (f->busy)
		return;
	/* The pool opens at the first pass, a second after the start, so
	 * that it never competes with the webhook's connections then. */
	if (f->db == NULL &&
	    (f->db = dbq_new(f->base, f->cfg->database_url, 1)) == NULL) {
		log_warnx("followup: out of memory");
		return;
	}
	if (!f->tpl_done) {
		if (dbq_query(f->db, template_sql, 2, (const char *const[]){
		    f->tpl_name, f->tpl_lang }, followup_template_done, f) == 0)
			f->busy = 1;
		return;
	}
	if (dbq_query(f->db, sweep_sql, 6, p, followup_swept, f) == 0)
		f->busy = 1;
}

/* The first pass, a second after the start: while the pool it opens is
 * still connecting, look again shortly (not a whole period later, and
 * no warning of an outage). */
static void
followup_first(evutil_socket_t fd, short what, void *arg)
{
	struct followup	*f = arg;
	struct timeval	 tv = { 0, 200000 };

	if (f->db == NULL)
		f->db = dbq_new(f->base, f->cfg->database_url, 1);
	if (f->db != NULL && !dbq_up(f->db)) {
		evtimer_add(f->first, &tv);
		return;
	}
	followup_tick(fd, what, arg);
}

/* A delay in seconds: the _S override when set, else hours. */
static void
followup_delay(char *buf, size_t len, int s, int h)
{
	snprintf(buf, len, "%ld", s > 0 ? (long)s : (long)h * 3600);
}

struct followup *
followup_new(struct event_base *base, const struct config *cfg,
    struct sender *sender, int *disabled)
{
	struct followup	*f;
	struct timeval	 tv = { cfg->sweep_s, 0 }, soon = { 1, 0 };
	char		 host[64];

	*disabled = cfg->sweep_s == 0;
	if (*disabled) {
		log_info("followup: MODEGATE_SWEEP_S=0: no sweep here");
		return NULL;
	}
	if ((f = calloc(1, sizeof *f)) == NULL)
		return NULL;
	f->sender = sender;
	f->base = base;
	f->cfg = cfg;
	if (gethostname(host, sizeof host) == -1)
		snprintf(host, sizeof host, "host");
	host[sizeof host - 1] = '\0';
	snprintf(f->owner, sizeof f->owner, "sweep:%s:%ld", host,
	    (long)getpid());
	followup_delay(f->after_s, sizeof f->after_s, cfg->followup_after_s,
	    cfg->followup_after_h);
	followup_delay(f->no_answer_s, sizeof f->no_answer_s,
	    cfg->no_answer_s, cfg->no_answer_h);
	followup_load_pending(cfg->rules_dir, f->pending_s,
	    sizeof f->pending_s);
	if ((f->text = followup_load_text(cfg->rules_dir)) == NULL)
		goto fail;
	if (followup_template(f, cfg->wa_template_followup ?
	    cfg->wa_template_followup : "") == -1) {
		log_error("followup: WHATSAPP_TEMPLATE_FOLLOWUP must be "
		    "NAME:LANGUAGE");
		goto fail;
	}
	if ((f->timer = event_new(base, -1, EV_PERSIST, followup_tick, f)) ==
	    NULL || event_add(f->timer, &tv) == -1 ||
	    (f->first = evtimer_new(base, followup_first, f)) == NULL ||
	    evtimer_add(f->first, &soon) == -1)
		goto fail;
	log_info("followup: sweep every %d s; follow-up %s s after a bridge, "
	    "sem_resposta %s s after it", cfg->sweep_s, f->after_s,
	    f->no_answer_s);
	return f;
fail:
	log_error("followup: cannot start");
	followup_free(f);
	return NULL;
}

void
followup_free(struct followup *f)
{
	if (f == NULL)
		return;
	dbq_free(f->db);	/* no callback runs after this */
	if (f->timer != NULL)
		event_free(f->timer);
	if (f->first != NULL)
		event_free(f->first);
	free(f->text);
	free(f->tpl_name);
	free(f->tpl_lang);
	free(f);
}
