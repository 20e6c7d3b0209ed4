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

/* The set's candidates for text: bit i for pattern src[i]. */
static uint64_t
candidates(const char *const *src, size_t n, const char *text)
{
	struct pattern		 p[8];
	const struct pattern	*pp[8];
	struct match_set	*s;
	struct match_text	 mt;
	uint64_t		 cand = 0;
	char			 err[128];
	size_t			 i;

	for (i = 0; i < n; i++) {
		assert_int_equal(match_compile(&p[i], src[i], err, sizeof err),
		    0);
		pp[i] = &p[i];
	}
	pp[n - 1] = NULL;	/* the last one is left out */
	assert_non_null(s = match_set_new(pp, n));
	match_text_init(&mt, text);
	match_set_candidates(s, &mt, &cand);
	match_set_free(s);
	return cand;
}

static void
test_set_candidates(void **state)
{
	static const char *const src[] = {
		"pare|para de .. mandar",	/* 0 */
		"plant* noturno*",		/* 1 */
		"^nao$",			/* 2 */
		"me * vagas",			/* 3 */
		"a* b",				/* 4 */
		"mandar",			/* 5: not in the set */
	};
	size_t	n = sizeof src / sizeof src[0];

	/* Every word position met somewhere, in any order: a candidate. */
	assert_int_equal(candidates(src, n, "mandar de pare"), 1u << 0);
	assert_int_equal(candidates(src, n, "plantoes noturnos"), 1u << 1);
	/* A prefix is not met by a shorter word, nor a word by a longer. */
	assert_int_equal(candidates(src, n, "plan noturnos"), 0);
	assert_int_equal(candidates(src, n, "naooo"), 0);
	assert_int_equal(candidates(src, n, "ok nao"), 1u << 2);
	assert_int_equal(candidates(src, n, "me vagas"), 1u << 3);
	assert_int_equal(candidates(src, n, "b abc"), 1u << 4);
	assert_int_equal(candidates(src, n, "b"), 0);
	/* What match_find finds is always a candidate. */
	assert_true(m(src[0], "para de me mandar"));
	assert_int_equal(candidates(src, n, "para de me mandar"), 1u << 0);
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
		cmocka_unit_test(test_set_candidates),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
