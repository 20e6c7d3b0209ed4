/*
 * curlev.c -- libcurl multi_socket on libevent, after curl's hiperfifo
 * example: curl tells us which sockets to watch and when to wake it up;
 * libevent tells curl what happened.
 * SPDX-License-Identifier: MIT
 */
#include <sys/queue.h>
#include <sys/time.h>

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/curlev.h"
#include "base/log.h"

#define CURLEV_MAX_BODY		(8 * 1024 * 1024)
#define CURLEV_RECV_BUFFER	1024L	/* curl's least */

struct curlev_sock {
	TAILQ_ENTRY(curlev_sock) entry;
	struct curlev	*cv;
	curl_socket_t	 fd;
	struct event	*ev;
};

struct curlev_xfer {
	TAILQ_ENTRY(curlev_xfer) entry;
	struct curlev		*cv;
	CURL			*easy;
	struct curl_slist	*hdrs;
	char			*buf;
	size_t			 len, cap;
	int			 overflow;
	struct curlev_resp	*resp;		/* on the first header: a
						 * transfer waits without */
	char			 errbuf[CURL_ERROR_SIZE];
	struct timespec		 start;
	curlev_post_cb		*done;
	void			*arg;
};

struct curlev {
	struct event_base	*base;
	CURLM			*multi;
	struct event		*timer;
	TAILQ_HEAD(, curlev_xfer) xfers;
	TAILQ_HEAD(, curlev_sock) socks;
	size_t			 n;
};

static void	curlev_check_info(struct curlev *);

/* Milliseconds elapsed since start on the monotonic clock. */
static long
curlev_elapsed(const struct timespec *start)
{
	struct timespec	now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (long)((now.tv_sec - start->tv_sec) * 1000 +
	    (now.tv_nsec - start->tv_nsec) / 1000000);
}

/* libevent saw activity on a socket curl watches: tell curl. */
static void
curlev_event_cb(evutil_socket_t fd, short kind, void *arg)
{
	struct curlev	*cv = arg;
	int		 action = 0, running = 0;

	if (kind & EV_READ)
		action |= CURL_CSELECT_IN;
	if (kind & EV_WRITE)
		action |= CURL_CSELECT_OUT;
	curl_multi_socket_action(cv->multi, fd, action, &running);
	/*
	 * Unlike hiperfifo, the timer is not dropped when nothing runs: a
	 * completion callback may just have added a transfer, and curl
	 * disarms the timer itself (timeout -1) when it is no longer needed.
	 */
	curlev_check_info(cv);
}

/* curl's timeout expired: let it do its work. */
static void
curlev_timer_cb(evutil_socket_t fd, short kind, void *arg)
{
	struct curlev	*cv = arg;
	int		 running = 0;

	curl_multi_socket_action(cv->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	curlev_check_info(cv);
}

/* CURLMOPT_TIMERFUNCTION: arm (or disarm, -1) our single timer. */
static int
curlev_timer_fn(CURLM *multi, long timeout_ms, void *userp)
{
	struct curlev	*cv = userp;
	struct timeval	 tv;

	if (timeout_ms < 0) {
		evtimer_del(cv->timer);
		return 0;
	}
	tv.tv_sec = timeout_ms / 1000;
	tv.tv_usec = (timeout_ms % 1000) * 1000;
	evtimer_add(cv->timer, &tv);
	return 0;
}

/* CURLMOPT_SOCKETFUNCTION: watch, re-watch or forget a socket. */
static int
curlev_sock_fn(CURL *easy, curl_socket_t fd, int what, void *userp,
    void *socketp)
{
	struct curlev		*cv = userp;
	struct curlev_sock	*s = socketp;
	short			 kind = EV_PERSIST;

	if (what == CURL_POLL_REMOVE) {
		if (s != NULL) {
			event_free(s->ev);
			TAILQ_REMOVE(&cv->socks, s, entry);
			free(s);
		}
		return 0;
	}
	if (s == NULL) {
		if ((s = calloc(1, sizeof *s)) == NULL)
			return -1;
		s->cv = cv;
		s->fd = fd;
		TAILQ_INSERT_TAIL(&cv->socks, s, entry);
		curl_multi_assign(cv->multi, fd, s);
	} else if (s->ev != NULL)
		event_free(s->ev);
	if (what & CURL_POLL_IN)
		kind |= EV_READ;
	if (what & CURL_POLL_OUT)
		kind |= EV_WRITE;
	s->fd = fd;
	s->ev = event_new(cv->base, fd, kind, curlev_event_cb, cv);
	if (s->ev == NULL || event_add(s->ev, NULL) == -1)
		return -1;
	return 0;
}

/* CURLOPT_WRITEFUNCTION: collect the body, bounded. */
static size_t
curlev_write_fn(char *p, size_t size, size_t n, void *arg)
{
	struct curlev_xfer	*x = arg;
	size_t			 add = size * n, ncap;
	char			*nb;

	if (x->len + add + 1 > CURLEV_MAX_BODY) {
		x->overflow = 1;
		return 0;
	}
	if (x->len + add + 1 > x->cap) {
		ncap = x->cap ? x->cap : 4096;
		while (ncap < x->len + add + 1)
			ncap *= 2;
		if ((nb = realloc(x->buf, ncap)) == NULL)
			return 0;
		x->buf = nb;
		x->cap = ncap;
	}
	memcpy(x->buf + x->len, p, add);
	x->len += add;
	x->buf[x->len] = '\0';
	return add;
}

/* Copy a header value (trimmed) into dst when the line is name: value. */
static void
curlev_header_pick(const char *line, size_t n, const char *name, char *dst,
    size_t dlen)
{
	size_t	nl = strlen(name), vl;

	if (n <= nl + 1 || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
		return;
	line += nl + 1;
	n -= nl + 1;
	while (n > 0 && (*line == ' ' || *line == '\t')) {
		line++;
		n--;
	}
	while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == '\n' ||
	    line[n - 1] == ' '))
		n--;
	vl = n < dlen - 1 ? n : dlen - 1;
	memcpy(dst, line, vl);
	dst[vl] = '\0';
}

