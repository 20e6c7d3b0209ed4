/*
 * gen_turn_golden.c -- whole turns through turn_decide with the default
 * rules: for each case (the conversation's state, the flag, the claimed
 * messages, optionally a bridge made mid-turn and a reply to guard) print
 * the plan: per message its fate, intent, policy rule and route; the state
 * after; the columns set; the funnel; the reply choice with the tools
 * offered and the modes guarded. tests/cli/router_golden.sh diffs the
 * output against tests/cases/turn.golden. Regenerate after a deliberate
 * rule change with
 *	build/tests/gen_turn_golden > tests/cases/turn.golden
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>

#include "ruleset_flat.h"

#define T0	((int64_t)1800000000000)
#define MIN	((int64_t)60 * 1000)
#define DAY	(24 * 60 * MIN)

struct turn_case {
	const char	*name;
	const char	*mode;
	const char	*pending;	/* NULL: none */
	int64_t		 pending_age;
	enum turn_flag	 flag;
	unsigned	 conv;		/* C_* bits */
	int64_t		 inactive;	/* since the last inbound */
	const char	*msgs[4];	/* "type:text" or "text" */
	int64_t		 age[4];	/* of each message */
	bool		 bridge;	/* a bridge made mid-turn */
	const char	*reply;		/* guarded after the event */
};

#define C_HUMAN		1u
#define C_OPTED_OUT	2u
#define C_COOLING	4u
#define C_SERIOUS	8u
#define C_OBJECTION	16u	/* an objection open ("valor baixo") */
#define C_RESERVA	32u	/* booking confirmed earlier */

