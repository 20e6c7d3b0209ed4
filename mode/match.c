/*
 * match.c -- the phrase-pattern matcher (see match.h).
 * Pure: no I/O.
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "match.h"
#include "normalize.h"

/* The bloom bit of a word by its first two bytes (one for a 1-byte word). */
static unsigned
match_bloom_bit(const char *w, size_t len)
{
	unsigned	h;

	h = (unsigned char)w[0] * 31u + (len > 1 ? (unsigned char)w[1] : 0u);
	return (h * 2654435761u) >> 22;		/* 0..1023 */
}

/* Add one alternative (len bytes at w, maybe ending in '*') to mp. */
static int
match_add_alt(struct pattern *p, struct match_pos *mp, const char *w,
    size_t len, size_t *used, char *err, size_t errlen)
{
	char	norm[MATCH_BUF];
	size_t	n;
	bool	prefix = false;

	if (len > 0 && w[len - 1] == '*') {
		prefix = true;
		len--;
	}
	if (len == 0) {
		snprintf(err, errlen, "empty alternative");
		return -1;
	}
	n = text_normalize(w, len, norm, sizeof norm);
	if (n == 0 || strchr(norm, ' ') != NULL) {
		snprintf(err, errlen, "\"%.*s\" is not one word", (int)len, w);
		return -1;
	}
	if (mp->nalt == MATCH_MAX_ALT || *used + n + 1 > MATCH_BUF) {
		snprintf(err, errlen, "pattern too long");
		return -1;
	}
	memcpy(p->buf + *used, norm, n + 1);
	mp->alt[mp->nalt] = (uint16_t)*used;
	mp->altlen[mp->nalt] = (uint8_t)n;
	mp->fbyte |= (uint64_t)1 << ((unsigned char)norm[0] & 63);
	if (prefix && n == 1) {
		mp->first |= (uint64_t)1 << ((unsigned char)norm[0] & 63);
		mp->abit[mp->nalt] = MATCH_NOBIT;
	} else
		mp->abit[mp->nalt] = (uint16_t)match_bloom_bit(norm, n);
	if (prefix)
		mp->prefix |= (uint16_t)(1u << mp->nalt);
	mp->nalt++;
	*used += n + 1;
	return 0;
}

/* Compile one space-free token (len bytes at t) as the next position. */
static int
match_add_pos(struct pattern *p, const char *t, size_t len, size_t *used,
    char *err, size_t errlen)
{
	struct match_pos	*mp;
	const char		*bar;

	if (p->npos == MATCH_MAX_POS) {
		snprintf(err, errlen, "more than %d positions", MATCH_MAX_POS);
		return -1;
	}
	mp = &p->pos[p->npos++];
	memset(mp, 0, sizeof *mp);
	if (len == 2 && memcmp(t, "..", 2) == 0) {
		mp->kind = MATCH_GAP;
		return 0;
	}
	if (len == 1 && *t == '*') {
		mp->kind = MATCH_ANY;
		return 0;
	}
	mp->kind = MATCH_WORD;
	p->nwords++;
	for (;;) {
		bar = memchr(t, '|', len);
		if (match_add_alt(p, mp, t, bar ? (size_t)(bar - t) : len,
		    used, err, errlen) == -1)
			return -1;
		if (bar == NULL)
			return 0;
		len -= (size_t)(bar - t) + 1;
		t = bar + 1;
	}
}

/* Reject gaps at either end or two gaps in a row, and word-less patterns. */
static int
match_check_shape(const struct pattern *p, char *err, size_t errlen)
{
	size_t	i;

	if (p->nwords == 0) {
		snprintf(err, errlen, "no word to match");
		return -1;
	}
	if (p->pos[0].kind == MATCH_GAP || p->pos[p->npos - 1].kind == MATCH_GAP) {
		snprintf(err, errlen, "\"..\" at the start or end");
		return -1;
	}
	for (i = 1; i < p->npos; i++)
		if (p->pos[i].kind == MATCH_GAP &&
		    p->pos[i - 1].kind == MATCH_GAP) {
			snprintf(err, errlen, "two \"..\" in a row");
			return -1;
		}
	return 0;
}

/* How selective a word position is (lower: rejects more texts). */
static size_t
match_cost(const struct match_pos *mp)
{
	return mp->first != 0 ? 100 + mp->nalt : mp->nalt;
}

