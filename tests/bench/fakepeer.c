/*
 * fakepeer.c -- the benchmarks' fake LLM and fake Graph API, written for
 * speed: one libevent thread, thousands of open connections, a delay by
 * timer (never a sleep), nothing kept per request but counters and one
 * log line per reply.
 *
 *   fakepeer [-p PORT] [-d DELAY_MS] [-o REPLIES.log] [-b BACKLOG]
 *
 * Prints the port it listens on (PORT 0: any free one), then answers:
 *   POST /v1/messages          Anthropic Messages: an end_turn text reply
 *                              (401 without x-api-key, 400 without
 *                              anthropic-version: 2023-06-01)
 *   POST .../chat/completions  OpenAI Chat Completions: a stop text reply
 *                              (401 without a Bearer token)
 *   POST /VER/PNID/messages    Graph API send: the success body with a
 *                              fresh wamid; {"success":true} for a
 *                              mark-as-read. Each text or template send is
 *                              logged "to<TAB>type<TAB>arrival" (Unix
 *                              seconds, wall clock), so the load generator's
 *                              log of scheduled sends can be matched with
 *                              the reply each doctor got.
 *   GET  /__stats              counters as JSON (and the log flushed):
 *                              llm_requests, llm_in_flight,
 *                              llm_peak_in_flight, llm_first_t, llm_last_t,
 *                              graph_sends, graph_reads, errors
 * LLM answers wait DELAY_MS (default 0) on a timer. Shapes as
 * tests/fakes/fake_llm.py and fake_graph.py, which the tests use (they
 * script errors and status webhooks; this one only answers fast).
 * SPDX-License-Identifier: MIT
 */
#include <sys/resource.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <json-c/json.h>

struct peer {
	struct event_base	*base;
	struct timeval		 delay;
	FILE			*log;
	unsigned long		 seq;
	long			 llm_requests, llm_in_flight, llm_peak;
	long			 graph_sends, graph_reads, errors;
	double			 llm_first_t, llm_last_t;
};

struct pending {
	struct peer		*p;
	struct evhttp_request	*req;
	struct evbuffer		*out;
	struct event		*ev;
};

/* Now, Unix seconds (the load generator's log uses the same clock). */
static double
wall_s(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The request's body parsed as JSON; NULL when it is not JSON. */
static json_object *
fakepeer_body(struct evhttp_request *req)
{
	struct evbuffer	*in = evhttp_request_get_input_buffer(req);
	size_t		 n = evbuffer_get_length(in);
	json_tokener	*tok;
	json_object	*o;
	const char	*s;

	if (n == 0 || n > 32 << 20)
		return NULL;
	/* Not NUL-terminated: parse with the length. */
	s = (const char *)evbuffer_pullup(in, (ssize_t)n);
	if ((tok = json_tokener_new()) == NULL)
		return NULL;
	o = json_tokener_parse_ex(tok, s, (int)n);
	json_tokener_free(tok);
	return o;
}

/* Answer at once with a JSON body. */
static void
fakepeer_send(struct evhttp_request *req, int code, const char *json)
{
	struct evbuffer	*b = evbuffer_new();

	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "application/json");
	evbuffer_add(b, json, strlen(json));
	evhttp_send_reply(req, code, code == 200 ? "OK" : "Error", b);
	evbuffer_free(b);
}

/* The client hung up before its delayed answer: never touch the request. */
static void
fakepeer_gone(struct evhttp_connection *evcon, void *arg)
{
	struct pending	*d = arg;

	(void)evcon;
	d->req = NULL;
}

/* A delayed LLM answer is due. */
static void
fakepeer_llm_due(evutil_socket_t fd, short what, void *arg)
{
	struct pending	*d = arg;

	(void)fd;
	(void)what;
	if (d->req != NULL) {
		evhttp_connection_set_closecb(
		    evhttp_request_get_connection(d->req), NULL, NULL);
		evhttp_add_header(evhttp_request_get_output_headers(d->req),
		    "Content-Type", "application/json");
		evhttp_send_reply(d->req, 200, "OK", d->out);
	}
	d->p->llm_in_flight--;
	evbuffer_free(d->out);
	event_free(d->ev);
	free(d);
}

