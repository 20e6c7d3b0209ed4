/*
 * cmd_explain.c -- modegate explain: what modegate would do with one
 * message, without a database. Runs intent -> policy (control ai, no
 * recorded state) -> router -> gate on the rules of $MODEGATE_RULES_DIR and
 * prints a short trace, or with --json one JSON object on one line.
 *
 * When a pending transition had expired, "expired" is true, "decision" is
 * the decision of the fresh routing that followed (the turn audits both:
 * EXPIRED, then it). When the policy blocks, the router does not run:
 * "proposal" and "decision" are null and the mode is unchanged.
 * SPDX-License-Identifier: MIT
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "cmd/cmd.h"
#include "base/config.h"
#include "turn/commit.h"
#include "rules/ruleset.h"

#ifndef MG_RULES_DIR
#define MG_RULES_DIR "."
#endif

#define MS_PER_MIN	((int64_t)60 * 1000)

struct explain {
	const char		*message;
	struct mode_state	 st;
	long			 pending_age_min;
	long			 inactive_days;
	bool			 opted_out;	/* --opted-out */
	bool			 cooling_off;	/* --cooling-off */
	const char		*objection;	/* --objection TEXT: open */
	int			 json;
	struct intent_result	 intent;
	struct policy_result	 policy;
	struct router_result	 route;
	bool			 routed;
	char			 constraints[GATE_TEXT_MAX];
	struct turn_plan	 plan;		/* the worker's decision */
	int64_t			 now_ms;
};

/* A whole number in [min, max] from s, or -1. */
static long
explain_number(const char *s, long min, long max)
{
	char	*end;
	long	 v = strtol(s, &end, 10);

	return *s != '\0' && *end == '\0' && v >= min && v <= max ? v : -1;
}

/* A mode from an option's argument, or -1 after saying why. */
static int
explain_mode(const char *opt, const char *v)
{
	int	m;

	if ((m = mode_from_name(v)) == -1)
		fprintf(stderr, "explain: %s \"%s\": unknown mode (discovery, "
		    "oferta, followup or reativacao)\n", opt, v);
	return m;
}

/* A whole number in [min, max] from an option's argument, or -1 after
 * saying why. */
static long
explain_count(const char *opt, const char *v, long max, const char *unit)
{
	long	n;

	if ((n = explain_number(v, 0, max)) == -1)
		fprintf(stderr, "explain: %s \"%s\": must be a whole number of "
		    "%s from 0 to %ld\n", opt, v, unit, max);
	return n;
}

/* Parse argv into ex; returns 0, or -1 after naming the bad argument
 * and printing the usage. */
static int
explain_args(int argc, char **argv, struct explain *ex)
{
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "pending", required_argument, NULL, 'p' },
		{ "pending-age", required_argument, NULL, 'a' },
		{ "inactive-days", required_argument, NULL, 'i' },
		{ "opted-out", no_argument, NULL, 'o' },
		{ "cooling-off", no_argument, NULL, 'c' },
		{ "objection", required_argument, NULL, 'b' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 }
	};
	int	c, i, mode = -1, pending = -1, bad = 0;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'm' && (mode = explain_mode("--mode", optarg)) == -1)
			bad = 1;
		else if (c == 'p' &&
		    (pending = explain_mode("--pending", optarg)) == -1)
			bad = 1;
		else if (c == 'a' && (ex->pending_age_min = explain_count(
		    "--pending-age", optarg, 525600, "minutes")) == -1)
			bad = 1;
		else if (c == 'i' && (ex->inactive_days = explain_count(
		    "--inactive-days", optarg, 36500, "days")) == -1)
			bad = 1;
		else if (c == 'j')
			ex->json = 1;
		else if (c == 'o')
			ex->opted_out = true;
		else if (c == 'c')
			ex->cooling_off = true;
		else if (c == 'b')
			ex->objection = optarg;
		else if (c == '?')
			bad = 1;	/* getopt said which */
	}
	if (!bad && mode == -1) {
		fprintf(stderr, "explain: --mode MODE is required\n");
		bad = 1;
	}
	if (!bad && pending != -1 && pending == mode) {
		fprintf(stderr, "explain: --pending %s: the pending transition "
		    "must lead to another mode than --mode\n", mode_name(mode));
		bad = 1;
	}
	if (!bad && optind == argc) {
		fprintf(stderr, "explain: MESSAGE missing\n");
		bad = 1;
	} else if (!bad && optind < argc - 1) {
		fprintf(stderr, "explain: one MESSAGE expected, got %d "
		    "arguments (", argc - optind);
		for (i = optind; i < argc; i++)
			fprintf(stderr, "%s\"%s\"", i > optind ? " " : "",
			    argv[i]);
		fprintf(stderr, "): quote the message\n");
		bad = 1;
	}
	if (bad) {
		fprintf(stderr, "usage: modegate explain --mode MODE [--pending "
		    "MODE --pending-age MINUTES] [--inactive-days DAYS] "
		    "[--opted-out] [--cooling-off] [--objection TEXT] [--json] "
		    "MESSAGE\n(modegate explain --help explains each)\n");
		return -1;
	}
	ex->message = argv[optind];
	ex->st.mode = (enum mode)mode;
	ex->st.pending = pending;
	return 0;
}

