/*
 * http.c -- the libevent evhttp server: route table, /healthz, /readyz,
 * /metrics, and the periodic status query (schema version, inbox rows).
 * SPDX-License-Identifier: MIT
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "base/config.h"
#include "db/pool.h"
#include "http/conns.h"
#include "http/ingest.h"
#include "base/log.h"
#include "turn/metrics_turn.h"
#include "send/sender.h"
#include "http/server.h"
#include "http/wa.h"

#define STATUS_INTERVAL_S	5

/* One pass over inbox: rows by state and the oldest pending one's age;
 * the oldest unsent outbox row's age; the conversation_mode_enabled flag,
 * the ambiguous sends and the reconcile counters; for /metrics.
 * Never in parallel: the pass over inbox is the one large scan modegate
 * makes, and PostgreSQL would run it in as many processes as there are
 * cores, every STATUS_INTERVAL_S, stalling the ingest beside it (a burst
 * of 10-20 ms answers every 5 s at 1,000 webhooks/s with 300,000 rows
 * on two cores). set_config() is parallel-unsafe, so its presence keeps
 * the whole statement in one process; it sets a name nothing reads. */
static const char status_sql[] =
    "WITH s AS (SELECT state, count(*) AS n, min(received_at) AS oldest "
    "FROM inbox GROUP BY state) "
    "SELECT 'version', coalesce(max(version), 0) FROM schema_migrations "
    "UNION ALL SELECT state, n FROM s "
    "UNION ALL SELECT 'oldest_pending_ms', (extract(epoch FROM now() - "
    "oldest) * 1000)::bigint FROM s WHERE state = 'pending' "
    "UNION ALL SELECT 'oldest_unsent_ms', coalesce((extract(epoch FROM "
    "now() - min(created_at)) * 1000)::bigint, 0) FROM outbox "
    "WHERE state IN ('pending', 'sending') "
    "UNION ALL SELECT 'flag:' || value, percent FROM feature_flags "
    "WHERE name = 'conversation_mode_enabled' "
    "UNION ALL SELECT 'outbox_ambiguous', count(*) FROM outbox "
    "WHERE state = 'sending' AND lease_until < now() AND kind <> 'read' "
    "UNION ALL SELECT 'reconcile:' || outcome, n FROM send_reconcile_counts "
    "UNION ALL SELECT 'serial', 0 "
    "WHERE set_config('modegate.status_poll', 'serial', true) IS NULL";

typedef void (*route_fn)(struct server *, struct evhttp_request *, double);

struct route {
	const char	*path;
	int		 methods;
	route_fn	 get, post;
};

int
http_ready(const struct server *s, char *why, size_t len)
{
	if (db_pool_up(s->pool) == 0)
		snprintf(why, len, "database unreachable");
	else if (s->schema_current < 0)
		snprintf(why, len, "schema version not known yet");
	else if (s->schema_current < s->schema_latest)
		snprintf(why, len, "migrations pending: database at %d, "
		    "sql/ at %d (run modegate migrate)", s->schema_current,
		    s->schema_latest);
	else if (sender_paused(s->sender, why, len))
		;	/* 190 / 368: nothing can be sent until restart */
	else
		return 1;
	return 0;
}

/* GET /healthz: the process is alive. */
static void
route_healthz(struct server *s, struct evhttp_request *req, double t0)
{
	reply_send(s, req, 200, "ok\n", t0, 0);
}

/* GET /readyz: database reachable and migrations current. */
static void
route_readyz(struct server *s, struct evhttp_request *req, double t0)
{
	char	why[160], body[200];

	if (http_ready(s, why, sizeof why)) {
		reply_send(s, req, 200, "ready\n", t0, 0);
		return;
	}
	snprintf(body, sizeof body, "not ready: %s\n", why);
	reply_send(s, req, 503, body, t0, 0);
}

/* One modegate_db_connections_up line. */
static void
http_pool_metric(const struct db_pool_stats *st, void *arg)
{
	evbuffer_add_printf(arg, "modegate_db_connections_up{pool=\"%s\"} "
	    "%d\n", st->name, st->up);
}

