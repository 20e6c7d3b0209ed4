/*
 * httpconn.c -- a connection cap and a whole-request deadline for the
 * evhttp server. libevent 2.1's evhttp tells nobody when it accepts or
 * frees a connection, but it lets us make each connection's bufferevent
 * (evhttp_set_bevcb). We keep a reference on it, so the descriptor stays
 * ours and the deadline can shut it down safely. Once a connection has
 * sent a request, evhttp's close callback tells us when it goes; before
 * that (idle, slow or malformed clients), evhttp's bufferevent_free only
 * drops its own reference and clears the callbacks, which a sweep
 * notices. Either way we drop ours and the socket closes.
 * (A bufferevent filter would give a free callback, but 2.1's filter
 * stalls evhttp's output and drops unsent bytes on close.)
 *
 * Slow clients must not starve Meta (Apache mod_reqtimeout's MinRate,
 * nginx's timeouts). Once a request's first byte arrived, it must keep
 * arriving at MODEGATE_HTTP_MIN_RATE bytes per second after a grace
 * second, or the connection is shut (the sweep checks every 100 ms). And
 * at MODEGATE_MAX_CONNECTIONS a new connection evicts the slowest
 * incomplete request (idle ones first, never one being answered, never
 * one younger than half a second) rather than wait in the kernel's
 * queue; only when nothing is evictable does the listener pause.
 * SPDX-License-Identifier: MIT
 */
#include <sys/queue.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>

#include "http/conns.h"
#include "base/log.h"

#define HTTPCONN_SWEEP_MS	100	/* how soon a closed one is noticed */
#define HTTPCONN_LOG_EVERY_S	10	/* "at the cap" at most this often */
#define HTTPCONN_FD_SPARE	64	/* database, curl, logs, listener */
#define HTTPCONN_GRACE_S	1.0	/* before the minimum rate applies */
#define HTTPCONN_YOUNG_S	0.5	/* never evicted younger than this */

struct httpconn {
	struct httpconns	*owner;
	struct bufferevent	*bev;		/* one reference is ours */
	struct event		*deadline;
	int			 watched;	/* closecb set on its evcon */
	int			 routed;	/* a route saw the request being
						 * answered */
	int			 busy;		/* a whole request, being answered */
	int			 shut;		/* shut down by us, closing */
	double			 t0;		/* connected, or last answered */
	double			 tfirst;	/* first byte of this request */
	size_t			 nread;		/* bytes of this request so far */
	TAILQ_ENTRY(httpconn)	 entry;
};

struct httpconns {
	struct event_base		*base;
	struct evhttp			*http;
	struct evhttp_bound_socket	**sockp;
	int				 max;
	int				 min_rate;	/* bytes/s; 0: none */
	int				 shutting;	/* shut, not yet closed */
	struct timeval			 deadline;
	struct event			*sweep;
	int				 n;	/* open now */
	int				 paused; /* listener disabled */
	time_t				 logged; /* last "at the cap" line */
	uint64_t			 expired; /* shut by the deadline */
	uint64_t			 pauses;  /* times the cap was hit */
	httpconns_refused_cb		 refused;
	void				*refused_arg;
	uint64_t			 slow;	  /* shut below the minimum rate */
	uint64_t			 evicted; /* evicted at the cap */
	TAILQ_HEAD(, httpconn)		 conns;
};

/* The listener, or NULL when not listening (draining). */
static struct evconnlistener *
httpconns_listener(struct httpconns *o)
{
	if (*o->sockp == NULL)
		return NULL;
	return evhttp_bound_socket_get_listener(*o->sockp);
}

/* At the cap: stop accepting; the kernel queues new connections. */
static void
httpconns_pause(struct httpconns *o)
{
	struct evconnlistener	*l = httpconns_listener(o);
	time_t			 now = time(NULL);

	if (o->paused || l == NULL)
		return;
	evconnlistener_disable(l);
	o->paused = 1;
	o->pauses++;
	if (now - o->logged >= HTTPCONN_LOG_EVERY_S) {
		log_warnx("http: %d connections open (MODEGATE_MAX_CONNECTIONS)"
		    ", new ones wait until one closes (%llu times so far)",
		    o->n, (unsigned long long)o->pauses);
		o->logged = now;
	}
}

/* Below the cap again: accept. */
static void
httpconns_resume(struct httpconns *o)
{
	struct evconnlistener	*l = httpconns_listener(o);

	o->paused = 0;
	if (l != NULL)
		evconnlistener_enable(l);
}

