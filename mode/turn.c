/*
 * turn.c -- a turn's whole decision (see turn.h): for each claimed message
 * its age, control, type, intent, policy and route; then the state
 * changes, the funnel events and the reply. The only place the
 * conversation rules are applied; the shell does the I/O.
 * Pure: no I/O.
 * SPDX-License-Identifier: MIT
 */
#include <stdlib.h>
#include <string.h>

#include "turn.h"

#define TURN_REGEN_MAX	2

static const char *const flag_names[] = { "off", "on", "shadow" };
static const char *const verdict_names[] = { "pass", "regenerate",
	"fallback" };

const char *
turn_flag_name(enum turn_flag f)
{
	return (unsigned)f < 3 ? flag_names[f] : "?";
}

const char *
turn_verdict_name(enum turn_verdict v)
{
	return (unsigned)v < 3 ? verdict_names[v] : "?";
}

const char *
turn_claim_text(const void *ctx, const char *id)
{
	const struct claims	*c = ctx;
	int			 i;

	if (c == NULL || (i = claims_find(c, id)) == -1)
		return NULL;
	return claims_prompt(c, i);
}

size_t
turn_constraints(const struct ruleset *rs, const struct mode_state *st,
    const char *policy_constraints, char *out, size_t outlen)
{
	return gate_constraints(rs->gate, st->mode, st->pending,
	    policy_constraints, turn_claim_text, rs->claims, out, outlen);
}

static void
turn_add_funnel(struct turn_plan *p, const char *status, const char *origem,
    int64_t id)
{
	if (p->nfunnel == TURN_FUNNEL_MAX)
		return;
	p->funnel[p->nfunnel].status = status;
	p->funnel[p->nfunnel].origem = origem;
	p->funnel[p->nfunnel].inbox_id = id;
	p->nfunnel++;
}

/* Record a routing outcome and, with the flag on, apply it: the state
 * moves, confirmed interest and reported outcomes reach the funnel. */
static void
turn_apply(struct turn_plan *p, struct turn_route *tr,
    const struct router_result *r, int intent, int64_t id)
{
	tr->before = p->st;
	tr->r = *r;
	tr->applied = p->flag == TURN_FLAG_ON;
	tr->inbox_id = id;
	if (!tr->applied)
		return;
	if (r->decision == TRANS_CONFIRM && r->state.mode == MODE_OFERTA)
		turn_add_funnel(p, "interesse_confirmado", "micro_confirmacao",
		    id);
	if (p->st.mode == MODE_FOLLOWUP && intent == INTENT_DESFECHO_FECHOU)
		turn_add_funnel(p, "fechado_com_responsavel",
		    "desfecho_relatado", id);
	if (p->st.mode == MODE_FOLLOWUP && intent == INTENT_DESFECHO_NAO_FECHOU)
		turn_add_funnel(p, "nao_fechou", "desfecho_relatado", id);
	if (r->state.mode != p->st.mode || r->state.pending != p->st.pending) {
		p->set.state = true;
		memcpy(p->set.reason, r->reason, sizeof p->set.reason);
	}
	p->st = r->state;
}

/* The policy's view of the conversation: as claimed, plus what this turn
 * already decided. */
static void
turn_policy_input(const struct turn_input *in, const struct turn_plan *p,
    int intent, struct policy_input *pin)
{
	memset(pin, 0, sizeof *pin);
	pin->intent = intent;
	pin->human_control = in->conv.human_control || p->set.control_by;
	pin->opted_out_at = in->conv.opted_out_at != 0 ?
	    in->conv.opted_out_at : p->set.opted_out ? in->now_ms : 0;
	pin->cooling_off_until = in->conv.cooling_off_until;
	pin->serious_objection_open = in->conv.serious_objection_at != 0 ||
	    p->set.serious_objection;
	pin->now_ms = in->now_ms;
}

