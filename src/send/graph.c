/*
 * graph.c -- the Graph API client: JSON bodies with json-c, POSTs through
 * curlev, error bodies parsed and dispatched on error.code.
 * SPDX-License-Identifier: MIT
 */
#include <sys/queue.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "send/graph.h"
#include "base/log.h"

struct graph_call {
	TAILQ_ENTRY(graph_call) entry;
	struct graph		*g;
	struct curlev_xfer	*xfer;
	graph_cb		*cb;
	void			*arg;
};

struct graph {
	struct curlev		*cv;
	char			*api_base;
	char			*auth;		/* "Authorization: Bearer ..." */
	long			 connect_ms, total_ms;
	TAILQ_HEAD(, graph_call) calls;
};

#define GRAPH_NAME_ITEM(e, s) s,
static const char *graph_class_names[] = { GRAPH_CLASS_LIST(GRAPH_NAME_ITEM) };
#undef GRAPH_NAME_ITEM

const char *
graph_class_name(int c)
{
	if (c < 0 || c >= GRAPH__COUNT)
		return "?";
	return graph_class_names[c];
}

struct graph *
graph_new(struct curlev *cv, const struct graph_params *p)
{
	struct graph	*g;
	size_t		 n;

	if ((g = calloc(1, sizeof *g)) == NULL)
		return NULL;
	g->cv = cv;
	TAILQ_INIT(&g->calls);
	g->connect_ms = p->connect_timeout_ms > 0 ? p->connect_timeout_ms :
	    5000;
	g->total_ms = p->timeout_ms > 0 ? p->timeout_ms : 15000;
	if ((g->api_base = strdup(p->api_base ? p->api_base : "")) == NULL)
		goto fail;
	n = strlen(g->api_base);
	while (n > 0 && g->api_base[n - 1] == '/')
		g->api_base[--n] = '\0';
	if (asprintf(&g->auth, "Authorization: Bearer %s",
	    p->token ? p->token : "") == -1) {
		g->auth = NULL;
		goto fail;
	}
	return g;
fail:
	graph_free(g);
	return NULL;
}

void
graph_free(struct graph *g)
{
	struct graph_call	*c;

	if (g == NULL)
		return;
	while ((c = TAILQ_FIRST(&g->calls)) != NULL) {
		TAILQ_REMOVE(&g->calls, c, entry);
		curlev_cancel(c->xfer);
		free(c);
	}
	free(g->api_base);
	if (g->auth != NULL)
		explicit_bzero(g->auth, strlen(g->auth));
	free(g->auth);
	free(g);
}

size_t
graph_utf8_prefix(const char *s, size_t maxchars)
{
	size_t	i, chars = 0;

	for (i = 0; s[i] != '\0'; i++) {
		/* A byte that is not a continuation byte starts a character. */
		if (((unsigned char)s[i] & 0xC0) != 0x80) {
			if (chars == maxchars)
				return i;
			chars++;
		}
	}
	return i;
}

enum graph_class
graph_classify(long http_status, long code)
{
	switch (code) {
	case 131047:
		return GRAPH_NEEDS_TEMPLATE;
	case 130429: case 131056: case 4: case 80007: case 131048:
		return GRAPH_BACKOFF;
	case 190: case 368:
		return GRAPH_STOP;
	case 131026: case 131050: case 100: case 132000: case 132001:
	case 131051: case 131030: case 131049: case 130472:
		return GRAPH_PERMANENT;
	case 1: case 2: case 131000: case 131016:
		return GRAPH_RETRY;
	default:
		break;
	}
	if (http_status == 0 || http_status >= 500 || http_status == 408)
		return GRAPH_RETRY;
	if (http_status == 429)
		return GRAPH_BACKOFF;
	if (http_status == 401)
		return GRAPH_STOP;
	if (http_status >= 200 && http_status < 300 && code == 0)
		return GRAPH_OK;
	return GRAPH_PERMANENT;
}

/* Copy a string member of o into dst (empty when absent). */
static void
graph_copy_str(json_object *o, const char *key, char *dst, size_t len)
{
	json_object	*v;

	dst[0] = '\0';
	if (json_object_object_get_ex(o, key, &v) &&
	    json_object_is_type(v, json_type_string))
		snprintf(dst, len, "%s", json_object_get_string(v));
}

