/*
 * anon.c -- anonymisation of a message for the corpus (see anon.h).
 * Pure: no I/O.
 * SPDX-License-Identifier: MIT
 */
#include <stdbool.h>
#include <string.h>

#include "anon.h"
#include "normalize.h"

#define ANON_WORD	128

/* Words after which up to three capitalised words are a name. */
static const char *const anon_titles[] = {
	"dr", "dra", "doutor", "doutora", "sr", "sra", "senhor", "senhora",
	"prof", "profa", NULL
};

/* Words after which the next word is a name whatever its case. */
static const char *const anon_intro[] = {
	"chamo", "nome", NULL
};

/* An output buffer that never overflows. */
struct anon_out {
	char	*p;
	size_t	 len, cap;
};

static void
anon_put(struct anon_out *o, const char *s, size_t n)
{
	if (o->len + n >= o->cap)
		n = o->cap - 1 - o->len;
	memcpy(o->p + o->len, s, n);
	o->len += n;
	o->p[o->len] = '\0';
}

/* Is the normalised word one of list? */
static bool
anon_in(const char *const *list, const char *w)
{
	size_t	i;

	for (i = 0; list[i] != NULL; i++)
		if (strcmp(list[i], w) == 0)
			return true;
	return false;
}

/* Does the raw word start with a capital (ASCII or Latin-1 in UTF-8)? */
static bool
anon_capital(const char *w)
{
	const unsigned char	*u = (const unsigned char *)w;

	return (u[0] >= 'A' && u[0] <= 'Z') ||
	    (u[0] == 0xC3 && u[1] >= 0x80 && u[1] <= 0x9E);
}

/* Is the normalised word (3+ letters) a word of the profile name? */
static bool
anon_profile(const char *pn, const char *w)
{
	const char	*p;
	size_t		 wl = strlen(w), l;

	if (wl < 3 || pn == NULL)
		return false;
	for (p = pn; *p != '\0'; p += l + (p[l] == ' ')) {
		l = strcspn(p, " ");
		if (l == wl && memcmp(p, w, l) == 0)
			return true;
		if (l == 0)
			break;
	}
	return false;
}

/* Write one raw token (no spaces), masked as needed; *name_run counts the
 * capitalised words still to mask after a title, *intro the next word. */
static void
anon_token(struct anon_out *o, const char *t, size_t n, const char *pn,
    int *name_run, bool *intro)
{
	char	w[ANON_WORD], norm[ANON_WORD * 2];
	size_t	core = n, i;
	bool	name;

	while (core > 0 && strchr(".,;:!?)\"'", t[core - 1]) != NULL)
		core--;
	if (memchr(t, '@', n) != NULL && core > 2) {
		anon_put(o, "[email]", 7);
		anon_put(o, t + core, n - core);
		return;
	}
	if (n > 4 && (strncmp(t, "http", 4) == 0 || strncmp(t, "www.", 4) ==
	    0)) {
		anon_put(o, "[link]", 6);
		return;
	}
	memcpy(w, t, core < sizeof w ? core : sizeof w - 1);
	w[core < sizeof w ? core : sizeof w - 1] = '\0';
	text_normalize(w, strlen(w), norm, sizeof norm);
	if (*intro && strcmp(norm, "e") == 0) {
		/* "meu nome é Ana": the name comes after the verb. */
		anon_put(o, t, n);
		return;
	}
	name = norm[0] != '\0' && strchr(norm, ' ') == NULL &&
	    !anon_in(anon_titles, norm) && (anon_profile(pn, norm) || *intro ||
	    (*name_run > 0 && anon_capital(w)));
	if (*name_run > 0 && !name)
		*name_run = 0;
	else if (*name_run > 0)
		(*name_run)--;
	*intro = false;
	if (name) {
		anon_put(o, "[nome]", 6);
		anon_put(o, t + core, n - core);
	} else
		for (i = 0; i < n; i++)
			anon_put(o, t[i] >= '0' && t[i] <= '9' ? "0" : t + i, 1);
	if (core < n && strchr(".,;:!?", t[core]) != NULL)
		*name_run = 0;	/* punctuation ends a name */
	if (anon_in(anon_titles, norm))
		*name_run = 3;
	else if (anon_in(anon_intro, norm))
		*intro = true;
	else if (strcmp(norm, "a") == 0 || strcmp(norm, "o") == 0 ||
	    strcmp(norm, "sou") == 0)
		/* "aqui é a Beatriz", "sou Ana": a capital word is a name. */
		*name_run = *name_run > 0 ? *name_run : 1;
}

size_t
anon_text(const char *text, size_t len, const char *names, char *out,
    size_t outlen)
{
	struct anon_out	 o = { out, 0, outlen };
	char		 pn[256];
	const char	*p = text, *end = text + len, *q;
	int		 name_run = 0;
	bool		 intro = false, first = true;

	if (outlen == 0)
		return 0;
	out[0] = '\0';
	pn[0] = '\0';
	if (names != NULL)
		text_normalize(names, strlen(names), pn, sizeof pn);
	while (p < end) {
		while (p < end && strchr(" \t\r\n", *p) != NULL)
			p++;
		if (p >= end)
			break;
		for (q = p; q < end && strchr(" \t\r\n", *q) == NULL; q++)
			;
		if (!first)
			anon_put(&o, " ", 1);
		first = false;
		anon_token(&o, p, (size_t)(q - p), pn, &name_run, &intro);
		p = q;
	}
	return o.len;
}
