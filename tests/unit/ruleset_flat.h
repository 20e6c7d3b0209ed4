/*
 * ruleset_flat.h -- for core tests and generators: every default rule file
 * of the build's flat copies (rules_flat.h) loaded into a struct ruleset,
 * the way the shell's ruleset_load does from JSON.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_TEST_RULESET_FLAT_H
#define MG_TEST_RULESET_FLAT_H

#include "rules_flat.h"
#include "../../mode/turn.h"

/* 0 when every file loaded without a problem. */
static inline int
ruleset_flat_load(struct ruleset *rs)
{
	struct diag	d;
	struct flat	f;

	diag_init(&d);
	memset(rs, 0, sizeof *rs);
#define RS_LOAD(label, field, loader)					\
	if (rules_flat_load(label, &f, &d) != 0)			\
		return -1;						\
	rs->field = loader(&f, &d);					\
	flat_free(&f);
	RS_LOAD("mode/intents.json", lex, lexicon_load)
	RS_LOAD("mode/claims.json", claims, claims_load)
	RS_LOAD("mode/transitions.json", matrix, matrix_load)
	RS_LOAD("mode/capabilities.json", gate, gate_load)
	RS_LOAD("mode/messages.json", messages, messages_load)
	RS_LOAD("policy/policy.json", policy, policy_load)
#undef RS_LOAD
	return d.n == 0 ? 0 : -1;
}

static inline void
ruleset_flat_free(struct ruleset *rs)
{
	lexicon_free(rs->lex);
	claims_free(rs->claims);
	matrix_free(rs->matrix);
	gate_free(rs->gate);
	messages_free(rs->messages);
	policy_free(rs->policy);
}

#endif
