/*
 * curlev.h -- libcurl's multi interface driven by a libevent event_base
 * (curl's hiperfifo example): no threads, never blocks the loop, one
 * completion callback per transfer.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_CURLEV_H
#define MG_CURLEV_H

#include <stddef.h>

#include <curl/curl.h>
#include <event2/event.h>

#include "../../mode/core.h"

struct curlev;
struct curlev_xfer;

/* What a finished POST produced. status is 0 when no HTTP answer came
 * (code then says why). Header values are "" when absent. Borrowed by the
 * callback: valid only during the call. */
struct curlev_resp {
	CURLcode	 code;
	long		 status;
	const char	*body;		/* NUL-terminated, never NULL */
	size_t		 len;
	char		 retry_after[64];
	char		 retry_after_ms[32];
	char		 should_retry[16];	/* x-should-retry */
	char		 request_id[128];	/* request-id / x-request-id */
	char		 error[256];	/* libcurl's words for a failed transfer
					 * (CURLOPT_ERRORBUFFER), else "" */
	long		 elapsed_ms;
};

typedef void	curlev_post_cb(const struct curlev_resp *, void *arg);

/* A new driver on base (borrowed; must outlive it). NULL on failure.
 * Free with curlev_free. */
struct curlev	*curlev_new(struct event_base *base);

/* Abort every transfer still running (their callbacks are not called)
 * and free. curlev_free(NULL) is a no-op. */
void		 curlev_free(struct curlev *);

struct event_base *curlev_base(struct curlev *);

/* Number of transfers in flight. */
size_t		 curlev_pending(struct curlev *);

/*
 * POST body (copied) to url with the given extra headers (NULL-terminated
 * array of "Name: value", copied) and timeouts in milliseconds (0: none).
 * done(resp, arg) is called once from the event loop, never from inside
 * this call. Returns a handle that can be cancelled until done is called,
 * or NULL on failure (done is then not called).
 */
struct curlev_xfer *curlev_post(struct curlev *, const char *url,
		    const char *const *headers, const char *body,
		    long connect_ms, long total_ms, curlev_post_cb *done,
		    void *arg);

/* The header list curlev_post makes of headers ("Expect:" first), for
 * curlev_post_borrowed; NULL on failure. Free with curl_slist_free_all. */
struct curl_slist *curlev_headers(const char *const *headers);

/* The same, the header list (curlev_headers) and body borrowed: they must
 * stay as they are until done is called or the transfer is cancelled (LLM
 * requests: thousands wait at once, and a copy of each was 3 KB). */
struct curlev_xfer *curlev_post_borrowed(struct curlev *, const char *url,
		    const struct curl_slist *headers, const char *body,
		    long connect_ms, long total_ms, curlev_post_cb *done,
		    void *arg);

/* Stop a transfer whose callback has not run yet; done is not called. */
void		 curlev_cancel(struct curlev_xfer *);

#endif
