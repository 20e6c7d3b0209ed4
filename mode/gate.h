/*
 * gate.h -- the three-layer capabilities gate of mode/capabilities.json:
 * per mode, layer 1 the allowed tools, layer 2 the forbidden claim ids,
 * layer 3 the required behaviour, plus the micro-confirmation prompts of
 * the transitions out of the mode that need one; and the composition of
 * the constraints text handed to the LLM.
 * Pure: no I/O.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_GATE_H
#define MG_GATE_H

#include "router.h"

#define GATE_LIST_MAX	8		/* claims or behaviours per mode */
#define GATE_TEXT_MAX	8192		/* a composed constraints text */
#define GATE_SEPARATOR	"\n\n---\n\n"

struct gate;

/*
 * Build the gate from the flat form of mode/capabilities.json. Every mode
 * must be present; unknown modes, tools and keys are problems, reported to
 * d and left out. Returns a new gate (gate_free), or NULL only when memory
 * ran out: the caller judges by d, so cross-file checks can still run.
 */
struct gate	*gate_load(const struct flat *, struct diag *d);
void		 gate_free(struct gate *);

/* Layer 1: the allowed tools of a mode as bits (1u << enum tool). */
unsigned	 gate_tools(const struct gate *, enum mode);
bool		 gate_tool_allowed(const struct gate *, enum mode, enum tool);

/* Layers 2 and 3: counts and borrowed strings (NULL past the end). */
size_t		 gate_claim_count(const struct gate *, enum mode);
const char	*gate_claim(const struct gate *, enum mode, size_t i);
size_t		 gate_behavior_count(const struct gate *, enum mode);
const char	*gate_behavior(const struct gate *, enum mode, size_t i);

/* The micro-confirmation prompt for from -> to, or NULL. */
const char	*gate_confirm_prompt(const struct gate *, enum mode from,
		    enum mode to);

/* The micro-confirmation that revisits an open objection before oferta
 * ("objection_revisit", naming it with {objecao}), or NULL. */
const char	*gate_revisit_prompt(const struct gate *);

/* Resolves a claim id to its prompt text; NULL when the id is unknown.
 * (The shell passes the guard's claims table: claims_find+claims_prompt.) */
typedef const char *(*gate_claim_text_fn)(const void *ctx, const char *id);

/* Cross-file checks: every confirm transition of m has a prompt; every
 * claim id is known to fn. Problems go to d. */
void	gate_check_prompts(const struct gate *, const struct matrix *m,
	    struct diag *d);
void	gate_check_claims(const struct gate *, gate_claim_text_fn fn,
	    const void *ctx, struct diag *d);

/*
 * Join the non-empty parts[0..n) with GATE_SEPARATOR into out (always
 * NUL-terminated, truncated to outlen-1). Returns the length written.
 */
size_t	gate_join(const char *const *parts, size_t n, char *out,
	    size_t outlen);

/*
 * The mode's constraints (layers 2 and 3) as prompt text: "## MODO ATUAL:
 * m", "Você NÃO pode:" with each claim's prompt (from fn; the id itself
 * when fn is NULL), "Você DEVE:" with each behaviour. Returns the length.
 */
size_t	gate_mode_text(const struct gate *, enum mode, gate_claim_text_fn fn,
	    const void *ctx, char *out, size_t outlen);

/*
 * The combined constraints: policy text, the mode's text and, when pending
 * >= 0, the micro-confirmation prompt for mode -> pending, joined by
 * GATE_SEPARATOR with empty parts skipped. Returns the length.
 */
size_t	gate_constraints(const struct gate *, enum mode, int pending,
	    const char *policy_constraints, gate_claim_text_fn fn,
	    const void *ctx, char *out, size_t outlen);

#endif
