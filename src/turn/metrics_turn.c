/*
 * metrics_turn.c -- the turn's Prometheus metrics (see metrics_turn.h):
 * plain counters in process memory, bumped on the event loop where the
 * events happen (worker.c, turn.c, turn_llm.c, llm.c), rendered by
 * GET /metrics. Nothing here touches the database.
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>

#include "../../mode/core.h"
#include "llm/wire.h"
#include "turn/metrics_turn.h"

#define MT_NBUCKETS	16
#define MT_NLABELS	32	/* distinct rule or claim ids kept */

struct mt_hist {
	uint64_t	b[MT_NBUCKETS + 1];	/* last: +Inf only */
	double		sum;
	uint64_t	count;
};

struct mt_label {
	char		name[48];
	uint64_t	n;
};

struct mt_labels {
	struct mt_label	l[MT_NLABELS];
	uint64_t	other;
};

static const double mt_bounds[MT_NBUCKETS] = {
	0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
	2.5, 5, 10, 30, 60
};

#define MT_NAME2(e, s) s,
static const char *const mt_step_names[] = { MT_STEP_LIST(MT_NAME2) };
#undef MT_NAME2

static const char *const mt_results[] = { "committed", "lease_lost",
    "failed" };
#define MT_NRESULTS (sizeof mt_results / sizeof mt_results[0])

static struct {
	struct mt_hist	 steps[MT__STEPS];
	uint64_t	 results[MT_NRESULTS];
	uint64_t	 llm[LLM__PROVIDERS][LLM__ERRS];
	struct mt_hist	 llm_hist[LLM__PROVIDERS];
	uint64_t	 tokens[LLM__PROVIDERS][2];	/* input, output */
	const char	*(*breaker)(const void *);
	const void	*breaker_arg;
	uint64_t	 decisions[TRANS__COUNT];
	struct mt_labels blocks, violations;
	int64_t		 oldest_ms;		/* < 0: not known yet */
	int64_t		 unsent_ms;		/* oldest unsent outbox row */
	char		 flag[8];		/* "": not known yet */
	int		 flag_percent;
} mt = { .oldest_ms = -1 };

double
metrics_turn_now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Count one observation in a histogram. */
static void
mt_observe(struct mt_hist *h, double v)
{
	int	i;

	if (v < 0)
		v = 0;
	for (i = 0; i < MT_NBUCKETS; i++)
		if (v <= mt_bounds[i])
			break;
	h->b[i]++;
	h->sum += v;
	h->count++;
}

void
metrics_turn_step(enum mt_step step, double since)
{
	if ((int)step >= 0 && step < MT__STEPS && since > 0)
		mt_observe(&mt.steps[step], metrics_turn_now() - since);
}

void
metrics_turn_result(const char *result)
{
	size_t	i;

	for (i = 0; i < MT_NRESULTS; i++)
		if (strcmp(result, mt_results[i]) == 0)
			mt.results[i]++;
}

void
metrics_turn_llm(int provider, int err, double seconds)
{
	if (provider < 0 || provider >= LLM__PROVIDERS || err < 0 ||
	    err >= LLM__ERRS)
		return;
	mt.llm[provider][err]++;
	if (seconds >= 0)
		mt_observe(&mt.llm_hist[provider], seconds);
}

void
metrics_turn_tokens(int provider, long input, long output)
{
	if (provider < 0 || provider >= LLM__PROVIDERS)
		return;
	if (input > 0)
		mt.tokens[provider][0] += (uint64_t)input;
	if (output > 0)
		mt.tokens[provider][1] += (uint64_t)output;
}

void
metrics_turn_llm_breaker(const char *(*state)(const void *), const void *arg)
{
	mt.breaker = state;
	mt.breaker_arg = arg;
}

void
metrics_turn_llm_gone(const void *arg)
{
	if (mt.breaker_arg == arg) {
		mt.breaker = NULL;
		mt.breaker_arg = NULL;
	}
}

void
metrics_turn_decision(int decision)
{
	if (decision >= 0 && decision < TRANS__COUNT)
		mt.decisions[decision]++;
}

/* Count one event under a name; a new name takes a free slot, if any. */
static void
mt_label_count(struct mt_labels *ls, const char *name)
{
	int	i;

	if (name == NULL || *name == '\0')
		name = "unknown";
	for (i = 0; i < MT_NLABELS && ls->l[i].name[0] != '\0'; i++)
		if (strcmp(ls->l[i].name, name) == 0) {
			ls->l[i].n++;
			return;
		}
	/* Label values go out unescaped: keep only names that need none. */
	if (i == MT_NLABELS || strlen(name) >= sizeof ls->l[i].name ||
	    strpbrk(name, "\"\\\n") != NULL) {
		ls->other++;
		return;
	}
	snprintf(ls->l[i].name, sizeof ls->l[i].name, "%s", name);
	ls->l[i].n = 1;
}

