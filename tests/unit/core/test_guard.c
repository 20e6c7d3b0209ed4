/*
 * test_guard.c -- the forbidden claims of mode/claims.json and the output
 * guard: what issue 3 names must be caught, Julia's legitimate replies
 * must pass, the loader reports every problem, the check is deterministic.
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "../../../mode/guard.h"
#include "rules_flat.h"

static struct claims	*cl;

static int
setup(void **state)
{
	struct flat	f;
	struct diag	d;
	size_t		i;

	diag_init(&d);
	if (rules_flat_load("mode/claims.json", &f, &d) != 0)
		return -1;
	cl = claims_load(&f, &d);
	flat_free(&f);
	for (i = 0; i < d.n; i++)
		fprintf(stderr, "%s\n", d.msg[i]);
	return cl == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	claims_free(cl);
	return 0;
}

/*
 * Check reply against the claims named in ids (comma-separated) and return
 * the violated ones, comma-separated ("" when none).
 */
static const char *
check(const char *ids, const char *reply)
{
	static char	out[256];
	char		buf[256], *id, *save;
	int		which[GUARD_MAX_CLAIMS], viol[GUARD_MAX_CLAIMS];
	size_t		n = 0, nv, i;

	snprintf(buf, sizeof buf, "%s", ids);
	for (id = strtok_r(buf, ",", &save); id != NULL;
	    id = strtok_r(NULL, ",", &save)) {
		which[n] = claims_find(cl, id);
		assert_int_not_equal(which[n], -1);
		n++;
	}
	nv = guard_check(cl, which, n, reply, strlen(reply), viol,
	    GUARD_MAX_CLAIMS);
	out[0] = '\0';
	for (i = 0; i < nv; i++) {
		if (i > 0)
			strcat(out, ",");
		strcat(out, claims_id(cl, viol[i]));
	}
	return out;
}

/* The claims of each mode as DESIGN.md section 2 lists them. */
#define OFERTA		"confirma_reserva,negocia_valor,dona_da_vaga"
#define DISCOVERY	"vaga_especifica,promessa"
#define FOLLOWUP	"pressao,confirma_pelo_hospital"
#define REATIVACAO	"vaga_especifica,culpa"

static void
test_table(void **state)
{
	int	i;

	assert_int_equal(claims_count(cl), 8);
	i = claims_find(cl, "negocia_valor");
	assert_true(i >= 0);
	assert_string_equal(claims_id(cl, i), "negocia_valor");
	assert_non_null(strstr(claims_prompt(cl, i), "valor"));
	assert_int_equal(claims_find(cl, "nao_existe"), -1);
	assert_null(claims_id(cl, -1));
	assert_null(claims_prompt(cl, (int)claims_count(cl)));
}

static void
test_booking_confirmation(void **state)
{
	assert_string_equal(check(OFERTA, "Seu plantão está confirmado! 🎉"),
	    "confirma_reserva");
	assert_string_equal(check(OFERTA, "ja reservei pra vc"),
	    "confirma_reserva");
	assert_string_equal(check(OFERTA, "pode contar que a vaga é sua"),
	    "confirma_reserva");
	/* Holding a shift is reserving it, whatever the verb. */
	assert_string_equal(check(OFERTA,
	    "fica tranquila que eu seguro o plantão até sexta"),
	    "confirma_reserva");
	assert_string_equal(check(OFERTA, "já bloqueei a data pra você"),
	    "confirma_reserva");
	assert_string_equal(check(OFERTA,
	    "não consigo confirmar, quem confirma é o responsável"), "");
}

