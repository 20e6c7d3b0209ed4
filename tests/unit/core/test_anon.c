/*
 * test_anon.c -- anonymisation of a message for the corpus: digits,
 * e-mails, links and names masked; the rest (what the intent hangs on)
 * kept word for word.
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "../../../mode/anon.h"

/* text anonymised, with profile name pn. */
static const char *
anon(const char *text, const char *pn)
{
	static char	out[512];

	anon_text(text, strlen(text), pn, out, sizeof out);
	return out;
}

static void
test_numbers_emails_links(void **state)
{
	(void)state;
	assert_string_equal(anon("meu cpf 123.456.789-09, crm 54321/SP",
	    NULL), "meu cpf 000.000.000-00, crm 00000/SP");
	assert_string_equal(anon("liga 11 98765-4321 ou ana.souza@gmail.com.",
	    NULL), "liga 00 00000-0000 ou [email].");
	assert_string_equal(anon("veja https://x.com/a?b=1 ok", NULL),
	    "veja [link] ok");
	assert_string_equal(anon("plantão de R$ 1.500 dia 12", NULL),
	    "plantão de R$ 0.000 dia 00");
}

static void
test_names(void **state)
{
	(void)state;
	assert_string_equal(anon("Oi, aqui é a Dra. Beatriz Nogueira! Tudo bem?",
	    NULL), "Oi, aqui é a Dra. [nome] [nome]! Tudo bem?");
	assert_string_equal(anon("meu nome é joão, sou pediatra", NULL),
	    "meu nome é [nome], sou pediatra");
	assert_string_equal(anon("me chamo Ana", NULL), "me chamo [nome]");
	/* The sender's profile name, wherever it shows, any case. */
	assert_string_equal(anon("aqui quem fala é o carlos mesmo",
	    "Carlos Lima"), "aqui quem fala é o [nome] mesmo");
	/* Words that merely follow a title-less "o" in lower case stay. */
	assert_string_equal(anon("o plantão de sábado não dá", NULL),
	    "o plantão de sábado não dá");
	/* Tabs and line breaks never reach the TSV. */
	assert_string_equal(anon("sim\tpode\nmandar", NULL), "sim pode mandar");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_numbers_emails_links),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