/* Keep the filters of the two most selective word positions. */
static void
match_select(struct pattern *p)
{
	const struct match_pos	*mp, *b1 = NULL, *b2 = NULL;
	size_t			 i, k;

	for (i = 0; i < p->npos; i++) {
		mp = &p->pos[i];
		if (mp->kind != MATCH_WORD)
			continue;
		if (b1 == NULL || match_cost(mp) < match_cost(b1)) {
			b2 = b1;
			b1 = mp;
		} else if (b2 == NULL || match_cost(mp) < match_cost(b2))
			b2 = mp;
	}
	p->sel.npos = 0;
	for (k = 0; k < 2; k++) {
		mp = k == 0 ? b1 : b2;
		if (mp == NULL)
			break;
		p->sel.nalt[k] = mp->nalt;
		memcpy(p->sel.abit[k], mp->abit, sizeof mp->abit);
		p->sel.first[k] = mp->first;
		p->sel.npos++;
	}
}

int
match_compile(struct pattern *p, const char *src, char *err, size_t errlen)
{
	const char	*s = src, *e;
	size_t		 used = 0, len;

	memset(p, 0, sizeof *p);
	if (*s == '^') {
		p->anchor_start = true;
		s++;
	}
	len = strlen(s);
	if (len > 0 && s[len - 1] == '$') {
		p->anchor_end = true;
		len--;
	}
	for (e = s + len; s < e; s = s + strcspn(s, " ")) {
		s += strspn(s, " ");
		if (s >= e)
			break;
		len = strcspn(s, " ");
		if (s + len > e)
			len = (size_t)(e - s);
		if (match_add_pos(p, s, len, &used, err, errlen) == -1)
			return -1;
	}
	if (match_check_shape(p, err, errlen) == -1)
		return -1;
	match_select(p);
	return 0;
}

/* Does the word (len bytes at w) fit one of mp's alternatives? */
static bool
match_word(const struct pattern *p, const struct match_pos *mp,
    const char *w, size_t len)
{
	const char	*a;
	size_t		 al, i;

	for (i = 0; i < mp->nalt; i++) {
		a = p->buf + mp->alt[i];
		al = mp->altlen[i];
		if (a[0] != w[0])
			continue;
		if (mp->prefix & (1u << i)) {
			if (al <= len && memcmp(a, w, al) == 0)
				return true;
		} else if (al == len && memcmp(a, w, al) == 0)
			return true;
	}
	return false;
}

/* Match positions i.. against the words from wi of mt (wi == n: none
 * left); last is the end of the previous matched word. Sets *end. */
static bool
match_at(const struct pattern *p, size_t i, const struct match_text *mt,
    size_t wi, size_t last, size_t *end)
{
	const struct match_pos	*mp;
	size_t			 k;

	if (i == p->npos) {
		if (p->anchor_end && wi < mt->n)
			return false;
		*end = last;
		return true;
	}
	mp = &p->pos[i];
	if (mp->kind == MATCH_GAP) {
		for (k = 0; k <= MATCH_GAP_MAX; k++) {
			if (match_at(p, i + 1, mt, wi, last, end))
				return true;
			if (wi >= mt->n)
				return false;
			last = (size_t)mt->start[wi] + mt->len[wi];
			wi++;
		}
		return false;
	}
	if (wi >= mt->n)
		return false;
	if (mp->kind == MATCH_WORD && !match_word(p, mp, mt->text +
	    mt->start[wi], mt->len[wi]))
		return false;
	return match_at(p, i + 1, mt, wi + 1, (size_t)mt->start[wi] +
	    mt->len[wi], end);
}

void
match_text_init(struct match_text *mt, const char *text)
{
	const char	*w = text;
	size_t		 len;
	unsigned	 b;

	mt->text = text;
	mt->n = 0;
	memset(mt->bloom, 0, sizeof mt->bloom);
	mt->first = 0;
	for (;;) {
		w += strspn(w, " ");
		if (*w == '\0' || mt->n == MATCH_TEXT_WORDS ||
		    w - text > 65535 - 256)
			break;
		len = strcspn(w, " ");
		if (len > 255)
			len = 255;
		mt->start[mt->n] = (uint16_t)(w - text);
		mt->len[mt->n] = (uint16_t)len;
		mt->n++;
		b = match_bloom_bit(w, len);
		mt->wbit[mt->n - 1] = (uint16_t)b;
		mt->bloom[b >> 6] |= (uint64_t)1 << (b & 63);
		mt->first |= (uint64_t)1 << ((unsigned char)w[0] & 63);
		w += strcspn(w, " ");
	}
}