static void
test_pay_negotiation_and_promise(void **state)
{
	assert_string_equal(check(OFERTA, "consigo aumentar pra 2 mil"),
	    "negocia_valor");
	assert_string_equal(check(OFERTA, "garanto R$ 1.500 pra vc"),
	    "negocia_valor");
	assert_string_equal(check(OFERTA, "o valor é negociável comigo"),
	    "negocia_valor");
	assert_string_equal(check(OFERTA, "o valor quem acerta é o responsável"),
	    "");
	assert_string_equal(check(OFERTA, "Não posso garantir valor, isso vc "
	    "combina direto com ele"), "");
	assert_string_equal(check(DISCOVERY, "Garanto que vc vai conseguir "
	    "plantão rapidinho!"), "promessa");
	assert_string_equal(check(DISCOVERY, "Não posso prometer nada, mas vou "
	    "ficar de olho"), "");
}

static void
test_owning_the_shift(void **state)
{
	assert_string_equal(check(OFERTA, "eu fecho a escala desse hospital"),
	    "dona_da_vaga");
	assert_string_equal(check(OFERTA, "a vaga é minha, posso passar pra vc"),
	    "dona_da_vaga");
	assert_string_equal(check(OFERTA, "nossa equipe contrata direto"),
	    "dona_da_vaga");
	assert_string_equal(check(OFERTA,
	    "temos um plantão nosso em Osasco no sábado"), "dona_da_vaga");
	assert_string_equal(check(OFERTA,
	    "não sou eu quem fecha a escala, mas te conecto"), "");
	/* The allowed clause does not excuse the next one. */
	assert_string_equal(check(OFERTA,
	    "não sou eu quem fecha a escala, mas a vaga é minha"),
	    "dona_da_vaga");
}

static void
test_specific_shifts_depend_on_mode(void **state)
{
	static const char r[] =
	    "Tem um plantão dia 12 no Hospital São Luiz por R$ 1.200, topa?";

	assert_string_equal(check(DISCOVERY, r), "vaga_especifica");
	assert_string_equal(check(REATIVACAO, "Abriu um plantão sábado 19h no "
	    "São Luiz, bora?"), "vaga_especifica");
	/* Offering is what oferta is for. */
	assert_string_equal(check(OFERTA, r), "");
	assert_string_equal(check(DISCOVERY, "Qual região de SP fica melhor "
	    "pra vc?"), "");
	assert_string_equal(check(DISCOVERY, "Vc prefere sábado ou domingo?"),
	    "");
}

static void
test_pressure_and_hospital(void **state)
{
	assert_string_equal(check(FOLLOWUP, "preciso que vc responda hoje"),
	    "pressao");
	assert_string_equal(check(FOLLOWUP, "se não fechar agora vai perder"),
	    "pressao");
	assert_string_equal(check(FOLLOWUP, "última chance, doutor!"),
	    "pressao");
	assert_string_equal(check(FOLLOWUP, "Sem pressa, me conta quando tiver "
	    "novidade"), "");
	assert_string_equal(check(FOLLOWUP, "o hospital já confirmou sua escala"),
	    "confirma_pelo_hospital");
	/* Asking is not asserting. */
	assert_string_equal(check(FOLLOWUP, "O hospital já te confirmou?"), "");
	assert_string_equal(check(FOLLOWUP,
	    "preciso que vc responda hoje, o hospital já confirmou"),
	    "pressao,confirma_pelo_hospital");
}

static void
test_guilt(void **state)
{
	assert_string_equal(check(REATIVACAO, "Oi Dra. Ana, vc sumiu! 😅"),
	    "culpa");
	assert_string_equal(check(REATIVACAO, "faz tempo que vc nao responde"),
	    "culpa");
	assert_string_equal(check(REATIVACAO, "fiquei esperando sua resposta..."),
	    "culpa");
	assert_string_equal(check(REATIVACAO, "Faz tempo que a gente não "
	    "conversa, como vc tá?"), "");
}

