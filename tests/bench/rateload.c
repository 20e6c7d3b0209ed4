/*
 * rateload.c -- a fixed-rate HTTP load generator for the benchmarks.
 *
 * wrk measures the most a server can take; this measures latency at a given
 * rate, as Meta sends: requests are scheduled at exact intervals and each
 * latency is taken from its scheduled time (so a stalled server is not
 * hidden by the client waiting: no coordinated omission).
 *
 *   rateload -r RATE -d SECONDS -c CONNS -f PAYLOADS.tsv [-l SENT.log] URL
 *
 * With -l, one "payload-line<TAB>scheduled-send-time" line per request is
 * written (Unix seconds, wall clock), so a benchmark can match each request
 * with what a peer saw later (the turn benchmark).
 * PAYLOADS.tsv is gen_payloads.py's "hexsig<TAB>body" format. Prints one
 * "@@ requests= ok200= non200= errors= rps= p50_ms= p99_ms= max_ms= last_s="
 * line; last_s: when the last answer came, seconds after the first send was
 * due (a burst's delivery time).
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

struct payload {
	char	*sig;
	char	*body;
	size_t	 len;
};

struct conn {
	struct evhttp_connection	*evcon;
	int				 busy;
};

struct load {
	struct event_base	*base;
	struct conn		*conns;
	int			 nconns;
	struct payload		*pl;
	size_t			 npl, next;
	double			 rate, duration, start;
	double			 last;	/* last answer, s after start */
	long			 scheduled, sent, done, ok, non200, errors;
	double			*lat;
	const char		*host, *path;
	int			 port;
	FILE			*log;
	double			 wall0;	/* wall clock at start */
};

struct inflight {
	struct load	*ld;
	struct conn	*c;
	double		 due;
};

static double
now_s(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void	load_pump(struct load *);

/* A response (or a failure) for one request. */
static void
on_done(struct evhttp_request *req, void *arg)
{
	struct inflight	*f = arg;
	struct load	*ld = f->ld;
	int		 code = req != NULL ? evhttp_request_get_response_code(req) : 0;

	ld->last = now_s() - ld->start;
	ld->lat[ld->done++] = ld->last + ld->start - f->due;
	if (code == 200)
		ld->ok++;
	else if (code == 0)
		ld->errors++;
	else
		ld->non200++;
	f->c->busy = 0;
	free(f);
	load_pump(ld);
}

/* Send every request whose scheduled time has come, on idle connections. */
static void
load_pump(struct load *ld)
{
	double		 t = now_s() - ld->start;
	/* Request k is due at k / rate: k = 0 at the start. */
	long		 due = t < ld->duration ? (long)(t * ld->rate) + 1 :
			    (long)(ld->duration * ld->rate);
	int		 i;

	if (due > ld->scheduled)
		ld->scheduled = due;
	for (i = 0; i < ld->nconns && ld->sent < ld->scheduled; i++) {
		struct conn		*c = &ld->conns[i];
		struct evhttp_request	*req;
		struct inflight		*f;
		struct payload		*p;
		char			 hdr[80];

		if (c->busy)
			continue;
		if ((f = calloc(1, sizeof *f)) == NULL)
			abort();
		f->ld = ld;
		f->c = c;
		f->due = ld->start + (double)ld->sent / ld->rate;
		if (ld->log != NULL)
			fprintf(ld->log, "%zu\t%.6f\n", ld->next % ld->npl,
			    ld->wall0 + (f->due - ld->start));
		p = &ld->pl[ld->next++ % ld->npl];
		req = evhttp_request_new(on_done, f);
		snprintf(hdr, sizeof hdr, "sha256=%s", p->sig);
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Host", ld->host);
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Content-Type", "application/json");
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "X-Hub-Signature-256", hdr);
		evbuffer_add(evhttp_request_get_output_buffer(req), p->body,
		    p->len);
		c->busy = 1;
		ld->sent++;
		evhttp_make_request(c->evcon, req, EVHTTP_REQ_POST, ld->path);
	}
}

/* Every millisecond: send what is due; stop when all is answered, or 30 s
 * after the end when the server never answers. */
static void
on_tick(evutil_socket_t fd, short ev, void *arg)
{
	struct load	*ld = arg;
	double		 t = now_s() - ld->start;

	(void)fd;
	(void)ev;
	if (t >= ld->duration && (ld->done == ld->sent ||
	    t >= ld->duration + 30)) {
		event_base_loopbreak(ld->base);
		return;
	}
	load_pump(ld);
}

