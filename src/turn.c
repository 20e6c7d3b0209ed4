/*
 * turn.c -- one turn of the worker: the claimed messages in order
 * (age, type rule, control, policy, router), then one reply: a canned
 * text from mode/messages.json, or Julia's LLM reply with the mode's
 * tools (executed by the mg_tool_* functions) checked by the output
 * guard. Everything the turn decides is collected into the
 * mg_commit_turn payload (t->out) and committed by worker.c.
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "log.h"
#include "tools_schema.h"
#include "turn.h"

#define TURN_REPLY_MAX		4096	/* WhatsApp's limit, characters */
#define TURN_REGEN_MAX		2
#define MS_PER_HOUR		((int64_t)3600 * 1000)

/* A canned reply of mode/messages.json ("replies"), or NULL. */
const char *
turn_text(const struct worker *w, const char *key)
{
	json_object	*r, *v;

	if (!json_object_object_get_ex(w->texts, "replies", &r) ||
	    !json_object_object_get_ex(r, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* The type rule of mode/messages.json for a message type. */
static const char *
turn_type_action(const struct worker *w, const char *type)
{
	json_object	*r, *v;

	if (type != NULL && json_object_object_get_ex(w->texts, "types", &r) &&
	    json_object_object_get_ex(r, type, &v))
		return json_object_get_string(v);
	if (json_object_object_get_ex(w->texts, "default", &v))
		return json_object_get_string(v);
	return "ignore";
}

/* ms since the epoch as an ISO 8601 UTC string. */
void
turn_iso(int64_t ms, char *buf, size_t len)
{
	time_t		s = (time_t)(ms / 1000);
	struct tm	tm;

	gmtime_r(&s, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
	    tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

/* An ISO 8601 time as PostgreSQL's jsonb writes it, in ms; 0 when NULL
 * or unreadable. */
int64_t
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
	if (*p == '.') {
		frac = strtod(p, (char **)&p);
	}
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

/* A string member of o, or NULL. */
const char *
turn_jstr(json_object *o, const char *key)
{
	json_object	*v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* The array at t->out[key], created on first use. */
json_object *
turn_arr(struct turn *t, const char *key)
{
	json_object	*a;

	if (!json_object_object_get_ex(t->out, key, &a)) {
		a = json_object_new_array();
		json_object_object_add(t->out, key, a);
	}
	return a;
}

/* Append an audit row (details owned; NULL: {}). */
void
turn_audit(struct turn *t, const char *step, const char *decision,
    const char *reason, json_object *details, int64_t inbox_id)
{
	json_object	*a = json_object_new_object();

	json_object_object_add(a, "step", json_object_new_string(step));
	json_object_object_add(a, "decision", decision != NULL ?
	    json_object_new_string(decision) : NULL);
	json_object_object_add(a, "reason", reason != NULL ?
	    json_object_new_string(reason) : NULL);
	json_object_object_add(a, "details", details != NULL ? details :
	    json_object_new_object());
	json_object_object_add(a, "inbox_id", inbox_id > 0 ?
	    json_object_new_int64(inbox_id) : NULL);
	json_object_array_add(turn_arr(t, "audit"), a);
}

/* Set a conversation column in the payload (v owned; NULL clears). */
void
turn_conv_set(struct turn *t, const char *key, json_object *v)
{
	json_object	*c;

	if (!json_object_object_get_ex(t->out, "conversation", &c)) {
		c = json_object_new_object();
		json_object_object_add(t->out, "conversation", c);
	}
	json_object_object_add(c, key, v);
}

/* A conversation column set to now. */
static void
turn_conv_now(struct turn *t, const char *key)
{
	char	buf[40];

	turn_iso(t->now_ms, buf, sizeof buf);
	turn_conv_set(t, key, json_object_new_string(buf));
}

/* Mark an inbox row skipped with a reason. */
static void
turn_skip(struct turn *t, int64_t id, const char *reason)
{
	json_object	*o = json_object_new_object();

	json_object_object_add(o, "id", json_object_new_int64(id));
	json_object_object_add(o, "state", json_object_new_string("skipped"));
	json_object_object_add(o, "reason", json_object_new_string(reason));
	json_object_array_add(turn_arr(t, "inbox"), o);
}

/* A funnel row. */
void
turn_funnel(struct turn *t, const char *status, const char *why)
{
	json_object	*o = json_object_new_object(), *m;

	m = json_object_new_object();
	json_object_object_add(m, "origem", json_object_new_string(why));
	json_object_object_add(o, "status", json_object_new_string(status));
	json_object_object_add(o, "metadata", m);
	json_object_array_add(turn_arr(t, "funnel"), o);
}

/* The conversation's state of the context into t. */
static void
turn_load_state(struct turn *t)
{
	json_object	*c, *f, *v;
	int		 m;

	json_object_object_get_ex(t->ctx, "conversation", &c);
	mode_state_init(&t->st0, 0);
	if ((m = mode_from_name(turn_jstr(c, "mode"))) >= 0)
		t->st0.mode = (enum mode)m;
	if ((t->st0.pending = mode_from_name(turn_jstr(c, "pending"))) >= 0)
		t->st0.pending_at_ms = turn_parse_iso(turn_jstr(c, "pending_at"));
	t->st0.updated_at_ms = turn_parse_iso(turn_jstr(c, "mode_updated_at"));
	if (turn_jstr(c, "mode_source") != NULL)
		snprintf(t->st0.source, sizeof t->st0.source, "%s",
		    turn_jstr(c, "mode_source"));
	/* The router reads why the mode last changed (e.g. an objection). */
	if (turn_jstr(c, "mode_updated_reason") != NULL)
		snprintf(t->st0.reason, sizeof t->st0.reason, "%s",
		    turn_jstr(c, "mode_updated_reason"));
	t->st = t->st0;
	t->flag = FLAG_OFF;
	if (json_object_object_get_ex(t->ctx, "flag", &f) &&
	    json_object_object_get_ex(f, "effective", &v)) {
		if (strcmp(json_object_get_string(v), "on") == 0)
			t->flag = FLAG_ON;
		else if (strcmp(json_object_get_string(v), "shadow") == 0)
			t->flag = FLAG_SHADOW;
	}
}

/* The policy's view of the conversation, from the context and what
 * this turn already decided. */
static void
turn_policy_input(struct turn *t, struct pipeline_input *in)
{
	json_object	*c, *v, *set = NULL;

	json_object_object_get_ex(t->ctx, "conversation", &c);
	json_object_object_get_ex(t->out, "conversation", &set);
	in->human_control = strcmp(turn_jstr(c, "control") ?
	    turn_jstr(c, "control") : "ai", "human") == 0 ||
	    (set != NULL && turn_jstr(set, "control") != NULL &&
	    strcmp(turn_jstr(set, "control"), "human") == 0);
	in->opted_out_at = turn_parse_iso(turn_jstr(c, "opted_out_at"));
	if (in->opted_out_at == 0 && set != NULL &&
	    json_object_object_get_ex(set, "opted_out_at", NULL))
		in->opted_out_at = t->now_ms;
	in->cooling_off_until = turn_parse_iso(turn_jstr(c, "cooling_off_until"));
	in->serious_objection_open = turn_jstr(c, "serious_objection_at") != NULL ||
	    (set != NULL && json_object_object_get_ex(set,
	    "serious_objection_at", NULL));
	in->reserva_confirmada = json_object_object_get_ex(c,
	    "reserva_confirmada", &v) && json_object_get_boolean(v);
	in->objecao_resolvida = json_object_object_get_ex(c,
	    "objecao_resolvida", &v) && json_object_get_boolean(v);
	in->last_message_at_ms = turn_parse_iso(turn_jstr(c, "last_inbound_at"));
}

/* Audit the policy decision of one message. */
static void
turn_audit_policy(struct turn *t, const struct pipeline_result *r,
    int64_t id)
{
	json_object	*d = json_object_new_object(), *acts;
	char		 conf[16];
	int		 a;

	snprintf(conf, sizeof conf, "%.2f", r->intent.confidence);
	json_object_object_add(d, "intent",
	    json_object_new_string(intent_name(r->intent.intent)));
	json_object_object_add(d, "confidence",
	    json_object_new_double_s(r->intent.confidence, conf));
	json_object_object_add(d, "evidence",
	    json_object_new_string(r->intent.evidence));
	acts = json_object_new_array();
	for (a = 0; a < POLICY_ACT__COUNT; a++)
		if (r->policy.actions & (1u << a))
			json_object_array_add(acts,
			    json_object_new_string(policy_action_name(a)));
	json_object_object_add(d, "actions", acts);
	turn_audit(t, "policy", policy_decision_name(r->policy.decision),
	    r->policy.rule, d, id);
}

/* Audit a router decision; applied says whether the state moves. */
static void
turn_audit_route(struct turn *t, const struct router_result *r,
    const struct mode_state *before, int64_t id, bool applied)
{
	json_object	*d = json_object_new_object();

	json_object_object_add(d, "from", json_object_new_string(
	    mode_name(before->mode)));
	json_object_object_add(d, "proposal", r->proposal >= 0 ?
	    json_object_new_string(mode_name(r->proposal)) : NULL);
	json_object_object_add(d, "mode", json_object_new_string(
	    mode_name(r->state.mode)));
	json_object_object_add(d, "pending", r->state.pending >= 0 ?
	    json_object_new_string(mode_name(r->state.pending)) : NULL);
	json_object_object_add(d, "expired",
	    json_object_new_boolean(r->expired));
	json_object_object_add(d, "applied", json_object_new_boolean(applied));
	turn_audit(t, "router", decision_name(r->decision), r->reason, d, id);
	metrics_turn_decision((int)r->decision);
}

/* Apply (flag on) a routing outcome to the turn's state; funnel rows
 * for confirmed interest and reported outcomes. */
void
turn_apply_route(struct turn *t, const struct router_result *r,
    int intent, int64_t id)
{
	bool	applied = t->flag == FLAG_ON;

	turn_audit_route(t, r, &t->st, id, applied);
	if (!applied)
		return;
	if (r->decision == TRANS_CONFIRM && r->state.mode == MODE_OFERTA)
		turn_funnel(t, "interesse_confirmado", "micro_confirmacao");
	if (t->st.mode == MODE_FOLLOWUP && intent == INTENT_DESFECHO_FECHOU)
		turn_funnel(t, "fechado_com_responsavel", "desfecho_relatado");
	if (t->st.mode == MODE_FOLLOWUP &&
	    intent == INTENT_DESFECHO_NAO_FECHOU)
		turn_funnel(t, "nao_fechou", "desfecho_relatado");
	if (r->state.mode != t->st.mode || r->state.pending != t->st.pending) {
		t->state_changed = true;
		snprintf(t->route_reason, sizeof t->route_reason, "%s",
		    r->reason);
	}
	t->st = r->state;
}

/* A BLOCK: the policy's actions, audited; silence unless an opt-out
 * confirmation is due. */
static void
turn_blocked(struct turn *t, const struct pipeline_result *r, int64_t id)
{
	json_object	*c;
	unsigned	 a = r->policy.actions;

	json_object_object_get_ex(t->ctx, "conversation", &c);
	t->blocked = true;
	if ((a & (1u << POLICY_ACT_RECORD_OPT_OUT)) &&
	    turn_jstr(c, "opted_out_at") == NULL)
		turn_conv_now(t, "opted_out_at");
	if ((a & (1u << POLICY_ACT_SEND_CONFIRMATION_ONCE)) &&
	    turn_jstr(c, "opt_out_confirmed_at") == NULL && t->canned == NULL) {
		turn_conv_now(t, "opt_out_confirmed_at");
		t->canned = "opt_out_confirmation";
		t->last_id = id;
	}
	if (a & (1u << POLICY_ACT_HANDOFF_HUMAN)) {
		turn_conv_set(t, "control", json_object_new_string("human"));
		turn_conv_set(t, "control_updated_by",
		    json_object_new_string("policy"));
		turn_conv_now(t, "serious_objection_at");
	}
}

/* Is a claimed message young enough to be answered? */
static bool
turn_young(struct turn *t, json_object *m)
{
	int64_t	at = turn_parse_iso(turn_jstr(m, "wa_timestamp"));

	if (at == 0)
		at = turn_parse_iso(turn_jstr(m, "received_at"));
	return at == 0 ||
	    t->now_ms - at <= t->w->cfg->max_age_hours * MS_PER_HOUR;
}

/* Does a claimed message belong in the LLM's transcript? */
bool
turn_msg_usable(struct turn *t, json_object *m)
{
	const char	*act = turn_type_action(t->w, turn_jstr(m, "type"));

	return turn_young(t, m) && (strcmp(act, "text") == 0 ||
	    strcmp(act, "ask_text") == 0);
}

/* One claimed message, in order. */
static void
turn_message(struct turn *t, json_object *m)
{
	struct pipeline_input	in;
	struct pipeline_result	r;
	json_object		*v;
	const char		*type = turn_jstr(m, "type"), *text = turn_jstr(m, "text");
	const char		*act;
	int64_t			 id = 0;

	if (json_object_object_get_ex(m, "id", &v))
		id = json_object_get_int64(v);
	t->wamid = turn_jstr(m, "wamid");
	if (!turn_young(t, m)) {
		turn_skip(t, id, "too_old");
		turn_audit(t, "age", "skipped", "older than "
		    "MODEGATE_MAX_AGE_HOURS", NULL, id);
		return;
	}
	memset(&in, 0, sizeof in);
	turn_policy_input(t, &in);
	if (in.human_control) {
		turn_audit(t, "control", "human", "store_only", NULL, id);
		metrics_turn_policy_block("human_control");
		t->blocked = true;
		return;
	}
	act = turn_type_action(t->w, type);
	if (strcmp(act, "text") != 0)
		turn_audit(t, "message", act, type, NULL, id);
	if (strcmp(act, "text") != 0 && strcmp(act, "ask_text") != 0)
		return;
	in.text = text != NULL ? text : "";
	in.len = strlen(in.text);
	in.state = t->st;
	in.route = t->flag != FLAG_OFF && strcmp(act, "text") == 0;
	in.now_ms = t->now_ms;
	pipeline_decide(&t->w->rs, &in, &r);
	turn_audit_policy(t, &r, id);
	if (r.policy.decision == POLICY_BLOCK) {
		metrics_turn_policy_block(r.policy.rule);
		turn_blocked(t, &r, id);
		return;
	}
	t->blocked = false;
	t->last_id = id;
	if (strcmp(act, "ask_text") == 0) {
		t->ask_text = true;
		return;
	}
	t->answer = true;
	snprintf(t->policy_constraints, sizeof t->policy_constraints, "%s",
	    r.policy.constraints);
	if (r.routed)
		turn_apply_route(t, &r.route, (int)r.intent.intent, id);
}

/* Queue the reply text (truncated to WhatsApp's limit), audited. */
void
turn_reply(struct turn *t, const char *text, const char *kind)
{
	json_object	*o, *p, *b, *d;
	size_t		 i, chars = 0;
	char		*s = strdup(text);

	if (s == NULL)
		return;
	for (i = 0; s[i] != '\0'; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80 &&
		    ++chars > TURN_REPLY_MAX) {
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
	json_object_object_add(o, "inbox_id", t->last_id > 0 ?
	    json_object_new_int64(t->last_id) : NULL);
	json_object_array_add(turn_arr(t, "outbox"), o);
	d = json_object_new_object();
	json_object_object_add(d, "chars", json_object_new_int64((int64_t)chars));
	turn_audit(t, "send-enqueue", "queued", kind, d, t->last_id);
	t->outcome = kind;
	free(s);
}

/* The routing state into the payload (flag on, when it moved). */
void
turn_persist_state(struct turn *t)
{
	char	buf[40];

	if (!t->state_changed)
		return;
	turn_conv_set(t, "mode", json_object_new_string(mode_name(t->st.mode)));
	turn_conv_set(t, "mode_updated_reason",
	    json_object_new_string(t->route_reason));
	turn_conv_set(t, "mode_source", json_object_new_string("inbound"));
	turn_conv_set(t, "pending_transition", t->st.pending >= 0 ?
	    json_object_new_string(mode_name(t->st.pending)) : NULL);
	if (t->st.pending >= 0) {
		turn_iso(t->st.pending_at_ms, buf, sizeof buf);
		turn_conv_set(t, "pending_transition_at",
		    json_object_new_string(buf));
	} else
		turn_conv_set(t, "pending_transition_at", NULL);
}

/* Context loaded: decide each message, then reply or commit. */
void
turn_prepare(struct turn *t)
{
	json_object	*msgs;
	struct timespec	 ts;
	size_t		 i;

	clock_gettime(CLOCK_REALTIME, &ts);
	t->now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	t->mt_mark = metrics_turn_now();
	turn_load_state(t);
	if (json_object_object_get_ex(t->ctx, "messages", &msgs))
		for (i = 0; i < json_object_array_length(msgs); i++)
			turn_message(t, json_object_array_get_idx(msgs, i));
	turn_persist_state(t);
	metrics_turn_step(MT_PIPELINE, t->mt_mark);
	t->outcome = "silent";
	/* Every reply marks the message it answers as read. */
	if (t->canned != NULL || (!t->blocked && (t->answer || t->ask_text)))
		turn_enqueue_read(t);
	if (t->canned != NULL)
		turn_reply(t, turn_text(t->w, t->canned), t->canned);
	else if (!t->blocked && t->answer) {
		turn_llm_start(t);
		return;
	} else if (!t->blocked && t->ask_text)
		turn_reply(t, turn_text(t->w, "ask_text"), "ask_text");
	turn_commit(t);
}
