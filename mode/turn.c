/*
 * turn.c -- a turn's whole decision (see turn.h): for each claimed message
 * its age, control, type, intent, policy and route; then the state
 * changes, the funnel events and the reply. The only place the
 * conversation rules are applied; the shell does the I/O.
 * Pure: no I/O.
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
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

/* Is an objection open (as claimed, or as this turn left it)? */
static bool
turn_objection_open(const struct turn_plan *p)
{
	if (p->set.objection != NULL)
		return true;
	return p->was_objection && !p->set.objection_resolved;
}

/* Record a routing outcome and, with the flag on, apply it: the state
 * moves; confirmed interest and reported outcomes reach the funnel; an
 * objection that sends oferta back to discovery opens, the confirmation
 * of its revisit resolves it; a closed outcome marks the booking
 * confirmed, a new offer cycle clears it. mp: the message routed (NULL for
 * an event). */
static void
turn_apply(struct turn_plan *p, struct turn_route *tr, const struct router_result *r,
    const struct turn_msg_plan *mp)
{
	int	intent = mp != NULL ? (int)mp->intent.intent : -1;
	int64_t	id = mp != NULL ? mp->id : 0;

	tr->before = p->st;
	tr->r = *r;
	tr->applied = p->flag == TURN_FLAG_ON;
	tr->inbox_id = id;
	if (!tr->applied) {
		/* Shadow: the would-be state moves apart from the real one,
		 * so pendings and confirmations are measured too. */
		if (r->state.mode != p->st.mode ||
		    r->state.pending != p->st.pending)
			p->set.shadow_state = true;
		p->st = r->state;
		return;
	}
	if (r->decision == TRANS_PENDING && r->state.pending == MODE_OFERTA &&
	    intent == INTENT_INTERESSE_VAGA)
		turn_add_funnel(p, "interesse_confirmado", "interesse", id);
	if (r->decision == TRANS_CONFIRM && r->state.mode == MODE_OFERTA &&
	    turn_objection_open(p)) {
		p->set.objection_resolved = true;
		p->set.objection = NULL;
	}
	if (r->state.mode == MODE_OFERTA && p->st.mode != MODE_OFERTA &&
	    p->was_reserva)
		p->set.reserva = 0;		/* a new offer cycle */
	if (p->st.mode == MODE_FOLLOWUP && intent == INTENT_DESFECHO_FECHOU) {
		turn_add_funnel(p, "fechado_com_responsavel",
		    "desfecho_relatado", id);
		p->set.reserva = 1;
	}
	if (p->st.mode == MODE_FOLLOWUP && intent == INTENT_DESFECHO_NAO_FECHOU)
		turn_add_funnel(p, "nao_fechou", "desfecho_relatado", id);
	if (p->st.mode == MODE_OFERTA && r->state.mode == MODE_DISCOVERY &&
	    intent == INTENT_OBJECAO) {
		p->set.objection = mp->intent.evidence[0] != '\0' ?
		    mp->intent.evidence : "objeção";
		p->set.objection_resolved = false;
	}
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
	pin->mode = (int)(p->flag == TURN_FLAG_ON ? p->st.mode : p->real_mode);
	pin->human_control = in->conv.human_control || p->set.control_by;
	pin->opted_out_at = p->set.opted_in ? 0 : in->conv.opted_out_at != 0 ?
	    in->conv.opted_out_at : p->set.opted_out ? in->now_ms : 0;
	pin->cooling_off_until = p->set.cooling_off_until != 0 ?
	    p->set.cooling_off_until : in->conv.cooling_off_until;
	pin->serious_objection_open = in->conv.serious_objection_at != 0 ||
	    p->set.serious_objection;
	pin->now_ms = in->now_ms;
}

/* Did Julia's last message ask whether to pass the responsible person's
 * contact (a question naming the contact or the responsible person)? The
 * doctor's yes to that is the consent a bridge needs. */
static bool
turn_asked_to_connect(const char *julia)
{
	static const char *const words[] = { "contato", "responsável",
	    "responsavel", "coordenador", "coordenadora" };
	size_t	i;

	if (julia == NULL || strchr(julia, '?') == NULL)
		return false;
	for (i = 0; i < sizeof words / sizeof words[0]; i++)
		if (strstr(julia, words[i]) != NULL)
			return true;
	return false;
}

/* Offer a canned reply to message id unless one is already chosen. */
static void
turn_canned(struct turn_plan *p, const char *key, int64_t id)
{
	if (p->canned == NULL) {
		p->canned = key;
		p->reply_to = id;
	}
}

