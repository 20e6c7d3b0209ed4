/*
 * router.c -- the transition matrix (loaded from mode/transitions.json) and
 * the validator that decides APPLY | PENDING | CONFIRM | CANCEL | REJECT |
 * NONE | EXPIRED for one turn.
 *
 * Order of a turn: an expired pending is cleared first (EXPIRED); then, in
 * this order, the first that applies decides: inactivity (an inbound after
 * inactivity_days), the turn's events (campaign, bridge_made,
 * outcome_reported), an operator's manual target, a live pending
 * (confirm, cancel or keep), and finally the matrix row for the intent.
 * Pure: no I/O.
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "router.h"

#define MATRIX_MAX	64
#define MS_PER_MIN	(60 * (int64_t)1000)
#define MS_PER_DAY	(24 * 60 * MS_PER_MIN)

struct matrix {
	struct transition	t[MATRIX_MAX];
	size_t			n;
	int64_t			pending_timeout_ms;
	int			inactivity_days;
	unsigned		confirm_intents;	/* 1u << intent */
	unsigned		cancel_intents;
};

#define MG_NAME_ITEM(e, s) s,
static const char *event_names[] = { EVENT_LIST(MG_NAME_ITEM) };
#undef MG_NAME_ITEM

const char *
event_name(int v)
{
	return v >= 0 && v < EVENT__COUNT ? event_names[v] : "?";
}

int
event_from_name(const char *name)
{
	int	i;

	for (i = 0; name != NULL && i < EVENT__COUNT; i++)
		if (strcmp(event_names[i], name) == 0)
			return i;
	return -1;
}

/* A whole number in [min, max] at key, or def when absent. */
static int64_t
load_int(const struct flat *f, const char *key, int64_t min, int64_t max,
    int64_t def, struct diag *d)
{
	const struct flat_ent	*e;
	char			*end;
	long long		 v;

	if ((e = flat_get(f, "%s", key)) == NULL)
		return def;
	v = e->type == 'n' ? strtoll(e->val, &end, 10) : 0;
	if (e->type != 'n' || *end != '\0' || v < min || v > max) {
		diag_add(d, f->file, key, "must be a whole number from %lld "
		    "to %lld", (long long)min, (long long)max);
		return def;
	}
	return v;
}

/* An array of intent names at key, as bits. */
static unsigned
load_intent_set(const struct flat *f, const char *key, struct diag *d)
{
	const char	*s;
	unsigned	 bits = 0;
	size_t		 i;
	int		 v;

	for (i = 0; (s = flat_str(f, "%s.%zu", key, i)) != NULL; i++) {
		if ((v = intent_from_name(s)) == -1)
			diag_add(d, f->file, "", "%s.%zu: unknown intent "
			    "\"%s\"", key, i, s);
		else
			bits |= 1u << v;
	}
	return bits;
}

/* Add one concrete transition, reporting a duplicate (from, trigger). */
static void
matrix_add(struct matrix *m, const struct transition *t, const char *file,
    size_t idx, struct diag *d)
{
	size_t	i;

	for (i = 0; i < m->n; i++)
		if (m->t[i].from == t->from &&
		    m->t[i].trigger_intent == t->trigger_intent &&
		    m->t[i].trigger_event == t->trigger_event &&
		    m->t[i].trigger_any == t->trigger_any) {
			diag_add(d, file, "", "transitions.%zu: duplicate of "
			    "an earlier transition out of %s on the same "
			    "trigger", idx, mode_name(t->from));
			return;
		}
	if (m->n == MATRIX_MAX) {
		diag_add(d, file, "", "transitions.%zu: more than %d "
		    "transitions", idx, MATRIX_MAX);
		return;
	}
	m->t[m->n++] = *t;
}

/* Parse the trigger of transition i into t; returns -1 when unknown. */
static int
load_trigger(const struct flat *f, size_t i, struct transition *t,
    struct diag *d)
{
	const char	*s = flat_str(f, "transitions.%zu.trigger", i);

	t->trigger_intent = intent_from_name(s);
	t->trigger_event = event_from_name(s);
	t->trigger_any = s != NULL && strcmp(s, "any") == 0;
	if (s == NULL)
		diag_add(d, f->file, "", "transitions.%zu.trigger: missing", i);
	else if (t->trigger_intent == -1 && t->trigger_event == -1 &&
	    !t->trigger_any)
		diag_add(d, f->file, "", "transitions.%zu.trigger: unknown "
		    "trigger \"%s\" (an intent, an event or any)", i, s);
	else
		return 0;
	return -1;
}

/* A mode name at transitions.i.key; "any" accepted when any_ok. Returns
 * the mode, MODE__COUNT for "any", or -1 after reporting. */
