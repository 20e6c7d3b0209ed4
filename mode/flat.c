/*
 * flat.c -- reading the flat form of rule files (see flat.h).
 * Pure: no I/O.
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flat.h"

/* Undo the three escapes of flat.h in place; returns the new end. */
static char *
flat_unescape(char *s)
{
	char	*w = s;

	for (; *s != '\0'; s++) {
		if (*s == '\\' && s[1] != '\0') {
			s++;
			*w++ = *s == 'n' ? '\n' : *s == 't' ? '\t' : *s;
		} else
			*w++ = *s;
	}
	*w = '\0';
	return w;
}

int
flat_parse(struct flat *f, const char *file, const char *buf, size_t len,
    struct diag *d)
{
	size_t	 lines = 0, i, lineno = 0;
	char	*p, *nl, *tab;

	memset(f, 0, sizeof *f);
	f->file = file;
	for (i = 0; i < len; i++)
		if (buf[i] == '\n')
			lines++;
	if ((f->buf = malloc(len + 1)) == NULL ||
	    (f->ent = calloc(lines + 1, sizeof *f->ent)) == NULL) {
		flat_free(f);
		return -1;
	}
	memcpy(f->buf, buf, len);
	f->buf[len] = '\0';

	for (p = f->buf; *p != '\0'; p = nl + 1) {
		lineno++;
		if ((nl = strchr(p, '\n')) == NULL)
			nl = p + strlen(p);
		*nl = '\0';
		if ((tab = strchr(p, '\t')) == NULL || tab[1] == '\0' ||
		    strchr("snbzao", tab[1]) == NULL) {
			diag_add(d, file, "", "flat line %zu is malformed",
			    lineno);
		} else {
			*tab = '\0';
			f->ent[f->n].path = p;
			f->ent[f->n].type = tab[1];
			f->ent[f->n].val = tab + 2;
			flat_unescape(tab + 2);
			f->n++;
		}
		if (nl == f->buf + len)
			break;
	}
	return 0;
}

void
flat_free(struct flat *f)
{
	if (f == NULL)
		return;
	free(f->ent);
	free(f->buf);
	memset(f, 0, sizeof *f);
}

/* Look up a formatted path; shared by flat_get and flat_str. */
static const struct flat_ent *
flat_vget(const struct flat *f, const char *fmt, va_list ap)
{
	char	 path[512];
	size_t	 i;

	if (vsnprintf(path, sizeof path, fmt, ap) >= (int)sizeof path)
		return NULL;
	for (i = 0; i < f->n; i++)
		if (strcmp(f->ent[i].path, path) == 0)
			return &f->ent[i];
	return NULL;
}

const struct flat_ent *
flat_get(const struct flat *f, const char *fmt, ...)
{
	const struct flat_ent	*e;
	va_list			 ap;

	va_start(ap, fmt);
	e = flat_vget(f, fmt, ap);
	va_end(ap);
	return e;
}

const char *
flat_str(const struct flat *f, const char *fmt, ...)
{
	const struct flat_ent	*e;
	va_list			 ap;

	va_start(ap, fmt);
	e = flat_vget(f, fmt, ap);
	va_end(ap);
	return e != NULL && e->type == 's' ? e->val : NULL;
}

size_t
flat_children(const struct flat *f, const char *prefix,
    char (*names)[FLAT_NAME_MAX], size_t max)
{
	size_t		 plen = strlen(prefix), i, k, n = 0, nlen;
	const char	*rest, *dot;
	char		 last[FLAT_NAME_MAX] = "";

	for (i = 0; i < f->n; i++) {
		rest = f->ent[i].path;
		if (plen > 0) {
			if (strncmp(rest, prefix, plen) != 0 ||
			    rest[plen] != '.')
				continue;
			rest += plen + 1;
		}
		dot = strchr(rest, '.');
		nlen = dot != NULL ? (size_t)(dot - rest) : strlen(rest);
		if (nlen == 0 || nlen >= FLAT_NAME_MAX)
			continue;
		/* Children are contiguous in file order; check the last
		 * one first, then the rest, so keys stay distinct. */
		if (strncmp(last, rest, nlen) == 0 && last[nlen] == '\0')
			continue;
		memcpy(last, rest, nlen);
		last[nlen] = '\0';
		for (k = 0; k < n && k < max; k++)
			if (strcmp(names[k], last) == 0)
				break;
		if (k < n && k < max)
			continue;
		if (n < max)
			memcpy(names[n], last, nlen + 1);
		n++;
	}
	return n;
}
