/*
 * test_llm_offline.c -- the offline responder plays Julia: it answers from
 * the mode, what the doctor asked for in the transcript and the tool
 * results; searches with the doctor's filters; never confirms a booking
 * (the responsible person does) and asks before passing a contact; bridges
 * on a yes; never repeats its previous reply verbatim.
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../../src/llm/wire.h"

#define OFERTA_TOOLS \
	"[{\"name\":\"buscar_vagas\"},{\"name\":\"criar_handoff_externo\"}," \
	"{\"name\":\"salvar_memoria\"}]"
#define DISCOVERY_TOOLS	"[{\"name\":\"salvar_memoria\"}]"

/* Ask the responder; returns its parsed answer (caller puts). */
static json_object *
ask(const char *tools, const char *msgs, const char *mode)
{
	char		 body[8192];
	char		*out;
	json_object	*o;

	snprintf(body, sizeof body, "{\"system\":\"# Julia\\n- Nome no "
	    "WhatsApp: Dra. Ana\\n\",\"tools\":%s,\"messages\":%s}", tools,
	    msgs);
	out = llm_offline_respond(body, mode);
	assert_non_null(out);
	o = json_tokener_parse(out);
	free(out);
	assert_non_null(o);
	return o;
}

/* The first content block of an answer. */
static json_object *
block(json_object *o)
{
	json_object	*c;

	assert_true(json_object_object_get_ex(o, "content", &c));
	return json_object_array_get_idx(c, 0);
}

static const char *
text_of(json_object *o)
{
	json_object	*t;

	assert_true(json_object_object_get_ex(block(o), "text", &t));
	return json_object_get_string(t);
}

/* The tool call of an answer as "name {input}". */
static void
call_of(json_object *o, char *buf, size_t len)
{
	json_object	*n, *in;

	assert_true(json_object_object_get_ex(block(o), "name", &n));
	assert_true(json_object_object_get_ex(block(o), "input", &in));
	snprintf(buf, len, "%s %s", json_object_get_string(n),
	    json_object_to_json_string_ext(in, JSON_C_TO_STRING_PLAIN));
}

static void
test_booking_in_oferta_asks_before_the_contact(void **state)
{
	json_object	*o = ask(OFERTA_TOOLS, "[{\"role\":\"user\",\"content\":"
	    "\"Pode confirmar minha reserva no noturno?\"}]", "oferta");

	assert_non_null(strstr(text_of(o), "Quem confirma é o responsável"));
	assert_non_null(strstr(text_of(o), "Posso te passar o contato"));
	assert_null(strstr(text_of(o), "confirmad"));
	json_object_put(o);
}

static void
test_never_repeats_the_previous_reply(void **state)
{
	json_object	*a, *b;
	char		 msgs[2048];

	a = ask(OFERTA_TOOLS, "[{\"role\":\"user\",\"content\":\"pode "
	    "confirmar a vaga?\"}]", "oferta");
	snprintf(msgs, sizeof msgs, "[{\"role\":\"user\",\"content\":\"pode "
	    "confirmar a vaga?\"},{\"role\":\"assistant\",\"content\":\"%s\"},"
	    "{\"role\":\"user\",\"content\":\"mas vc confirma a reserva?\"}]",
	    text_of(a));
	b = ask(OFERTA_TOOLS, msgs, "oferta");
	assert_string_not_equal(text_of(a), text_of(b));
	assert_non_null(strstr(text_of(b), "responsável"));
	json_object_put(a);
	json_object_put(b);
	/* The same in followup, twice in a row. */
	a = ask(DISCOVERY_TOOLS, "[{\"role\":\"user\",\"content\":\"oi\"}]",
	    "followup");
	snprintf(msgs, sizeof msgs, "[{\"role\":\"user\",\"content\":\"oi\"},"
	    "{\"role\":\"assistant\",\"content\":\"%s\"},{\"role\":\"user\","
	    "\"content\":\"oi\"}]", text_of(a));
	b = ask(DISCOVERY_TOOLS, msgs, "followup");
	assert_string_not_equal(text_of(a), text_of(b));
	json_object_put(a);
	json_object_put(b);
}