/* A BLOCK's actions. */
static void
turn_block(const struct turn_input *in, struct turn_plan *p,
    const struct turn_msg_plan *mp)
{
	unsigned	a = mp->policy.actions;

	if ((a & (1u << POLICY_ACT_RECORD_OPT_OUT)) &&
	    in->conv.opted_out_at == 0)
		p->set.opted_out = true;
	if ((a & (1u << POLICY_ACT_SEND_CONFIRMATION_ONCE)) &&
	    !in->conv.opt_out_confirmed && !p->set.opt_out_confirmed &&
	    p->canned == NULL) {
		p->set.opt_out_confirmed = true;
		p->canned = "opt_out_confirmation";
		p->reply_to = mp->id;
	}
	if (a & (1u << POLICY_ACT_HANDOFF_HUMAN)) {
		p->set.control_by = "policy";
		p->set.serious_objection = true;
	}
}

/* Decide one message; returns true when it leaves the chat blocked,
 * false when it is answered, unchanged (*blocked) otherwise. */
static void
turn_message(const struct ruleset *rs, const struct turn_input *in,
    struct turn_plan *p, const struct turn_msg *m, struct turn_msg_plan *mp,
    bool *blocked, bool *answer, bool *ask_text)
{
	struct policy_input	pin;
	struct router_input	rin;
	struct policy_result	ctl;
	struct router_result	r;
	const char		*text;

	mp->id = m->id;
	mp->type = m->type;
	mp->action = messages_action(rs->messages, m->type);
	if (m->at_ms != 0 && in->now_ms - m->at_ms > in->max_age_ms) {
		mp->fate = FATE_TOO_OLD;
		return;
	}
	/* Control first: the policy's rules on the conversation alone. */
	turn_policy_input(in, p, -1, &pin);
	pin.opted_out_at = 0;
	pin.cooling_off_until = 0;
	pin.serious_objection_open = false;
	policy_eval(rs->policy, &pin, &ctl);
	if (ctl.decision == POLICY_BLOCK) {
		mp->fate = FATE_HUMAN;
		mp->policy = ctl;
		*blocked = true;
		return;
	}
	if (mp->action == MSG_IGNORE) {
		mp->fate = FATE_IGNORED;
		return;
	}
	text = m->text != NULL ? m->text : "";
	intent_detect(rs->lex, text, strlen(text), &mp->intent);
	turn_policy_input(in, p, (int)mp->intent.intent, &pin);
	policy_eval(rs->policy, &pin, &mp->policy);
	mp->decided = true;
	if (mp->policy.decision == POLICY_BLOCK) {
		mp->fate = FATE_BLOCKED;
		turn_block(in, p, mp);
		*blocked = true;
		return;
	}
	*blocked = false;
	p->reply_to = mp->id;
	if (mp->action == MSG_ASK_TEXT) {
		mp->fate = FATE_ASK_TEXT;
		*ask_text = true;
		return;
	}
	mp->fate = FATE_ANSWER;
	*answer = true;
	memcpy(p->policy_constraints, mp->policy.constraints,
	    sizeof p->policy_constraints);
	if (p->flag == TURN_FLAG_OFF)
		return;
	memset(&rin, 0, sizeof rin);
	rin.intent = (int)mp->intent.intent;
	rin.manual_target = -1;
	rin.last_message_at_ms = in->conv.last_inbound_at;
	rin.reserva_confirmada = in->conv.reserva_confirmada;
	rin.objecao_resolvida = in->conv.objecao_resolvida;
	rin.now_ms = in->now_ms;
	router_route(rs->matrix, &p->st, &rin, &r);
	mp->routed = true;
	turn_apply(p, &mp->route, &r, (int)mp->intent.intent, mp->id);
}

int
turn_decide(const struct ruleset *rs, const struct turn_input *in,
    struct turn_plan *p)
{
	bool	blocked = false, answer = false, ask_text = false;
	size_t	i;

	memset(p, 0, sizeof *p);
	if (in->nmsgs > 0 &&
	    (p->msgs = calloc(in->nmsgs, sizeof *p->msgs)) == NULL)
		return -1;
	p->nmsgs = in->nmsgs;
	p->flag = in->conv.flag;
	p->now_ms = in->now_ms;
	p->st = in->conv.st;
	for (i = 0; i < in->nmsgs; i++)
		turn_message(rs, in, p, &in->msgs[i], &p->msgs[i], &blocked,
		    &answer, &ask_text);

