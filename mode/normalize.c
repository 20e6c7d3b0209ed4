/*
 * normalize.c -- normalisation of Brazilian WhatsApp Portuguese for
 * matching (see normalize.h).
 *
 * Decisions: letters are lower-cased and folded to ASCII (Latin-1 and the
 * Latin Extended-A letters Portuguese writers meet); digits and '_' (so
 * the emoji tokens survive a second normalisation) stay; every
 * other character is a word separator, except a few emoji that become the
 * words "emoji_positivo" and "emoji_negativo", and emoji modifiers (skin
 * tones, variation selectors, zero-width joiner), which vanish. A run of
 * three or more identical letters is squeezed to one ("siiiim" -> "sim",
 * "naaao" -> "nao"); doubles are kept because Portuguese has legitimate
 * ones ("carro", "isso"), so "siim" is left to the lexicon's
 * abbreviations. Digits are never squeezed ("1000").
 * Pure: no I/O.
 * SPDX-License-Identifier: MIT
 */
#include <stdint.h>
#include <string.h>

#include "normalize.h"

#define NORM_POS	"emoji_positivo"
#define NORM_NEG	"emoji_negativo"

/* U+00C0..U+00FF folded to one ASCII letter; ' ' is a separator. */
static const char latin1_fold[64 + 1] =
    "aaaaaaaceeeeiiiidnooooo ouuuuyts"
    "aaaaaaaceeeeiiiidnooooo ouuuuyty";

/* What an ASCII byte becomes: a letter lower-cased, a digit or '_'
 * itself, anything else a separator (norm_codepoint's rules). */
static const char ascii_fold[128 + 1] =
    "                                "
    "                0123456789      "
    " abcdefghijklmnopqrstuvwxyz    _"
    " abcdefghijklmnopqrstuvwxyz     ";

struct emoji_map {
	uint32_t	 cp;
	const char	*word;
};

static const struct emoji_map emoji_table[] = {
	{ 0x1F44D, NORM_POS },	/* thumbs up */
	{ 0x1F44C, NORM_POS },	/* ok hand */
	{ 0x2705, NORM_POS },	/* check mark button */
	{ 0x2714, NORM_POS },	/* check mark */
	{ 0x1F64F, NORM_POS },	/* folded hands */
	{ 0x1F60A, NORM_POS },	/* smiling eyes */
	{ 0x1F642, NORM_POS },	/* slightly smiling */
	{ 0x1F600, NORM_POS },	/* grinning */
	{ 0x1F601, NORM_POS },	/* beaming */
	{ 0x1F603, NORM_POS },	/* grinning, big eyes */
	{ 0x1F44E, NORM_NEG },	/* thumbs down */
	{ 0x274C, NORM_NEG },	/* cross mark */
	{ 0x1F621, NORM_NEG },	/* pouting */
	{ 0x1F620, NORM_NEG },	/* angry */
	{ 0x1F92C, NORM_NEG },	/* cursing */
};

/* An output buffer that never overflows and collapses spaces. */
struct norm_out {
	char	*buf;
	size_t	 len;
	size_t	 cap;	/* usable bytes, excluding the NUL */
};

/* Append one byte; a space only after a non-space. */
static void
norm_put(struct norm_out *o, char c)
{
	if (c == ' ' && (o->len == 0 || o->buf[o->len - 1] == ' '))
		return;
	if (o->len < o->cap)
		o->buf[o->len++] = c;
}

/* Append a token as its own word. */
static void
norm_word(struct norm_out *o, const char *w)
{
	norm_put(o, ' ');
	while (*w != '\0')
		norm_put(o, *w++);
	norm_put(o, ' ');
}

