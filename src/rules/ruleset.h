/*
 * ruleset.h -- every rule file of a rules directory, loaded and checked
 * together: mode/intents.json, mode/claims.json, mode/transitions.json,
 * mode/capabilities.json, mode/messages.json and policy/policy.json
 * (struct ruleset is the core's: mode/turn.h).
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_RULESET_H
#define MG_RULESET_H

#include "../../mode/turn.h"

/*
 * Load every rule file under dir, then the cross-file checks (a confirm
 * transition without its micro-confirmation prompt, a capability naming an
 * unknown claim). Every problem goes to d as "file: key: problem", files
 * named relative to dir. Returns 0 when all is well; on -1 rs holds
 * nothing (already freed). Free with ruleset_free.
 */
int	ruleset_load(struct ruleset *rs, const char *dir, struct diag *d)
	    MG_MUSTCHECK;
void	ruleset_free(struct ruleset *rs);

#endif