static void
test_search_uses_the_filters_of_the_transcript(void **state)
{
	json_object	*o;
	char		 call[512];

	o = ask(OFERTA_TOOLS, "[{\"role\":\"user\",\"content\":\"Sou "
	    "pediatra, moro na Zona Leste\"},{\"role\":\"assistant\","
	    "\"content\":\"Legal!\"},{\"role\":\"user\",\"content\":\"tem "
	    "plantão à noite?\"}]", "oferta");
	call_of(o, call, sizeof call);
	assert_string_equal(call, "buscar_vagas {\"especialidade\":"
	    "\"pediatria\",\"regiao\":\"zona leste\",\"turno\":\"noturno\"}");
	json_object_put(o);
	/* Known specialty and region, no shift: ask for it, no search. */
	o = ask(OFERTA_TOOLS, "[{\"role\":\"user\",\"content\":\"clinica "
	    "medica na zona sul\"},{\"role\":\"assistant\",\"content\":\"Vc "
	    "tem CRM?\"},{\"role\":\"user\",\"content\":\"sim\"}]", "oferta");
	assert_string_equal(text_of(o), "Ótimo! Pra plantão de clínica "
	    "médica na zona sul, vc prefere diurno ou noturno?");
	json_object_put(o);
}

static void
test_a_yes_to_the_contact_bridges(void **state)
{
	static const char convo[] = "[{\"role\":\"user\",\"content\":\"tem "
	    "plantão noturno do Santa Lúcia?\"},{\"role\":\"assistant\","
	    "\"content\":\"Posso te passar o contato?\"},{\"role\":\"user\","
	    "\"content\":\"pode sim\"}";
	json_object	*o;
	char		 msgs[4096], call[256];

	snprintf(msgs, sizeof msgs, "%s]", convo);
	o = ask(OFERTA_TOOLS, msgs, "oferta");
	call_of(o, call, sizeof call);
	assert_string_equal(call, "buscar_vagas {\"turno\":\"noturno\"}");
	json_object_put(o);
	/* The search answered: the shift the doctor named is bridged. */
	snprintf(msgs, sizeof msgs, "%s,{\"role\":\"assistant\",\"content\":"
	    "[{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"buscar_vagas\","
	    "\"input\":{}}]},{\"role\":\"user\",\"content\":[{\"type\":"
	    "\"tool_result\",\"tool_use_id\":\"t1\",\"content\":\"{\\\"ok\\\":"
	    "true,\\\"vagas\\\":[{\\\"id\\\":9,\\\"hospital\\\":\\\"UPA\\\"},"
	    "{\\\"id\\\":1,\\\"hospital\\\":\\\"Hospital Santa Lúcia\\\"}]}\"}]}]",
	    convo);
	o = ask(OFERTA_TOOLS, msgs, "oferta");
	call_of(o, call, sizeof call);
	assert_string_equal(call, "criar_handoff_externo {\"vaga_id\":1}");
	json_object_put(o);
	/* The bridge answered: the contact, once asked for. */
	snprintf(msgs, sizeof msgs, "%s,{\"role\":\"assistant\",\"content\":"
	    "[{\"type\":\"tool_use\",\"id\":\"t2\",\"name\":"
	    "\"criar_handoff_externo\",\"input\":{\"vaga_id\":1}}]},{\"role\":"
	    "\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":"
	    "\"t2\",\"content\":\"{\\\"ok\\\":true,\\\"vaga\\\":{\\\"hospital\\\":"
	    "\\\"Hospital Santa Lúcia\\\",\\\"turno\\\":\\\"noturno\\\"},"
	    "\\\"responsavel\\\":{\\\"nome\\\":\\\"Mariana Alves\\\","
	    "\\\"contato\\\":\\\"+55 11 90000-0101\\\"}}\"}]}]", convo);
	o = ask(OFERTA_TOOLS, msgs, "oferta");
	assert_string_equal(text_of(o), "Prontinho! Quem cuida do plantão "
	    "noturno do Hospital Santa Lúcia é Mariana Alves: +55 11 90000-0101."
	    " É só chamar que vocês acertam os detalhes direto 😉 Depois me "
	    "conta como foi?");
	json_object_put(o);
}

static void
test_discovery_greets_by_name_and_notes_the_specialty(void **state)
{
	json_object	*o = ask(DISCOVERY_TOOLS, "[{\"role\":\"user\","
	    "\"content\":\"Oi! Sou clínica geral\"}]", "discovery");

	assert_string_equal(text_of(o), "Oi, Dra. Ana! Aqui é a Julia, da "
	    "equipe de plantões 😊 Que bom falar com vc! Anotei: clínica "
	    "médica. Em que região vc costuma pegar plantão?");
	json_object_put(o);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_booking_in_oferta_asks_before_the_contact),
		cmocka_unit_test(test_never_repeats_the_previous_reply),
		cmocka_unit_test(test_search_uses_the_filters_of_the_transcript),
		cmocka_unit_test(test_a_yes_to_the_contact_bridges),
		cmocka_unit_test(test_discovery_greets_by_name_and_notes_the_specialty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