	p->mark_read = p->canned != NULL || (!blocked && (answer || ask_text));
	if (p->canned != NULL)
		p->reply = REPLY_CANNED;
	else if (!blocked && answer)
		p->reply = REPLY_LLM;
	else if (!blocked && ask_text) {
		p->reply = REPLY_CANNED;
		p->canned = "ask_text";
	}
	if (p->reply != REPLY_LLM)
		return 0;
	p->prompt_mode = p->st.mode;
	p->tools_allowed = gate_tools(rs->gate, p->st.mode);
	p->tools_offered = p->flag == TURN_FLAG_ON ? p->tools_allowed :
	    (1u << TOOL__COUNT) - 1;
	p->guard_modes = 1u << p->st.mode;
	if (p->flag == TURN_FLAG_ON)
		turn_constraints(rs, &p->st, p->policy_constraints,
		    p->constraints, sizeof p->constraints);
	else
		memcpy(p->constraints, p->policy_constraints,
		    sizeof p->policy_constraints);
	return 0;
}

void
turn_plan_free(struct turn_plan *p)
{
	free(p->msgs);
	p->msgs = NULL;
	p->nmsgs = 0;
}

bool
turn_in_transcript(const struct turn_msg_plan *mp)
{
	return mp->fate != FATE_TOO_OLD && mp->action != MSG_IGNORE;
}

const struct turn_route *
turn_event(const struct ruleset *rs, struct turn_plan *p,
    enum router_event ev)
{
	struct router_input	 rin;
	struct router_result	 r;
	struct turn_route	*tr;

	if (p->flag == TURN_FLAG_OFF ||
	    p->nevents == sizeof p->events / sizeof p->events[0])
		return NULL;
	memset(&rin, 0, sizeof rin);
	rin.intent = -1;
	rin.events = ROUTER_EV(ev);
	rin.manual_target = -1;
	rin.now_ms = p->now_ms;
	router_route(rs->matrix, &p->st, &rin, &r);
	tr = &p->events[p->nevents++];
	turn_apply(p, tr, &r, -1, 0);
	/* The reply was written under the prompt's mode: guard both. */
	p->guard_modes |= 1u << p->st.mode;
	return tr;
}

size_t
turn_claims_made(const struct ruleset *rs, unsigned modes,
    const char *reply, const char **ids, size_t max)
{
	int	which[GATE_LIST_MAX * MODE__COUNT], viol[TURN_VIOLATIONS_MAX];
	size_t	i, k, n = 0, nv;
	int	m, idx;

	for (m = 0; m < MODE__COUNT; m++) {
		if (!(modes & (1u << m)))
			continue;
		for (i = 0; i < gate_claim_count(rs->gate, (enum mode)m); i++) {
			idx = claims_find(rs->claims,
			    gate_claim(rs->gate, (enum mode)m, i));
			for (k = 0; k < n && which[k] != idx; k++)
				;
			if (idx >= 0 && k == n)
				which[n++] = idx;
		}
	}
	nv = guard_check(rs->claims, which, n, reply, strlen(reply), viol,
	    TURN_VIOLATIONS_MAX);
	for (i = 0; i < nv && i < max && i < TURN_VIOLATIONS_MAX; i++)
		ids[i] = claims_id(rs->claims, viol[i]);
	return nv;
}

void
turn_guard(const struct ruleset *rs, const struct turn_plan *p,
    const char *reply, int regen, struct turn_guard_result *g)
{
	memset(g, 0, sizeof *g);
	g->send = true;
	g->verdict = VERDICT_PASS;
	if (p->flag == TURN_FLAG_OFF)
		return;
	g->checked = true;
	g->enforced = p->flag == TURN_FLAG_ON;
	g->n = turn_claims_made(rs, p->guard_modes, reply, g->ids,
	    TURN_VIOLATIONS_MAX);
	if (g->n > TURN_VIOLATIONS_MAX)
		g->n = TURN_VIOLATIONS_MAX;
	if (g->n == 0)
		return;
	g->verdict = regen >= TURN_REGEN_MAX ? VERDICT_FALLBACK :
	    VERDICT_REGENERATE;
	g->send = !g->enforced;
}

const char *
turn_llm_failed(int regen, bool handoff_configured)
{
	if (regen > 0)
		return "guard_fallback";
	return handoff_configured ? NULL : "fallback";
}
