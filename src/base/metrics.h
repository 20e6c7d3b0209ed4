/*
 * metrics.h -- counters for GET /metrics (Prometheus text format 0.0.4).
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_METRICS_H
#define MG_METRICS_H

#include <stdint.h>

struct evbuffer;

#define METRICS_NCODES		10	/* see metrics.c */
#define METRICS_NBUCKETS	12
#define METRICS_NSTATES		5	/* inbox states */
#define METRICS_NRECONCILE	3	/* settled, reposted, duplicate */

/* The routes of the request duration histogram (label route). */
enum metrics_route {
	METRICS_WEBHOOK, METRICS_HEALTHZ, METRICS_READYZ, METRICS_METRICS,
	METRICS_OTHER, METRICS_NROUTES
};

struct metrics {
	uint64_t	requests[METRICS_NCODES];	/* /webhook by code */
	uint64_t	hist[METRICS_NROUTES][METRICS_NBUCKETS + 1];
	double		sum[METRICS_NROUTES];
	uint64_t	count[METRICS_NROUTES];
	uint64_t	sig_failures;
	uint64_t	batches;
	uint64_t	batch_rows;
	uint64_t	batch_failures;
	int64_t		inbox[METRICS_NSTATES];		/* -1: not known yet */
	int64_t		outbox_ambiguous;		/* -1: not known yet */
	int64_t		reconcile[METRICS_NRECONCILE];	/* SQL counters */
};

/* The outcomes of send_reconcile_counts, in the order of
 * metrics.reconcile. */
extern const char *const metrics_reconcile[METRICS_NRECONCILE];

/* The inbox states, in the order of metrics.inbox. */
extern const char *const metrics_states[METRICS_NSTATES];

void	metrics_init(struct metrics *);

/* Count one /webhook answer with its latency in seconds. */
void	metrics_request(struct metrics *, int code, double seconds);

/* Count a request the HTTP layer refused before any route saw it (a body
 * over 3 MiB: 413; request line and headers too large or malformed: 400),
 * under modegate_webhook_requests_total{code}. */
void	metrics_refused(struct metrics *, int code);

/* One request of another route answered, in seconds. */
void	metrics_observe(struct metrics *, enum metrics_route, double seconds);

/* Append the exposition text to out. */
void	metrics_render(const struct metrics *, struct evbuffer *out,
	    int db_connections_up, int ready);

#endif