static int
load_mode(const struct flat *f, size_t i, const char *key, bool any_ok,
    struct diag *d)
{
	const char	*s = flat_str(f, "transitions.%zu.%s", i, key);
	int		 v;

	if (s == NULL) {
		diag_add(d, f->file, "", "transitions.%zu.%s: missing", i, key);
		return -1;
	}
	if (any_ok && strcmp(s, "any") == 0)
		return MODE__COUNT;
	if ((v = mode_from_name(s)) == -1)
		diag_add(d, f->file, "", "transitions.%zu.%s: unknown mode "
		    "\"%s\"", i, key, s);
	return v;
}

/* Load transition i (expanding from "any") into m. */
static void
load_transition(const struct flat *f, size_t i, struct matrix *m,
    struct diag *d)
{
	struct transition	 t;
	const char		*how;
	int			 from, to, bad, k;

	memset(&t, 0, sizeof t);
	from = load_mode(f, i, "from", true, d);
	to = load_mode(f, i, "to", false, d);
	bad = load_trigger(f, i, &t, d) == -1 || from == -1 || to == -1;
	how = flat_str(f, "transitions.%zu.how", i);
	if (how != NULL && strcmp(how, "auto") == 0)
		t.how = HOW_AUTO;
	else if (how != NULL && strcmp(how, "confirm") == 0)
		t.how = HOW_CONFIRM;
	else {
		diag_add(d, f->file, "", "transitions.%zu.how: %s \"%s\" "
		    "(auto | confirm)", i, how ? "unknown how" : "missing",
		    how ? how : "");
		bad = 1;
	}
	if (from == to && from >= 0) {
		diag_add(d, f->file, "", "transitions.%zu: transition from %s "
		    "to itself", i, mode_name(from));
		bad = 1;
	}
	if (bad)
		return;
	t.to = (enum mode)to;
	for (k = 0; k < MODE__COUNT; k++) {
		if (k == to || (from != MODE__COUNT && k != from))
			continue;
		t.from = (enum mode)k;
		matrix_add(m, &t, f->file, i, d);
	}
}

struct matrix *
matrix_load(const struct flat *f, struct diag *d)
{
	struct matrix	*m;
	size_t		 i, n;
	char		 names[1][FLAT_NAME_MAX];

	if ((m = calloc(1, sizeof *m)) == NULL) {
		diag_add(d, f->file, "", "out of memory");
		return NULL;
	}
	m->pending_timeout_ms = load_int(f, "pending_timeout_minutes", 1,
	    24 * 60, 30, d) * MS_PER_MIN;
	m->inactivity_days = (int)load_int(f, "inactivity_days", 1, 3650, 30,
	    d);
	m->confirm_intents = load_intent_set(f, "confirm_intents", d);
	m->cancel_intents = load_intent_set(f, "cancel_intents", d);
	if (m->confirm_intents & m->cancel_intents)
		diag_add(d, f->file, "cancel_intents", "an intent cannot both "
		    "confirm and cancel");
	if ((n = flat_children(f, "transitions", names, 1)) == 0)
		diag_add(d, f->file, "transitions", "missing or empty");
	for (i = 0; i < n; i++)
		load_transition(f, i, m, d);
	return m;
}

void
matrix_free(struct matrix *m)
{
	free(m);
}

size_t
matrix_count(const struct matrix *m)
{
	return m->n;
}

const struct transition *
matrix_at(const struct matrix *m, size_t i)
{
	return i < m->n ? &m->t[i] : NULL;
}

int64_t
matrix_pending_timeout_ms(const struct matrix *m)
{
	return m->pending_timeout_ms;
}

int
matrix_inactivity_days(const struct matrix *m)
{
	return m->inactivity_days;
}

const struct transition *
matrix_find_intent(const struct matrix *m, enum mode from, enum intent in)
{
	size_t	i;

	for (i = 0; i < m->n; i++)
		if (m->t[i].from == from && m->t[i].trigger_intent == (int)in)
			return &m->t[i];
	for (i = 0; i < m->n; i++)
		if (m->t[i].from == from && m->t[i].trigger_any)
			return &m->t[i];
	return NULL;
}

const struct transition *
matrix_find_event(const struct matrix *m, enum mode from, enum router_event ev)
{
	size_t	i;

	for (i = 0; i < m->n; i++)
		if (m->t[i].from == from && m->t[i].trigger_event == (int)ev)
			return &m->t[i];
	return NULL;
}

bool
matrix_confirms(const struct matrix *m, enum mode from, enum mode to)
{
	size_t	i;

	for (i = 0; i < m->n; i++)
		if (m->t[i].from == from && m->t[i].to == to &&
		    m->t[i].how == HOW_CONFIRM)
			return true;
	return false;
}

bool
matrix_allows(const struct matrix *m, enum mode from, enum mode to)
{
	size_t	i;

	for (i = 0; i < m->n; i++)
		if (m->t[i].from == from && m->t[i].to == to)
			return true;
	return false;
}

