/*
 * match.c -- the phrase-pattern matcher (see match.h).
 * Pure: no I/O.
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <string.h>

#include "match.h"
#include "normalize.h"

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
	return match_check_shape(p, err, errlen);
}

/* Length of the word at w. */
static size_t
word_len(const char *w)
{
	return strcspn(w, " ");
}

/* The start of the word after the one at w, or NULL at the end. */
static const char *
word_next(const char *w)
{
	w += word_len(w);
	w += strspn(w, " ");
	return *w == '\0' ? NULL : w;
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
		al = strlen(a);
		if (mp->prefix & (1u << i)) {
			if (al <= len && memcmp(a, w, al) == 0)
				return true;
		} else if (al == len && memcmp(a, w, al) == 0)
			return true;
	}
	return false;
}

/* Match positions i.. against the words from w (NULL: none left); last
 * is the end of the previous matched word. Sets *end on success. */
static bool
match_at(const struct pattern *p, size_t i, const char *w,
    const char *last, const char **end)
{
	const struct match_pos	*mp;
	size_t			 k, len;

	if (i == p->npos) {
		if (p->anchor_end && w != NULL)
			return false;
		*end = last;
		return true;
	}
	mp = &p->pos[i];
	if (mp->kind == MATCH_GAP) {
		for (k = 0; k <= MATCH_GAP_MAX; k++) {
			if (match_at(p, i + 1, w, last, end))
				return true;
			if (w == NULL)
				return false;
			last = w + word_len(w);
			w = word_next(w);
		}
		return false;
	}
	if (w == NULL)
		return false;
	len = word_len(w);
	if (mp->kind == MATCH_WORD && !match_word(p, mp, w, len))
		return false;
	return match_at(p, i + 1, word_next(w), w + len, end);
}

bool
match_find(const struct pattern *p, const char *text, size_t *start,
    size_t *end)
{
	const char	*w, *e;

	w = text + strspn(text, " ");
	if (*w == '\0')
		return false;
	for (; w != NULL; w = word_next(w)) {
		if (match_at(p, 0, w, w, &e)) {
			if (start != NULL)
				*start = (size_t)(w - text);
			if (end != NULL)
				*end = (size_t)(e - text);
			return true;
		}
		if (p->anchor_start)
			break;
	}
	return false;
}
