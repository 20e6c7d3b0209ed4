/*
 * guard.h -- forbidden claims (layer 2 of the capabilities gate) and the
 * output guard that finds them in a reply. Claims live in mode/claims.json;
 * mode/capabilities.json names, per mode, which claims are forbidden.
 *
 * mode/claims.json is { "claims": [ CLAIM, ... ] } where CLAIM is
 *
 *	"id"		claim id, [a-z0-9_], unique ("confirma_reserva")
 *	"prompt"	the instruction for the LLM, in Portuguese, non-empty
 *	"patterns"	non-empty list of match.h patterns that detect it
 *	"allow"		optional list of patterns of legitimate phrasing
 *	"skip_questions" optional boolean: a clause ending in '?' asks, it
 *			does not assert, so it cannot violate this claim
 *
 * How a reply is checked (deterministic, allocation-free):
 *  1. The raw reply is split into clauses at . ! ? ; , and line breaks,
 *     except a '.' or ',' between two digits ("R$ 1.200", "1,5"). A very
 *     long clause is cut into chunks at spaces.
 *  2. Each clause is normalised on its own (text_normalize: lower case,
 *     accents folded, punctuation to spaces, emoji to tokens).
 *  3. For each claim, a clause violates it when one of its patterns
 *     matches the clause and none of its allow patterns does. Allow
 *     patterns are how legitimate phrasing and negation are written:
 *     "nao|nem|nunca .. garant*" lets "não posso garantir valor" through,
 *     "quem negocia|acerta" lets "o valor quem acerta é o responsável"
 *     through. Because the unit is the clause, an allowed clause does not
 *     excuse the next one: "não sou eu quem fecha a escala, mas a vaga é
 *     sua" still violates. A clause that both negates and asserts the same
 *     claim without a comma between is let through (a known limit).
 * Pure: no I/O.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_GUARD_H
#define MG_GUARD_H

#include "flat.h"
#include "model.h"

#define GUARD_MAX_CLAIMS	64	/* claims in one file */
#define GUARD_MAX_PATTERNS	48	/* patterns (or allow patterns) a claim */
#define GUARD_CHUNK		480	/* raw bytes of a clause normalised at once */

struct claims;

/* Build the claim table from the flat form of mode/claims.json. Problems go
 * to d as "file: key: problem", every one of them (duplicate id, empty
 * prompt, no patterns, a pattern that does not compile, an unknown key).
 * Returns a new table (claims_free) or NULL when d gained a problem. */
struct claims	*claims_load(const struct flat *, struct diag *d);
/* Free the table; NULL is a no-op. */
void		 claims_free(struct claims *);

size_t		 claims_count(const struct claims *);
/* The index of the claim with this id, or -1. */
int		 claims_find(const struct claims *, const char *id);
/* The id and the prompt of claim idx (borrowed, valid until claims_free),
 * or NULL when idx is out of range. The prompt is the instruction for the
 * LLM, in Portuguese ("Nunca confirme ..."). */
const char	*claims_id(const struct claims *, int idx);
const char	*claims_prompt(const struct claims *, int idx);

/*
 * Check len bytes of a UTF-8 reply (need not be NUL-terminated) against
 * the claims listed in which[0..nwhich) (indices from claims_find; out of
 * range ones are ignored, repeated ones reported once). Writes the indices
 * of violated claims, in the order of which, to violated (up to max) and
 * returns how many were violated (may exceed max). Borrows everything;
 * deterministic; no allocation.
 */
size_t	guard_check(const struct claims *, const int *which, size_t nwhich,
	    const char *reply, size_t len, int *violated, size_t max);

/*
 * The learned guard (mode/guard.model, labels "OK" then the claim ids in
 * the order of claims.json). With a model attached, guard_check asks it
 * over OK and the claims in which only, the rules' hits being features:
 * the reply is clean when OK's probability reaches the model's threshold
 * for OK (default 0.5); otherwise the violated claims are the most likely
 * claim, any at least half as likely, and any the rules name. Borrowed;
 * NULL detaches it.
 */
void	claims_set_model(struct claims *, const struct model *);

/* The model's features of a reply (the same guard_check uses). */
void	guard_features(const struct claims *, const char *reply, size_t len,
	    struct feats *f);

/* The probability of each label of the model (OK first, then every claim
 * in claims.json order) for a reply checked against which; 0 for claims
 * outside which. Returns -1 when no model is attached. */
int	guard_probs(const struct claims *, const int *which, size_t nwhich,
	    const char *reply, size_t len, double *prob);

#endif