/* An Anthropic or OpenAI request: check the headers, answer a text. */
static void
fakepeer_llm(struct peer *p, struct evhttp_request *req, int openai)
{
	struct evkeyvalq	*h = evhttp_request_get_input_headers(req);
	const char		*v, *model;
	json_object		*body, *m = NULL;
	struct pending		*d;
	char			 id[32];

	if (openai && ((v = evhttp_find_header(h, "Authorization")) == NULL ||
	    strncmp(v, "Bearer ", 7) != 0)) {
		fakepeer_send(req, 401, "{\"error\":{\"message\":\"You didn't "
		    "provide an API key.\",\"type\":\"invalid_request_error\","
		    "\"param\":null,\"code\":null}}");
		return;
	}
	if (!openai && evhttp_find_header(h, "x-api-key") == NULL) {
		fakepeer_send(req, 401, "{\"type\":\"error\",\"error\":{\"type\":"
		    "\"authentication_error\",\"message\":\"x-api-key header is "
		    "required\"}}");
		return;
	}
	if (!openai && ((v = evhttp_find_header(h, "anthropic-version")) ==
	    NULL || strcmp(v, "2023-06-01") != 0)) {
		fakepeer_send(req, 400, "{\"type\":\"error\",\"error\":{\"type\":"
		    "\"invalid_request_error\",\"message\":\"anthropic-version: "
		    "header is required\"}}");
		return;
	}
	if ((body = fakepeer_body(req)) == NULL ||
	    !json_object_object_get_ex(body, "messages", NULL)) {
		json_object_put(body);
		fakepeer_send(req, 400, openai ? "{\"error\":{\"message\":\"you "
		    "must provide a model and messages\",\"type\":"
		    "\"invalid_request_error\",\"param\":null,\"code\":null}}" :
		    "{\"type\":\"error\",\"error\":{\"type\":"
		    "\"invalid_request_error\",\"message\":\"messages: Field "
		    "required\"}}");
		return;
	}
	json_object_object_get_ex(body, "model", &m);
	model = m != NULL ? json_object_to_json_string_ext(m,
	    JSON_C_TO_STRING_PLAIN) : "\"fake\"";
	p->llm_requests++;
	p->llm_last_t = wall_s();
	if (p->llm_first_t == 0)
		p->llm_first_t = p->llm_last_t;
	if (++p->llm_in_flight > p->llm_peak)
		p->llm_peak = p->llm_in_flight;
	snprintf(id, sizeof id, "%012lx%08lx", ++p->seq, (long)random());
	d = calloc(1, sizeof *d);
	d->p = p;
	d->req = req;
	d->out = evbuffer_new();
	if (openai)
		evbuffer_add_printf(d->out, "{\"id\":\"chatcmpl-%s\",\"object\":"
		    "\"chat.completion\",\"created\":1700000000,\"model\":%s,"
		    "\"choices\":[{\"index\":0,\"message\":{\"role\":"
		    "\"assistant\",\"content\":\"Olá! Em que posso ajudar?\","
		    "\"refusal\":null,\"annotations\":[]},\"logprobs\":null,"
		    "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":"
		    "120,\"completion_tokens\":30,\"total_tokens\":150}}", id,
		    model);
	else {
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "request-id", "req_011Cfakepeer");
		evbuffer_add_printf(d->out, "{\"id\":\"msg_01%s\",\"type\":"
		    "\"message\",\"role\":\"assistant\",\"model\":%s,"
		    "\"content\":[{\"type\":\"text\",\"text\":\"Olá! Em que "
		    "posso ajudar?\"}],\"stop_reason\":\"end_turn\","
		    "\"stop_sequence\":null,\"usage\":{\"input_tokens\":120,"
		    "\"output_tokens\":30,\"cache_creation_input_tokens\":0,"
		    "\"cache_read_input_tokens\":0,\"service_tier\":"
		    "\"standard\"}}", id, model);
	}
	json_object_put(body);
	evhttp_connection_set_closecb(evhttp_request_get_connection(req),
	    fakepeer_gone, d);
	d->ev = evtimer_new(p->base, fakepeer_llm_due, d);
	evtimer_add(d->ev, &p->delay);
}