/* CURLOPT_HEADERFUNCTION: keep the few headers the clients need. */
static size_t
curlev_header_fn(char *p, size_t size, size_t n, void *arg)
{
	struct curlev_xfer	*x = arg;
	struct curlev_resp	*r;
	size_t			 len = size * n;

	if (x->resp == NULL && (x->resp = calloc(1, sizeof *x->resp)) == NULL)
		return 0;
	r = x->resp;
	curlev_header_pick(p, len, "retry-after", r->retry_after,
	    sizeof r->retry_after);
	curlev_header_pick(p, len, "retry-after-ms", r->retry_after_ms,
	    sizeof r->retry_after_ms);
	curlev_header_pick(p, len, "x-should-retry", r->should_retry,
	    sizeof r->should_retry);
	curlev_header_pick(p, len, "request-id", r->request_id,
	    sizeof r->request_id);
	curlev_header_pick(p, len, "x-request-id", r->request_id,
	    sizeof r->request_id);
	curlev_header_pick(p, len, "x-fb-trace-id", r->request_id,
	    sizeof r->request_id);
	return len;
}

/* Release a transfer (already detached from the multi handle). */
static void
curlev_xfer_free(struct curlev_xfer *x)
{
	curl_easy_cleanup(x->easy);
	curl_slist_free_all(x->hdrs);
	free(x->buf);
	free(x->resp);
	free(x);
}

/* A transfer ended: detach it, report it, then free it. */
static void
curlev_finish(struct curlev_xfer *x, CURLcode code)
{
	struct curlev		*cv = x->cv;
	struct curlev_resp	 r;
	long			 status = 0;

	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
	curl_multi_remove_handle(cv->multi, x->easy);
	TAILQ_REMOVE(&cv->xfers, x, entry);
	cv->n--;
	if (x->resp != NULL)
		r = *x->resp;
	else
		memset(&r, 0, sizeof r);
	r.code = x->overflow ? CURLE_FILESIZE_EXCEEDED : code;
	if (r.code != CURLE_OK)
		snprintf(r.error, sizeof r.error, "%s",
		    x->errbuf[0] != '\0' && !x->overflow ? x->errbuf :
		    curl_easy_strerror(r.code));
	r.status = code == CURLE_OK ? status : 0;
	r.body = x->buf != NULL ? x->buf : "";
	r.len = x->len;
	r.elapsed_ms = curlev_elapsed(&x->start);
	x->done(&r, x->arg);
	curlev_xfer_free(x);
}

/* Hand every finished transfer to its callback. */
static void
curlev_check_info(struct curlev *cv)
{
	CURLMsg			*msg;
	struct curlev_xfer	*x;
	int			 left;

	while ((msg = curl_multi_info_read(cv->multi, &left)) != NULL) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		x = NULL;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &x);
		if (x != NULL)
			curlev_finish(x, msg->data.result);
	}
}

struct curlev *
curlev_new(struct event_base *base)
{
	struct curlev	*cv;

	if ((cv = calloc(1, sizeof *cv)) == NULL)
		return NULL;
	cv->base = base;
	TAILQ_INIT(&cv->xfers);
	TAILQ_INIT(&cv->socks);
	if ((cv->multi = curl_multi_init()) == NULL)
		goto fail;
	if ((cv->timer = evtimer_new(base, curlev_timer_cb, cv)) == NULL)
		goto fail;
	curl_multi_setopt(cv->multi, CURLMOPT_SOCKETFUNCTION, curlev_sock_fn);
	curl_multi_setopt(cv->multi, CURLMOPT_SOCKETDATA, cv);
	curl_multi_setopt(cv->multi, CURLMOPT_TIMERFUNCTION, curlev_timer_fn);
	curl_multi_setopt(cv->multi, CURLMOPT_TIMERDATA, cv);
	return cv;
fail:
	if (cv->multi != NULL)
		curl_multi_cleanup(cv->multi);
	free(cv);
	return NULL;
}

