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
	const char	*w = text, *end;
	size_t		 len;
	unsigned	 b;

	mt->text = text;
	mt->n = 0;
	memset(mt->bloom, 0, sizeof mt->bloom);
	mt->first = 0;
	for (;;) {
		while (*w == ' ')
			w++;
		if (*w == '\0' || mt->n == MATCH_TEXT_WORDS ||
		    w - text > 65535 - 256)
			break;
		for (len = 1; w[len] != ' ' && w[len] != '\0'; len++)
			;
		end = w + len;
		if (len > 255)
			len = 255;
		mt->start[mt->n] = (uint16_t)(w - text);
		mt->len[mt->n] = (uint16_t)len;
		mt->n++;
		b = match_bloom_bit(w, len);
		mt->bloom[b >> 6] |= (uint64_t)1 << (b & 63);
		mt->first |= (uint64_t)1 << ((unsigned char)w[0] & 63);
		w = end;
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

/* A distinct word of the patterns, exact or a prefix (word*), and the
 * word positions it meets: ref[r0..r1), each pattern << 4 | ordinal. */
struct set_key {
	uint32_t	 hash;		/* FNV-1a of the bytes */
	uint32_t	 off;		/* into pool */
	uint32_t	 r0, r1;
	uint8_t		 len;
	uint8_t		 prefix;
};

struct match_set {
	size_t		 npat;
	uint16_t	*need;		/* [npat]: every ordinal's bit */
	struct set_key	*key;
	size_t		 nkey;
	uint32_t	*slot;		/* open addressing: key index + 1 */
	uint32_t	 mask;		/* slots - 1 */
	uint32_t	*ref;
	char		*pool;		/* the keys' bytes */
	size_t		 used;
	uint64_t	 plen[4];	/* bit l: some prefix has l bytes */
	size_t		 plen_max;
};

/* The slot a hash starts probing at; prefixes and words apart. */
static uint32_t
set_home(const struct match_set *s, uint32_t h, bool prefix)
{
	return ((h ^ (prefix ? 0x9E3779B9u : 0)) * 2654435761u) & s->mask;
}

/* The key of len bytes at w (its hash h), or NULL. */
static const struct set_key *
set_find(const struct match_set *s, uint32_t h, const char *w, size_t len,
    bool prefix)
{
	const struct set_key	*k;
	uint32_t		 i, ki;

	for (i = set_home(s, h, prefix); (ki = s->slot[i]) != 0;
	    i = (i + 1) & s->mask) {
		k = &s->key[ki - 1];
		if (k->hash == h && k->len == len && k->prefix == prefix &&
		    memcmp(s->pool + k->off, w, len) == 0)
			return k;
	}
	return NULL;
}

/* The index of the key of len bytes at w, added if new. */
static uint32_t
set_add(struct match_set *s, const char *w, size_t len, bool prefix)
{
	const struct set_key	*found;
	struct set_key		*k;
	uint32_t		 h = mg_fnv(MG_FNV_BASIS, w, len), i;

	if ((found = set_find(s, h, w, len, prefix)) != NULL)
		return (uint32_t)(found - s->key);
	for (i = set_home(s, h, prefix); s->slot[i] != 0;
	    i = (i + 1) & s->mask)
		;
	k = &s->key[s->nkey];
	k->hash = h;
	k->off = (uint32_t)s->used;
	k->len = (uint8_t)len;
	k->prefix = prefix;
	memcpy(s->pool + s->used, w, len);
	s->used += len;
	s->slot[i] = (uint32_t)++s->nkey;
	if (prefix) {
		s->plen[len >> 6] |= (uint64_t)1 << (len & 63);
		if (len > s->plen_max)
			s->plen_max = len;
	}
	return (uint32_t)(s->nkey - 1);
}

/* Every alternative of p[0..n): its key and its ref, in order; returns
 * how many. */
static size_t
set_alts(struct match_set *s, const struct pattern *const *p, size_t n,
    uint32_t *kof, uint32_t *ref)
{
	const struct match_pos	*mp;
	size_t			 i, j, a, ord, m = 0;

	for (i = 0; i < n; i++) {
		if (p[i] == NULL) {
			s->need[i] = 0xFFFF;	/* no word meets bit 15 */
			continue;
		}
		for (j = 0, ord = 0; j < p[i]->npos; j++) {
			mp = &p[i]->pos[j];
			if (mp->kind != MATCH_WORD)
				continue;
			for (a = 0; a < mp->nalt; a++) {
				kof[m] = set_add(s, p[i]->buf + mp->alt[a],
				    mp->altlen[a], (mp->prefix >> a) & 1);
				ref[m++] = (uint32_t)(i << 4 | ord);
			}
			s->need[i] |= (uint16_t)(1u << ord);
			ord++;
		}
	}
	return m;
}

struct match_set *
match_set_new(const struct pattern *const *p, size_t n)
{
	const struct match_pos	*mp;
	struct match_set	*s;
	uint32_t		*kof = NULL, *ref = NULL, *fill = NULL;
	size_t			 i, j, a, total = 0, bytes = 0, slots = 16, m;

	if (n > MATCH_SET_MAX || (s = calloc(1, sizeof *s)) == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		for (j = 0; p[i] != NULL && j < p[i]->npos; j++) {
			mp = &p[i]->pos[j];
			for (a = 0; mp->kind == MATCH_WORD && a < mp->nalt;
			    a++) {
				total++;
				bytes += mp->altlen[a];
			}
		}
	while (slots < 4 * total)	/* mostly empty: a miss is one read */
		slots *= 2;
	s->npat = n;
	s->mask = (uint32_t)slots - 1;
	s->need = calloc(n + 1, sizeof *s->need);
	s->key = calloc(total + 1, sizeof *s->key);
	s->slot = calloc(slots, sizeof *s->slot);
	s->ref = calloc(total + 1, sizeof *s->ref);
	s->pool = malloc(bytes + 1);
	kof = calloc(total + 1, sizeof *kof);
	ref = calloc(total + 1, sizeof *ref);
	fill = calloc(total + 1, sizeof *fill);
	if (s->need == NULL || s->key == NULL || s->slot == NULL ||
	    s->ref == NULL || s->pool == NULL || kof == NULL || ref == NULL ||
	    fill == NULL) {
		free(kof);
		free(ref);
		free(fill);
		match_set_free(s);
		return NULL;
	}
	m = set_alts(s, p, n, kof, ref);
	/* Each key's refs contiguous: count, then place. */
	for (i = 0; i < m; i++)
		s->key[kof[i]].r1++;
	for (i = 0, total = 0; i < s->nkey; i++) {
		s->key[i].r0 = (uint32_t)total;
		fill[i] = (uint32_t)total;
		total += s->key[i].r1;
		s->key[i].r1 = (uint32_t)total;
	}
	for (i = 0; i < m; i++)
		s->ref[fill[kof[i]]++] = ref[i];
	free(kof);
	free(ref);
	free(fill);
	return s;
}

void
match_set_free(struct match_set *s)
{
	if (s == NULL)
		return;
	free(s->need);
	free(s->key);
	free(s->slot);
	free(s->ref);
	free(s->pool);
	free(s);
}

/* Mark the word positions key k meets. */
static void
set_mark(const struct match_set *s, const struct set_key *k, uint16_t *sat)
{
	uint32_t	r;

	for (r = k->r0; r < k->r1; r++)
		sat[s->ref[r] >> 4] |= (uint16_t)(1u << (s->ref[r] & 15));
}

void
match_set_candidates(const struct match_set *s, const struct match_text *mt,
    uint64_t *cand)
{
	uint16_t		 sat[MATCH_SET_MAX];
	const struct set_key	*k;
	const char		*w;
	size_t			 i, j, len;
	uint32_t		 h;

	memset(sat, 0, s->npat * sizeof *sat);
	for (i = 0; i < mt->n; i++) {
		w = mt->text + mt->start[i];
		len = mt->len[i];
		h = MG_FNV_BASIS;
		/* An empty home slot, most words and prefixes, says no at
		 * once. */
		for (j = 0; j < len; j++) {
			h = mg_fnv_byte(h, (unsigned char)w[j]);
			if (j < s->plen_max && ((s->plen[(j + 1) >> 6] >>
			    ((j + 1) & 63)) & 1) &&
			    s->slot[set_home(s, h, true)] != 0 &&
			    (k = set_find(s, h, w, j + 1, true)) != NULL)
				set_mark(s, k, sat);
		}
		if (s->slot[set_home(s, h, false)] != 0 &&
		    (k = set_find(s, h, w, len, false)) != NULL)
			set_mark(s, k, sat);
	}
	for (i = 0; i < s->npat; i++)
		if (sat[i] == s->need[i])
			cand[i >> 6] |= (uint64_t)1 << (i & 63);
}