/* The policy's actions on a message (BLOCK or ALLOW). */
static void
turn_actions(const struct turn_input *in, struct turn_plan *p,
    const struct turn_msg_plan *mp)
{
	unsigned	a = mp->policy.actions;

	if ((a & (1u << POLICY_ACT_RECORD_OPT_OUT)) &&
	    (in->conv.opted_out_at == 0 || p->set.opted_in)) {
		p->set.opted_out = true;
		p->set.opted_in = false;
	}
	if ((a & (1u << POLICY_ACT_SEND_CONFIRMATION_ONCE)) &&
	    !in->conv.opt_out_confirmed && !p->set.opt_out_confirmed &&
	    p->canned == NULL) {
		p->set.opt_out_confirmed = true;
		turn_canned(p, "opt_out_confirmation", mp->id);
	}
	if (a & (1u << POLICY_ACT_CLEAR_OPT_OUT)) {
		p->set.opted_in = true;
		p->set.opted_out = p->set.opt_out_confirmed = false;
	}
	if (a & (1u << POLICY_ACT_SEND_OPT_IN_CONFIRMATION))
		turn_canned(p, "opt_in_confirmation", mp->id);
	if (a & (1u << POLICY_ACT_HANDOFF_HUMAN))
		p->set.control_by = "policy";
	if (a & (1u << POLICY_ACT_RECORD_SERIOUS_OBJECTION))
		p->set.serious_objection = true;
	if (a & (1u << POLICY_ACT_SEND_HANDOFF_MESSAGE))
		turn_canned(p, "handoff_confirmation", mp->id);
	if ((a & (1u << POLICY_ACT_START_COOLING_OFF)) &&
	    mp->policy.cooling_off_days > 0)
		p->set.cooling_off_until = in->now_ms +
		    (int64_t)mp->policy.cooling_off_days * 86400000;
}

/* Decide one message into mp. *blocked: the last message that counts left
 * the chat silent (a human, a policy block) or not (answered); *answer,
 * *ask_text: some message is answered by the LLM, or asked for text. */
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
	intent_detect_ctx(rs->lex, text, strlen(text), in->julia_before,
	    in->julia_before != NULL ? strlen(in->julia_before) : 0,
	    &mp->intent);
	turn_policy_input(in, p, (int)mp->intent.intent, &pin);
	/* Coming back only means something to a doctor who left: from
	 * anyone else it is interest. */
	if (mp->intent.intent == INTENT_OPT_IN && pin.opted_out_at == 0) {
		mp->intent.intent = INTENT_INTERESSE_VAGA;
		pin.intent = INTENT_INTERESSE_VAGA;
	}
	policy_eval(rs->policy, &pin, &mp->policy);
	mp->decided = true;
	turn_actions(in, p, mp);
	if (mp->policy.decision == POLICY_BLOCK) {
		mp->fate = FATE_BLOCKED;
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
	p->bridge_consent = (mp->intent.intent == INTENT_CONFIRMACAO ||
	    mp->intent.intent == INTENT_INTERESSE_VAGA) &&
	    turn_asked_to_connect(in->julia_before);
	p->policy_constraints = mp->policy.constraints;
	if (p->flag == TURN_FLAG_OFF)
		return;
	memset(&rin, 0, sizeof rin);
	rin.intent = (int)mp->intent.intent;
	rin.manual_target = -1;
	rin.last_message_at_ms = in->conv.last_inbound_at;
	rin.reserva_confirmada = in->conv.reserva_confirmada;
	rin.objection_open = turn_objection_open(p);
	rin.now_ms = in->now_ms;
	router_route(rs->matrix, &p->st, &rin, &r);
	mp->routed = true;
	turn_apply(p, &mp->route, &r, mp);
}

/* The LLM's constraints with the flag on: the gate's, and while an
 * objection is revisited, its micro-confirmation naming the objection
 * instead of the plain one. */
static void
turn_constraints_for(const struct ruleset *rs, const struct turn_plan *p,
    const char *objection, char *out, size_t outlen)
{
	char		 revisit[1024], mode[GATE_TEXT_MAX];
	const char	*parts[3], *tpl = gate_revisit_prompt(rs->gate), *at;
	size_t		 n = 0;

	if (p->st.pending != MODE_OFERTA || !turn_objection_open(p) ||
	    tpl == NULL) {
		turn_constraints(rs, &p->st, p->policy_constraints, out,
		    outlen);
		return;
	}
	if (p->set.objection != NULL)
		objection = p->set.objection;
	while ((at = strstr(tpl, "{objecao}")) != NULL && n < sizeof revisit) {
		n += (size_t)snprintf(revisit + n, sizeof revisit - n, "%.*s%s",
		    (int)(at - tpl), tpl, objection != NULL ? objection :
		    "a objeção dele");
		tpl = at + strlen("{objecao}");
	}
	if (n < sizeof revisit)
		snprintf(revisit + n, sizeof revisit - n, "%s", tpl);
	gate_mode_text(rs->gate, p->st.mode, turn_claim_text, rs->claims, mode,
	    sizeof mode);
	parts[0] = p->policy_constraints;
	parts[1] = mode;
	parts[2] = revisit;
	gate_join(parts, 3, out, outlen);
}