static const struct turn_case cases[] = {
	{ "greeting", "discovery", NULL, 0, TURN_FLAG_ON, 0, MIN,
	  { "Oi, bom dia!" }, { 0 }, false, NULL },
	{ "interest asks a micro-confirmation", "discovery", NULL, 0,
	  TURN_FLAG_ON, 0, MIN, { "Vc tem plantão de clínica médica na zona "
	  "sul de SP?" }, { 0 }, false, NULL },
	{ "the doctor confirms", "discovery", "oferta", 5 * MIN, TURN_FLAG_ON,
	  0, MIN, { "Sim, tenho CRM ativo em SP" }, { 0 }, false, NULL },
	{ "the pending expired", "discovery", "oferta", 31 * MIN,
	  TURN_FLAG_ON, 0, MIN, { "sim" }, { 0 }, false, NULL },
	{ "refusal cancels the pending", "discovery", "oferta", 5 * MIN,
	  TURN_FLAG_ON, 0, MIN, { "não, obrigado" }, { 0 }, false, NULL },
	{ "objection in oferta", "oferta", NULL, 0, TURN_FLAG_ON, 0, MIN,
	  { "achei o valor muito baixo" }, { 0 }, false, NULL },
	{ "bridge made, reply guarded for both modes", "oferta", NULL, 0,
	  TURN_FLAG_ON, 0, MIN, { "pode passar meu contato pro responsável" },
	  { 0 }, true, "Passei seu contato pro Dr. Paulo! O plantão paga R$ "
	  "1.500 e consigo negociar um valor maior pra você." },
	{ "outcome reported", "followup", NULL, 0, TURN_FLAG_ON, 0, MIN,
	  { "deu certo, fechei o plantão com ele!" }, { 0 }, false, NULL },
	{ "outcome: did not close", "followup", NULL, 0, TURN_FLAG_ON, 0, MIN,
	  { "não rolou, ele não respondeu" }, { 0 }, false, NULL },
	{ "back after a month", "oferta", NULL, 0, TURN_FLAG_ON, 0, 31 * DAY,
	  { "oi, sumi né" }, { 0 }, false, NULL },
	{ "opt-out, then more in the same turn", "oferta", NULL, 0,
	  TURN_FLAG_ON, 0, MIN, { "PARA DE ME MANDAR MENSAGEM", "sério" },
	  { 0, 0 }, false, NULL },
	{ "opted out: silence", "discovery", NULL, 0, TURN_FLAG_ON,
	  C_OPTED_OUT, MIN, { "tem vaga?" }, { 0 }, false, NULL },
	{ "serious objection hands off", "oferta", NULL, 0, TURN_FLAG_ON, 0,
	  MIN, { "vou denunciar vocês no CRM", "tem vaga amanhã?" }, { 0, 0 },
	  false, NULL },
	{ "a human has the chat", "oferta", NULL, 0, TURN_FLAG_ON, C_HUMAN,
	  MIN, { "alô?" }, { 0 }, false, NULL },
	{ "cooling-off", "oferta", NULL, 0, TURN_FLAG_ON, C_COOLING, MIN,
	  { "tem plantão?" }, { 0 }, false, NULL },
	{ "audio asks for text", "discovery", NULL, 0, TURN_FLAG_ON, 0, MIN,
	  { "audio:" }, { 0 }, false, NULL },
	{ "old message skipped, reaction ignored, text answered",
	  "discovery", NULL, 0, TURN_FLAG_ON, 0, MIN, { "oi", "reaction:",
	  "quero vagas" }, { 25 * 60 * MIN, 0, 0 }, false, NULL },
	{ "objection revisited before any offer", "discovery", NULL, 0,
	  TURN_FLAG_ON, C_OBJECTION, MIN, { "tá bom, me mostra as vagas" },
	  { 0 }, false, NULL },
	{ "the revisit confirmed: objection resolved, oferta", "discovery",
	  "oferta", 5 * MIN, TURN_FLAG_ON, C_OBJECTION, MIN,
	  { "sim, o valor agora tá ok" }, { 0 }, false, NULL },
	{ "opted out asks to come back", "discovery", NULL, 0, TURN_FLAG_ON,
	  C_OPTED_OUT, MIN, { "quero voltar a receber vagas" }, { 0 }, false,
	  NULL },
	{ "coming back without having left is interest", "discovery", NULL,
	  0, TURN_FLAG_ON, 0, MIN, { "pode me mandar vagas de novo" }, { 0 },
	  false, NULL },
	{ "a request for a human", "oferta", NULL, 0, TURN_FLAG_ON, 0, MIN,
	  { "quero falar com uma pessoa de verdade" }, { 0 }, false, NULL },
	{ "refusal in oferta cools off", "oferta", NULL, 0, TURN_FLAG_ON, 0,
	  MIN, { "não tenho interesse, obrigado" }, { 0 }, false, NULL },
	{ "a new offer cycle clears the booking", "discovery", "oferta",
	  5 * MIN, TURN_FLAG_ON, C_RESERVA, MIN, { "sim" }, { 0 }, false,
	  NULL },
	{ "no consent: the bridge is refused", "oferta", NULL, 0,
	  TURN_FLAG_ON, 0, MIN, { "achei caro esse" }, { 0 }, false, NULL },
	{ "flag off: no routing, every tool, no guard", "discovery", NULL, 0,
	  TURN_FLAG_OFF, 0, MIN, { "quero vagas" }, { 0 }, true,
	  "Seu plantão está confirmado!" },
	{ "shadow: routed, not applied, guard would regenerate", "discovery",
	  NULL, 0, TURN_FLAG_SHADOW, 0, MIN, { "quero vagas" }, { 0 }, false,
	  "Seu plantão está confirmado!" },
};

static void
print_mask(const char *label, unsigned m, int n, const char *(*name)(int))
{
	int	i, any = 0;

	printf("  %s", label);
	for (i = 0; i < n; i++)
		if (m & (1u << i)) {
			printf("%s%s", any ? "," : " ", name(i));
			any = 1;
		}
	printf("%s\n", any ? "" : " -");
}

static const char *const fates[] = { "too_old", "human", "ignored",
	"blocked", "ask_text", "answer" };

