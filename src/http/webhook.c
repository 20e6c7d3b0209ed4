/*
 * webhook.c -- GET /webhook (Meta's verification handshake) and POST
 * /webhook (signed notifications into the inbox through the group
 * commit queue).
 * SPDX-License-Identifier: MIT
 */
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "base/config.h"
#include "db/pool.h"
#include "http/ingest.h"
#include "base/log.h"
#include "http/server.h"
#include "http/wa.h"

void
webhook_get(struct server *s, struct evhttp_request *req, double t0)
{
	const struct evhttp_uri	*uri = evhttp_request_get_evhttp_uri(req);
	char			*challenge;

	challenge = wa_handshake(evhttp_uri_get_query(uri),
	    s->cfg->verify_token);
	if (challenge == NULL) {
		log_info("webhook: verification refused (403)");
		reply_send(s, req, 403, "forbidden\n", t0, 1);
		return;
	}
	log_info("webhook: verification accepted");
	reply_send(s, req, 200, challenge, t0, 1);
	free(challenge);
}

/* Build the item for a verified body: its rows, or a failure row. */
static struct ingest_item *
webhook_item(struct evhttp_request *req, const char *body, size_t len,
    double t0)
{
	struct ingest_item	*it;
	struct wa_payload	 p;
	char			 err[256];
	size_t			 i;

	if (wa_parse(&p, body, len, err, sizeof err) == -1) {
		log_info("webhook: malformed body of %zu bytes kept: %s", len,
		    err);
		if ((it = ingest_item_new(req, t0, 400)) != NULL)
			ingest_item_failure(it, err, body, len);
		return it;
	}
	for (i = 0; log_enabled(LOG_DEBUG) && i < p.nmsgs; i++)
		log_debug("webhook: message wamid=%s type=%s", p.msgs[i].wamid,
		    p.msgs[i].type);
	if ((it = ingest_item_new(req, t0, 200)) != NULL)
		ingest_item_payload(it, &p);
	wa_payload_free(&p);
	return it;
}

void
webhook_post(struct server *s, struct evhttp_request *req, double t0)
{
	struct evbuffer		*in = evhttp_request_get_input_buffer(req);
	struct ingest_item	*it;
	const char		*sig, *body;
	size_t			 len = evbuffer_get_length(in);

	if (len > WA_MAX_BODY) {
		reply_send(s, req, 413, "body too large\n", t0, 1);
		return;
	}
	sig = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "X-Hub-Signature-256");
	body = len > 0 ? (const char *)evbuffer_pullup(in, -1) : "";
	if (!wa_signature_ok(sig, body, len, s->cfg->app_secret)) {
		s->metrics.sig_failures++;
		log_info("webhook: signature %s (401)", sig ? "mismatch" :
		    "missing");
		reply_send(s, req, 401, "bad signature\n", t0, 1);
		return;
	}
	if (s->draining || db_pool_up(s->pool) == 0) {
		reply_send(s, req, 503, "database unavailable\n", t0, 1);
		return;
	}
	if ((it = webhook_item(req, body, len, t0)) == NULL) {
		reply_send(s, req, 503, "out of memory\n", t0, 1);
		return;
	}
	if (ingest_item_rows(it) == 0) {
		ingest_item_free(it);
		reply_send(s, req, 200, "ok\n", t0, 1);
		return;
	}
	if (ingest_submit(s->ingest, it) == -1) {
		ingest_item_free(it);
		reply_send(s, req, 503, "busy\n", t0, 1);
	}
}