void
metrics_turn_policy_block(const char *rule)
{
	mt_label_count(&mt.blocks, rule);
}

void
metrics_turn_guard_violation(const char *claim)
{
	mt_label_count(&mt.violations, claim);
}

void
metrics_turn_db(int64_t oldest_pending_ms, int64_t oldest_unsent_ms,
    const char *flag_value, int flag_percent)
{
	mt.oldest_ms = oldest_pending_ms < 0 ? 0 : oldest_pending_ms;
	mt.unsent_ms = oldest_unsent_ms < 0 ? 0 : oldest_unsent_ms;
	if (flag_value == NULL)
		mt.flag[0] = '\0';
	else
		snprintf(mt.flag, sizeof mt.flag, "%s", flag_value);
	mt.flag_percent = flag_percent;
}

void
metrics_turn_reset(void)
{
	memset(&mt, 0, sizeof mt);
	mt.oldest_ms = -1;
}

/* HELP and TYPE lines. */
static void
mt_head(struct evbuffer *out, const char *name, const char *type,
    const char *help)
{
	evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help,
	    name, type);
}

/* The buckets, sum and count of one labelled histogram series. */
static void
mt_hist_render(struct evbuffer *out, const char *name, const char *label,
    const struct mt_hist *h)
{
	uint64_t	cum = 0;
	int		i;

	for (i = 0; i < MT_NBUCKETS; i++) {
		cum += h->b[i];
		evbuffer_add_printf(out, "%s_bucket{%s,le=\"%g\"} %llu\n", name,
		    label, mt_bounds[i], (unsigned long long)cum);
	}
	evbuffer_add_printf(out, "%s_bucket{%s,le=\"+Inf\"} %llu\n"
	    "%s_sum{%s} %.6f\n%s_count{%s} %llu\n", name, label,
	    (unsigned long long)h->count, name, label, h->sum, name, label,
	    (unsigned long long)h->count);
}

static void
mt_labels_render(struct evbuffer *out, const char *name, const char *key,
    const struct mt_labels *ls)
{
	int	i;

	for (i = 0; i < MT_NLABELS && ls->l[i].name[0] != '\0'; i++)
		evbuffer_add_printf(out, "%s{%s=\"%s\"} %llu\n", name, key,
		    ls->l[i].name, (unsigned long long)ls->l[i].n);
	if (ls->other > 0)
		evbuffer_add_printf(out, "%s{%s=\"other\"} %llu\n", name, key,
		    (unsigned long long)ls->other);
}

/* Turn steps and results. */
static void
mt_render_turns(struct evbuffer *out)
{
	char	label[64];
	size_t	i;

	mt_head(out, "modegate_turn_step_seconds", "histogram", "Time spent in "
	    "each step of a turn (claim: one mg_claim round trip; total: "
	    "claimed to committed).");
	for (i = 0; i < MT__STEPS; i++) {
		snprintf(label, sizeof label, "step=\"%s\"", mt_step_names[i]);
		mt_hist_render(out, "modegate_turn_step_seconds", label,
		    &mt.steps[i]);
	}
	mt_head(out, "modegate_turns_total", "counter", "Turns ended, by "
	    "result (committed, lease_lost, failed: retried later).");
	for (i = 0; i < MT_NRESULTS; i++)
		evbuffer_add_printf(out, "modegate_turns_total{result=\"%s\"} "
		    "%llu\n", mt_results[i], (unsigned long long)mt.results[i]);
}

