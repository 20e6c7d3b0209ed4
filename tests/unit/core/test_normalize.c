/*
 * test_normalize.c -- normalisation of WhatsApp Portuguese (text_normalize).
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "../../../mode/normalize.h"

/* Normalise s into a static buffer. */
static const char *
norm(const char *s)
{
	static char	out[512];

	text_normalize(s, strlen(s), out, sizeof out);
	return out;
}

static void
test_case_and_accents(void **state)
{
	assert_string_equal(norm("NÃO TENHO INTERESSE"), "nao tenho interesse");
	assert_string_equal(norm("Olá, Dra. Júlia!"), "ola dra julia");
	assert_string_equal(norm("ÇÉ ÊÍ ÓÔ ÕÚ ÀÂ çé êí óô õú àâ ñü"),
	    "ce ei oo ou aa ce ei oo ou aa nu");
	assert_string_equal(norm("plantão às 19h"), "plantao as 19h");
	assert_string_equal(norm("1º plantão"), "1o plantao");
}

static void
test_punctuation_and_spaces(void **state)
{
	assert_string_equal(norm("  sim,   tenho!!! CRM-SP?? "),
	    "sim tenho crm sp");
	assert_string_equal(norm("R$ 1.500,00"), "r 1 500 00");
	assert_string_equal(norm("...!!!"), "");
	assert_string_equal(norm(""), "");
	assert_string_equal(norm("linha1\nlinha2\ttab"), "linha1 linha2 tab");
}

static void
test_emoji(void **state)
{
	assert_string_equal(norm("👍"), "emoji_positivo");
	assert_string_equal(norm("ok👍🏽"), "ok emoji_positivo");
	assert_string_equal(norm("👎 não"), "emoji_negativo nao");
	assert_string_equal(norm("✅✅"), "emoji_positivo emoji_positivo");
	assert_string_equal(norm("🙏🏻 valeu"), "emoji_positivo valeu");
	/* Emoji outside the table are separators, never letters. */
	assert_string_equal(norm("oi🌞tudo bem 🏥"), "oi tudo bem");
	assert_string_equal(norm("❤️"), "");
}

static void
test_repeated_letters(void **state)
{
	assert_string_equal(norm("siiiiim"), "sim");
	assert_string_equal(norm("nãããão"), "nao");
	assert_string_equal(norm("OIIII"), "oi");
	/* Doubles are legitimate Portuguese and stay; so do digits. */
	assert_string_equal(norm("carro isso siim"), "carro isso siim");
	assert_string_equal(norm("R$ 1000"), "r 1000");
}

static void
test_invalid_utf8_and_bounds(void **state)
{
	char	out[8];
	size_t	n;

	assert_string_equal(norm("a\xff\xfe" "b \xc3"), "ab");
	n = text_normalize("bom dia doutora", 15, out, sizeof out);
	assert_int_equal(n, 7);
	assert_string_equal(out, "bom dia");
	/* len, not the NUL, bounds the input. */
	n = text_normalize("sim nao", 3, out, sizeof out);
	assert_string_equal(out, "sim");
	assert_int_equal(text_normalize("x", 1, out, 0), 0);
}

/* utf8_decode, shared with the log: only well-formed UTF-8 decodes. */
static void
test_utf8_decode(void **state)
{
	size_t	adv;

	assert_int_equal(utf8_decode((const unsigned char *)"\xc3\xa3", 2,
	    &adv), 0xe3);
	assert_int_equal(adv, 2);
	assert_int_equal(utf8_decode((const unsigned char *)
	    "\xf0\x9f\x91\x8d", 4, &adv), 0x1f44d);
	assert_int_equal(adv, 4);
	/* overlong "/", a surrogate, past U+10FFFF, cut short */
	assert_int_equal(utf8_decode((const unsigned char *)"\xc0\xaf", 2,
	    &adv), -1);
	assert_int_equal(adv, 1);
	assert_int_equal(utf8_decode((const unsigned char *)"\xed\xa0\x80",
	    3, &adv), -1);
	assert_int_equal(utf8_decode((const unsigned char *)
	    "\xf4\x90\x80\x80", 4, &adv), -1);
	assert_int_equal(utf8_decode((const unsigned char *)"\xc3\xa3", 1,
	    &adv), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_case_and_accents),
		cmocka_unit_test(test_punctuation_and_spaces),
		cmocka_unit_test(test_emoji),
		cmocka_unit_test(test_repeated_letters),
		cmocka_unit_test(test_invalid_utf8_and_bounds),
		cmocka_unit_test(test_utf8_decode),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