/* The turn the worker would decide for this one message (flag on, the
 * AI in control, nothing recorded). */
static int
explain_run(const struct ruleset *rs, struct explain *ex)
{
	struct turn_input	in;
	struct turn_msg		m;
	const struct turn_msg_plan *mp;
	const struct mode_state	*st;

	ex->now_ms = (int64_t)time(NULL) * 1000;
	if (ex->st.pending >= 0)
		ex->st.pending_at_ms = ex->now_ms - ex->pending_age_min *
		    MS_PER_MIN;
	memset(&m, 0, sizeof m);
	m.id = 1;
	m.type = "text";
	m.text = ex->message;
	m.at_ms = ex->now_ms;
	memset(&in, 0, sizeof in);
	in.conv.st = ex->st;
	in.conv.flag = TURN_FLAG_ON;
	in.conv.opted_out_at = ex->opted_out ? ex->now_ms - MS_PER_MIN : 0;
	in.conv.opt_out_confirmed = ex->opted_out;
	in.conv.cooling_off_until = ex->cooling_off ? ex->now_ms +
	    24 * 60 * MS_PER_MIN : 0;
	in.conv.objection_at = ex->objection != NULL ? ex->now_ms -
	    MS_PER_MIN : 0;
	in.conv.objection = ex->objection;
	in.conv.last_inbound_at = ex->now_ms - (ex->inactive_days > 0 ?
	    ex->inactive_days * 24 * 60 * MS_PER_MIN : MS_PER_MIN);
	in.msgs = &m;
	in.nmsgs = 1;
	in.now_ms = ex->now_ms;
	in.max_age_ms = INT64_MAX / 2;
	if (turn_decide(rs, &in, &ex->plan) == -1)
		return -1;
	mp = &ex->plan.msgs[0];
	ex->intent = mp->intent;
	/* The same verdict again, with the model's features named. */
	(void)intent_explain(rs->lex, ex->message, strlen(ex->message), NULL,
	    0, &ex->intent);
	ex->policy = mp->policy;
	ex->route = mp->route.r;
	ex->routed = mp->routed;
	st = ex->routed ? &ex->route.state : &ex->st;
	turn_constraints(rs, st, ex->policy.constraints, ex->constraints,
	    sizeof ex->constraints);
	return 0;
}

/* The plan as the worker commits it: the reply choice, the tools and
 * the claims guarded, and the mg_commit_turn payload it encodes. */
