/*
 * test_gate.c -- the capabilities gate with the default
 * mode/capabilities.json: tools per mode, claims, prompts verbatim, the
 * composed constraints, and loader plus cross-file diagnostics.
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "rules_flat.h"
#include "../../../mode/gate.h"

static struct gate	*gate;
static struct matrix	*mx;

/* The seed's prompts, verbatim. */
static const char discovery_oferta[] = "\n\n## ATENÇÃO: MICRO-CONFIRMAÇÃO NECESSÁRIA\nO médico mostrou interesse em vagas, mas ANTES de oferecer:\n1. Faça UMA pergunta de qualificação\n2. NÃO mencione vagas específicas ainda\n3. Aguarde a resposta antes de transicionar\n\nExemplos de micro-confirmação:\n- \"Que legal! Só pra eu entender melhor - vc já tem CRM ativo em SP?\"\n- \"Show! Vc tá procurando mais fixo ou avulso?\"\n- \"Boa! Qual região vc prefere?\"";
static const char followup_oferta[] = "\n\n## ATENÇÃO: MICRO-CONFIRMAÇÃO NECESSÁRIA\nO médico pode estar interessado em nova oportunidade. ANTES de oferecer:\n1. Pergunte se quer ver os detalhes\n2. NÃO apresente a vaga ainda\n\nExemplos:\n- \"Surgiu uma vaga interessante - quer que eu mande os detalhes?\"\n- \"Lembrei de vc pq abriu uma boa, quer ver?\"";

static int
setup(void **state)
{
	struct flat	f, t;
	struct diag	d;

	diag_init(&d);
	if (rules_flat_load("mode/capabilities.json", &f, &d) != 0)
		return -1;
	if (rules_flat_load("mode/transitions.json", &t, &d) != 0)
		return -1;
	gate = gate_load(&f, &d);
	mx = matrix_load(&t, &d);
	flat_free(&f);
	flat_free(&t);
	return gate == NULL || mx == NULL || d.n > 0 ? -1 : 0;
}

static int
teardown(void **state)
{
	gate_free(gate);
	matrix_free(mx);
	return 0;
}

#define BIT(t)	(1u << (t))

static void
test_tools_per_mode(void **state)
{
	assert_false(gate_tool_allowed(gate, MODE_DISCOVERY, TOOL_BUSCAR_VAGAS));
	assert_int_equal(gate_tools(gate, MODE_DISCOVERY),
	    BIT(TOOL_SALVAR_MEMORIA) | BIT(TOOL_ENCAMINHAR_HUMANO));
	assert_int_equal(gate_tools(gate, MODE_OFERTA), BIT(TOOL__COUNT) - 1);
	assert_int_equal(gate_tools(gate, MODE_FOLLOWUP),
	    BIT(TOOL_REGISTRAR_STATUS) | BIT(TOOL_SALVAR_MEMORIA) |
	    BIT(TOOL_ENCAMINHAR_HUMANO));
	assert_int_equal(gate_tools(gate, MODE_REATIVACAO),
	    BIT(TOOL_SALVAR_MEMORIA) | BIT(TOOL_ENCAMINHAR_HUMANO));
	assert_false(gate_tool_allowed(gate, MODE_FOLLOWUP,
	    TOOL_CRIAR_HANDOFF_EXTERNO));
}

static void
test_claims_and_behaviour(void **state)
{
	assert_int_equal(gate_claim_count(gate, MODE_OFERTA), 4);
	assert_string_equal(gate_claim(gate, MODE_OFERTA, 0), "dona_da_vaga");
	assert_string_equal(gate_claim(gate, MODE_REATIVACAO, 1), "culpa");
	/* Julia confirms no booking and negotiates no pay in any mode. */
	assert_string_equal(gate_claim(gate, MODE_DISCOVERY, 2),
	    "confirma_reserva");
	assert_string_equal(gate_claim(gate, MODE_REATIVACAO, 3),
	    "negocia_valor");
	assert_null(gate_claim(gate, MODE_REATIVACAO, 4));
	assert_true(gate_behavior_count(gate, MODE_DISCOVERY) > 0);
}

static void
test_prompts_verbatim(void **state)
{
	assert_string_equal(gate_confirm_prompt(gate, MODE_DISCOVERY,
	    MODE_OFERTA), discovery_oferta);
	assert_string_equal(gate_confirm_prompt(gate, MODE_FOLLOWUP,
	    MODE_OFERTA), followup_oferta);
	assert_null(gate_confirm_prompt(gate, MODE_OFERTA, MODE_FOLLOWUP));
}

/* A stand-in for the guard's claim table: prompt text for some ids. */
static const char *
fake_claim_text(const void *ctx, const char *id)
{
	if (strcmp(id, "vaga_especifica") == 0)
		return "Não cite vagas específicas.";
	if (strcmp(id, "promessa") == 0)
		return "Não prometa nada.";
	if (strcmp(id, "confirma_reserva") == 0)
		return "Não confirme reservas.";
	if (strcmp(id, "negocia_valor") == 0)
		return "Não negocie valores.";
	return NULL;
}

static void
test_join_skips_empty_parts(void **state)
{
	const char	*parts[] = { "a", "", NULL, "b" };
	char		 out[64];

	assert_int_equal(gate_join(parts, 4, out, sizeof out), 9);
	assert_string_equal(out, "a\n\n---\n\nb");
	assert_int_equal(gate_join(parts, 1, out, 4), 1);
	gate_join(parts, 4, out, 4);
	assert_string_equal(out, "a\n\n");	/* truncated, terminated */
}