static void
print_route(const char *label, const struct turn_route *tr)
{
	printf("    %s %s%s -> %s/%s%s (%s)\n", label, tr->r.expired ?
	    "EXPIRED+" : "", decision_name(tr->r.decision),
	    mode_name(tr->r.state.mode), tr->r.state.pending >= 0 ?
	    mode_name(tr->r.state.pending) : "-", tr->applied ? "" :
	    " not applied", tr->r.reason);
}

static void
run(const struct ruleset *rs, const struct turn_case *c)
{
	struct turn_input		 in;
	struct turn_msg			 m[4];
	struct turn_plan		 p;
	struct turn_guard_result	 g;
	const struct turn_route		*tr;
	const char			*colon;
	size_t				 i, n;
	static char			 types[4][16];

	memset(&in, 0, sizeof in);
	mode_state_init(&in.conv.st, T0 - DAY);
	in.conv.st.mode = (enum mode)mode_from_name(c->mode);
	if (c->pending != NULL) {
		in.conv.st.pending = mode_from_name(c->pending);
		in.conv.st.pending_at_ms = T0 - c->pending_age;
	}
	in.conv.flag = c->flag;
	in.conv.human_control = c->conv & C_HUMAN;
	in.conv.opted_out_at = c->conv & C_OPTED_OUT ? T0 - DAY : 0;
	in.conv.opt_out_confirmed = c->conv & C_OPTED_OUT;
	in.conv.cooling_off_until = c->conv & C_COOLING ? T0 + DAY : 0;
	in.conv.serious_objection_at = c->conv & C_SERIOUS ? T0 - DAY : 0;
	in.conv.objection_at = c->conv & C_OBJECTION ? T0 - DAY : 0;
	in.conv.objection = c->conv & C_OBJECTION ? "valor baixo" : NULL;
	in.conv.reserva_confirmada = c->conv & C_RESERVA;
	in.conv.last_inbound_at = T0 - c->inactive;
	for (n = 0; n < 4 && c->msgs[n] != NULL; n++) {
		memset(&m[n], 0, sizeof m[n]);
		m[n].id = (int64_t)n + 1;
		colon = strchr(c->msgs[n], ':');
		if (colon != NULL && colon - c->msgs[n] < 12) {
			snprintf(types[n], sizeof types[n], "%.*s",
			    (int)(colon - c->msgs[n]), c->msgs[n]);
			m[n].type = types[n];
			m[n].text = NULL;
		} else {
			m[n].type = "text";
			m[n].text = c->msgs[n];
		}
		m[n].at_ms = T0 - c->age[n];
	}
	in.msgs = m;
	in.nmsgs = n;
	in.now_ms = T0;
	in.max_age_ms = DAY;
	if (turn_decide(rs, &in, &p) != 0) {
		printf("%s: out of memory\n", c->name);
		return;
	}
	printf("== %s\n  state %s/%s flag %s%s%s%s%s\n", c->name, c->mode,
	    c->pending ? c->pending : "-", turn_flag_name(c->flag),
	    c->conv & C_HUMAN ? " human" : "", c->conv & C_OPTED_OUT ?
	    " opted_out" : "", c->conv & C_COOLING ? " cooling_off" : "",
	    c->conv & C_SERIOUS ? " serious_objection" : "");
	for (i = 0; i < p.nmsgs; i++) {
		printf("  msg %zu %-8s %s", i + 1, fates[p.msgs[i].fate],
		    c->msgs[i]);
		if (p.msgs[i].decided)
			printf(" | %s %s by %s", intent_name(
			    p.msgs[i].intent.intent), policy_decision_name(
			    p.msgs[i].policy.decision), p.msgs[i].policy.rule);
		else if (p.msgs[i].fate == FATE_HUMAN)
			printf(" | by %s", p.msgs[i].policy.rule);
		printf("\n");
		if (p.msgs[i].routed)
			print_route("route", &p.msgs[i].route);
	}
	if (c->bridge && (tr = turn_event(rs, &p, EVENT_BRIDGE_MADE)) != NULL)
		print_route("event bridge_made", tr);
	printf("  after %s/%s%s%s\n", mode_name(p.st.mode), p.st.pending >= 0 ?
	    mode_name(p.st.pending) : "-", p.set.state ? " (moved)" : "",
	    p.set.shadow_state ? " (shadow's own state moved; the real "
	    "one did not)" : "");
	printf("  set%s%s%s%s%s%s%s%s%s%s\n", p.set.opted_out ?
	    " opted_out_at" : "", p.set.opt_out_confirmed ?
	    " opt_out_confirmed_at" : "", p.set.opted_in ?
	    " opted_in" : "", p.set.serious_objection ?
	    " serious_objection_at" : "", p.set.control_by ?
	    " control=human" : "", p.set.cooling_off_until ?
	    " cooling_off_until" : "", p.set.objection ?
	    " objection_opened" : "", p.set.objection_resolved ?
	    " objection_resolved" : "", p.set.reserva == 1 ?
	    " reserva_confirmada" : p.set.reserva == 0 ? " reserva_cleared" :
	    "", !p.set.opted_out && !p.set.opt_out_confirmed &&
	    !p.set.opted_in && !p.set.serious_objection && !p.set.control_by &&
	    !p.set.cooling_off_until && !p.set.objection &&
	    !p.set.objection_resolved && p.set.reserva < 0 ? " -" : "");
	if (p.set.cooling_off_until)
		printf("  cooling-off %lld days\n", (long long)
		    ((p.set.cooling_off_until - T0) / DAY));
	for (i = 0; i < p.nfunnel; i++)
		printf("  funnel %s (%s)\n", p.funnel[i].status,
		    p.funnel[i].origem);
	printf("  reply %s%s%s%s\n", p.reply == REPLY_LLM ? "llm" :
	    p.reply == REPLY_CANNED ? "canned " : "none",
	    p.canned ? p.canned : "", p.mark_read ? ", read" : "",
	    p.reply != REPLY_NONE ? "" : "");
	if (p.reply == REPLY_LLM) {
		print_mask("tools", p.tools_offered, TOOL__COUNT, tool_name);
		print_mask("guarded", p.guard_modes, MODE__COUNT, mode_name);
		printf("  bridge %s\n", turn_tool_refusal(&p,
		    TOOL_CRIAR_HANDOFF_EXTERNO) == NULL ? "allowed" :
		    "refused: no consent this turn");
		if (strstr(p.constraints, "O MÉDICO TINHA UMA OBJEÇÃO"))
			printf("  prompt revisits the objection: %s\n",
			    strstr(p.constraints, "valor baixo") ? "valor baixo" :
			    "?");
	}
	if (c->reply != NULL) {
		turn_guard(rs, &p, c->reply, 0, &g);
		printf("  guard %s%s", g.checked ? turn_verdict_name(g.verdict) :
		    "not checked", g.checked && !g.enforced ? " (not enforced)" :
		    "");
		for (i = 0; i < g.n; i++)
			printf("%s%s", i ? "," : " ", g.ids[i]);
		printf("\n");
	}
	turn_plan_free(&p);
}

int
main(int argc, char **argv)
{
	struct ruleset	rs;
	size_t		i;

	rules_flat_init(argv[0]);
	if (ruleset_flat_load(&rs) != 0) {
		fprintf(stderr, "gen_turn_golden: cannot load the rules\n");
		return 1;
	}
	printf("# whole turns: state + messages -> plan (default rules)\n");
	{
		char	today[128];

		turn_today(T0, today, sizeof today);
		printf("# the prompt's date at T0: %s\n", today);
	}
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
		run(&rs, &cases[i]);
	ruleset_flat_free(&rs);
	return 0;
}
