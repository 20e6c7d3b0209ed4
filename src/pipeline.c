/*
 * pipeline.c -- the decision part of a turn for one message: intent,
 * policy, router, gate constraints; and the output guard for a mode.
 * No I/O.
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "pipeline.h"

/* The gate's combined constraints for a state. */
size_t
pipeline_constraints(const struct ruleset *rs, const struct mode_state *st,
    const char *policy_constraints, char *out, size_t outlen)
{
	return gate_constraints(rs->gate, st->mode, st->pending,
	    policy_constraints, ruleset_claim_text, rs->claims, out, outlen);
}

/* Intent, then policy; the router only when the policy allows and the
 * flag lets it run. */
void
pipeline_decide(const struct ruleset *rs, const struct pipeline_input *in,
    struct pipeline_result *out)
{
	struct policy_input	pin;
	struct router_input	rin;

	memset(out, 0, sizeof *out);
	intent_detect(rs->lex, in->text, in->len, &out->intent);
	memset(&pin, 0, sizeof pin);
	pin.intent = (int)out->intent.intent;
	pin.opted_out_at = in->opted_out_at;
	pin.cooling_off_until = in->cooling_off_until;
	pin.serious_objection_open = in->serious_objection_open;
	pin.human_control = in->human_control;
	pin.now_ms = in->now_ms;
	policy_eval(rs->policy, &pin, &out->policy);
	out->state = in->state;
	if (out->policy.decision == POLICY_ALLOW && in->route) {
		memset(&rin, 0, sizeof rin);
		rin.intent = (int)out->intent.intent;
		rin.manual_target = -1;
		rin.last_message_at_ms = in->last_message_at_ms;
		rin.reserva_confirmada = in->reserva_confirmada;
		rin.objecao_resolvida = in->objecao_resolvida;
		rin.now_ms = in->now_ms;
		router_route(rs->matrix, &in->state, &rin, &out->route);
		out->routed = true;
		out->state = out->route.state;
	}
	pipeline_constraints(rs, &out->state, out->policy.constraints,
	    out->constraints, sizeof out->constraints);
}

/* The claims of mode m that the reply makes. */
size_t
pipeline_guard(const struct ruleset *rs, enum mode m, const char *reply,
    const char **ids, size_t max)
{
	int	which[GATE_LIST_MAX], viol[PIPELINE_VIOLATIONS_MAX];
	size_t	i, n = 0, nv;
	int	idx;

	for (i = 0; i < gate_claim_count(rs->gate, m) && n < GATE_LIST_MAX;
	    i++)
		if ((idx = claims_find(rs->claims, gate_claim(rs->gate, m,
		    i))) >= 0)
			which[n++] = idx;
	nv = guard_check(rs->claims, which, n, reply, strlen(reply), viol,
	    PIPELINE_VIOLATIONS_MAX);
	for (i = 0; i < nv && i < max && i < PIPELINE_VIOLATIONS_MAX; i++)
		ids[i] = claims_id(rs->claims, viol[i]);
	return nv;
}