/* The pool's group commits (src/db/queue.c). */
static void
http_pool_batches(const struct db_pool_stats *st, void *arg)
{
	evbuffer_add_printf(arg, "modegate_db_batches_total{pool=\"%s\"} "
	    "%lu\nmodegate_db_batched_queries_total{pool=\"%s\"} %lu\n",
	    st->name, st->batches, st->name, st->batched);
}

/* GET /metrics: Prometheus text format 0.0.4. */
static void
route_metrics(struct server *s, struct evhttp_request *req, double t0)
{
	char	why[160];

	metrics_render(&s->metrics, evhttp_request_get_output_buffer(req),
	    db_pool_up(s->pool), http_ready(s, why, sizeof why));
	evbuffer_add_printf(evhttp_request_get_output_buffer(req),
	    "# HELP modegate_db_connections_up Database connections up, by "
	    "pool (ingest, worker, sender, followup).\n"
	    "# TYPE modegate_db_connections_up gauge\n");
	db_pools_each(http_pool_metric, evhttp_request_get_output_buffer(req));
	evbuffer_add_printf(evhttp_request_get_output_buffer(req),
	    "# HELP modegate_db_batches_total Group commits: queries that "
	    "waited for a connection sent as one statement (commits, send "
	    "results), by pool.\n"
	    "# TYPE modegate_db_batches_total counter\n"
	    "# HELP modegate_db_batched_queries_total Queries sent in those "
	    "group commits, by pool.\n"
	    "# TYPE modegate_db_batched_queries_total counter\n");
	db_pools_each(http_pool_batches,
	    evhttp_request_get_output_buffer(req));
	if (s->sender != NULL)
		sender_metrics(s->sender, evhttp_request_get_output_buffer(req));
	metrics_turn_render(evhttp_request_get_output_buffer(req));
	httpconns_metrics(s->conns, evhttp_request_get_output_buffer(req));
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	evhttp_send_reply(req, 200, NULL, NULL);
}

static const struct route routes[] = {
	{ "/webhook", EVHTTP_REQ_GET | EVHTTP_REQ_POST, webhook_get,
	  webhook_post },
	{ "/healthz", EVHTTP_REQ_GET | EVHTTP_REQ_HEAD, route_healthz, NULL },
	{ "/readyz", EVHTTP_REQ_GET | EVHTTP_REQ_HEAD, route_readyz, NULL },
	{ "/metrics", EVHTTP_REQ_GET | EVHTTP_REQ_HEAD, route_metrics, NULL },
};

/* Every request: find the route, check the method. */
static void
http_dispatch(struct evhttp_request *req, void *arg)
{
	struct server		*s = arg;
	const char		*path;
	enum evhttp_cmd_type	 m = evhttp_request_get_command(req);
	double			 t0 = reply_now();
	size_t			 i;
	int			 hook;

	httpconns_request(s->conns, req);
	path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
	if (path == NULL || *path == '\0')
		path = "/";
	for (i = 0; i < sizeof routes / sizeof routes[0]; i++) {
		if (strcmp(path, routes[i].path) != 0)
			continue;
		hook = i == 0;
		if (!(routes[i].methods & (int)m)) {
			evhttp_add_header(evhttp_request_get_output_headers(req),
			    "Allow", routes[i].post ? "GET, POST" : "GET, HEAD");
			reply_send(s, req, 405, "method not allowed\n", t0,
			    hook);
		} else if (m == EVHTTP_REQ_POST)
			routes[i].post(s, req, t0);
		else
			routes[i].get(s, req, t0);
		/* /webhook counts itself when it answers (maybe later). */
		if (!hook)
			metrics_observe(&s->metrics, (enum metrics_route)i,
			    reply_now() - t0);
		return;
	}
	reply_send(s, req, 404, "not found\n", t0, 0);
	metrics_observe(&s->metrics, METRICS_OTHER, reply_now() - t0);
}

