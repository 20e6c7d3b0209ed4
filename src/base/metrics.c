/*
 * metrics.c -- Prometheus text exposition of the ingest counters.
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include <event2/buffer.h>

#include "base/metrics.h"

static const int metrics_codes[METRICS_NCODES] = {
	200, 400, 401, 403, 404, 405, 413, 500, 503, 0	/* 0: other */
};

static const double metrics_bounds[METRICS_NBUCKETS] = {
	0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
	2.5
};

static const char *const metrics_routes[METRICS_NROUTES] = {
	"/webhook", "/healthz", "/readyz", "/metrics", "other"
};

const char *const metrics_states[METRICS_NSTATES] = {
	"pending", "claimed", "done", "dead", "skipped"
};

const char *const metrics_reconcile[METRICS_NRECONCILE] = {
	"settled", "reposted", "duplicate"
};

void
metrics_init(struct metrics *m)
{
	int	i;

	memset(m, 0, sizeof *m);
	for (i = 0; i < METRICS_NSTATES; i++)
		m->inbox[i] = -1;
	m->outbox_ambiguous = -1;
}

void
metrics_refused(struct metrics *m, int code)
{
	int	i;

	for (i = 0; i < METRICS_NCODES - 1; i++)
		if (metrics_codes[i] == code)
			break;
	m->requests[i]++;
}

void
metrics_observe(struct metrics *m, enum metrics_route r, double seconds)
{
	int	i;

	for (i = 0; i < METRICS_NBUCKETS; i++)
		if (seconds <= metrics_bounds[i])
			break;
	m->hist[r][i]++;
	m->sum[r] += seconds;
	m->count[r]++;
}

void
metrics_request(struct metrics *m, int code, double seconds)
{
	metrics_refused(m, code);
	metrics_observe(m, METRICS_WEBHOOK, seconds);
}

/* A counter or gauge with HELP and TYPE lines and one unlabelled value. */
static void
metrics_one(struct evbuffer *out, const char *name, const char *type,
    const char *help, unsigned long long v)
{
	evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name,
	    help, name, type, name, v);
}

void
metrics_render(const struct metrics *m, struct evbuffer *out, int db_up,
    int ready)
{
	uint64_t	cum = 0;
	int		i, r;

	evbuffer_add_printf(out, "# HELP modegate_webhook_requests_total "
	    "Requests to /webhook answered, by HTTP status code; 413 and 400 "
	    "also count requests refused before routing (body or headers too "
	    "large, malformed).\n"
	    "# TYPE modegate_webhook_requests_total counter\n");
	for (i = 0; i < METRICS_NCODES; i++) {
		if (metrics_codes[i] == 0)
			evbuffer_add_printf(out, "modegate_webhook_requests_total"
			    "{code=\"other\"} %llu\n",
			    (unsigned long long)m->requests[i]);
		else
			evbuffer_add_printf(out, "modegate_webhook_requests_total"
			    "{code=\"%d\"} %llu\n", metrics_codes[i],
			    (unsigned long long)m->requests[i]);
	}
	evbuffer_add_printf(out, "# HELP modegate_http_request_duration_seconds"
	    " Time from a request read to its answer, by route.\n"
	    "# TYPE modegate_http_request_duration_seconds histogram\n");
	for (r = 0; r < METRICS_NROUTES; r++) {
		cum = 0;
		for (i = 0; i < METRICS_NBUCKETS; i++) {
			cum += m->hist[r][i];
			evbuffer_add_printf(out,
			    "modegate_http_request_duration_seconds_bucket"
			    "{route=\"%s\",le=\"%g\"} %llu\n",
			    metrics_routes[r], metrics_bounds[i],
			    (unsigned long long)cum);
		}
		evbuffer_add_printf(out,
		    "modegate_http_request_duration_seconds_bucket{route=\"%s\","
		    "le=\"+Inf\"} %llu\n"
		    "modegate_http_request_duration_seconds_sum{route=\"%s\"} "
		    "%.6f\n"
		    "modegate_http_request_duration_seconds_count{route=\"%s\"} "
		    "%llu\n", metrics_routes[r], (unsigned long long)m->count[r],
		    metrics_routes[r], m->sum[r], metrics_routes[r],
		    (unsigned long long)m->count[r]);
	}
	evbuffer_add_printf(out, "# HELP modegate_inbox_rows Inbox rows by "
	    "processing state (refreshed every few seconds).\n"
	    "# TYPE modegate_inbox_rows gauge\n");
	for (i = 0; i < METRICS_NSTATES; i++)
		if (m->inbox[i] >= 0)
			evbuffer_add_printf(out, "modegate_inbox_rows{state=\"%s\"}"
			    " %lld\n", metrics_states[i], (long long)m->inbox[i]);
	if (m->outbox_ambiguous >= 0) {
		metrics_one(out, "modegate_outbox_ambiguous", "gauge",
		    "Messages whose send lease expired with no recorded answer, "
		    "waiting for a status webhook naming them (refreshed every "
		    "few seconds).", (unsigned long long)m->outbox_ambiguous);
		evbuffer_add_printf(out, "# HELP modegate_send_reconcile_total "
		    "Ambiguous sends settled by a status, posted again after "
		    "silence, and duplicates Meta reported (whole database, "
		    "refreshed every few seconds).\n"
		    "# TYPE modegate_send_reconcile_total counter\n");
		for (i = 0; i < METRICS_NRECONCILE; i++)
			evbuffer_add_printf(out, "modegate_send_reconcile_total"
			    "{outcome=\"%s\"} %lld\n", metrics_reconcile[i],
			    (long long)m->reconcile[i]);
	}
	metrics_one(out, "modegate_db_up", "gauge", "1 when at least one "
	    "webhook (ingest) database connection is up.", db_up > 0);
	metrics_one(out, "modegate_ready", "gauge", "1 when /readyz answers "
	    "200.", ready != 0);
	metrics_one(out, "modegate_webhook_signature_failures_total", "counter",
	    "POST /webhook refused for a missing or wrong signature.",
	    m->sig_failures);
	metrics_one(out, "modegate_ingest_batches_total", "counter",
	    "Group commits sent.", m->batches);
	metrics_one(out, "modegate_ingest_batch_rows_total", "counter",
	    "Rows sent in group commits.", m->batch_rows);
	metrics_one(out, "modegate_ingest_batch_failures_total", "counter",
	    "Group commits that failed (answered 503).", m->batch_failures);
}
