/*
 * httpconn.h -- abuse limits of the HTTP front door that evhttp lacks: a
 * cap on open connections and a deadline for a client to send a whole
 * request (slow clients: evhttp's own timeout is per read, so one byte
 * every few seconds would hold a connection forever).
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_HTTPCONN_H
#define MG_HTTPCONN_H

#include "../../mode/core.h"

struct evbuffer;
struct evhttp;
struct evhttp_bound_socket;
struct evhttp_request;
struct event_base;
struct httpconns;

/*
 * Count http's connections: at most max open (at the cap a new one
 * evicts the slowest incomplete request; when none can be evicted the
 * listener stops accepting and new connections wait in the kernel's
 * queue until one closes), each closed when a request is not complete
 * deadline_s seconds after the connection opened or after its previous
 * answer, or when a begun request arrives slower than min_rate bytes per
 * second after a grace second (0: no minimum).
 * Borrows base and http; *sockp is read whenever the listener is
 * needed (NULL: not listening). Returns NULL on failure.
 */
/* evhttp answered a request no route saw (code; peer as "ip:port"). */
typedef void	(*httpconns_refused_cb)(int code, const char *peer,
		    void *arg);

struct httpconns *httpconns_new(struct event_base *, struct evhttp *,
		    struct evhttp_bound_socket **sockp, int max,
		    int deadline_s, int min_rate, httpconns_refused_cb refused,
		    void *arg);

/* req was read whole: no deadline while it is being answered. */
void		httpconns_request(struct httpconns *,
		    struct evhttp_request *);

/* Connections open now. */
int		httpconns_open(const struct httpconns *);

/* Append the connection metrics (Prometheus text) to out. */
void		httpconns_metrics(const struct httpconns *, struct evbuffer *);

/* Close what is left and free; call after evhttp_free. NULL ok. */
void		httpconns_free(struct httpconns *);

#endif