/* Fill the error fields of r from an {"error":{...}} body. */
static void
graph_parse_error(json_object *root, struct graph_result *r)
{
	json_object	*e, *v;

	if (!json_object_object_get_ex(root, "error", &e) ||
	    !json_object_is_type(e, json_type_object))
		return;
	if (json_object_object_get_ex(e, "code", &v))
		r->code = (long)json_object_get_int64(v);
	if (json_object_object_get_ex(e, "error_subcode", &v))
		r->subcode = (long)json_object_get_int64(v);
	graph_copy_str(e, "fbtrace_id", r->fbtrace_id, sizeof r->fbtrace_id);
	graph_copy_str(e, "message", r->message, sizeof r->message);
}

void
graph_parse(long http_status, const char *body, struct graph_result *r)
{
	json_object	*root, *msgs, *m0, *v;

	r->http_status = http_status;
	root = body != NULL && *body != '\0' ? json_tokener_parse(body) : NULL;
	if (root != NULL && json_object_is_type(root, json_type_object)) {
		graph_parse_error(root, r);
		if (json_object_object_get_ex(root, "messages", &msgs) &&
		    (m0 = json_object_array_get_idx(msgs, 0)) != NULL)
			graph_copy_str(m0, "id", r->wamid, sizeof r->wamid);
		if (json_object_object_get_ex(root, "success", &v))
			r->success = json_object_get_boolean(v);
	} else if (http_status >= 200 && http_status < 300)
		/*
		 * Accepted but unreadable: the message may well be on its
		 * way, so this is not retried (a retry could send it twice).
		 */
		log_warnx("graph: unparsable %ld answer", http_status);
	json_object_put(root);
	r->cls = graph_classify(http_status, r->code);
	if (r->cls != GRAPH_OK && r->message[0] == '\0')
		snprintf(r->message, sizeof r->message, "HTTP %ld",
		    http_status);
}

/* curlev callback: parse, report, forget the call. */
static void
graph_done(const struct curlev_resp *resp, void *arg)
{
	struct graph_call	*c = arg;
	struct graph_result	 r;
	char			*end;

	memset(&r, 0, sizeof r);
	r.curl_code = resp->code;
	if (resp->code != CURLE_OK) {
		r.cls = GRAPH_RETRY;
		snprintf(r.message, sizeof r.message, "%s",
		    curl_easy_strerror(resp->code));
	} else
		graph_parse(resp->status, resp->body, &r);
	if (resp->retry_after[0] != '\0') {
		r.retry_after_s = strtol(resp->retry_after, &end, 10);
		if (*end != '\0' || r.retry_after_s < 0)
			r.retry_after_s = 0;
	}
	if (r.cls != GRAPH_OK)
		log_warnx("graph: %s: http %ld code %ld subcode %ld fbtrace %s",
		    graph_class_name(r.cls), r.http_status, r.code, r.subcode,
		    r.fbtrace_id);
	TAILQ_REMOVE(&c->g->calls, c, entry);
	c->cb(&r, c->arg);
	free(c);
}

/* POST body to {api_base}/{phone_number_id}/messages. */
static int
graph_post(struct graph *g, const char *phone_number_id, const char *body,
    graph_cb *cb, void *arg)
{
	struct graph_call	*c;
	const char		*hdrs[3];
	char			*url = NULL;

	if (body == NULL || phone_number_id == NULL)
		return -1;
	if ((c = calloc(1, sizeof *c)) == NULL)
		return -1;
	if (asprintf(&url, "%s/%s/messages", g->api_base,
	    phone_number_id) == -1) {
		free(c);
		return -1;
	}
	hdrs[0] = g->auth;
	hdrs[1] = "Content-Type: application/json";
	hdrs[2] = NULL;
	c->g = g;
	c->cb = cb;
	c->arg = arg;
	c->xfer = curlev_post(g->cv, url, hdrs, body, g->connect_ms,
	    g->total_ms, graph_done, c);
	free(url);
	if (c->xfer == NULL) {
		free(c);
		return -1;
	}
	TAILQ_INSERT_TAIL(&g->calls, c, entry);
	return 0;
}

