/*
 * guard.h -- forbidden claims (layer 2 of the capabilities gate) and the
 * output guard that finds them in a reply. Claims live in mode/claims.json;
 * mode/capabilities.json names, per mode, which claims are forbidden.
 * Pure: no I/O.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_GUARD_H
#define MG_GUARD_H

#include "flat.h"

struct claims;

/* Build the claim table from the flat form of mode/claims.json. Problems go
 * to d as "file: key: problem". Returns a new table (claims_free) or NULL
 * when d gained a problem. */
struct claims	*claims_load(const struct flat *, struct diag *d);
void		 claims_free(struct claims *);

size_t		 claims_count(const struct claims *);
int		 claims_find(const struct claims *, const char *id); /* -1 */
const char	*claims_id(const struct claims *, int idx);
/* The instruction for the prompt, in Portuguese ("Nunca confirme ..."). */
const char	*claims_prompt(const struct claims *, int idx);

/*
 * Check a reply against the claims listed in which[0..nwhich) (indices
 * from claims_find). Writes the indices of violated claims, in the order
 * of which, to violated (up to max) and returns how many were violated.
 * Borrows everything; deterministic.
 */
size_t	guard_check(const struct claims *, const int *which, size_t nwhich,
	    const char *reply, size_t len, int *violated, size_t max);

#endif
