/*
 * cmd_serve.c -- modegate serve: the webhook front door. Refuses to start
 * on any configuration problem (exit 78); SIGINT/SIGTERM stop accepting,
 * finish the batches in flight, and exit 0.
 * SPDX-License-Identifier: MIT
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>
#include <event2/event.h>

#include "cmd/cmd.h"
#include "base/config.h"
#include "send/followup.h"
#include "http/ingest.h"
#include "base/log.h"
#include "rules/ruleset.h"
#include "db/migrate.h"
#include "send/sender.h"
#include "http/server.h"
#include "turn/worker.h"

#define DRAIN_MAX_S	10

struct serve_state {
	struct server	 srv;
	struct worker	*worker;
	struct event	*drain;
	double		 stop_at;
};

/*
 * While draining: exit the loop once nothing is queued or in flight --
 * webhooks to commit, turns to commit (their leases would otherwise hold
 * the doctor's conversation until they expire), posts to record.
 */
static void
serve_drain_tick(evutil_socket_t fd, short what, void *arg)
{
	struct serve_state	*st = arg;
	size_t			 req = ingest_pending(st->srv.ingest);
	size_t			 turns = worker_inflight(st->worker);
	size_t			 posts = sender_inflight(st->srv.sender);

	if (req + turns + posts == 0 || reply_now() > st->stop_at) {
		if (req + turns + posts > 0)
			log_warnx("serve: at exit %zu requests unanswered, %zu "
			    "turns unfinished (retaken when their lease "
			    "expires), %zu posts unrecorded", req, turns,
			    posts);
		event_base_loopexit(st->srv.base, NULL);
	}
}

/*
 * SIGINT/SIGTERM: the first drains; another one a second later exits at
 * once (Ctrl-C reaches us from the terminal and from make run's trap).
 */
static void
serve_signal(evutil_socket_t sig, short what, void *arg)
{
	struct serve_state	*st = arg;
	struct timeval		 tv = { 0, 20000 };

	if (st->srv.draining) {
		if (reply_now() > st->stop_at - DRAIN_MAX_S + 1)
			event_base_loopexit(st->srv.base, NULL);
		return;
	}
	log_info("serve: signal %d, stopping", (int)sig);
	http_stop_accepting(&st->srv);
	worker_drain(st->worker);
	sender_drain(st->srv.sender);
	st->stop_at = reply_now() + DRAIN_MAX_S;
	st->drain = event_new(st->srv.base, -1, EV_PERSIST, serve_drain_tick,
	    st);
	if (st->drain == NULL || event_add(st->drain, &tv) == -1)
		event_base_loopexit(st->srv.base, NULL);
}

/*
 * libevent's own messages (e.g. evhttp's accept() failures) go through the
 * log like ours, so that MODEGATE_LOG_FORMAT=json stays pure JSON. It must
 * not call libevent from here.
 */
static void
serve_event_log(int severity, const char *msg)
{
	switch (severity) {
	case EVENT_LOG_DEBUG:
		log_debug("libevent: %s", msg);
		break;
	case EVENT_LOG_MSG:
		log_info("libevent: %s", msg);
		break;
	case EVENT_LOG_WARN:
		log_warnx("libevent: %s", msg);
		break;
	default:
		log_error("libevent: %s", msg);
		break;
	}
}

/* Load the configuration and the newest migration number; 0 or exit code. */
static int
serve_config(struct config *cfg, int *latest)
{
	struct diag	d;
	struct ruleset	rs;
	char		sqldir[4096], err[512];
	size_t		i;
	int		lvl;

	diag_init(&d);
	if (config_load(cfg, &d) == 0) {
		snprintf(sqldir, sizeof sqldir, "%s/sql", cfg->rules_dir);
		if (migrate_latest(sqldir, latest, err, sizeof err) == -1)
			diag_add(&d, "MODEGATE_RULES_DIR", "", "%s", err);
		/* Bad rules refuse the start, as in check-config; the worker
		 * loads its own copy. */
		if (ruleset_load(&rs, cfg->rules_dir, &d) == 0)
			ruleset_free(&rs);
	}
	if (d.n > 0 || d.dropped > 0) {
		for (i = 0; i < d.n; i++)
			fprintf(stderr, "%s\n", d.msg[i]);
		if (d.dropped > 0)
			fprintf(stderr, "... and %zu more problems\n",
			    d.dropped);
		fprintf(stderr, "serve: refusing to start\n");
		return EX_CONFIG_CODE;
	}
	lvl = log_level_from_name(cfg->log_level);
	log_init(lvl < 0 ? LOG_INFO : (enum log_level)lvl,
	    strcmp(cfg->log_format, "json") == 0);
	event_set_log_callback(serve_event_log);
	return 0;
}

int
cmd_serve(int argc, char **argv)
{
	struct serve_state	 st;
	struct config		 cfg;
	struct event		*sigint = NULL, *sigterm = NULL;
	struct followup		*fu = NULL;
	int			 rc, fu_off;

	if (argc > 1) {
		fprintf(stderr, "usage: modegate serve\n");
		return EX_USAGE_CODE;
	}
	memset(&st, 0, sizeof st);
	if ((rc = serve_config(&cfg, &st.srv.schema_latest)) != 0) {
		config_free(&cfg);
		return rc;
	}
	signal(SIGPIPE, SIG_IGN);
	st.srv.cfg = &cfg;
	rc = 1;
	if ((st.srv.base = event_base_new()) == NULL)
		goto done;
	if ((st.srv.sender = sender_new(st.srv.base, &cfg)) == NULL)
		goto done;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if ((st.worker = worker_new(st.srv.base, &cfg, st.srv.sender)) == NULL)
		goto done;
	st.srv.on_stored = worker_kick;
	st.srv.on_stored_arg = st.worker;
	sigint = evsignal_new(st.srv.base, SIGINT, serve_signal, &st);
	sigterm = evsignal_new(st.srv.base, SIGTERM, serve_signal, &st);
	if (sigint == NULL || sigterm == NULL || event_add(sigint, NULL) ||
	    event_add(sigterm, NULL) || http_start(&st.srv) == -1)
		goto done;
	/* After the webhook's pool: the scheduler is never in its way. */
	if ((fu = followup_new(st.srv.base, &cfg, st.srv.sender,
	    &fu_off)) == NULL && !fu_off)
		goto done;
	event_base_dispatch(st.srv.base);
	log_info("serve: stopped");
	rc = 0;
done:
	followup_free(fu);
	worker_free(st.worker);
	http_free(&st.srv);
	if (st.drain != NULL)
		event_free(st.drain);
	if (sigint != NULL)
		event_free(sigint);
	if (sigterm != NULL)
		event_free(sigterm);
	sender_free(st.srv.sender);
	if (st.srv.base != NULL)
		event_base_free(st.srv.base);
	config_free(&cfg);
	return rc;
}