int
turn_decide(const struct ruleset *rs, const struct turn_input *in,
    struct turn_plan *p)
{
	char	text[GATE_TEXT_MAX];
	bool	blocked = false, answer = false, ask_text = false;
	size_t	i;

	memset(p, 0, sizeof *p);
	p->policy_constraints = "";
	if (in->nmsgs > 0 &&
	    (p->msgs = calloc(in->nmsgs, sizeof *p->msgs)) == NULL)
		return -1;
	p->nmsgs = in->nmsgs;
	p->flag = in->conv.flag;
	p->now_ms = in->now_ms;
	p->st = in->conv.flag == TURN_FLAG_SHADOW && in->conv.has_shadow ?
	    in->conv.shadow_st : in->conv.st;
	p->real_mode = in->conv.st.mode;
	p->set.reserva = -1;
	p->was_objection = in->conv.objection_at != 0;
	p->was_reserva = in->conv.reserva_confirmada;
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
	/* Kept at its length: a turn holds its plan while it waits seconds
	 * for the LLM, thousands of turns at once. */
	if (p->flag == TURN_FLAG_ON) {
		turn_constraints_for(rs, p, in->conv.objection, text,
		    sizeof text);
		p->constraints = strdup(text);
	} else
		p->constraints = strdup(p->policy_constraints);
	if (p->constraints == NULL) {
		turn_plan_free(p);
		return -1;
	}
	return 0;
}

void
turn_plan_free(struct turn_plan *p)
{
	free(p->msgs);
	free(p->constraints);
	free(p->event);
	p->event = NULL;
	p->msgs = NULL;
	p->nmsgs = 0;
	p->constraints = NULL;
	p->policy_constraints = "";
}

void
turn_plan_forget(struct turn_plan *p)
{
	/* An objection opened points into its message's evidence; what is
	 * read of it from now on is only that it was opened. */
	if (p->set.objection != NULL)
		p->set.objection = "objeção";
	free(p->msgs);
	p->msgs = NULL;
	p->nmsgs = 0;
	p->policy_constraints = "";
	free(p->constraints);
	p->constraints = NULL;
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

	if (p->flag == TURN_FLAG_OFF || p->nevents == TURN_EVENTS_MAX ||
	    (p->event == NULL &&
	    (p->event = calloc(1, sizeof *p->event)) == NULL))
		return NULL;
	memset(&rin, 0, sizeof rin);
	rin.intent = -1;
	rin.events = ROUTER_EV(ev);
	rin.manual_target = -1;
	rin.now_ms = p->now_ms;
	router_route(rs->matrix, &p->st, &rin, &r);
	tr = p->event;
	p->nevents++;
	turn_apply(p, tr, &r, NULL);
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
turn_tool_refusal(const struct turn_plan *p, enum tool t)
{
	if (t == TOOL_CRIAR_HANDOFF_EXTERNO && p->flag == TURN_FLAG_ON &&
	    !p->bridge_consent)
		return "pergunte ao médico se ele quer o contato do "
		    "responsável antes de passar: ele ainda não concordou "
		    "com isso na última mensagem";
	return NULL;
}

size_t
turn_today(int64_t now_ms, char *out, size_t outlen)
{
	static const char *const wd[] = { "quinta-feira", "sexta-feira",
	    "sábado", "domingo", "segunda-feira", "terça-feira",
	    "quarta-feira" };
	static const char *const mo[] = { "janeiro", "fevereiro", "março",
	    "abril", "maio", "junho", "julho", "agosto", "setembro",
	    "outubro", "novembro", "dezembro" };
	int64_t	s = now_ms / 1000 - 3 * 3600;	/* Brasília, UTC-3 */
	int64_t	days = s >= 0 ? s / 86400 : (s - 86399) / 86400;
	int64_t	sec = s - days * 86400, z, era, doe, yoe, y, doy, mp, d, m;

	/* days since 1970-01-01 to a civil date (H. Hinnant's algorithm) */
	z = days + 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	y = yoe + era * 400;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	d = doy - (153 * mp + 2) / 5 + 1;
	m = mp < 10 ? mp + 3 : mp - 9;
	y += m <= 2;
	return (size_t)snprintf(out, outlen, "Hoje é %s, %lld de %s de %lld, "
	    "%02lld:%02lld (horário de Brasília).",
	    wd[((days % 7) + 7) % 7], (long long)d, mo[m - 1], (long long)y,
	    (long long)(sec / 3600), (long long)(sec % 3600 / 60));
}

const char *
turn_llm_failed(int regen, bool handoff_configured)
{
	if (regen > 0)
		return "guard_fallback";
	return handoff_configured ? NULL : "fallback";
}