/* Can every word position of p find some word of mt (by the bloom)? */
static bool
match_possible(const struct pattern *p, const struct match_text *mt)
{
	const struct match_pos	*mp;
	size_t			 i;

	for (i = 0; i < p->npos; i++) {
		mp = &p->pos[i];
		if (mp->kind != MATCH_WORD)
			continue;
		if (!match_bits_test(mp->abit, mp->nalt, mp->first, mt))
			return false;
	}
	return true;
}

bool
match_find_text(const struct pattern *p, const struct match_text *mt,
    size_t from, size_t *start, size_t *end)
{
	size_t	wi, e;

	if (mt->n == 0 || !match_filter_test(&p->sel, mt) ||
	    !match_possible(p, mt))
		return false;
	if (p->anchor_start && from > 0)
		return false;
	for (wi = from; wi < mt->n; wi++) {
		/* A word position first: its first byte must fit. */
		if (p->pos[0].kind == MATCH_WORD && !((p->pos[0].fbyte >>
		    ((unsigned char)mt->text[mt->start[wi]] & 63)) & 1)) {
			if (p->anchor_start)
				break;
			continue;
		}
		if (match_at(p, 0, mt, wi, mt->start[wi], &e)) {
			if (start != NULL)
				*start = mt->start[wi];
			if (end != NULL)
				*end = e;
			return true;
		}
		if (p->anchor_start)
			break;
	}
	return false;
}

bool
match_find(const struct pattern *p, const char *text, size_t *start,
    size_t *end)
{
	struct match_text	mt;

	match_text_init(&mt, text);
	return match_find_text(p, &mt, 0, start, end);
}

struct match_index {
	uint32_t	 start[1024 + 1];	/* list of bit b: [start[b],
						   start[b + 1]) */
	uint16_t	*list;
	uint16_t	*always;	/* patterns no bit can rule out */
	size_t		 nalways;
};

struct match_index *
match_index_new(const struct match_filter *f, size_t n)
{
	struct match_index	*ix;
	uint32_t		 count[1024] = { 0 }, pos[1024];
	size_t			 i, k, total = 0;

	if (n > 65535 || (ix = calloc(1, sizeof *ix)) == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		for (k = 0; f[i].npos > 0 && f[i].first[0] == 0 &&
		    k < f[i].nalt[0]; k++)
			if (f[i].abit[0][k] != MATCH_NOBIT)
				count[f[i].abit[0][k]]++;
	for (k = 0; k < 1024; k++) {
		ix->start[k] = (uint32_t)total;
		pos[k] = (uint32_t)total;
		total += count[k];
	}
	ix->start[1024] = (uint32_t)total;
	ix->list = calloc(total + 1, sizeof *ix->list);
	ix->always = calloc(n + 1, sizeof *ix->always);
	if (ix->list == NULL || ix->always == NULL) {
		match_index_free(ix);
		return NULL;
	}
	for (i = 0; i < n; i++) {
		if (f[i].npos == 0 || f[i].first[0] != 0) {
			ix->always[ix->nalways++] = (uint16_t)i;
			continue;
		}
		for (k = 0; k < f[i].nalt[0]; k++)
			if (f[i].abit[0][k] != MATCH_NOBIT)
				ix->list[pos[f[i].abit[0][k]]++] = (uint16_t)i;
	}
	return ix;
}

void
match_index_free(struct match_index *ix)
{
	if (ix == NULL)
		return;
	free(ix->list);
	free(ix->always);
	free(ix);
}

void
match_index_candidates(const struct match_index *ix,
    const struct match_filter *f, const struct match_text *mt,
    uint64_t *cand)
{
	uint64_t	seen[MATCH_BLOOM] = { 0 };
	uint32_t	j;
	size_t		w, i;
	uint16_t	b, p;

	for (i = 0; i < ix->nalways; i++) {
		p = ix->always[i];
		if (match_filter_test(&f[p], mt))
			cand[p >> 6] |= (uint64_t)1 << (p & 63);
	}
	for (w = 0; w < mt->n; w++) {
		b = mt->wbit[w];
		if ((seen[b >> 6] >> (b & 63)) & 1)
			continue;
		seen[b >> 6] |= (uint64_t)1 << (b & 63);
		for (j = ix->start[b]; j < ix->start[b + 1]; j++) {
			p = ix->list[j];
			if (!((cand[p >> 6] >> (p & 63)) & 1) &&
			    match_filter_test(&f[p], mt))
				cand[p >> 6] |= (uint64_t)1 << (p & 63);
		}
	}
}