/* Drop our reference: the socket closes. */
static void
httpconn_close(struct httpconn *hc)
{
	struct httpconns	*o = hc->owner;

	TAILQ_REMOVE(&o->conns, hc, entry);
	if (hc->shut)
		o->shutting--;
	event_free(hc->deadline);
	bufferevent_decref(hc->bev);
	free(hc);
	o->n--;
}

/* Seconds on a monotonic clock. */
static double
httpconn_now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Shut a connection's socket: evhttp reads end-of-file and frees it. */
static void
httpconn_shut(struct httpconn *hc)
{
	evutil_socket_t	s = bufferevent_getfd(hc->bev);

	if (!hc->shut) {
		hc->shut = 1;
		hc->owner->shutting++;
	}
	if (s != -1)
		shutdown(s, SHUT_RDWR);
}

/*
 * The slowest incomplete request, to evict at the cap: an idle
 * connection first (the oldest), else the lowest bytes per second since
 * its request began. Never one being answered, never a young one (it may
 * not have had the time to send). NULL when there is none.
 */
static struct httpconn *
httpconns_pick(struct httpconns *o)
{
	struct httpconn	*hc, *victim = NULL;
	double		 now = httpconn_now(), age, rate, best = 0;

	TAILQ_FOREACH(hc, &o->conns, entry) {
		if (hc->busy || hc->shut || now - hc->t0 < HTTPCONN_YOUNG_S)
			continue;
		age = now - (hc->nread > 0 ? hc->tfirst : hc->t0);
		rate = hc->nread > 0 ? (double)hc->nread / (age > 0.001 ?
		    age : 0.001) : -age;	/* idle: the oldest first */
		if (victim == NULL || rate < best) {
			victim = hc;
			best = rate;
		}
	}
	return victim;
}

/* Evict the slowest incomplete request; 0, or -1 when none could be. */
static int
httpconns_evict(struct httpconns *o)
{
	struct httpconn	*victim;

	if ((victim = httpconns_pick(o)) == NULL)
		return -1;
	o->evicted++;
	log_debug("http: at the cap: evicting a connection (%zu bytes in "
	    "%.1f s)", victim->nread, httpconn_now() - victim->t0);
	httpconn_shut(victim);
	return 0;
}

/* Shut requests arriving below the minimum rate. */
static void
httpconns_check_rate(struct httpconns *o)
{
	struct httpconn	*hc;
	double		 now = httpconn_now();

	if (o->min_rate <= 0)
		return;
	TAILQ_FOREACH(hc, &o->conns, entry) {
		if (hc->busy || hc->shut || hc->nread == 0)
			continue;
		if (now - hc->tfirst <= HTTPCONN_GRACE_S +
		    (double)hc->nread / o->min_rate)
			continue;
		o->slow++;
		log_debug("http: connection shut: %zu bytes in %.1f s, below "
		    "%d bytes/s", hc->nread, now - hc->tfirst, o->min_rate);
		httpconn_shut(hc);
	}
}

/* Open connections that count against the cap (not being shut). */
static int
httpconns_live(const struct httpconns *o)
{
	return o->n - o->shutting;
}

/* True once evhttp has freed its side (bufferevent_free clears these). */
static int
httpconn_released(struct httpconn *hc)
{
	bufferevent_data_cb	 r, w;
	bufferevent_event_cb	 e;
	void			*arg;

	bufferevent_getcb(hc->bev, &r, &w, &e, &arg);
	return r == NULL && w == NULL && e == NULL;
}

/* Close what evhttp let go of. */
static void
httpconns_reap(struct httpconns *o)
{
	struct httpconn		*hc, *next;

	for (hc = TAILQ_FIRST(&o->conns); hc != NULL; hc = next) {
		next = TAILQ_NEXT(hc, entry);
		if (httpconn_released(hc))
			httpconn_close(hc);
	}
}

/* Timer: close what evhttp let go of; accept again below the cap. */
static void
httpconns_sweep(evutil_socket_t fd, short what, void *arg)
{
	struct httpconns	*o = arg;
	struct timeval		 tv = { 0, HTTPCONN_SWEEP_MS * 1000 };

	httpconns_reap(o);
	httpconns_check_rate(o);
	/* Accept again when there is room, or something to evict for it. */
	if (o->paused && (httpconns_live(o) < o->max ||
	    httpconns_pick(o) != NULL))
		httpconns_resume(o);
	if (o->n > 0)
		evtimer_add(o->sweep, &tv);
}

/*
 * The deadline passed with no whole request: shut the socket down, so
 * evhttp reads end-of-file and frees the connection its own way.
 */