static json_object *
explain_plan(const struct ruleset *rs, const struct explain *ex)
{
	const struct turn_plan	*p = &ex->plan;
	const char		*why;
	struct commit		 c;
	json_object		*o = json_object_new_object(), *a;
	int			 i;

	json_object_object_add(o, "reply", json_object_new_string(
	    p->reply == REPLY_LLM ? "llm" : p->reply == REPLY_CANNED ?
	    "canned" : "none"));
	json_object_object_add(o, "canned", p->canned != NULL ?
	    json_object_new_string(p->canned) : NULL);
	json_object_object_add(o, "mark_read",
	    json_object_new_boolean(p->mark_read));
	a = json_object_new_array();
	for (i = 0; i < TOOL__COUNT; i++)
		if (p->tools_offered & (1u << i))
			json_object_array_add(a,
			    json_object_new_string(tool_name(i)));
	json_object_object_add(o, "tools_offered", a);
	a = json_object_new_array();
	for (i = 0; i < MODE__COUNT; i++)
		if (p->guard_modes & (1u << i))
			json_object_array_add(a,
			    json_object_new_string(mode_name(i)));
	json_object_object_add(o, "guard_modes", a);
	why = turn_tool_refusal(p, TOOL_CRIAR_HANDOFF_EXTERNO);
	json_object_object_add(o, "bridge",
	    json_object_new_string(why != NULL ? why : "allowed"));
	json_object_object_add(o, "llm_constraints", p->reply == REPLY_LLM ?
	    json_object_new_string(p->constraints) : NULL);
	if (commit_init(&c, ex->now_ms) == 0) {
		commit_plan(&c, p);
		if (p->reply == REPLY_CANNED)
			commit_reply(&c, messages_reply(rs->messages, p->canned),
			    p->canned, p->reply_to);
		json_object_object_add(o, "commit", json_object_get(c.o));
		commit_free(&c);
	}
	return o;
}

/* A JSON array of the gate's tools with (or without) the allowed bit. */
static json_object *
explain_tools(const struct ruleset *rs, enum mode m, bool allowed)
{
	json_object	*a = json_object_new_array();
	int		 t;

	for (t = 0; t < TOOL__COUNT; t++)
		if (gate_tool_allowed(rs->gate, m, (enum tool)t) == allowed)
			json_object_array_add(a,
			    json_object_new_string(tool_name(t)));
	return a;
}

/* The gate's claims (or behaviours) of mode m as a JSON array. */
static json_object *
explain_list(const struct ruleset *rs, enum mode m, bool claims)
{
	json_object	*a = json_object_new_array();
	size_t		 i, n;

	n = claims ? gate_claim_count(rs->gate, m) :
	    gate_behavior_count(rs->gate, m);
	for (i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_string(claims ?
		    gate_claim(rs->gate, m, i) : gate_behavior(rs->gate, m, i)));
	return a;
}

/* A mode name as a JSON string, or null for -1. */
static json_object *
json_mode(int m)
{
	return m >= 0 ? json_object_new_string(mode_name(m)) : NULL;
}