/* LLM requests, latency, tokens, breaker. */
static void
mt_render_llm(struct evbuffer *out)
{
	const char	*st;
	char		 label[64];
	int		 p, e;

	mt_head(out, "modegate_llm_requests_total", "counter", "LLM HTTP "
	    "attempts (retries too) by provider and outcome (ok, or the "
	    "error class; breaker_open: refused without a request).");
	for (p = 0; p < LLM__PROVIDERS; p++)
		for (e = 0; e < LLM__ERRS; e++)
			if (mt.llm[p][e] > 0)
				evbuffer_add_printf(out,
				    "modegate_llm_requests_total{provider=\"%s\","
				    "outcome=\"%s\"} %llu\n", llm_provider_name(p),
				    e == LLM_ERR_NONE ? "ok" : llm_err_name(e),
				    (unsigned long long)mt.llm[p][e]);
	mt_head(out, "modegate_llm_request_seconds", "histogram", "Latency "
	    "of one LLM HTTP attempt, by provider.");
	for (p = 0; p < LLM__PROVIDERS; p++)
		if (mt.llm_hist[p].count > 0) {
			snprintf(label, sizeof label, "provider=\"%s\"",
			    llm_provider_name(p));
			mt_hist_render(out, "modegate_llm_request_seconds", label,
			    &mt.llm_hist[p]);
		}
	mt_head(out, "modegate_llm_tokens_total", "counter", "Tokens the LLM "
	    "reported, by provider and direction.");
	for (p = 0; p < LLM__PROVIDERS; p++)
		if (mt.llm_hist[p].count > 0)
			evbuffer_add_printf(out, "modegate_llm_tokens_total{"
			    "provider=\"%s\",direction=\"input\"} %llu\n"
			    "modegate_llm_tokens_total{provider=\"%s\","
			    "direction=\"output\"} %llu\n", llm_provider_name(p),
			    (unsigned long long)mt.tokens[p][0],
			    llm_provider_name(p),
			    (unsigned long long)mt.tokens[p][1]);
	if (mt.breaker == NULL)
		return;
	st = mt.breaker(mt.breaker_arg);
	mt_head(out, "modegate_llm_breaker_state", "gauge", "LLM circuit "
	    "breaker: 0 closed, 1 open, 2 half-open.");
	evbuffer_add_printf(out, "modegate_llm_breaker_state %d\n",
	    strcmp(st, "open") == 0 ? 1 : strcmp(st, "half-open") == 0 ? 2 : 0);
}

/* Router decisions, policy blocks, guard violations. */
static void
mt_render_decisions(struct evbuffer *out)
{
	int	d;

	mt_head(out, "modegate_mode_decisions_total", "counter", "Mode router "
	    "decisions (flag on or shadow), by decision.");
	for (d = 0; d < TRANS__COUNT; d++)
		evbuffer_add_printf(out, "modegate_mode_decisions_total{"
		    "decision=\"%s\"} %llu\n", decision_name(d),
		    (unsigned long long)mt.decisions[d]);
	mt_head(out, "modegate_policy_blocks_total", "counter", "Messages "
	    "the policy blocked (no AI reply), by rule.");
	mt_labels_render(out, "modegate_policy_blocks_total", "rule",
	    &mt.blocks);
	mt_head(out, "modegate_guard_violations_total", "counter",
	    "Forbidden claims the guard found in LLM replies, by claim.");
	mt_labels_render(out, "modegate_guard_violations_total", "claim",
	    &mt.violations);
}

/* The database-derived gauges. */
static void
mt_render_db(struct evbuffer *out)
{
	static const char *const values[] = { "on", "off", "shadow" };
	size_t	i;

	if (mt.oldest_ms >= 0) {
		mt_head(out, "modegate_inbox_oldest_pending_seconds", "gauge",
		    "Age of the oldest pending inbox message, 0 when none "
		    "(refreshed every few seconds).");
		evbuffer_add_printf(out, "modegate_inbox_oldest_pending_seconds "
		    "%.3f\n", (double)mt.oldest_ms / 1000);
		mt_head(out, "modegate_outbox_oldest_unsent_seconds", "gauge",
		    "Age of the oldest outbox row not yet sent (pending or "
		    "being posted), 0 when none (refreshed every few seconds).");
		evbuffer_add_printf(out, "modegate_outbox_oldest_unsent_seconds "
		    "%.3f\n", (double)mt.unsent_ms / 1000);
	}
	if (mt.flag[0] == '\0')
		return;
	mt_head(out, "modegate_flag", "gauge", "1 for the current value of a "
	    "feature flag (refreshed every few seconds).");
	for (i = 0; i < sizeof values / sizeof values[0]; i++)
		evbuffer_add_printf(out, "modegate_flag{name=\""
		    "conversation_mode_enabled\",value=\"%s\"} %d\n", values[i],
		    strcmp(mt.flag, values[i]) == 0);
	/* Prometheus keeps shares as 0-1 ratios: --percent 10 is 0.1. */
	mt_head(out, "modegate_flag_ratio", "gauge", "Share of "
	    "conversations a feature flag applies to, 0 to 1 (flag set "
	    "--percent / 100).");
	evbuffer_add_printf(out, "modegate_flag_ratio{name=\""
	    "conversation_mode_enabled\"} %g\n", mt.flag_percent / 100.0);
}

void
metrics_turn_render(struct evbuffer *out)
{
	mt_render_turns(out);
	mt_render_llm(out);
	mt_render_decisions(out);
	mt_render_db(out);
}
