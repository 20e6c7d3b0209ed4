/*
 * commit.c -- the typed encoder of mg_commit_turn's payload (commit.h).
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "turn/commit.h"

#define COMMIT_REPLY_MAX	4096	/* WhatsApp's limit, characters */

#define MG_NAME_ITEM(e, s) s,
const char *const commit_key_names[COMMIT_KEY__COUNT] = {
	COMMIT_KEY_LIST(MG_NAME_ITEM)
};
const char *const commit_col_names[COMMIT_COL__COUNT] = {
	COMMIT_COL_LIST(MG_NAME_ITEM)
};
#undef MG_NAME_ITEM

void
commit_iso(int64_t ms, char *buf, size_t len)
{
	time_t		s = (time_t)(ms / 1000);
	struct tm	tm;

	gmtime_r(&s, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
	    tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

int
commit_init(struct commit *c, int64_t now_ms)
{
	c->now_ms = now_ms;
	c->packed = NULL;
	return (c->o = json_object_new_object()) == NULL ? -1 : 0;
}

void
commit_free(struct commit *c)
{
	json_object_put(c->o);
	c->o = NULL;
	free(c->packed);
	c->packed = NULL;
}

/* Add to payload p what o holds: its columns over p's, its rows after
 * p's (the order of keys and rows as if written into p). */
static void
commit_join(json_object *p, json_object *o)
{
	json_object_iter	 it, ci;
	json_object		*to;
	size_t			 i;

	json_object_object_foreachC(o, it) {
		if (!json_object_object_get_ex(p, it.key, &to)) {
			json_object_object_add(p, it.key,
			    json_object_get(it.val));
			continue;
		}
		if (json_object_is_type(it.val, json_type_object)) {
			json_object_object_foreachC(it.val, ci)
				json_object_object_add(to, ci.key,
				    json_object_get(ci.val));
			continue;
		}
		for (i = 0; i < json_object_array_length(it.val); i++)
			json_object_array_add(to, json_object_get(
			    json_object_array_get_idx(it.val, i)));
	}
}

/* The packed text and what was added since, as one tree again. */
static int
commit_unpack(struct commit *c)
{
	json_object	*p;

	if (c->packed == NULL)
		return 0;
	if ((p = json_tokener_parse(c->packed)) == NULL)
		return -1;
	if (c->o != NULL)
		commit_join(p, c->o);
	json_object_put(c->o);
	c->o = p;
	free(c->packed);
	c->packed = NULL;
	return 0;
}

const char *
commit_json(struct commit *c)
{
	if (commit_unpack(c) == -1)
		return NULL;
	return json_object_to_json_string_ext(c->o, JSON_C_TO_STRING_PLAIN);
}

/* The payload's object (after a pack: for what is added since), created
 * on first use. */
static json_object *
commit_root(struct commit *c)
{
	if (c->o == NULL)
		c->o = json_object_new_object();
	return c->o;
}

/* The array under a key, created on first use. */
static json_object *
commit_arr(struct commit *c, enum commit_key k)
{
	json_object	*a;

	if (!json_object_object_get_ex(commit_root(c), commit_key_names[k],
	    &a)) {
		a = json_object_new_array();
		json_object_object_add(c->o, commit_key_names[k], a);
	}
	return a;
}

void
commit_pack(struct commit *c)
{
	const char	*s;
	char		*packed;

	if ((s = commit_json(c)) == NULL || (packed = strdup(s)) == NULL)
		return;			/* stays a tree */
	json_object_put(c->o);
	c->o = NULL;
	c->packed = packed;
}

bool
commit_has_outbox(struct commit *c)
{
	json_object	*a;

	return commit_unpack(c) == 0 &&
	    json_object_object_get_ex(c->o, "outbox", &a) &&
	    json_object_array_length(a) > 0;
}

static json_object *
commit_str(const char *s)
{
	return s != NULL ? json_object_new_string(s) : NULL;
}

void
commit_audit(struct commit *c, const char *step, const char *decision,
    const char *reason, json_object *details, int64_t inbox_id)
{
	json_object	*a = json_object_new_object();

	json_object_object_add(a, "step", json_object_new_string(step));
	json_object_object_add(a, "decision", commit_str(decision));
	json_object_object_add(a, "reason", commit_str(reason));
	json_object_object_add(a, "details", details != NULL ? details :
	    json_object_new_object());
	json_object_object_add(a, "inbox_id", inbox_id > 0 ?
	    json_object_new_int64(inbox_id) : NULL);
	json_object_array_add(commit_arr(c, COMMIT_AUDIT), a);
}

/* Set a conversation column (v owned; NULL: SQL null). */
static void
commit_col(struct commit *c, enum commit_col col, json_object *v)
{
	json_object	*conv;
	const char	*k = commit_key_names[COMMIT_CONVERSATION];

	if (!json_object_object_get_ex(commit_root(c), k, &conv)) {
		conv = json_object_new_object();
		json_object_object_add(c->o, k, conv);
	}
	json_object_object_add(conv, commit_col_names[col], v);
}

void
commit_set(struct commit *c, enum commit_col col, const char *s)
{
	commit_col(c, col, commit_str(s));
}

void
commit_set_time(struct commit *c, enum commit_col col, int64_t ms)
{
	char	buf[40];

	commit_iso(ms, buf, sizeof buf);
	commit_col(c, col, json_object_new_string(buf));
}

void
commit_set_now(struct commit *c, enum commit_col col)
{
	commit_set_time(c, col, c->now_ms);
}

size_t
commit_reply(struct commit *c, const char *text, const char *kind,
    int64_t inbox_id)
{
	json_object	*o, *p, *b, *d;
	size_t		 i, chars = 0;
	char		*s;

	if (text == NULL || (s = strdup(text)) == NULL)
		return 0;
	for (i = 0; s[i] != '\0'; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80 &&
		    ++chars > COMMIT_REPLY_MAX) {
			s[i] = '\0';
			chars--;
			break;
		}
	b = json_object_new_object();
	json_object_object_add(b, "body", json_object_new_string(s));
	p = json_object_new_object();
	json_object_object_add(p, "type", json_object_new_string("text"));
	json_object_object_add(p, "text", b);
	o = json_object_new_object();
	json_object_object_add(o, "kind", json_object_new_string("text"));
	json_object_object_add(o, "payload", p);
	json_object_object_add(o, "inbox_id", inbox_id > 0 ?
	    json_object_new_int64(inbox_id) : NULL);
	json_object_array_add(commit_arr(c, COMMIT_OUTBOX), o);
	d = json_object_new_object();
	json_object_object_add(d, "chars", json_object_new_int64((int64_t)chars));
	commit_audit(c, "send-enqueue", "queued", kind, d, inbox_id);
	free(s);
	return chars;
}

static int
commit_key_find(const char *const *names, int n, const char *k)
{
	int	i;

	for (i = 0; i < n; i++)
		if (strcmp(names[i], k) == 0)
			return i;
	return -1;
}

int
commit_merge(struct commit *c, json_object *frag)
{
	json_object_iter	 it, ci;
	size_t			 i;
	int			 k;

	json_object_object_foreachC(frag, it) {
		k = commit_key_find(commit_key_names, COMMIT_KEY__COUNT, it.key);
		if (k < 0 || k == COMMIT_INBOX || k == COMMIT_OUTBOX)
			return -1;
		if (k == COMMIT_CONVERSATION) {
			if (!json_object_is_type(it.val, json_type_object))
				return -1;
			json_object_object_foreachC(it.val, ci)
				if (commit_key_find(commit_col_names,
				    COMMIT_COL__COUNT, ci.key) < 0)
					return -1;
		} else if (!json_object_is_type(it.val, json_type_array))
			return -1;
	}
	json_object_object_foreachC(frag, it) {
		k = commit_key_find(commit_key_names, COMMIT_KEY__COUNT, it.key);
		if (k == COMMIT_CONVERSATION) {
			json_object_object_foreachC(it.val, ci)
				commit_col(c, (enum commit_col)commit_key_find(
				    commit_col_names, COMMIT_COL__COUNT, ci.key),
				    json_object_get(ci.val));
			continue;
		}
		for (i = 0; i < json_object_array_length(it.val); i++)
			json_object_array_add(commit_arr(c, (enum commit_key)k),
			    json_object_get(json_object_array_get_idx(it.val,
			    i)));
	}
	return 0;
}

static void
commit_funnel(struct commit *c, const struct turn_funnel *f)
{
	json_object	*o = json_object_new_object(), *m;

	m = json_object_new_object();
	json_object_object_add(m, "origem", json_object_new_string(f->origem));
	json_object_object_add(o, "status", json_object_new_string(f->status));
	json_object_object_add(o, "metadata", m);
	json_object_array_add(commit_arr(c, COMMIT_FUNNEL), o);
}

/* A message's intent on an audit row: the intent, its confidence and
 * evidence, how it was decided (rules, model or both), the runner-up,
 * and what each judge said alone (the review loop lists disagreements). */
static void
commit_intent(json_object *d, const struct intent_result *in)
{
	char	conf[16], score[16];

	snprintf(conf, sizeof conf, "%.2f", in->confidence);
	json_object_object_add(d, "intent",
	    json_object_new_string(intent_name(in->intent)));
	json_object_object_add(d, "confidence",
	    json_object_new_double_s(in->confidence, conf));
	json_object_object_add(d, "evidence",
	    json_object_new_string(in->evidence));
	snprintf(score, sizeof score, "%.2f", in->runner_up_score);
	json_object_object_add(d, "source",
	    json_object_new_string(intent_source_name(in->source)));
	json_object_object_add(d, "runner_up",
	    json_object_new_string(intent_name(in->runner_up)));
	json_object_object_add(d, "runner_up_score",
	    json_object_new_double_s(in->runner_up_score, score));
	json_object_object_add(d, "rule_intent",
	    json_object_new_string(intent_name(in->rule_intent)));
	json_object_object_add(d, "model_intent",
	    json_object_new_string(intent_name(in->model_intent)));
}

static void
commit_policy(struct commit *c, const struct turn_msg_plan *mp)
{
	json_object	*d = json_object_new_object(), *acts;
	int		 a;

	commit_intent(d, &mp->intent);
	acts = json_object_new_array();
	for (a = 0; a < POLICY_ACT__COUNT; a++)
		if (mp->policy.actions & (1u << a))
			json_object_array_add(acts,
			    json_object_new_string(policy_action_name(a)));
	json_object_object_add(d, "actions", acts);
	commit_audit(c, "policy", policy_decision_name(mp->policy.decision),
	    mp->policy.rule, d, mp->id);
}

static void
commit_router(struct commit *c, const struct turn_route *tr,
    const struct intent_result *in, int64_t id)
{
	const struct router_result	*r = &tr->r;
	json_object			*d = json_object_new_object();

	if (in != NULL)
		commit_intent(d, in);

	json_object_object_add(d, "from",
	    json_object_new_string(mode_name(tr->before.mode)));
	json_object_object_add(d, "proposal", r->proposal >= 0 ?
	    json_object_new_string(mode_name(r->proposal)) : NULL);
	json_object_object_add(d, "mode",
	    json_object_new_string(mode_name(r->state.mode)));
	json_object_object_add(d, "pending", r->state.pending >= 0 ?
	    json_object_new_string(mode_name(r->state.pending)) : NULL);
	json_object_object_add(d, "expired", json_object_new_boolean(r->expired));
	json_object_object_add(d, "applied",
	    json_object_new_boolean(tr->applied));
	commit_audit(c, "router", decision_name(r->decision), r->reason, d, id);
}

/* The routing state, when it moved (shadow: its own columns). */
static void
commit_state(struct commit *c, const struct turn_plan *p)
{
	if (p->set.shadow_state) {
		commit_set(c, COL_SHADOW_MODE, mode_name(p->st.mode));
		commit_set(c, COL_SHADOW_PENDING, p->st.pending >= 0 ?
		    mode_name(p->st.pending) : NULL);
		if (p->st.pending >= 0)
			commit_set_time(c, COL_SHADOW_PENDING_AT,
			    p->st.pending_at_ms);
		else
			commit_set(c, COL_SHADOW_PENDING_AT, NULL);
	}
	if (!p->set.state)
		return;
	commit_set(c, COL_MODE, mode_name(p->st.mode));
	commit_set(c, COL_MODE_UPDATED_REASON, p->set.reason);
	commit_set(c, COL_MODE_SOURCE, "inbound");
	commit_set(c, COL_PENDING, p->st.pending >= 0 ?
	    mode_name(p->st.pending) : NULL);
	if (p->st.pending >= 0)
		commit_set_time(c, COL_PENDING_AT, p->st.pending_at_ms);
	else
		commit_set(c, COL_PENDING_AT, NULL);
}

static void
commit_message(struct commit *c, const struct turn_msg_plan *mp)
{
	json_object	*o;

	switch (mp->fate) {
	case FATE_TOO_OLD:
		o = json_object_new_object();
		json_object_object_add(o, "id", json_object_new_int64(mp->id));
		json_object_object_add(o, "state",
		    json_object_new_string("skipped"));
		json_object_object_add(o, "reason",
		    json_object_new_string("too_old"));
		json_object_array_add(commit_arr(c, COMMIT_INBOX), o);
		commit_audit(c, "age", "skipped", "older than "
		    "MODEGATE_MAX_AGE_HOURS", NULL, mp->id);
		return;
	case FATE_HUMAN:
		commit_audit(c, "control", "human", "store_only", NULL, mp->id);
		return;
	default:
		break;
	}
	if (mp->action != MSG_TEXT)
		commit_audit(c, "message", messages_action_name(mp->action),
		    mp->type, NULL, mp->id);
	if (mp->decided)
		commit_policy(c, mp);
	if (mp->routed)
		commit_router(c, &mp->route, &mp->intent, mp->id);
}

void
commit_plan(struct commit *c, const struct turn_plan *p)
{
	size_t	i;

	for (i = 0; i < p->nmsgs; i++)
		commit_message(c, &p->msgs[i]);
	for (i = 0; i < p->nfunnel; i++)
		commit_funnel(c, &p->funnel[i]);
	if (p->set.opted_out)
		commit_set_now(c, COL_OPTED_OUT_AT);
	if (p->set.opt_out_confirmed)
		commit_set_now(c, COL_OPT_OUT_CONFIRMED_AT);
	if (p->set.control_by != NULL) {
		commit_set(c, COL_CONTROL, "human");
		commit_set(c, COL_CONTROL_UPDATED_BY, p->set.control_by);
	}
	if (p->set.serious_objection)
		commit_set_now(c, COL_SERIOUS_OBJECTION_AT);
	if (p->set.opted_in) {
		commit_set(c, COL_OPTED_OUT_AT, NULL);
		commit_set(c, COL_OPT_OUT_CONFIRMED_AT, NULL);
	}
	if (p->set.cooling_off_until != 0) {
		commit_set_time(c, COL_COOLING_OFF_UNTIL,
		    p->set.cooling_off_until);
		commit_audit(c, "cooling_off", "started", "policy", NULL,
		    p->reply_to);
	}
	if (p->set.objection != NULL) {
		commit_set_now(c, COL_OBJECAO_AT);
		commit_set(c, COL_OBJECAO_MOTIVO, p->set.objection);
		commit_col(c, COL_OBJECAO_RESOLVIDA,
		    json_object_new_boolean(0));
		commit_audit(c, "objection", "opened", p->set.objection, NULL,
		    p->reply_to);
	} else if (p->set.objection_resolved) {
		commit_col(c, COL_OBJECAO_RESOLVIDA,
		    json_object_new_boolean(1));
		commit_audit(c, "objection", "resolved",
		    "confirmed after the revisit", NULL, p->reply_to);
	}
	if (p->set.reserva >= 0)
		commit_col(c, COL_RESERVA_CONFIRMADA,
		    json_object_new_boolean(p->set.reserva));
	commit_state(c, p);
}

void
commit_route(struct commit *c, const struct turn_plan *p,
    const struct turn_route *tr)
{
	commit_router(c, tr, NULL, p->reply_to);
	commit_state(c, p);
}