static void
httpconn_expire(evutil_socket_t fd, short what, void *arg)
{
	struct httpconn	*hc = arg;

	if (httpconn_released(hc) || hc->shut)
		return;
	hc->owner->expired++;
	log_debug("http: connection shut: no whole request in %ld s",
	    (long)hc->owner->deadline.tv_sec);
	httpconn_shut(hc);
}

/*
 * evhttp is freeing a connection that sent a request (its close
 * callback): drop our reference now; evhttp's own, dropped next, closes
 * the socket.
 */
static void
httpconn_closecb(struct evhttp_connection *evcon, void *arg)
{
	struct httpconn		*hc = arg;
	struct httpconns	*o = hc->owner;

	httpconn_close(hc);
	if (o->paused && httpconns_live(o) < o->max)
		httpconns_resume(o);
}

/* The peer of hc's socket as "ip:port" into buf. */
static void
httpconn_peer(struct httpconn *hc, char *buf, size_t len)
{
	struct sockaddr_storage	 ss;
	socklen_t		 sl = sizeof ss;
	char			 host[INET6_ADDRSTRLEN] = "?";
	int			 port = 0;

	snprintf(buf, len, "?");
	if (getpeername(bufferevent_getfd(hc->bev), (struct sockaddr *)&ss,
	    &sl) == -1)
		return;
	if (ss.ss_family == AF_INET) {
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr,
		    host, sizeof host);
		port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		snprintf(buf, len, "%s:%d", host, port);
	} else if (ss.ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr,
		    host, sizeof host);
		port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
		snprintf(buf, len, "[%s]:%d", host, port);
	}
}

/*
 * An answer is being written: the next request has the full deadline.
 * An answer that starts ("HTTP/1.x NNN") while no route saw its request
 * is evhttp's own (libevent 2.1 calls no user code on that path): it is
 * reported, so that it is logged and counted.
 */
static void
httpconn_output(struct evbuffer *buf, const struct evbuffer_cb_info *info,
    void *arg)
{
	struct httpconn		*hc = arg;
	struct httpconns	*o = hc->owner;
	char			 head[13], peer[64];
	int			 code;

	if (info->n_added == 0)
		return;
	evtimer_add(hc->deadline, &o->deadline);
	hc->busy = 0;
	hc->nread = 0;
	hc->t0 = httpconn_now();
	if (info->orig_size != 0)
		return;		/* the rest of an answer begun */
	if (evbuffer_copyout(buf, head, 12) != 12)
		return;
	head[12] = '\0';
	if (strncmp(head, "HTTP/1.", 7) != 0 || head[8] != ' ' ||
	    (code = atoi(head + 9)) < 200)
		return;		/* not an answer's start, or 100 Continue */
	if (hc->routed) {
		hc->routed = 0;
		return;
	}
	if (code >= 400 && o->refused != NULL) {
		httpconn_peer(hc, peer, sizeof peer);
		o->refused(code, peer, o->refused_arg);
	}
}

/* Bytes of a request arrived: the rate is measured from the first. */
static void
httpconn_input(struct evbuffer *buf, const struct evbuffer_cb_info *info,
    void *arg)
{
	struct httpconn	*hc = arg;

	if (info->n_added == 0 || hc->busy)
		return;
	if (hc->nread == 0)
		hc->tfirst = httpconn_now();
	hc->nread += info->n_added;
}

/* evhttp accepted a connection: its bufferevent, counted. */
static struct bufferevent *
httpconns_bevcb(struct event_base *base, void *arg)
{
	struct httpconns	*o = arg;
	struct httpconn		*hc;
	struct timeval		 tv = { 0, HTTPCONN_SWEEP_MS * 1000 };

	if ((hc = calloc(1, sizeof *hc)) == NULL)
		return NULL;	/* evhttp makes its own: uncounted */
	hc->owner = o;
	hc->bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	hc->deadline = evtimer_new(base, httpconn_expire, hc);
	if (hc->bev == NULL || hc->deadline == NULL ||
	    evbuffer_add_cb(bufferevent_get_output(hc->bev), httpconn_output,
	    hc) == NULL || evbuffer_add_cb(bufferevent_get_input(hc->bev),
	    httpconn_input, hc) == NULL) {
		if (hc->bev != NULL)
			bufferevent_free(hc->bev);
		if (hc->deadline != NULL)
			event_free(hc->deadline);
		free(hc);
		return NULL;
	}
	hc->t0 = httpconn_now();
	/* Before hc joins: evhttp has not set its callbacks yet. */
	if (httpconns_live(o) + 1 >= o->max)
		httpconns_reap(o);	/* some may be gone already */
	/* At the cap: this one takes the place of the slowest. */
	if (httpconns_live(o) >= o->max)
		(void)httpconns_evict(o);
	bufferevent_incref(hc->bev);
	TAILQ_INSERT_TAIL(&o->conns, hc, entry);
	evtimer_add(hc->deadline, &o->deadline);
	if (o->n++ == 0)
		evtimer_add(o->sweep, &tv);
	/* At the cap with nothing the next one could evict: stop accepting
	 * (the sweep resumes once something is). */
	if (httpconns_live(o) >= o->max && httpconns_pick(o) == NULL)
		httpconns_pause(o);
	return hc->bev;
}

