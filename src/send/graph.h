/*
 * graph.h -- WhatsApp Cloud API (Graph API) client: send text and template
 * messages, mark as read with the typing indicator, classify errors by
 * error.code (reference/whatsapp.md §5.5). Asynchronous, on curlev.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_GRAPH_H
#define MG_GRAPH_H

#include <stddef.h>

#include <json-c/json.h>

#include "base/curlev.h"

#define GRAPH_TEXT_MAX	4096	/* characters (code points) in text.body */

#define GRAPH_CLASS_LIST(X)						\
	X(GRAPH_OK, "ok")						\
	X(GRAPH_RETRY, "retry")		/* transient: retry with backoff */ \
	X(GRAPH_BACKOFF, "backoff")	/* throttled: wait longer, retry */ \
	X(GRAPH_NEEDS_TEMPLATE, "needs_template") /* 24 h window closed */ \
	X(GRAPH_STOP, "stop")		/* token/account: stop sending */ \
	X(GRAPH_PERMANENT, "permanent")	/* never retry this message */

#define GRAPH_ENUM_ITEM(e, s) e,
enum graph_class { GRAPH_CLASS_LIST(GRAPH_ENUM_ITEM) GRAPH__COUNT };
#undef GRAPH_ENUM_ITEM

/* The outcome of one Graph API call. */
struct graph_result {
	enum graph_class cls;
	long		 http_status;	/* 0: no HTTP answer */
	int		 curl_code;	/* CURLcode of the transfer */
	char		 wamid[256];	/* messages[0].id on a send */
	int		 success;	/* {"success":true} on mark-read */
	long		 code;		/* error.code, 0 when none */
	long		 subcode;	/* error.error_subcode */
	char		 fbtrace_id[64];
	char		 message[256];	/* error.message, or a transport text */
	long		 retry_after_s;	/* retry-after header, 0 when none */
};

struct graph_params {
	const char	*api_base;	/* e.g. https://graph.facebook.com/v25.0 */
	const char	*token;		/* bearer token; secret, never logged */
	long		 connect_timeout_ms;	/* default 5000 */
	long		 timeout_ms;		/* default 15000 */
};

/* Called once from the event loop; r is borrowed for the call only. */
typedef void	graph_cb(const struct graph_result *r, void *arg);

struct graph;

/* A client on cv (borrowed; must outlive it); p's strings are copied.
 * NULL on failure. Free with graph_free, which cancels calls in flight
 * without calling their callbacks. */
struct graph	*graph_new(struct curlev *cv, const struct graph_params *p);
void		 graph_free(struct graph *);

/*
 * Send text (trimmed to GRAPH_TEXT_MAX characters on a UTF-8 boundary) to
 * "to" (a wa_id; "+" is added to an all-digit number) from phone_number_id.
 * reply_to, when not NULL, quotes that inbound wamid. All strings are
 * copied. Returns 0, or -1 (cb not called).
 */
int	graph_send_text(struct graph *, const char *phone_number_id,
	    const char *to, const char *text, const char *reply_to,
	    graph_cb *cb, void *arg) MG_MUSTCHECK;

/* Send an approved template; components (may be NULL) is borrowed and
 * serialised at once. Returns 0, or -1 (cb not called). */
int	graph_send_template(struct graph *, const char *phone_number_id,
	    const char *to, const char *name, const char *lang,
	    json_object *components, graph_cb *cb, void *arg) MG_MUSTCHECK;

/* Mark wamid as read and, when typing is set, show the typing indicator.
 * Returns 0, or -1 (cb not called). */
int	graph_mark_read(struct graph *, const char *phone_number_id,
	    const char *wamid, int typing, graph_cb *cb, void *arg)
	    MG_MUSTCHECK;

/* Post a prepared Graph API body (an outbox payload: JSON text, borrowed
 * and copied) as is to {api_base}/{phone_number_id}/messages. Returns 0,
 * or -1 (cb not called). */
int	graph_send_payload(struct graph *, const char *phone_number_id,
	    const char *body, graph_cb *cb, void *arg) MG_MUSTCHECK;

/* The JSON body graph_send_text would post (new string; caller frees),
 * NULL on failure. */
char	*graph_text_body(const char *to, const char *text,
	    const char *reply_to);

/* Bytes of the longest prefix of s holding at most maxchars UTF-8
 * characters; never splits a character. */
size_t	 graph_utf8_prefix(const char *s, size_t maxchars);

/* Classify an answer: http status (0: transport failure) and error.code
 * (0: none). */
enum graph_class graph_classify(long http_status, long code);

/* Parse a Graph API response body into r (cls included). */
void	 graph_parse(long http_status, const char *body,
	    struct graph_result *r);

const char	*graph_class_name(int);

#endif