/* A Graph API send: validate like the real one, log a reply's arrival. */
static void
fakepeer_graph(struct peer *p, struct evhttp_request *req, const char *pnid)
{
	struct evkeyvalq	*h = evhttp_request_get_input_headers(req);
	json_object		*body, *o;
	const char		*v, *to, *type;
	char			 out[512];
	double			 t = wall_s();

	if ((v = evhttp_find_header(h, "Authorization")) == NULL ||
	    strncmp(v, "Bearer ", 7) != 0 || v[7] == '\0') {
		fakepeer_send(req, 401, "{\"error\":{\"message\":\"Invalid "
		    "OAuth access token\",\"type\":\"OAuthException\",\"code\":"
		    "190,\"error_subcode\":460,\"fbtrace_id\":\"Afake\"}}");
		return;
	}
	body = fakepeer_body(req);
	if (body == NULL || !json_object_object_get_ex(body,
	    "messaging_product", &o) || strcmp(json_object_get_string(o),
	    "whatsapp") != 0)
		goto bad;
	if (json_object_object_get_ex(body, "status", &o) &&
	    strcmp(json_object_get_string(o), "read") == 0) {
		p->graph_reads++;
		json_object_put(body);
		fakepeer_send(req, 200, "{\"success\":true}");
		return;
	}
	if (!json_object_object_get_ex(body, "to", &o) ||
	    (to = json_object_get_string(o))[0] == '\0' ||
	    strlen(to) > 64 || !json_object_object_get_ex(body, "type", &o))
		goto bad;
	type = json_object_get_string(o);
	if (strcmp(type, "text") != 0 && strcmp(type, "template") != 0)
		goto bad;
	p->graph_sends++;
	if (p->log != NULL)
		fprintf(p->log, "%s\t%s\t%.6f\n", to, type, t);
	snprintf(out, sizeof out, "{\"messaging_product\":\"whatsapp\","
	    "\"contacts\":[{\"input\":\"%s\",\"wa_id\":\"%s\"}],\"messages\":"
	    "[{\"id\":\"wamid.FAKE%06lu%s\"}]}", to, to[0] == '+' ? to + 1 : to,
	    ++p->seq, pnid);
	json_object_put(body);
	fakepeer_send(req, 200, out);
	return;
bad:
	json_object_put(body);
	p->errors++;
	fakepeer_send(req, 400, "{\"error\":{\"message\":\"(#100) Invalid "
	    "parameter\",\"type\":\"OAuthException\",\"code\":100,"
	    "\"error_data\":{\"messaging_product\":\"whatsapp\",\"details\":"
	    "\"Invalid parameter\"},\"fbtrace_id\":\"Afake\"}}");
}

/* GET /__stats: the counters, the replies log flushed first. */
static void
fakepeer_stats(struct peer *p, struct evhttp_request *req)
{
	char	out[512];

	if (p->log != NULL)
		fflush(p->log);
	snprintf(out, sizeof out, "{\"llm_requests\":%ld,\"llm_in_flight\":%ld,"
	    "\"llm_peak_in_flight\":%ld,\"llm_first_t\":%.6f,\"llm_last_t\":"
	    "%.6f,\"graph_sends\":%ld,\"graph_reads\":%ld,\"errors\":%ld}",
	    p->llm_requests, p->llm_in_flight, p->llm_peak, p->llm_first_t,
	    p->llm_last_t, p->graph_sends, p->graph_reads, p->errors);
	fakepeer_send(req, 200, out);
}

