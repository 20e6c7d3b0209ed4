/*
 * turn.c -- one turn of the worker, the shell's side: decode the claim's
 * context into the core's input, let the core decide (turn_decide), count
 * and encode the plan into the commit, and carry out its reply choice (a
 * canned text, or Julia's LLM reply: answer.c). Nothing here decides.
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/config.h"
#include "base/log.h"
#include "turn/turn.h"

#define MS_PER_HOUR	((int64_t)3600 * 1000)

static bool
turn_jbool(json_object *o, const char *key)
{
	json_object	*v;

	return json_object_object_get_ex(o, key, &v) &&
	    json_object_get_boolean(v);
}

/* An ISO 8601 time as PostgreSQL's jsonb writes it, in ms; 0 when NULL
 * or unreadable. */
static int64_t
turn_parse_iso(const char *s)
{
	struct tm	tm;
	int		n = 0, oh = 0, om = 0;
	double		frac = 0;
	char		sign;
	const char	*p;

	if (s == NULL)
		return 0;
	memset(&tm, 0, sizeof tm);
	if (sscanf(s, "%d-%d-%dT%d:%d:%d%n", &tm.tm_year, &tm.tm_mon,
	    &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6)
		return 0;
	p = s + n;
	if (*p == '.')
		frac = strtod(p, (char **)&p);
	if ((*p == '+' || *p == '-') && sscanf(p, "%c%d:%d", &sign, &oh,
	    &om) >= 2) {
		if (sign == '-') {
			oh = -oh;
			om = -om;
		}
	}
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return ((int64_t)timegm(&tm) - oh * 3600 - om * 60) * 1000 +
	    (int64_t)(frac * 1000);
}

/* The claim's conversation into the core's view of it. */
static void
turn_decode_conv(json_object *ctx, struct turn_conv *cv)
{
	json_object	*c = NULL, *f, *v;
	const char	*s;
	int		 m;

	json_object_object_get_ex(ctx, "conversation", &c);
	memset(cv, 0, sizeof *cv);
	mode_state_init(&cv->st, 0);
	if ((m = mode_from_name(job_jstr(c, "mode"))) >= 0)
		cv->st.mode = (enum mode)m;
	if ((cv->st.pending = mode_from_name(job_jstr(c, "pending"))) >= 0)
		cv->st.pending_at_ms = turn_parse_iso(job_jstr(c,
		    "pending_at"));
	cv->st.updated_at_ms = turn_parse_iso(job_jstr(c, "mode_updated_at"));
	if ((s = job_jstr(c, "mode_source")) != NULL)
		snprintf(cv->st.source, sizeof cv->st.source, "%s", s);
	if ((s = job_jstr(c, "mode_updated_reason")) != NULL)
		snprintf(cv->st.reason, sizeof cv->st.reason, "%s", s);
	if ((m = mode_from_name(job_jstr(c, "shadow_mode"))) >= 0) {
		cv->has_shadow = true;
		mode_state_init(&cv->shadow_st, 0);
		cv->shadow_st.mode = (enum mode)m;
		if ((cv->shadow_st.pending = mode_from_name(job_jstr(c,
		    "shadow_pending"))) >= 0)
			cv->shadow_st.pending_at_ms = turn_parse_iso(job_jstr(c,
			    "shadow_pending_at"));
	}
	cv->flag = TURN_FLAG_OFF;
	if (json_object_object_get_ex(ctx, "flag", &f) &&
	    json_object_object_get_ex(f, "effective", &v)) {
		if (strcmp(json_object_get_string(v), "on") == 0)
			cv->flag = TURN_FLAG_ON;
		else if (strcmp(json_object_get_string(v), "shadow") == 0)
			cv->flag = TURN_FLAG_SHADOW;
	}
	s = job_jstr(c, "control");
	cv->human_control = s != NULL && strcmp(s, "human") == 0;
	cv->opted_out_at = turn_parse_iso(job_jstr(c, "opted_out_at"));
	cv->opt_out_confirmed = job_jstr(c, "opt_out_confirmed_at") != NULL;
	cv->cooling_off_until = turn_parse_iso(job_jstr(c,
	    "cooling_off_until"));
	cv->serious_objection_at = turn_parse_iso(job_jstr(c,
	    "serious_objection_at"));
	cv->reserva_confirmada = turn_jbool(c, "reserva_confirmada");
	if (!turn_jbool(c, "objecao_resolvida")) {
		cv->objection_at = turn_parse_iso(job_jstr(c, "objecao_at"));
		cv->objection = job_jstr(c, "objecao_motivo");
	}
	cv->last_inbound_at = turn_parse_iso(job_jstr(c, "last_inbound_at"));
}

/* The claimed messages into the core's input; -1 when out of memory. */
static int
turn_decode(struct turn *t, struct turn_input *in)
{
	json_object	*msgs, *m, *v;
	const char	*wamid = NULL;
	size_t		 i, n = 0;
	struct timespec	 ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	memset(in, 0, sizeof *in);
	in->now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	in->max_age_ms = t->w->cfg->max_age_hours * MS_PER_HOUR;
	turn_decode_conv(t->ctx, &in->conv);
	if (json_object_object_get_ex(t->ctx, "messages", &msgs))
		n = json_object_array_length(msgs);
	if (n > 0 && (t->in_msgs = calloc(n, sizeof *t->in_msgs)) == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		m = json_object_array_get_idx(msgs, i);
		if (json_object_object_get_ex(m, "id", &v))
			t->in_msgs[i].id = json_object_get_int64(v);
		t->in_msgs[i].type = job_jstr(m, "type");
		t->in_msgs[i].text = job_jstr(m, "text");
		if ((t->in_msgs[i].at_ms = turn_parse_iso(job_jstr(m,
		    "wa_timestamp"))) == 0)
			t->in_msgs[i].at_ms = turn_parse_iso(job_jstr(m,
			    "received_at"));
		wamid = job_jstr(m, "wamid");
	}
	if (wamid != NULL && (t->wamid = strdup(wamid)) == NULL)
		return -1;
	in->msgs = t->in_msgs;
	in->nmsgs = n;
	/* Julia's last message: a short answer is read against it. */
	if (json_object_object_get_ex(t->ctx, "history", &msgs))
		for (i = json_object_array_length(msgs); i-- > 0; ) {
			m = json_object_array_get_idx(msgs, i);
			if (job_jstr(m, "direction") != NULL &&
			    strcmp(job_jstr(m, "direction"), "out") == 0) {
				in->julia_before = job_jstr(m, "text");
				break;
			}
		}
	return 0;
}

/* What the plan counts in /metrics. */
static void
turn_count(const struct turn_plan *p)
{
	size_t	i;

	for (i = 0; i < p->nmsgs; i++) {
		if (p->msgs[i].fate == FATE_HUMAN ||
		    p->msgs[i].fate == FATE_BLOCKED)
			metrics_turn_policy_block(p->msgs[i].policy.rule);
		if (p->msgs[i].routed)
			metrics_turn_decision((int)p->msgs[i].route.r.decision);
	}
}

/* Context loaded: decide, then reply or commit. */
void
turn_run(struct turn *t)
{
	struct turn_input	in;

	t->mt_mark = metrics_turn_now();
	if (turn_decode(t, &in) == -1 ||
	    turn_decide(&t->w->rs, &in, &t->plan) == -1 ||
	    commit_init(&t->c, in.now_ms) == -1) {
		job_fail(t, "out of memory");
		return;
	}
	turn_count(&t->plan);
	commit_plan(&t->c, &t->plan);
	metrics_turn_step(MT_PIPELINE, t->mt_mark);
	t->outcome = "silent";
	/* Every reply marks the message it answers as read. */
	if (t->plan.mark_read)
		job_read(t);
	switch (t->plan.reply) {
	case REPLY_CANNED:
		job_reply(t, job_text(t, t->plan.canned), t->plan.canned);
		break;
	case REPLY_LLM:
		answer_start(t);
		return;
	case REPLY_NONE:
		break;
	}
	job_commit(t);
}
