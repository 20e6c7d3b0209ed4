/*
 * flat.h -- the flat form of a rule file, as the core reads it.
 *
 * The shell parses each JSON rule file with json-c and hands the core a
 * buffer with one scalar per line:
 *
 *	PATH <TAB> TYPE VALUE <LF>
 *
 * PATH is the JSON path with '.' between parts and array indices as decimal
 * numbers ("transitions.0.from"). TYPE is one character: 's' string,
 * 'n' number, 'b' boolean ("true"/"false"), 'z' null, 'a' empty array,
 * 'o' empty object. In VALUE a backslash, newline and tab are written as
 * "\\", "\n" and "\t". Lines keep the file's order. The core thus never
 * needs a JSON parser, and its tests can feed it hand-written buffers.
 * Pure: no I/O.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_FLAT_H
#define MG_FLAT_H

#include "core.h"

struct flat_ent {
	const char	*path;
	const char	*val;	/* unescaped; "" for z, a, o */
	char		 type;	/* s n b z a o */
};

struct flat {
	struct flat_ent	*ent;
	size_t		 n;
	char		*buf;	/* owns every path and val */
	const char	*file;	/* borrowed, for diagnostics */
};

/* Parse len bytes of buf (copied; the caller keeps buf). Malformed lines are
 * reported to d and skipped. Returns 0, or -1 on allocation failure. */
int	flat_parse(struct flat *, const char *file, const char *buf,
	    size_t len, struct diag *d) MG_MUSTCHECK;
void	flat_free(struct flat *);

/* The entry at exactly this path (printf-style), or NULL. */
const struct flat_ent *flat_get(const struct flat *, const char *fmt, ...)
	    MG_PRINTF(2, 3);

/* The string at path, or NULL when absent or not a string. */
const char	*flat_str(const struct flat *, const char *fmt, ...)
	    MG_PRINTF(2, 3);

/*
 * Distinct names of the direct children of prefix ("" for the top level),
 * in file order: object keys, or "0", "1", ... for an array. Writes up to
 * max borrowed pointers into names (each valid until flat_free) and returns
 * how many children exist (may exceed max). Child names are copied into
 * scratch, which must hold at least max * FLAT_NAME_MAX bytes.
 */
#define FLAT_NAME_MAX	64
size_t	flat_children(const struct flat *, const char *prefix,
	    char (*names)[FLAT_NAME_MAX], size_t max);

#endif
