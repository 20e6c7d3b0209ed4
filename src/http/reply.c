/*
 * reply.c -- the one way the HTTP side answers a request: a text/plain
 * body, and for /webhook the request's code and latency in the metrics.
 * Below the routes (server.c) and the webhook handlers (webhook.c).
 * SPDX-License-Identifier: MIT
 */
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "http/server.h"

double
reply_now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void
reply_send(struct server *s, struct evhttp_request *req, int code,
    const char *body, double t0, int count)
{
	struct evbuffer	*out = evhttp_request_get_output_buffer(req);

	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "text/plain; charset=utf-8");
	if (body != NULL)
		evbuffer_add(out, body, strlen(body));
	evhttp_send_reply(req, code, NULL, NULL);
	if (count)
		metrics_request(&s->metrics, code, reply_now() - t0);
}