void
mode_state_init(struct mode_state *st, int64_t now_ms)
{
	memset(st, 0, sizeof *st);
	st->mode = MODE_DISCOVERY;
	st->pending = -1;
	st->updated_at_ms = now_ms;
	snprintf(st->reason, sizeof st->reason, "initial");
	snprintf(st->source, sizeof st->source, "inbound");
}

/* Set the decision and its reason; the state's reason follows when the
 * state changed. */
static void
decide(struct router_result *out, enum decision dec, bool changed,
    int64_t now_ms, const char *reason)
{
	out->decision = dec;
	snprintf(out->reason, sizeof out->reason, "%s", reason);
	if (changed) {
		snprintf(out->state.reason, sizeof out->state.reason, "%s",
		    reason);
		out->state.updated_at_ms = now_ms;
	}
}

/* Carry out transition t: APPLY (auto) or PENDING (confirm). */
static void
take(struct router_result *out, const struct transition *t,
    const char *source, int64_t now_ms, const char *reason)
{
	struct mode_state	*st = &out->state;

	out->proposal = (int)t->to;
	snprintf(st->source, sizeof st->source, "%s", source);
	if (t->how == HOW_CONFIRM) {
		st->pending = (int)t->to;
		st->pending_at_ms = now_ms;
		decide(out, TRANS_PENDING, true, now_ms, reason);
		return;
	}
	st->mode = t->to;
	st->pending = -1;
	st->pending_at_ms = 0;
	decide(out, TRANS_APPLY, true, now_ms, reason);
}

/* The reason code of a matrix transition taken on a trigger. */
static void
matrix_reason(char *buf, size_t len, const struct transition *t,
    const char *trigger)
{
	snprintf(buf, len, "matrix:%s->%s:%s:%s", mode_name(t->from),
	    mode_name(t->to), trigger, t->how == HOW_CONFIRM ? "confirm" :
	    "auto");
}

/* Events of the turn, in a fixed order; returns true when one decided. */
static bool
route_events(const struct matrix *m, const struct router_input *in,
    struct router_result *out)
{
	static const enum router_event	 order[] = { EVENT_CAMPAIGN,
	    EVENT_BRIDGE_MADE, EVENT_OUTCOME_REPORTED };
	const struct transition	*t;
	unsigned		 ev = in->events;
	char			 reason[ROUTER_REASON_MAX], src[ROUTER_SOURCE_MAX];
	size_t			 i;
	int			 unmatched = -1;

	if (in->reserva_confirmada)
		ev |= ROUTER_EV(EVENT_OUTCOME_REPORTED);
	for (i = 0; i < sizeof order / sizeof order[0]; i++) {
		if (!(ev & ROUTER_EV(order[i])))
			continue;
		if ((t = matrix_find_event(m, out->state.mode, order[i])) ==
		    NULL) {
			if (unmatched == -1)
				unmatched = (int)order[i];
			continue;
		}
		snprintf(src, sizeof src, "inbound");
		if (order[i] == EVENT_CAMPAIGN)
			snprintf(src, sizeof src, "campaign:%s",
			    in->campaign_id ? in->campaign_id : "?");
		snprintf(reason, sizeof reason, "event:%s",
		    event_name(order[i]));
		take(out, t, src, in->now_ms, reason);
		return true;
	}
	/* An event the matrix does not allow here is refused; with a
	 * message, the message is still routed. */
	if (unmatched != -1 && in->intent < 0) {
		snprintf(reason, sizeof reason, "reject:event:%s:from_%s",
		    event_name(unmatched), mode_name(out->state.mode));
		decide(out, TRANS_REJECT, false, in->now_ms, reason);
		return true;
	}
	return false;
}

/* An operator's manual target: allowed when the matrix has from -> to. */
static void
route_manual(const struct matrix *m, const struct router_input *in,
    struct router_result *out)
{
	struct mode_state	*st = &out->state;
	char			 reason[ROUTER_REASON_MAX];
	enum mode		 to = (enum mode)in->manual_target;

	snprintf(reason, sizeof reason, "manual:%s->%s", mode_name(st->mode),
	    mode_name(to));
	out->proposal = (int)to;
	if (to == st->mode) {
		decide(out, TRANS_NONE, false, in->now_ms, "manual:same_mode");
		return;
	}
	if (!matrix_allows(m, st->mode, to)) {
		snprintf(reason, sizeof reason, "reject:manual:%s->%s",
		    mode_name(st->mode), mode_name(to));
		decide(out, TRANS_REJECT, false, in->now_ms, reason);
		return;
	}
	st->mode = to;
	st->pending = -1;
	st->pending_at_ms = 0;
	snprintf(st->source, sizeof st->source, "manual");
	decide(out, TRANS_APPLY, true, in->now_ms, reason);
}