/* The common envelope of a send: product, recipient, type. */
static json_object *
graph_envelope(const char *to, const char *type)
{
	json_object	*o;
	char		 num[64];
	size_t		 i;
	int		 digits = to[0] != '\0';

	for (i = 0; to[i] != '\0'; i++)
		if (!isdigit((unsigned char)to[i]))
			digits = 0;
	/* Without "+", Meta prepends the business number's country code. */
	if (digits && strlen(to) < sizeof num - 1)
		snprintf(num, sizeof num, "+%s", to);
	else
		snprintf(num, sizeof num, "%s", to);
	o = json_object_new_object();
	json_object_object_add(o, "messaging_product",
	    json_object_new_string("whatsapp"));
	json_object_object_add(o, "recipient_type",
	    json_object_new_string("individual"));
	json_object_object_add(o, "to", json_object_new_string(num));
	json_object_object_add(o, "type", json_object_new_string(type));
	return o;
}

/* Serialise o into a new string and release o. */
static char *
graph_to_string(json_object *o)
{
	char	*s;

	s = strdup(json_object_to_json_string_ext(o,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return s;
}

char *
graph_text_body(const char *to, const char *text, const char *reply_to)
{
	json_object	*o, *t, *ctx;

	o = graph_envelope(to, "text");
	t = json_object_new_object();
	json_object_object_add(t, "preview_url", json_object_new_boolean(0));
	json_object_object_add(t, "body", json_object_new_string_len(text,
	    (int)graph_utf8_prefix(text, GRAPH_TEXT_MAX)));
	json_object_object_add(o, "text", t);
	if (reply_to != NULL && *reply_to != '\0') {
		ctx = json_object_new_object();
		json_object_object_add(ctx, "message_id",
		    json_object_new_string(reply_to));
		json_object_object_add(o, "context", ctx);
	}
	return graph_to_string(o);
}

int
graph_send_text(struct graph *g, const char *phone_number_id, const char *to,
    const char *text, const char *reply_to, graph_cb *cb, void *arg)
{
	char	*body;
	int	 rc;

	body = graph_text_body(to, text, reply_to);
	rc = graph_post(g, phone_number_id, body, cb, arg);
	free(body);
	return rc;
}

int
graph_send_template(struct graph *g, const char *phone_number_id,
    const char *to, const char *name, const char *lang,
    json_object *components, graph_cb *cb, void *arg)
{
	json_object	*o, *t, *l;
	char		*body;
	int		 rc;

	o = graph_envelope(to, "template");
	t = json_object_new_object();
	l = json_object_new_object();
	json_object_object_add(t, "name", json_object_new_string(name));
	json_object_object_add(l, "code", json_object_new_string(lang));
	json_object_object_add(l, "policy",
	    json_object_new_string("deterministic"));
	json_object_object_add(t, "language", l);
	if (components != NULL)
		json_object_object_add(t, "components",
		    json_object_get(components));
	json_object_object_add(o, "template", t);
	body = graph_to_string(o);
	rc = graph_post(g, phone_number_id, body, cb, arg);
	free(body);
	return rc;
}

int
graph_send_payload(struct graph *g, const char *phone_number_id,
    const char *body, graph_cb *cb, void *arg)
{
	return graph_post(g, phone_number_id, body, cb, arg);
}

int
graph_mark_read(struct graph *g, const char *phone_number_id,
    const char *wamid, int typing, graph_cb *cb, void *arg)
{
	json_object	*o, *t;
	char		*body;
	int		 rc;

	o = json_object_new_object();
	json_object_object_add(o, "messaging_product",
	    json_object_new_string("whatsapp"));
	json_object_object_add(o, "status", json_object_new_string("read"));
	json_object_object_add(o, "message_id", json_object_new_string(wamid));
	if (typing) {
		t = json_object_new_object();
		json_object_object_add(t, "type", json_object_new_string("text"));
		json_object_object_add(o, "typing_indicator", t);
	}
	body = graph_to_string(o);
	rc = graph_post(g, phone_number_id, body, cb, arg);
	free(body);
	return rc;
}