static int
cmp_double(const void *a, const void *b)
{
	double	x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Read "sig\tbody" lines. */
static size_t
load_payloads(const char *file, struct payload **out)
{
	FILE	*fp;
	char	*line = NULL, *tab;
	size_t	 cap = 0, n = 0, alloc = 0;
	ssize_t	 len;

	if ((fp = fopen(file, "r")) == NULL) {
		perror(file);
		exit(1);
	}
	*out = NULL;
	while ((len = getline(&line, &cap, fp)) > 0) {
		if (line[len - 1] == '\n')
			line[--len] = '\0';
		if ((tab = strchr(line, '\t')) == NULL)
			continue;
		if (n == alloc && (*out = realloc(*out, (alloc = alloc ?
		    alloc * 2 : 1024) * sizeof **out)) == NULL)
			abort();
		*tab = '\0';
		(*out)[n].sig = strdup(line);
		(*out)[n].body = strdup(tab + 1);
		(*out)[n].len = strlen(tab + 1);
		n++;
	}
	free(line);
	fclose(fp);
	return n;
}

int
main(int argc, char **argv)
{
	struct load		 ld;
	struct event		*tick;
	struct event_config	*cfg;
	struct timeval		 ms = { 0, 1000 };
	struct evhttp_uri	*uri;
	const char		*file = NULL;
	double			 secs;
	int			 ch, i;

	memset(&ld, 0, sizeof ld);
	ld.rate = 1000;
	ld.duration = 10;
	ld.nconns = 64;
	while ((ch = getopt(argc, argv, "r:d:c:f:l:")) != -1) {
		switch (ch) {
		case 'r': ld.rate = atof(optarg); break;
		case 'd': ld.duration = atof(optarg); break;
		case 'c': ld.nconns = atoi(optarg); break;
		case 'f': file = optarg; break;
		case 'l':
			if ((ld.log = fopen(optarg, "w")) == NULL) {
				perror(optarg);
				return 1;
			}
			break;
		default: goto usage;
		}
	}
	if (optind + 1 != argc || file == NULL || ld.rate <= 0 ||
	    ld.nconns <= 0)
		goto usage;
	if ((uri = evhttp_uri_parse(argv[optind])) == NULL)
		goto usage;
	ld.host = evhttp_uri_get_host(uri);
	ld.port = evhttp_uri_get_port(uri) > 0 ? evhttp_uri_get_port(uri) : 80;
	ld.path = evhttp_uri_get_path(uri);
	if ((ld.npl = load_payloads(file, &ld.pl)) == 0) {
		fprintf(stderr, "rateload: no payloads in %s\n", file);
		return 1;
	}
	ld.lat = calloc((size_t)(ld.rate * ld.duration) + 16, sizeof(double));
	/* A 1 ms tick needs timerfd precision; epoll alone rounds to ms. */
	cfg = event_config_new();
	event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
	ld.base = event_base_new_with_config(cfg);
	event_config_free(cfg);
	ld.conns = calloc((size_t)ld.nconns, sizeof *ld.conns);
	for (i = 0; i < ld.nconns; i++)
		ld.conns[i].evcon = evhttp_connection_base_new(ld.base, NULL,
		    ld.host, (unsigned short)ld.port);
	tick = event_new(ld.base, -1, EV_PERSIST, on_tick, &ld);
	event_add(tick, &ms);
	{
		struct timespec	ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ld.wall0 = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	}
	ld.start = now_s();
	event_base_dispatch(ld.base);
	secs = now_s() - ld.start;
	if (ld.log != NULL)
		fclose(ld.log);
	qsort(ld.lat, (size_t)ld.done, sizeof(double), cmp_double);
	printf("@@ requests=%ld ok200=%ld non200=%ld errors=%ld rps=%.1f "
	    "p50_ms=%.3f p99_ms=%.3f max_ms=%.3f last_s=%.3f\n", ld.done, ld.ok,
	    ld.non200, ld.errors, (double)ld.done / secs,
	    ld.done ? ld.lat[ld.done / 2] * 1e3 : 0,
	    ld.done ? ld.lat[(long)((double)ld.done * 0.99)] * 1e3 : 0,
	    ld.done ? ld.lat[ld.done - 1] * 1e3 : 0, ld.last);
	return 0;
usage:
	fprintf(stderr, "usage: rateload -r RATE -d SECONDS -c CONNS "
	    "-f PAYLOADS.tsv [-l SENT.log] URL\n");
	return 64;
}