/* Route by path. */
static void
fakepeer_route(struct evhttp_request *req, void *arg)
{
	struct peer	*p = arg;
	const char	*path = evhttp_request_get_uri(req);
	size_t		 n = strlen(path);
	char		 pnid[64];
	int		 post = evhttp_request_get_command(req) ==
			    EVHTTP_REQ_POST;

	if (strcmp(path, "/__stats") == 0)
		fakepeer_stats(p, req);
	else if (post && strcmp(path, "/v1/messages") == 0)
		fakepeer_llm(p, req, 0);
	else if (post && n >= 17 &&
	    strcmp(path + n - 17, "/chat/completions") == 0)
		fakepeer_llm(p, req, 1);
	else if (post && sscanf(path, "/%*[^/]/%63[0-9A-Za-z_]/messages",
	    pnid) == 1 && n > 9 && strcmp(path + n - 9, "/messages") == 0)
		fakepeer_graph(p, req, pnid);
	else if (!post && strcmp(path, "/") == 0)
		fakepeer_send(req, 200, "{}");
	else {
		p->errors++;
		fakepeer_send(req, 404, "{\"error\":{\"message\":\"Unknown "
		    "path\"}}");
	}
}

/* SIGTERM, SIGINT: leave the loop, so the log is flushed and closed. */
static void
fakepeer_quit(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	event_base_loopbreak(arg);
}

int
main(int argc, char **argv)
{
	struct peer			 p;
	struct evhttp			*http;
	struct evconnlistener		*lis;
	struct sockaddr_in		 sin;
	socklen_t			 slen = sizeof sin;
	struct event			*sigterm, *sigint;
	struct rlimit			 rl;
	long				 delay_ms = 0;
	int				 ch, port = 0, backlog = 8192;

	memset(&p, 0, sizeof p);
	while ((ch = getopt(argc, argv, "p:d:o:b:")) != -1) {
		switch (ch) {
		case 'p': port = atoi(optarg); break;
		case 'd': delay_ms = atol(optarg); break;
		case 'b': backlog = atoi(optarg); break;
		case 'o':
			if ((p.log = fopen(optarg, "w")) == NULL) {
				perror(optarg);
				return 1;
			}
			break;
		default:
			fprintf(stderr, "usage: fakepeer [-p PORT] "
			    "[-d DELAY_MS] [-o REPLIES.log] [-b BACKLOG]\n");
			return 64;
		}
	}
	/* Every connection is an fd: take all the process may have. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	signal(SIGPIPE, SIG_IGN);
	p.delay.tv_sec = delay_ms / 1000;
	p.delay.tv_usec = (delay_ms % 1000) * 1000;
	p.base = event_base_new();
	http = evhttp_new(p.base);
	evhttp_set_max_body_size(http, 32 << 20);
	evhttp_set_timeout(http, 600);
	evhttp_set_gencb(http, fakepeer_route, &p);
	/* evhttp_bind_socket listens with a backlog of 128: a burst of
	 * thousands of connections would wait for SYN retransmits. */
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_port = htons((unsigned short)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lis = evconnlistener_new_bind(p.base, NULL, NULL,
	    LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC,
	    backlog, (struct sockaddr *)&sin, sizeof sin);
	if (lis == NULL || evhttp_bind_listener(http, lis) == NULL) {
		perror("fakepeer: listen");
		return 1;
	}
	getsockname(evconnlistener_get_fd(lis), (struct sockaddr *)&sin,
	    &slen);
	printf("%d\n", ntohs(sin.sin_port));
	fflush(stdout);
	sigterm = evsignal_new(p.base, SIGTERM, fakepeer_quit, p.base);
	sigint = evsignal_new(p.base, SIGINT, fakepeer_quit, p.base);
	evsignal_add(sigterm, NULL);
	evsignal_add(sigint, NULL);
	event_base_dispatch(p.base);
	if (p.log != NULL)
		fclose(p.log);
	event_free(sigterm);
	event_free(sigint);
	evhttp_free(http);
	event_base_free(p.base);
	return 0;
}
