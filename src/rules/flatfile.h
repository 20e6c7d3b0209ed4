/*
 * rules.h -- reading rule files (JSON, json-c) into the core's flat form.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_RULES_H
#define MG_RULES_H

#include "../../mode/flat.h"

/*
 * Read the JSON file at path and flatten it into f (see mode/flat.h).
 * Problems (unreadable, invalid JSON with its line) go to d, named by
 * label (the path as the operator should see it). Returns 0 or -1.
 */
int	rules_read_flat(const char *path, const char *label, struct flat *f,
	    struct diag *d) MG_MUSTCHECK;

/* The flat form of the JSON file at path, as a new buffer (caller frees),
 * or NULL with the reason in d. */
char	*rules_flatten_file(const char *path, const char *label,
	    size_t *outlen, struct diag *d);

/* Flatten a JSON text; returns a new buffer (caller frees) or NULL with a
 * reason in d. Exposed for the tests and the fuzzer. */
char	*rules_flatten(const char *json, size_t len, const char *label,
	    size_t *outlen, struct diag *d);

#endif
