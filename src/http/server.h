/*
 * server.h -- the state of `modegate serve` shared by the HTTP front door
 * (http.c: routes, health, metrics) and the webhook handlers (webhook.c).
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_SERVER_H
#define MG_SERVER_H

#include "../../mode/core.h"
#include "base/metrics.h"

struct config;
struct db_pool;
struct event;
struct event_base;
struct evhttp;
struct evhttp_bound_socket;
struct evhttp_request;
struct httpconns;
struct ingest;
struct sender;

struct server {
	const struct config		*cfg;		/* borrowed */
	struct event_base		*base;
	struct evhttp			*http;
	struct evhttp_bound_socket	*sock;
	struct db_pool			*pool;
	struct ingest			*ingest;
	struct sender			*sender;	/* may be NULL */
	void				(*on_stored)(void *); /* new inbound */
	void				*on_stored_arg;
	struct metrics			 metrics;
	struct event			*status_timer;
	int				 status_due;	/* refresh wanted */
	int				 status_busy;	/* query in flight */
	int				 schema_latest;	/* newest sql/ file */
	int				 schema_current; /* -1: unknown */
	int				 draining;	/* stop accepting */
	struct httpconns		*conns;		/* cap, deadline */
};

/* Seconds on a monotonic clock. */
double	reply_now(void);

/*
 * Bind cfg->listen_host:listen_port and route requests; start the pool,
 * the ingest queue and the status refresher. 0, or -1 (logged).
 */
int	http_start(struct server *) MG_MUSTCHECK;

/* Stop accepting connections; keep answering what is queued. */
void	http_stop_accepting(struct server *);

/* Free everything http_start made; answers what is still queued (503). */
void	http_free(struct server *);

/* 1 when /readyz would answer 200; otherwise why into buf. */
int	http_ready(const struct server *, char *why, size_t len);

/*
 * Answer req with code and a text/plain body (may be NULL); requests to
 * /webhook (count != 0) are counted with their latency since t0.
 */
void	reply_send(struct server *, struct evhttp_request *, int code,
	    const char *body, double t0, int count);

/* GET and POST /webhook. */
void	webhook_get(struct server *, struct evhttp_request *, double t0);
void	webhook_post(struct server *, struct evhttp_request *, double t0);

#endif