int32_t
utf8_decode(const unsigned char *s, size_t n, size_t *adv)
{
	static const uint32_t	least[] = { 0, 0x80, 0x800, 0x10000 };
	size_t			need, i;
	uint32_t		cp;

	*adv = 1;
	if (s[0] < 0x80)
		return s[0];
	if ((s[0] & 0xE0) == 0xC0) {
		need = 1;
		cp = s[0] & 0x1F;
	} else if ((s[0] & 0xF0) == 0xE0) {
		need = 2;
		cp = s[0] & 0x0F;
	} else if ((s[0] & 0xF8) == 0xF0) {
		need = 3;
		cp = s[0] & 0x07;
	} else
		return -1;
	if (need >= n)
		return -1;
	for (i = 1; i <= need; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return -1;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	/* Overlong forms, surrogates and beyond U+10FFFF are not UTF-8. */
	if (cp < least[need] || cp > 0x10FFFF || (cp >= 0xD800 &&
	    cp <= 0xDFFF))
		return -1;
	*adv = need + 1;
	return (int32_t)cp;
}

/* The folded ASCII letter of a non-ASCII code point, 0 if none. */
static char
fold_letter(uint32_t cp)
{
	if (cp >= 0xC0 && cp <= 0xFF)
		return latin1_fold[cp - 0xC0] == ' ' ? 0 : latin1_fold[cp - 0xC0];
	if (cp == 0xAA)
		return 'a';	/* feminine ordinal: "1a" */
	if (cp == 0xBA)
		return 'o';	/* masculine ordinal: "1o" */
	if (cp >= 0x100 && cp <= 0x17F) {
		/* Latin Extended-A comes in upper/lower pairs per base. */
		static const char ext[] =
		    "aaaaaaccccccccddddeeeeeeeeeegggg"
		    "gggghhhhiiiiiiiiiiiijjkkklllllll"
		    "lllnnnnnnnnnoooooooorrrrrrssssss"
		    "ssttttttuuuuuuuuuuuuwwyyyzzzzzzs";

		return cp - 0x100 < sizeof ext - 1 ? ext[cp - 0x100] : 0;
	}
	return 0;
}

/* Emit what one code point becomes. */
static void
norm_codepoint(struct norm_out *o, uint32_t cp)
{
	size_t	i;
	char	c;

	if (cp < 0x80) {
		if (cp >= 'A' && cp <= 'Z')
			norm_put(o, (char)(cp - 'A' + 'a'));
		else if ((cp >= 'a' && cp <= 'z') || (cp >= '0' && cp <= '9') ||
		    cp == '_')
			norm_put(o, (char)cp);
		else
			norm_put(o, ' ');
		return;
	}
	if ((c = fold_letter(cp)) != 0) {
		norm_put(o, c);
		return;
	}
	/* Modifiers inside emoji sequences: skin tones, VS16, ZWJ. */
	if ((cp >= 0x1F3FB && cp <= 0x1F3FF) || cp == 0xFE0F || cp == 0xFE0E ||
	    cp == 0x200D)
		return;
	for (i = 0; i < sizeof emoji_table / sizeof emoji_table[0]; i++)
		if (emoji_table[i].cp == cp) {
			norm_word(o, emoji_table[i].word);
			return;
		}
	norm_put(o, ' ');
}

/* Squeeze runs of three or more identical letters in place; returns the
 * new length. One pass, the run counted as it goes: its third letter
 * takes back the second. */
static size_t
norm_squeeze(char *s, size_t len)
{
	size_t	r, w = 0, run = 0;
	char	c, prev = 0;

	for (r = 0; r < len; r++) {
		c = s[r];
		run = r > 0 && c == prev ? run + 1 : 1;
		prev = c;
		if (run >= 3 && c >= 'a' && c <= 'z') {
			if (run == 3)
				w--;
			continue;
		}
		s[w++] = c;
	}
	return w;
}

size_t
text_normalize(const char *in, size_t len, char *out, size_t outlen)
{
	struct norm_out		 o;
	const unsigned char	*s = (const unsigned char *)in;
	size_t			 i, adv;
	int32_t			 cp;

	if (outlen == 0)
		return 0;
	o.buf = out;
	o.len = 0;
	o.cap = outlen - 1;
	for (i = 0; i < len; i += adv) {
		/* ASCII, most of a message, needs no decoding. */
		if (s[i] < 0x80) {
			norm_put(&o, ascii_fold[s[i]]);
			adv = 1;
			continue;
		}
		cp = utf8_decode(s + i, len - i, &adv);
		if (cp >= 0)
			norm_codepoint(&o, (uint32_t)cp);
	}
	while (o.len > 0 && out[o.len - 1] == ' ')
		o.len--;
	o.len = norm_squeeze(out, o.len);
	out[o.len] = '\0';
	return o.len;
}