static void
test_combined_constraints(void **state)
{
	char	out[GATE_TEXT_MAX], want[GATE_TEXT_MAX];

	gate_constraints(gate, MODE_DISCOVERY, MODE_OFERTA, "Política X.",
	    fake_claim_text, NULL, out, sizeof out);
	snprintf(want, sizeof want, "Política X.\n\n---\n\n"
	    "## MODO ATUAL: discovery\n\nVocê NÃO pode:\n"
	    "- Não cite vagas específicas.\n- Não prometa nada.\n"
	    "- Não confirme reservas.\n- Não negocie valores.\n\n"
	    "Você DEVE:\n- %s\n- %s\n\n---\n\n%s",
	    gate_behavior(gate, MODE_DISCOVERY, 0),
	    gate_behavior(gate, MODE_DISCOVERY, 1), discovery_oferta);
	assert_string_equal(out, want);
	/* No policy text, no pending: the mode's text alone. */
	gate_constraints(gate, MODE_OFERTA, -1, "", NULL, NULL, out,
	    sizeof out);
	assert_true(strncmp(out, "## MODO ATUAL: oferta\n\nVocê NÃO pode:\n"
	    "- dona_da_vaga\n", 51) == 0);
	assert_null(strstr(out, "---"));
}

static void
test_loader_and_cross_checks_all_at_once(void **state)
{
	static const char caps[] =
	    "modes.discovery.tools.0\tssalvar_memoria\n"
	    "modes.discovery.tools.1\tsbuscar_vaga\n"
	    "modes.discovery.forbidden_claims.0\tspromessa\n"
	    "modes.oferta.tools.0\tsbuscar_vagas\n"
	    "modes.oferta.forbidden_claims.0\tsinventada\n"
	    "modes.followup.tools\ta\n"
	    "modes.followup.micro_confirmation.oferta\tsConfirme.\n"
	    "modes.reativacao.tools\ta\n"
	    "modes.lazer.tools\ta\n";
	static const char trans[] =
	    "transitions.0.from\tsdiscovery\n"
	    "transitions.0.to\tsoferta\n"
	    "transitions.0.trigger\tsINTERESSE_VAGA\n"
	    "transitions.0.how\tsconfirm\n"
	    "transitions.1.from\tsofertas\n"
	    "transitions.1.to\tsfollowup\n"
	    "transitions.1.trigger\tsbridge_made\n"
	    "transitions.1.how\tsauto\n"
	    "transitions.2.from\tsfollowup\n"
	    "transitions.2.to\tsfollowup\n"
	    "transitions.2.trigger\tsNEUTRO\n"
	    "transitions.2.how\tsauto\n";
	static const char *want[] = {
	    "mode/capabilities.json: modes: unknown mode \"lazer\"",
	    "mode/capabilities.json: modes.discovery.tools.1: unknown tool "
	    "\"buscar_vaga\"",
	    "mode/transitions.json: transitions.1.from: unknown mode "
	    "\"ofertas\"",
	    "mode/transitions.json: transitions.2: transition from followup "
	    "to itself",
	    "mode/capabilities.json: modes.discovery.micro_confirmation.oferta: "
	    "missing (the transition discovery -> oferta needs confirmation)",
	    "mode/capabilities.json: modes.oferta.forbidden_claims.0: unknown "
	    "claim \"inventada\"",
	};
	struct flat	 fc, ft, good;
	struct diag	 d;
	struct gate	*g;
	struct matrix	*m;
	size_t		 i;

	/* The loaders report into one diag and keep what is valid, so the
	 * cross-file checks (as src/ruleset.c runs them) still find the
	 * missing discovery -> oferta prompt and the unknown claim. */
	diag_init(&d);
	rules_flat_str("mode/capabilities.json", caps, &fc, &d);
	rules_flat_str("mode/transitions.json", trans, &ft, &d);
	assert_non_null(g = gate_load(&fc, &d));
	assert_non_null(m = matrix_load(&ft, &d));
	gate_check_prompts(g, m, &d);
	gate_check_claims(g, fake_claim_text, NULL, &d);
	for (i = 0; i < d.n && i < 6; i++)
		assert_string_equal(d.msg[i], want[i]);
	assert_int_equal(d.n, 6);
	gate_free(g);
	matrix_free(m);

	/* A gate without the discovery -> oferta prompt, and an unknown
	 * claim id, against the default matrix. */
	rules_flat_str("mode/capabilities.json",
	    "modes.discovery.tools\ta\n"
	    "modes.discovery.forbidden_claims.0\tspromessa\n"
	    "modes.discovery.forbidden_claims.1\tsinventada\n"
	    "modes.oferta.tools\ta\nmodes.followup.tools\ta\n"
	    "modes.followup.micro_confirmation.oferta\tsConfirme.\n"
	    "modes.reativacao.tools\ta\n", &good, &d);
	diag_init(&d);
	assert_non_null(g = gate_load(&good, &d));
	gate_check_prompts(g, mx, &d);
	gate_check_claims(g, fake_claim_text, NULL, &d);
	assert_int_equal(d.n, 2);
	assert_string_equal(d.msg[0], "mode/capabilities.json: "
	    "modes.discovery.micro_confirmation.oferta: missing (the "
	    "transition discovery -> oferta needs confirmation)");
	assert_string_equal(d.msg[1], "mode/capabilities.json: "
	    "modes.discovery.forbidden_claims.1: unknown claim \"inventada\"");
	gate_free(g);
	flat_free(&fc);
	flat_free(&ft);
	flat_free(&good);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tools_per_mode),
		cmocka_unit_test(test_claims_and_behaviour),
		cmocka_unit_test(test_prompts_verbatim),
		cmocka_unit_test(test_join_skips_empty_parts),
		cmocka_unit_test(test_combined_constraints),
		cmocka_unit_test(test_loader_and_cross_checks_all_at_once),
	};

	rules_flat_init(argv[0]);
	return cmocka_run_group_tests(tests, setup, teardown);
}
