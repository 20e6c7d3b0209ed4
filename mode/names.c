/*
 * names.c -- enum <-> name tables generated from the X-macro lists in
 * core.h, and the diagnostics list.
 * Pure: no I/O.
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core.h"

#define MG_NAME_ITEM(e, s) s,
static const char *mode_names[] = { MODE_LIST(MG_NAME_ITEM) };
static const char *intent_names[] = { INTENT_LIST(MG_NAME_ITEM) };
static const char *decision_names[] = { DECISION_LIST(MG_NAME_ITEM) };
static const char *tool_names[] = { TOOL_LIST(MG_NAME_ITEM) };
#undef MG_NAME_ITEM

/* Index of name in a table, or -1. */
static int
name_find(const char **tab, int n, const char *name)
{
	int	i;

	if (name == NULL)
		return -1;
	for (i = 0; i < n; i++)
		if (strcmp(tab[i], name) == 0)
			return i;
	return -1;
}

#define NAME_FUNCS(prefix, tab, count)					\
const char *								\
prefix##_name(int v)							\
{									\
	return v >= 0 && v < (count) ? tab[v] : "?";			\
}									\
int									\
prefix##_from_name(const char *name)					\
{									\
	return name_find(tab, (count), name);				\
}

NAME_FUNCS(mode, mode_names, MODE__COUNT)
NAME_FUNCS(intent, intent_names, INTENT__COUNT)
NAME_FUNCS(decision, decision_names, TRANS__COUNT)
NAME_FUNCS(tool, tool_names, TOOL__COUNT)

void
diag_init(struct diag *d)
{
	d->n = 0;
	d->dropped = 0;
}

void
diag_add(struct diag *d, const char *file, const char *key, const char *fmt,
    ...)
{
	va_list	 ap;
	int	 off;

	if (d == NULL)
		return;
	if (d->n == DIAG_MAX) {
		d->dropped++;
		return;
	}
	off = snprintf(d->msg[d->n], DIAG_LEN, "%s: %s%s", file, key,
	    key[0] != '\0' ? ": " : "");
	if (off < 0 || off >= DIAG_LEN)
		off = DIAG_LEN - 1;
	va_start(ap, fmt);
	vsnprintf(d->msg[d->n] + off, DIAG_LEN - (size_t)off, fmt, ap);
	va_end(ap);
	d->n++;
}