static void
test_which_and_order(void **state)
{
	int	which[3], viol[4];
	size_t	nv;
	const char *r = "a vaga é sua e consigo aumentar pra 2 mil";

	/* Only the listed claims count, reported in the order listed. */
	which[0] = claims_find(cl, "negocia_valor");
	which[1] = claims_find(cl, "confirma_reserva");
	which[2] = which[0];
	nv = guard_check(cl, which, 3, r, strlen(r), viol, 4);
	assert_int_equal(nv, 2);
	assert_int_equal(viol[0], which[0]);
	assert_int_equal(viol[1], which[1]);
	nv = guard_check(cl, which + 1, 1, r, strlen(r), viol, 4);
	assert_int_equal(nv, 1);
	/* More violations than room: the count is still exact. */
	nv = guard_check(cl, which, 2, r, strlen(r), viol, 1);
	assert_int_equal(nv, 2);
	assert_int_equal(viol[0], which[0]);
	/* Out-of-range indices are ignored; empty replies pass. */
	which[0] = 99;
	assert_int_equal(guard_check(cl, which, 1, r, strlen(r), viol, 4), 0);
	assert_int_equal(guard_check(cl, which + 1, 1, "", 0, viol, 4), 0);
}

static void
test_deterministic(void **state)
{
	static const char *const r[] = {
		"Seu plantão está confirmado!", "o valor quem acerta é o "
		"responsável", "sumiu hein doutor kkk", "ok 👍", "",
	};
	char	first[5][256];
	size_t	i;

	for (i = 0; i < 5; i++)
		snprintf(first[i], sizeof first[i], "%s", check(OFERTA ","
		    FOLLOWUP "," REATIVACAO, r[i]));
	for (i = 0; i < 5; i++)
		assert_string_equal(check(OFERTA "," FOLLOWUP "," REATIVACAO,
		    r[i]), first[i]);
}

/* Load a hand-written claims file; return the diagnostics, one a line. */
static const char *
load_errors(const char *text)
{
	static char	 out[DIAG_MAX * DIAG_LEN];
	struct flat	 f;
	struct diag	 d;
	struct claims	*c;
	size_t		 i;

	diag_init(&d);
	rules_flat_str("mode/claims.json", text, &f, &d);
	c = claims_load(&f, &d);
	flat_free(&f);
	out[0] = '\0';
	for (i = 0; i < d.n; i++) {
		strcat(out, d.msg[i]);
		strcat(out, "\n");
	}
	if (c != NULL)
		assert_int_equal(d.n, 0);
	else
		assert_true(d.n > 0);
	claims_free(c);
	return out;
}

static void
test_validation_all_at_once(void **state)
{
	assert_string_equal(load_errors(
	    "claims.0.id\tsa\n"
	    "claims.0.prompt\tsNão faça isso.\n"
	    "claims.0.patterns.0\tsfoo\n"
	    "claims.0.patterns.1\ts.. foo\n"
	    "claims.1.id\tsa\n"
	    "claims.1.prompt\ts  \n"
	    "claims.1.patterns\ta\n"
	    "claims.2.id\tsB-x\n"
	    "claims.2.prompt\tsx\n"
	    "claims.2.patterns.0\tsok\n"
	    "claims.2.allow.0\tsa||b\n"
	    "claims.2.modes.0\tsoferta\n"
	    "claims.2.skip_questions\tsyes\n"
	    "extra\tn1\n"),
	    "mode/claims.json: extra: unknown key (expected claims)\n"
	    "mode/claims.json: claims.0.patterns.1: \"..\" at the start or "
	    "end in \".. foo\"\n"
	    "mode/claims.json: claims.1.id: duplicate id \"a\" (also claims.0)\n"
	    "mode/claims.json: claims.1.prompt: missing or empty\n"
	    "mode/claims.json: claims.1.patterns: no patterns\n"
	    "mode/claims.json: claims.2.modes: unknown key (expected id, "
	    "prompt, patterns, allow, skip_questions)\n"
	    "mode/claims.json: claims.2.id: \"B-x\" is not [a-z0-9_]\n"
	    "mode/claims.json: claims.2.allow.0: empty alternative in "
	    "\"a||b\"\n"
	    "mode/claims.json: claims.2.skip_questions: not true or false\n");
	assert_string_equal(load_errors("other\tsx\n"),
	    "mode/claims.json: other: unknown key (expected claims)\n"
	    "mode/claims.json: claims: missing or empty list\n");
	assert_string_equal(load_errors(
	    "claims.0.id\tsok\nclaims.0.prompt\tsx\nclaims.0.patterns\tsfoo\n"),
	    "mode/claims.json: claims.0.patterns: not a list of patterns\n");
	assert_string_equal(load_errors(
	    "claims.0.id\tsok\nclaims.0.prompt\tsx\n"
	    "claims.0.patterns.0\tsfoo\nclaims.0.allow\ta\n"), "");
}