void
curlev_free(struct curlev *cv)
{
	struct curlev_xfer	*x;
	struct curlev_sock	*s;

	if (cv == NULL)
		return;
	while ((x = TAILQ_FIRST(&cv->xfers)) != NULL)
		curlev_cancel(x);
	curl_multi_cleanup(cv->multi);
	while ((s = TAILQ_FIRST(&cv->socks)) != NULL) {
		TAILQ_REMOVE(&cv->socks, s, entry);
		if (s->ev != NULL)
			event_free(s->ev);
		free(s);
	}
	event_free(cv->timer);
	free(cv);
}

struct event_base *
curlev_base(struct curlev *cv)
{
	return cv->base;
}

size_t
curlev_pending(struct curlev *cv)
{
	return cv->n;
}

/* Set the options every POST shares. */
static void
curlev_setopts(struct curlev_xfer *x, const char *url,
    const struct curl_slist *hdrs, const char *body, int copy,
    long connect_ms, long total_ms)
{
	CURL	*e = x->easy;

	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	curl_easy_setopt(e, copy ? CURLOPT_COPYPOSTFIELDS : CURLOPT_POSTFIELDS,
	    body);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, (struct curl_slist *)hdrs);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, curlev_write_fn);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, curlev_header_fn);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(e, CURLOPT_PRIVATE, x);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 60L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 60L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	/* The receive buffer lives as long as the transfer: curl's 16 KB
	 * default, times 10,000 LLM calls waiting, was 160 MB (4 KB: 40 MB);
	 * answers are a few KB and simply take more reads. */
	curl_easy_setopt(e, CURLOPT_BUFFERSIZE, CURLEV_RECV_BUFFER);
	if (connect_ms > 0)
		curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
	if (total_ms > 0)
		curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, total_ms);
}

struct curl_slist *
curlev_headers(const char *const *headers)
{
	struct curl_slist	*h, *l;
	size_t			 i;

	/* No "Expect: 100-continue" round trip on larger bodies. */
	if ((h = curl_slist_append(NULL, "Expect:")) == NULL)
		return NULL;
	for (i = 0; headers != NULL && headers[i] != NULL; i++) {
		if ((l = curl_slist_append(h, headers[i])) == NULL) {
			curl_slist_free_all(h);
			return NULL;
		}
		h = l;
	}
	return h;
}

/* Start a POST with the header list hdrs (owned unless borrowed; NULL:
 * out of memory) and body (copied unless borrowed). */
static struct curlev_xfer *
curlev_start(struct curlev *cv, const char *url, struct curl_slist *hdrs,
    const char *body, int borrowed, long connect_ms, long total_ms,
    curlev_post_cb *done, void *arg)
{
	struct curlev_xfer	*x;

	if ((x = calloc(1, sizeof *x)) == NULL) {
		if (!borrowed)
			curl_slist_free_all(hdrs);
		return NULL;
	}
	x->cv = cv;
	x->done = done;
	x->arg = arg;
	if (!borrowed)
		x->hdrs = hdrs;
	if (hdrs == NULL || (x->easy = curl_easy_init()) == NULL)
		goto fail;
	curlev_setopts(x, url, hdrs, body, !borrowed, connect_ms, total_ms);
	clock_gettime(CLOCK_MONOTONIC, &x->start);
	if (curl_multi_add_handle(cv->multi, x->easy) != CURLM_OK)
		goto fail;
	TAILQ_INSERT_TAIL(&cv->xfers, x, entry);
	cv->n++;
	return x;
fail:
	if (x->easy != NULL)
		curl_easy_cleanup(x->easy);
	curl_slist_free_all(x->hdrs);
	free(x);
	return NULL;
}

struct curlev_xfer *
curlev_post(struct curlev *cv, const char *url, const char *const *headers,
    const char *body, long connect_ms, long total_ms, curlev_post_cb *done,
    void *arg)
{
	return curlev_start(cv, url, curlev_headers(headers), body, 0,
	    connect_ms, total_ms, done, arg);
}

struct curlev_xfer *
curlev_post_borrowed(struct curlev *cv, const char *url,
    const struct curl_slist *headers, const char *body, long connect_ms,
    long total_ms, curlev_post_cb *done, void *arg)
{
	return curlev_start(cv, url, (struct curl_slist *)headers, body, 1,
	    connect_ms, total_ms, done, arg);
}

void
curlev_cancel(struct curlev_xfer *x)
{
	struct curlev	*cv;

	if (x == NULL)
		return;
	cv = x->cv;
	curl_multi_remove_handle(cv->multi, x->easy);
	TAILQ_REMOVE(&cv->xfers, x, entry);
	cv->n--;
	curlev_xfer_free(x);
}
