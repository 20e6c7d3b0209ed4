/*
 * policy.h -- the policy engine: runs before the mode router and is
 * sovereign. Rules come from policy/policy.json and are evaluated in order.
 * Pure: no I/O.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_POLICY_H
#define MG_POLICY_H

#include "../mode/flat.h"

enum policy_decision { POLICY_ALLOW, POLICY_BLOCK };

/* Actions for the shell, as bits of policy_result.actions. */
#define POLICY_ACTION_LIST(X)						\
	X(POLICY_ACT_RECORD_OPT_OUT, "record_opt_out")			\
	X(POLICY_ACT_SEND_CONFIRMATION_ONCE, "send_confirmation_once")	\
	X(POLICY_ACT_HANDOFF_HUMAN, "handoff_human")			\
	X(POLICY_ACT_RECORD_SERIOUS_OBJECTION, "record_serious_objection") \
	X(POLICY_ACT_SEND_HANDOFF_MESSAGE, "send_handoff_message")	\
	X(POLICY_ACT_CLEAR_OPT_OUT, "clear_opt_out")			\
	X(POLICY_ACT_SEND_OPT_IN_CONFIRMATION, "send_opt_in_confirmation") \
	X(POLICY_ACT_START_COOLING_OFF, "start_cooling_off")

#define MG_ENUM_ITEM(e, s) e,
enum policy_action { POLICY_ACTION_LIST(MG_ENUM_ITEM) POLICY_ACT__COUNT };
#undef MG_ENUM_ITEM

const char	*policy_decision_name(int);	/* "ALLOW" | "BLOCK" */
const char	*policy_action_name(int);	/* "?" when out of range */

/* What the engine looks at. Times are milliseconds since the epoch. */
struct policy_input {
	int		intent;		/* enum intent, or -1: no message */
	int64_t		opted_out_at;	/* 0: never opted out */
	int64_t		cooling_off_until; /* 0: none */
	bool		serious_objection_open;
	bool		human_control;	/* conversation control is human */
	int		mode;		/* enum mode, or -1: unknown */
	int64_t		now_ms;
};

#define POLICY_CONSTRAINTS_MAX	1024

struct policy_result {
	enum policy_decision	decision;
	const char		*rule;	/* rule id that decided; borrowed
					 * from the policy, "default" when
					 * no rule matched */
	unsigned		 actions;	/* 1u << enum policy_action */
	int			 cooling_off_days; /* start_cooling_off: days */
	char			 constraints[POLICY_CONSTRAINTS_MAX];
};

struct policy;

/*
 * Build the rules from the flat form of policy/policy.json. Every problem
 * goes to d as "file: key: problem". Returns a new policy (policy_free) or
 * NULL when d gained a problem or memory ran out.
 */
struct policy	*policy_load(const struct flat *, struct diag *d);
void		 policy_free(struct policy *);

/*
 * Evaluate the rules in order. The first matching BLOCK rule decides; when
 * none matches the decision is ALLOW, the rule is the first matching ALLOW
 * rule (or "default"), and the constraints of every matching ALLOW rule are
 * joined by a newline. Borrows everything; deterministic.
 */
void	policy_eval(const struct policy *, const struct policy_input *,
	    struct policy_result *out);

#endif