/* Print the result as one JSON object on one line. */
static void
explain_json(const struct ruleset *rs, const struct explain *ex)
{
	const struct mode_state	*st = ex->routed ? &ex->route.state : &ex->st;
	json_object		*o = json_object_new_object(), *p;
	char			 conf[16];

	snprintf(conf, sizeof conf, "%.2f", ex->intent.confidence);
	json_object_object_add(o, "intent",
	    json_object_new_string(intent_name(ex->intent.intent)));
	json_object_object_add(o, "confidence",
	    json_object_new_double_s(ex->intent.confidence, conf));
	json_object_object_add(o, "evidence",
	    json_object_new_string(ex->intent.evidence));
	json_object_object_add(o, "intent_source", json_object_new_string(
	    intent_source_name(ex->intent.source)));
	p = json_object_new_object();
	json_object_object_add(p, "intent",
	    json_object_new_string(intent_name(ex->intent.runner_up)));
	snprintf(conf, sizeof conf, "%.2f", ex->intent.runner_up_score);
	json_object_object_add(p, "score",
	    json_object_new_double_s(ex->intent.runner_up_score, conf));
	json_object_object_add(o, "runner_up", p);
	json_object_object_add(o, "rule_intent", json_object_new_string(
	    intent_name(ex->intent.rule_intent)));
	json_object_object_add(o, "model_intent", rs->intent_model != NULL ?
	    json_object_new_string(intent_name(ex->intent.model_intent)) :
	    NULL);
	p = json_object_new_object();
	json_object_object_add(p, "decision", json_object_new_string(
	    policy_decision_name(ex->policy.decision)));
	json_object_object_add(p, "rule",
	    json_object_new_string(ex->policy.rule));
	json_object_object_add(o, "policy", p);
	json_object_object_add(o, "proposal",
	    json_mode(ex->routed ? ex->route.proposal : -1));
	json_object_object_add(o, "decision", ex->routed ?
	    json_object_new_string(decision_name(ex->route.decision)) : NULL);
	json_object_object_add(o, "expired",
	    json_object_new_boolean(ex->routed && ex->route.expired));
	json_object_object_add(o, "reason", ex->routed ?
	    json_object_new_string(ex->route.reason) : NULL);
	json_object_object_add(o, "mode", json_mode((int)st->mode));
	json_object_object_add(o, "pending_transition", json_mode(st->pending));
	json_object_object_add(o, "tools_allowed",
	    explain_tools(rs, st->mode, true));
	json_object_object_add(o, "tools_removed",
	    explain_tools(rs, st->mode, false));
	json_object_object_add(o, "forbidden_claims",
	    explain_list(rs, st->mode, true));
	json_object_object_add(o, "required_behavior",
	    explain_list(rs, st->mode, false));
	json_object_object_add(o, "prompt_constraints",
	    json_object_new_string(ex->constraints));
	json_object_object_add(o, "plan", explain_plan(rs, ex));
	printf("%s\n", json_object_to_json_string_ext(o,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

/* Print a short human-readable trace. */
static void
explain_text(const struct ruleset *rs, const struct explain *ex)
{
	const struct mode_state	*st = ex->routed ? &ex->route.state : &ex->st;
	int			 t;

	printf("intent      %s (%.2f) by %s, runner-up %s (%.2f)\n",
	    intent_name(ex->intent.intent), ex->intent.confidence,
	    intent_source_name(ex->intent.source),
	    intent_name(ex->intent.runner_up), ex->intent.runner_up_score);
	printf("evidence    %s\n", ex->intent.evidence);
	printf("policy      %s by %s\n", policy_decision_name(
	    ex->policy.decision), ex->policy.rule);
	if (ex->routed)
		printf("router      %s%s -> mode %s, pending %s (%s)\n",
		    ex->route.expired ? "EXPIRED, then " : "",
		    decision_name(ex->route.decision), mode_name(st->mode),
		    st->pending >= 0 ? mode_name(st->pending) : "none",
		    ex->route.reason);
	else
		printf("router      not run (blocked by policy)\n");
	printf("tools      ");
	for (t = 0; t < TOOL__COUNT; t++)
		if (gate_tool_allowed(rs->gate, st->mode, (enum tool)t))
			printf(" %s", tool_name(t));
	printf("\nconstraints\n%s\n", ex->constraints);
}

int
cmd_explain(int argc, char **argv)
{
	struct explain	 ex;
	struct ruleset	 rs;
	struct diag	 d;
	const char	*dir;
	size_t		 i;

	memset(&ex, 0, sizeof ex);
	mode_state_init(&ex.st, 0);
	if (explain_args(argc, argv, &ex) == -1)
		return EX_USAGE_CODE;
	if ((dir = getenv("MODEGATE_RULES_DIR")) == NULL || *dir == '\0')
		dir = MG_RULES_DIR;
	diag_init(&d);
	if (ruleset_load(&rs, dir, &d) == -1) {
		for (i = 0; i < d.n; i++)
			fprintf(stderr, "%s\n", d.msg[i]);
		return EX_CONFIG_CODE;
	}
	if (explain_run(&rs, &ex) == -1) {
		ruleset_free(&rs);
		fprintf(stderr, "explain: out of memory\n");
		return 1;
	}
	if (ex.json)
		explain_json(&rs, &ex);
	else
		explain_text(&rs, &ex);
	turn_plan_free(&ex.plan);
	ruleset_free(&rs);
	return 0;
}