/* The shipped learned guard (run from the repository root). */
static struct model *
guard_model_load(void)
{
	static char	 buf[MODEL_MAX_BYTES];
	const char	*labels[MODEL_MAX_LABELS];
	struct diag	 d;
	FILE		*fp;
	size_t		 n, i;

	if ((fp = fopen("mode/guard.model", "r")) == NULL)
		return NULL;
	n = fread(buf, 1, sizeof buf, fp);
	fclose(fp);
	labels[0] = "OK";
	for (i = 0; i < claims_count(cl); i++)
		labels[i + 1] = claims_id(cl, (int)i);
	diag_init(&d);
	return model_load(buf, n, "mode/guard.model", "guard", labels,
	    claims_count(cl) + 1, &d);
}

static void
test_with_the_model(void **state)
{
	struct model	*m = guard_model_load();
	char		 many[8192];
	size_t		 i;

	(void)state;
	assert_non_null(m);
	claims_set_model(cl, m);
	/* An honest deflection passes; a paraphrased booking does not. */
	assert_string_equal(check("confirma_reserva,negocia_valor",
	    "Valor eu não negocio, quem acerta é o coordenador."), "");
	assert_string_equal(check("confirma_reserva,promessa",
	    "Pode ficar tranquila, já coloquei você na escala de sábado."),
	    "confirma_reserva");
	/* An amount offered that no train reply wrote is still a
	 * negotiation (numbers are also a class: "te ofereco 0"); a
	 * question about the doctor's days names no shift, and a refusal
	 * to guarantee is no promise. */
	assert_string_equal(check("confirma_reserva,negocia_valor,"
	    "dona_da_vaga", "Se topar, te ofereço 2.150 no lugar dos 1.900."),
	    "negocia_valor");
	assert_string_equal(check("vaga_especifica,promessa,"
	    "confirma_reserva,negocia_valor",
	    "Você prefere plantão de segunda a sexta ou fim de semana?"), "");
	assert_string_equal(check("confirma_reserva,negocia_valor,promessa",
	    "Não consigo garantir valor, isso é com o responsável pela vaga."),
	    "");
	/* A friendly sentence said 150 times is no promise (a linear
	 * model's sums grow with repeats: they are judged once). */
	strcpy(many, "Oi! ");
	for (i = 0; i < 150; i++)
		strcat(many, "Que bom falar com você. ");
	assert_string_equal(check("vaga_especifica,promessa,"
	    "confirma_reserva,negocia_valor", many), "");
	claims_set_model(cl, NULL);
	model_free(m);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_booking_confirmation),
		cmocka_unit_test(test_pay_negotiation_and_promise),
		cmocka_unit_test(test_owning_the_shift),
		cmocka_unit_test(test_specific_shifts_depend_on_mode),
		cmocka_unit_test(test_pressure_and_hospital),
		cmocka_unit_test(test_guilt),
		cmocka_unit_test(test_which_and_order),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_validation_all_at_once),
		cmocka_unit_test(test_with_the_model),
	};

	rules_flat_init(argv[0]);
	return cmocka_run_group_tests(tests, setup, teardown);
}