/*
 * evhttp answered a request itself, before any route saw it: a body over
 * its limit (413), a request line and headers over
 * MODEGATE_MAX_HEADER_BYTES or malformed (400), a method it does not
 * know (501). One line and a count, never the body.
 */
static void
http_refused(int code, const char *peer, void *arg)
{
	struct server	*s = arg;

	metrics_refused(&s->metrics, code);
	switch (code) {
	case 413:
		log_info("http: request from %s refused (413): body over %d "
		    "bytes", peer, WA_MAX_BODY);
		break;
	case 400:
		log_info("http: request from %s refused (400): request line "
		    "and headers over %d bytes (MODEGATE_MAX_HEADER_BYTES), or "
		    "malformed", peer, s->cfg->max_header_bytes);
		break;
	default:
		log_info("http: request from %s refused (%d) by the HTTP "
		    "layer", peer, code);
		break;
	}
}

/* The status query answered: schema version and inbox rows by state. */
static void
http_status_done(PGresult *res, const char *err, void *arg)
{
	struct server	*s = arg;
	const char	*k, *flag = NULL;
	int		 i, j, percent = 0;
	int64_t		 oldest = 0, unsent = 0;

	s->status_busy = 0;
	if (res == NULL)
		return;		/* connection lost: keep what we knew */
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		s->schema_current = 0;	/* no schema_migrations or inbox */
		return;
	}
	for (j = 0; j < METRICS_NSTATES; j++)
		s->metrics.inbox[j] = 0;
	for (i = 0; i < PQntuples(res); i++) {
		k = PQgetvalue(res, i, 0);
		if (strcmp(k, "version") == 0)
			s->schema_current = atoi(PQgetvalue(res, i, 1));
		for (j = 0; j < METRICS_NSTATES; j++)
			if (strcmp(k, metrics_states[j]) == 0)
				s->metrics.inbox[j] = atoll(PQgetvalue(res, i,
				    1));
		if (strcmp(k, "oldest_pending_ms") == 0)
			oldest = atoll(PQgetvalue(res, i, 1));
		else if (strcmp(k, "oldest_unsent_ms") == 0)
			unsent = atoll(PQgetvalue(res, i, 1));
		else if (strcmp(k, "outbox_ambiguous") == 0)
			s->metrics.outbox_ambiguous = atoll(PQgetvalue(res, i,
			    1));
		else if (strncmp(k, "reconcile:", 10) == 0) {
			for (j = 0; j < METRICS_NRECONCILE; j++)
				if (strcmp(k + 10, metrics_reconcile[j]) == 0)
					s->metrics.reconcile[j] = atoll(
					    PQgetvalue(res, i, 1));
		} else if (strncmp(k, "flag:", 5) == 0) {
			flag = k + 5;
			percent = atoi(PQgetvalue(res, i, 1));
		}
	}
	metrics_turn_db(oldest, unsent, flag, percent);
}

/* Pool changed state: feed the ingest first, then the status query. */
static void
http_pool_cb(struct db_pool *pool, void *arg)
{
	struct server	*s = arg;
	struct db_conn	*c;

	if (s->ingest == NULL)
		return;
	ingest_kick(s->ingest);
	if ((s->status_due || s->schema_current < 0) && !s->status_busy &&
	    (c = db_pool_idle(pool)) != NULL &&
	    db_send(c, status_sql, 0, NULL, http_status_done, s) == 0) {
		s->status_busy = 1;
		s->status_due = 0;
	}
}

/* Every few seconds: refresh the status when a connection is idle. */
static void
http_status_tick(evutil_socket_t fd, short what, void *arg)
{
	struct server	*s = arg;

	s->status_due = 1;
	http_pool_cb(s->pool, s);
}

