/*
 * ruleset.h -- every rule file of a rules directory, loaded and checked
 * together: mode/intents.json, mode/claims.json, mode/transitions.json,
 * mode/capabilities.json, mode/messages.json and policy/policy.json, and
 * the learned models mode/intent.model and mode/guard.model when present
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
/* The same; models false leaves the weights files alone (the trainer's
 * view: rules only). */
int	ruleset_load_opts(struct ruleset *rs, const char *dir, bool models,
	    struct diag *d) MG_MUSTCHECK;
void	ruleset_free(struct ruleset *rs);

/*
 * Load the weights file dir/label of the given kind, checked against the
 * labels. Returns the model; NULL with *absent true when the file does not
 * exist (the rules decide alone), NULL with the problems in d otherwise.
 */
struct model	*ruleset_load_model(const char *dir, const char *label,
		    const char *kind, const char *const *labels, size_t n,
		    bool *absent, struct diag *d);

/* The labels of the intent model (the intent names, in enum order) and of
 * the guard model ("OK" then the claim ids): fills labels (at least
 * MODEL_MAX_LABELS entries), returns the count (0 when too many). */
size_t	ruleset_intent_labels(const char **labels);
size_t	ruleset_guard_labels(const struct claims *, const char **labels);

/* Load mode/intents.json and mode/intent.model (when present) of dir, the
 * model attached to the lexicon. Returns the lexicon, *model set (free it
 * after the lexicon), or NULL with the problems in d. */
struct lexicon	*ruleset_load_intent(const char *dir, struct model **model,
		    struct diag *d);

#endif