/* A cap the open-files limit cannot hold: accept() would fail first. */
static void
httpconns_check_nofile(int max)
{
	struct rlimit	rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    (rlim_t)max + HTTPCONN_FD_SPARE > rl.rlim_cur)
		log_warnx("http: MODEGATE_MAX_CONNECTIONS %d is above the "
		    "open-files limit %llu less %d spare (ulimit -n, systemd "
		    "LimitNOFILE)", max, (unsigned long long)rl.rlim_cur,
		    HTTPCONN_FD_SPARE);
}

struct httpconns *
httpconns_new(struct event_base *base, struct evhttp *http,
    struct evhttp_bound_socket **sockp, int max, int deadline_s,
    int min_rate, httpconns_refused_cb refused, void *arg)
{
	struct httpconns	*o;

	if ((o = calloc(1, sizeof *o)) == NULL)
		return NULL;
	if ((o->sweep = evtimer_new(base, httpconns_sweep, o)) == NULL) {
		free(o);
		return NULL;
	}
	o->base = base;
	o->http = http;
	o->sockp = sockp;
	o->max = max;
	o->min_rate = min_rate;
	o->deadline.tv_sec = deadline_s;
	o->refused = refused;
	o->refused_arg = arg;
	TAILQ_INIT(&o->conns);
	httpconns_check_nofile(max);
	evhttp_set_bevcb(http, httpconns_bevcb, o);
	return o;
}

void
httpconns_request(struct httpconns *o, struct evhttp_request *req)
{
	struct evhttp_connection	*evcon;
	struct bufferevent		*bev;
	struct httpconn			*hc;

	if (o == NULL || (evcon = evhttp_request_get_connection(req)) == NULL)
		return;
	bev = evhttp_connection_get_bufferevent(evcon);
	/* Few connections are open at once; at the cap, a short scan. */
	TAILQ_FOREACH(hc, &o->conns, entry) {
		if (hc->bev == bev) {
			evtimer_del(hc->deadline);
			hc->routed = 1;
			hc->busy = 1;
			if (!hc->watched)
				evhttp_connection_set_closecb(evcon,
				    httpconn_closecb, hc);
			hc->watched = 1;
			return;
		}
	}
}

int
httpconns_open(const struct httpconns *o)
{
	return o != NULL ? o->n : 0;
}

void
httpconns_metrics(const struct httpconns *o, struct evbuffer *out)
{
	if (o == NULL)
		return;
	evbuffer_add_printf(out,
	    "# HELP modegate_http_connections Open HTTP connections.\n"
	    "# TYPE modegate_http_connections gauge\n"
	    "modegate_http_connections %d\n"
	    "# HELP modegate_http_deadline_closed_total Connections shut "
	    "with no whole request within MODEGATE_HTTP_TIMEOUT_S.\n"
	    "# TYPE modegate_http_deadline_closed_total counter\n"
	    "modegate_http_deadline_closed_total %llu\n"
	    "# HELP modegate_http_cap_reached_total Times "
	    "MODEGATE_MAX_CONNECTIONS was reached (accepting paused).\n"
	    "# TYPE modegate_http_cap_reached_total counter\n"
	    "modegate_http_cap_reached_total %llu\n"
	    "# HELP modegate_http_slow_closed_total Connections shut when "
	    "a request arrived below MODEGATE_HTTP_MIN_RATE.\n"
	    "# TYPE modegate_http_slow_closed_total counter\n"
	    "modegate_http_slow_closed_total %llu\n"
	    "# HELP modegate_http_evicted_total Incomplete requests evicted "
	    "at MODEGATE_MAX_CONNECTIONS to make room for a new connection.\n"
	    "# TYPE modegate_http_evicted_total counter\n"
	    "modegate_http_evicted_total %llu\n", o->n,
	    (unsigned long long)o->expired, (unsigned long long)o->pauses,
	    (unsigned long long)o->slow, (unsigned long long)o->evicted);
}

void
httpconns_free(struct httpconns *o)
{
	if (o == NULL)
		return;
	while (!TAILQ_EMPTY(&o->conns))
		httpconn_close(TAILQ_FIRST(&o->conns));
	event_free(o->sweep);
	free(o);
}