/* The ingest answers a request. */
static void
http_ingest_reply(struct evhttp_request *req, int code, double t0, void *arg)
{
	struct server	*s = arg;

	if (code == 200 && s->on_stored != NULL)
		s->on_stored(s->on_stored_arg);
	reply_send(arg, req, code, code == 200 ? "ok\n" : code == 400 ?
	    "malformed webhook body (kept)\n" : "database unavailable\n", t0,
	    1);
}

/* The address really bound, as HOST:PORT or [V6]:PORT (port 0 asks the
 * kernel for one: this is where to find it). */
static void
http_bound_name(struct server *s, char *buf, size_t len)
{
	struct sockaddr_storage	 ss;
	socklen_t		 sl = sizeof ss;
	char			 host[INET6_ADDRSTRLEN];
	int			 port;

	snprintf(buf, len, "%s", s->cfg->listen);
	if (getsockname(evhttp_bound_socket_get_fd(s->sock),
	    (struct sockaddr *)&ss, &sl) == -1)
		return;
	if (ss.ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr,
		    host, sizeof host);
		port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
		snprintf(buf, len, "[%s]:%d", host, port);
	} else if (ss.ss_family == AF_INET) {
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr,
		    host, sizeof host);
		port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		snprintf(buf, len, "%s:%d", host, port);
	}
}

int
http_start(struct server *s)
{
	struct timeval	tv = { STATUS_INTERVAL_S, 0 };
	char		where[300];

	s->schema_current = -1;
	metrics_init(&s->metrics);
	if ((s->http = evhttp_new(s->base)) == NULL)
		return -1;
	evhttp_set_max_body_size(s->http, WA_MAX_BODY);
	/* Abuse limits: per-read and idle timeout, header size, and (in
	 * httpconn.c) a connection cap and a whole-request deadline. */
	evhttp_set_timeout(s->http, s->cfg->http_timeout_s);
	evhttp_set_max_headers_size(s->http, s->cfg->max_header_bytes);
	if ((s->conns = httpconns_new(s->base, s->http, &s->sock,
	    s->cfg->max_connections, s->cfg->http_timeout_s,
	    s->cfg->http_min_rate, http_refused, s)) == NULL)
		return -1;
	evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST |
	    EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
	    EVHTTP_REQ_PATCH | EVHTTP_REQ_OPTIONS);
	evhttp_set_gencb(s->http, http_dispatch, s);
	errno = 0;
	s->sock = evhttp_bind_socket_with_handle(s->http, s->cfg->listen_host,
	    (ev_uint16_t)s->cfg->listen_port);
	if (s->sock == NULL) {
		log_error("serve: cannot listen on %s: %s", s->cfg->listen,
		    errno != 0 ? strerror(errno) : "the address does not "
		    "resolve");
		return -1;
	}
	http_bound_name(s, where, sizeof where);
	s->pool = db_pool_new(s->base, "ingest", s->cfg->database_url,
	    s->cfg->db_connections, "ingest", ingest_sql, http_pool_cb, s);
	if (s->pool == NULL)
		return -1;
	s->ingest = ingest_new(s->pool, &s->metrics, http_ingest_reply, s);
	s->status_timer = event_new(s->base, -1, EV_PERSIST, http_status_tick,
	    s);
	if (s->ingest == NULL || s->status_timer == NULL ||
	    event_add(s->status_timer, &tv) == -1)
		return -1;
	log_info("serve: listening on %s, %d database connections", where,
	    s->cfg->db_connections);
	return 0;
}

void
http_stop_accepting(struct server *s)
{
	s->draining = 1;
	if (s->sock != NULL)
		evhttp_del_accept_socket(s->http, s->sock);
	s->sock = NULL;
}

void
http_free(struct server *s)
{
	if (s->status_timer != NULL)
		event_free(s->status_timer);
	ingest_free(s->ingest);
	s->ingest = NULL;
	if (s->http != NULL)
		evhttp_free(s->http);
	/* After evhttp_free: drops the references evhttp left us. */
	httpconns_free(s->conns);
	s->conns = NULL;
	db_pool_free(s->pool);
	s->pool = NULL;
	s->http = NULL;
}
