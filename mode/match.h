/*
 * match.h -- a small phrase-pattern matcher over normalised text (the
 * output of text_normalize: lower-case ASCII words separated by single
 * spaces). Shared by the intent detector and the output guard.
 *
 * Pattern syntax: a space-separated sequence of positions, each one of
 *
 *	word		exactly this word
 *	word*		any word starting with "word"
 *	a|b*|c		any of the alternatives (each a word or word*)
 *	*		any ONE word
 *	..		a gap: zero to MATCH_GAP_MAX (3) words
 *
 * '^' before the first position anchors the match at the start of the
 * text; '$' after the last position anchors it at the end ("^nao$" is the
 * whole message "nao"). Pattern words are normalised like the text when
 * compiled, so "Não" and "nao" are the same word; each must stay one word.
 * A pattern may not begin or end with "..", nor hold two gaps in a row,
 * and needs at least one word position. A pattern matches anywhere in the
 * text at word boundaries; the shortest gaps are tried first.
 * Pure: no I/O.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_MATCH_H
#define MG_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core.h"

#define MATCH_MAX_POS	12	/* positions in a pattern */
#define MATCH_MAX_ALT	12	/* alternatives in one position */
#define MATCH_BUF	256	/* bytes of words, NUL-separated */
#define MATCH_GAP_MAX	3

enum match_kind { MATCH_WORD, MATCH_ANY, MATCH_GAP };

struct match_pos {
	uint8_t		kind;		/* enum match_kind */
	uint8_t		nalt;
	uint16_t	alt[MATCH_MAX_ALT];	/* offsets into buf */
	uint8_t		altlen[MATCH_MAX_ALT];	/* their lengths */
	uint16_t	prefix;		/* bit i: alternative i is word* */
	uint16_t	abit[MATCH_MAX_ALT];	/* each alternative's bloom bit
					   (MATCH_NOBIT: a one-letter prefix) */
	uint64_t	first;		/* one-letter prefixes ("a*") */
	uint64_t	fbyte;		/* every alternative's first byte */
};

#define MATCH_NOBIT	0xFFFF
#define MATCH_BLOOM	16	/* 64-bit words of a text's bloom */

/* A quick reject: the bloom bits of (at most) two word positions of a
 * pattern, the most selective ones; kept inside the pattern and, copied,
 * in compact arrays beside many patterns. */
struct match_filter {
	uint8_t		npos;
	uint8_t		nalt[2];
	uint16_t	abit[2][MATCH_MAX_ALT];
	uint64_t	first[2];
};

struct pattern {
	struct match_filter	sel;	/* first: rejects most texts at once */
	struct match_pos	pos[MATCH_MAX_POS];
	size_t			npos;
	size_t			nwords;	/* word positions, for scoring */
	bool			anchor_start;
	bool			anchor_end;
	char			buf[MATCH_BUF];
};

/*
 * Compile src into p (caller-owned, no allocation). On error returns -1
 * with a short English reason in err ("empty alternative in \"a||b\"").
 */
int	match_compile(struct pattern *p, const char *src, char *err,
	    size_t errlen) MG_MUSTCHECK;

/*
 * Find the first match of p in the normalised NUL-terminated text. On a
 * match returns true and, when not NULL, the byte offsets of the first
 * matched word's start and the last matched word's end (exclusive).
 * Allocation-free; borrows both.
 */
bool	match_find(const struct pattern *p, const char *text, size_t *start,
	    size_t *end);

/*
 * A normalised text split into words once, for matching many patterns
 * against it: match_text_init, then match_find_text per pattern. A
 * pattern one of whose words cannot occur in the text (by the words' first
 * two bytes) is rejected without a walk. Words past MATCH_TEXT_WORDS are
 * not looked at.
 */
#define MATCH_TEXT_WORDS	512
struct match_text {
	const char	*text;
	size_t		 n;
	uint16_t	 start[MATCH_TEXT_WORDS];
	uint16_t	 len[MATCH_TEXT_WORDS];
	uint64_t	 bloom[MATCH_BLOOM];	/* words by first two bytes */
	uint64_t	 first;			/* words by first byte */
};

/* A pattern's filter, to keep in a compact array beside many patterns:
 * match_filter_test false means the pattern cannot match the text. */
static inline void
match_filter_of(const struct pattern *p, struct match_filter *f)
{
	*f = p->sel;
}

/* Split text (borrowed, must outlive mt; at most 65535 bytes looked at). */
void	match_text_init(struct match_text *mt, const char *text);
/* Can one of n alternatives (bloom bits abit, one-letter prefixes first)
 * be a word of mt? */
static inline bool
match_bits_test(const uint16_t *abit, size_t n, uint64_t first,
    const struct match_text *mt)
{
	size_t	i;

	if (first & mt->first)
		return true;
	for (i = 0; i < n; i++)
		if (abit[i] != MATCH_NOBIT &&
		    ((mt->bloom[abit[i] >> 6] >> (abit[i] & 63)) & 1))
			return true;
	return false;
}

static inline bool
match_filter_test(const struct match_filter *f, const struct match_text *mt)
{
	size_t	i;

	for (i = 0; i < f->npos; i++)
		if (!match_bits_test(f->abit[i], f->nalt[i], f->first[i], mt))
			return false;
	return true;
}

/*
 * The words of many patterns, for an exact first test: a pattern is a
 * candidate for a text only when each of its word positions is met by
 * some word of the text (the word itself, or one it starts for word*).
 * Built once at load; each word of a text is looked up once (a hash of
 * its bytes and of those of its prefixes that some pattern names), not
 * once per pattern, so the patterns whose words are absent cost nothing.
 */
#define MATCH_SET_MAX	4096	/* patterns of a set */
struct match_set;

/* Build the set of p[0..n) (n <= MATCH_SET_MAX); a NULL entry is never a
 * candidate. Borrows nothing. NULL when out of memory or n too large. */
struct match_set	*match_set_new(const struct pattern *const *p,
			    size_t n);
void			 match_set_free(struct match_set *);
/* Set bit i of cand (zeroed by the caller, (n + 63) / 64 words) for every
 * pattern i each of whose word positions some word of mt meets: the only
 * ones match_find_text can find in mt. */
void	match_set_candidates(const struct match_set *,
	    const struct match_text *mt, uint64_t *cand);

/* match_find on a split text; from is the first word a match may start
 * at (0: anywhere). */
bool	match_find_text(const struct pattern *p, const struct match_text *mt,
	    size_t from, size_t *start, size_t *end);

#endif
