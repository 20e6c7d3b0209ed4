/*
 * test_match.c -- the phrase-pattern matcher shared by intents and guard.
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "../../../mode/match.h"

/* Compile pat (must succeed) and report whether it matches text. */
static bool
m(const char *pat, const char *text)
{
	struct pattern	p;
	char		err[128];

	assert_int_equal(match_compile(&p, pat, err, sizeof err), 0);
	return match_find(&p, text, NULL, NULL);
}

/* The compile error for pat (must fail). */
static const char *
bad(const char *pat)
{
	static char	err[128];
	struct pattern	p;

	assert_int_equal(match_compile(&p, pat, err, sizeof err), -1);
	return err;
}

static void
test_words_and_boundaries(void **state)
{
	assert_true(m("tenho interesse", "nao tenho interesse"));
	assert_false(m("tenho interesse", "tenho muito interesse"));
	/* Whole words only: "sim" is not inside "simples". */
	assert_false(m("sim", "e simples"));
	assert_true(m("sim", "e simples sim"));
	assert_false(m("vaga", ""));
}

static void
test_prefix_any_and_alternatives(void **state)
{
	assert_true(m("plant*", "tem plantoes"));
	assert_true(m("plant*", "plant"));
	assert_false(m("plantao", "plantoes"));
	assert_true(m("me * vagas", "me manda vagas"));
	assert_false(m("me * vagas", "me vagas"));
	assert_true(m("quero|gostaria saber", "gostaria saber"));
	assert_true(m("pare|para de", "para de mandar"));
	assert_true(m("manda|envi* vaga*", "envia as vagas") == false);
	assert_true(m("manda|envi* .. vaga*", "envia as vagas"));
}

static void
test_gaps(void **state)
{
	assert_true(m("pare de .. mandar", "pare de mandar"));
	assert_true(m("pare de .. mandar", "pare de me mandar"));
	assert_true(m("pare de .. mandar", "pare de a b c mandar"));
	assert_false(m("pare de .. mandar", "pare de a b c d mandar"));
	/* Backtracking: the first candidate word may not be the right one. */
	assert_true(m("nao .. receber", "nao nao quero mais receber"));
}

static void
test_anchors_and_offsets(void **state)
{
	struct pattern	p;
	char		err[64];
	size_t		s, e;

	assert_true(m("^nao$", "nao"));
	assert_false(m("^nao$", "nao obrigado"));
	assert_false(m("^obrigado", "nao obrigado"));
	assert_true(m("obrigado$", "nao obrigado"));
	assert_false(m("nao$", "nao obrigado"));
	assert_int_equal(match_compile(&p, "mandar .. vagas", err, sizeof err),
	    0);
	assert_true(match_find(&p, "pode mandar as vagas sim", &s, &e));
	assert_int_equal(s, 5);
	assert_int_equal(e, 20);
}

static void
test_pattern_words_are_normalised(void **state)
{
	assert_true(m("NÃO quero", "nao quero"));
	assert_true(m("plantão|vaga", "plantao"));
}

static void
test_compile_errors(void **state)
{
	assert_string_equal(bad(""), "no word to match");
	assert_string_equal(bad("* .. *"), "no word to match");
	assert_string_equal(bad(".. sim"), "\"..\" at the start or end");
	assert_string_equal(bad("sim .."), "\"..\" at the start or end");
	assert_string_equal(bad("a .. .. b"), "two \"..\" in a row");
	assert_string_equal(bad("a||b"), "empty alternative");
	assert_string_equal(bad("a|*"), "empty alternative");
	assert_string_equal(bad("d'agua"), "\"d'agua\" is not one word");
	assert_string_equal(bad("!!"), "\"!!\" is not one word");
	assert_string_equal(bad("a b c d e f g h i j k l m"),
	    "more than 12 positions");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_words_and_boundaries),
		cmocka_unit_test(test_prefix_any_and_alternatives),
		cmocka_unit_test(test_gaps),
		cmocka_unit_test(test_anchors_and_offsets),
		cmocka_unit_test(test_pattern_words_are_normalised),
		cmocka_unit_test(test_compile_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