/* A message while a transition is pending: confirm, cancel or keep. */
static void
route_pending(const struct matrix *m, const struct router_input *in,
    struct router_result *out)
{
	struct mode_state	*st = &out->state;
	char			 reason[ROUTER_REASON_MAX];
	unsigned		 bit = 1u << in->intent;

	out->proposal = st->pending;
	if (m->confirm_intents & bit) {
		if (!matrix_confirms(m, st->mode, (enum mode)st->pending)) {
			st->pending = -1;
			st->pending_at_ms = 0;
			decide(out, TRANS_REJECT, true, in->now_ms,
			    "reject:pending_not_in_matrix");
			return;
		}
		if (in->intent == INTENT_NEUTRO)
			snprintf(reason, sizeof reason,
			    "pending:confirmed_by_neutral_answer");
		else
			snprintf(reason, sizeof reason,
			    "pending:confirmed_by_%s", intent_name(in->intent));
		st->mode = (enum mode)st->pending;
		st->pending = -1;
		st->pending_at_ms = 0;
		snprintf(st->source, sizeof st->source, "inbound");
		decide(out, TRANS_CONFIRM, true, in->now_ms, reason);
	} else if (m->cancel_intents & bit) {
		snprintf(reason, sizeof reason, "pending:cancelled_by_%s",
		    intent_name(in->intent));
		st->pending = -1;
		st->pending_at_ms = 0;
		decide(out, TRANS_CANCEL, true, in->now_ms, reason);
	} else
		decide(out, TRANS_NONE, false, in->now_ms, "pending:kept");
}

/* A message without a live pending: the matrix row for the intent. */
static void
route_intent(const struct matrix *m, const struct router_input *in,
    struct router_result *out)
{
	const struct transition	*t;
	char			 reason[ROUTER_REASON_MAX];

	t = matrix_find_intent(m, out->state.mode, (enum intent)in->intent);
	if (t == NULL) {
		decide(out, TRANS_NONE, false, in->now_ms, "no_transition");
		return;
	}
	if (t->to == MODE_OFERTA && in->objection_open) {
		/* An open objection is revisited before any offer. */
		snprintf(reason, sizeof reason, "matrix:%s->%s:%s:"
		    "revisit_objection", mode_name(t->from), mode_name(t->to),
		    t->trigger_any ? "any" : intent_name(in->intent));
		out->proposal = (int)t->to;
		out->state.pending = (int)t->to;
		out->state.pending_at_ms = in->now_ms;
		decide(out, TRANS_PENDING, true, in->now_ms, reason);
		return;
	}
	matrix_reason(reason, sizeof reason, t, t->trigger_any ? "any" :
	    intent_name(in->intent));
	take(out, t, "inbound", in->now_ms, reason);
}

/* Route a turn once any expired pending is gone. */
static void
route_fresh(const struct matrix *m, const struct router_input *in,
    struct router_result *out)
{
	const struct transition	*t;
	char			 reason[ROUTER_REASON_MAX];
	int64_t			 idle;

	idle = in->now_ms - in->last_message_at_ms;
	if (in->intent >= 0 && in->last_message_at_ms > 0 &&
	    idle >= m->inactivity_days * MS_PER_DAY &&
	    (t = matrix_find_event(m, out->state.mode, EVENT_INACTIVITY)) !=
	    NULL) {
		snprintf(reason, sizeof reason, "inactivity:%lldd",
		    (long long)(idle / MS_PER_DAY));
		take(out, t, "inbound", in->now_ms, reason);
		return;
	}
	if (route_events(m, in, out))
		return;
	if (in->manual_target >= 0 && in->manual_target < MODE__COUNT)
		route_manual(m, in, out);
	else if (in->intent < 0 || in->intent >= INTENT__COUNT)
		decide(out, TRANS_NONE, false, in->now_ms, "no_input");
	else if (out->state.pending >= 0)
		route_pending(m, in, out);
	else
		route_intent(m, in, out);
}

void
router_route(const struct matrix *m, const struct mode_state *st,
    const struct router_input *in, struct router_result *out)
{
	char	fresh[ROUTER_REASON_MAX];

	memset(out, 0, sizeof *out);
	out->state = *st;
	out->proposal = -1;
	if (st->pending >= 0 &&
	    in->now_ms - st->pending_at_ms >= m->pending_timeout_ms) {
		out->expired = true;
		out->state.pending = -1;
		out->state.pending_at_ms = 0;
		decide(out, TRANS_EXPIRED, true, in->now_ms, "pending:expired");
	}
	route_fresh(m, in, out);
	if (out->expired) {
		snprintf(fresh, sizeof fresh, "%s", out->reason);
		snprintf(out->reason, sizeof out->reason, "pending:expired;%.79s",
		    fresh);
	}
}
