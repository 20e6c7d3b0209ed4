/*
 * turn.h -- one turn's decision, whole: the conversation's state and the
 * claimed messages in, a plain plan out (per message its intent, policy
 * result and router decision; the state changes; the funnel events; the
 * reply choice with the LLM's tools, constraints and forbidden claims).
 * The shell runs the plan's I/O and asks the core again for what happens
 * mid-turn (a bridge made) and for the guard's verdict on a reply.
 * Pure: no I/O, time passed in, deterministic.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_MODE_TURN_H
#define MG_MODE_TURN_H

#include "gate.h"
#include "guard.h"
#include "intent.h"
#include "messages.h"
#include "router.h"
#include "../policy/policy.h"

/* Every rule file of a rules folder, loaded (the shell's ruleset_load). */
struct ruleset {
	struct lexicon	*lex;
	struct model	*intent_model;	/* mode/intent.model, attached to lex;
					   NULL: the rules alone */
	struct claims	*claims;
	struct model	*guard_model;	/* mode/guard.model, attached to
					   claims; NULL: the rules alone */
	struct matrix	*matrix;
	struct gate	*gate;
	struct policy	*policy;
	struct messages	*messages;
};

/* The gate_claim_text_fn over rs->claims: a claim's prompt. */
const char	*turn_claim_text(const void *claims, const char *id);

enum turn_flag { TURN_FLAG_OFF, TURN_FLAG_ON, TURN_FLAG_SHADOW };
const char	*turn_flag_name(enum turn_flag);

/* The conversation as the turn found it. Times in ms; 0: not set. */
struct turn_conv {
	struct mode_state	st;
	bool			has_shadow;	/* shadow_st was recorded */
	struct mode_state	shadow_st;	/* shadow mode's own state */
	enum turn_flag		flag;		/* effective for this doctor */
	bool			human_control;
	int64_t			opted_out_at;
	bool			opt_out_confirmed;
	int64_t			cooling_off_until;
	int64_t			serious_objection_at;
	bool			reserva_confirmada;
	int64_t			objection_at;	/* an objection open since */
	const char		*objection;	/* what was objected; borrowed */
	int64_t			last_inbound_at;
};

/* One claimed message; strings borrowed. */
struct turn_msg {
	int64_t		 id;
	const char	*type;
	const char	*text;		/* NULL for non-text types */
	int64_t		 at_ms;		/* sent (or received) at; 0: unknown */
};

struct turn_input {
	struct turn_conv	 conv;
	const struct turn_msg	*msgs;
	size_t			 nmsgs;
	int64_t			 now_ms;
	int64_t			 max_age_ms;	/* older: kept, not answered */
	const char		*julia_before;	/* Julia's last message, the
						 * context of a short answer;
						 * NULL: none */
};

/* What became of one message, in the order the turn decides. */
enum turn_fate {
	FATE_TOO_OLD,		/* skipped: older than max_age_ms */
	FATE_HUMAN,		/* a human has the chat: stored only */
	FATE_IGNORED,		/* a type that gets nothing */
	FATE_BLOCKED,		/* the policy blocked it */
	FATE_ASK_TEXT,		/* a type we ask to be written as text */
	FATE_ANSWER		/* answered (by the LLM or a canned text) */
};

/* One router decision and whether it moved the state (flag on). */
struct turn_route {
	struct mode_state	before;
	struct router_result	r;
	bool			applied;
	int64_t			inbox_id;	/* 0: an event's */
};

struct turn_msg_plan {
	int64_t			id;
	enum turn_fate		fate;
	enum msg_action		action;
	const char		*type;		/* borrowed from the input */
	bool			decided;	/* intent and policy ran */
	struct intent_result	intent;
	struct policy_result	policy;
	bool			routed;
	struct turn_route	route;
};

#define TURN_FUNNEL_MAX	8
#define TURN_EVENTS_MAX	4

struct turn_funnel {
	const char	*status;	/* funnel_events.status */
	const char	*origem;	/* metadata.origem */
	int64_t		 inbox_id;
};

enum turn_reply { REPLY_NONE, REPLY_CANNED, REPLY_LLM };

/* Columns of conversations the turn sets (to the turn's now). */
struct turn_changes {
	bool	opted_out;		/* opted_out_at */
	bool	opt_out_confirmed;	/* opt_out_confirmed_at */
	bool	opted_in;		/* opted_out_at, confirmed: cleared */
	bool	serious_objection;	/* serious_objection_at */
	const char *control_by;		/* control -> human, by whom; NULL */
	int64_t	cooling_off_until;	/* 0: unchanged */
	const char *objection;		/* opened: objecao_at, objecao_motivo */
	bool	objection_resolved;	/* objecao_resolvida, objecao_at NULL */
	int	reserva;		/* reserva_confirmada: -1 kept, 0, 1 */
	bool	state;			/* mode / pending moved */
	bool	shadow_state;		/* shadow: its own state moved */
	char	reason[ROUTER_REASON_MAX];
};

struct turn_plan {
	struct turn_msg_plan	*msgs;		/* nmsgs, turn_plan_free */
	size_t			 nmsgs;
	enum turn_flag		 flag;
	int64_t			 now_ms;
	struct mode_state	 st;		/* the state now (shadow: the
						 * would-be state) */
	enum mode		 real_mode;	/* the conversation's mode */
	struct turn_changes	 set;
	struct turn_funnel	 funnel[TURN_FUNNEL_MAX];
	size_t			 nfunnel;
	struct turn_route	*event;		/* the last mid-turn event's
						 * route (made on the first:
						 * turn_plan_free) */
	size_t			 nevents;	/* at most TURN_EVENTS_MAX */
	/* The reply. */
	enum turn_reply		 reply;
	const char		*canned;	/* REPLY_CANNED: messages.json key */
	int64_t			 reply_to;	/* the message answered */
	bool			 mark_read;
	/* REPLY_LLM: what the LLM gets. */
	const char		*policy_constraints;	/* in msgs' policy */
	char			*constraints;	/* REPLY_LLM (else NULL);
						 * NULL after turn_plan_forget */
	enum mode		 prompt_mode;	/* the mode the prompt is for */
	unsigned		 tools_allowed;	/* layer 1 of prompt_mode */
	unsigned		 tools_offered;	/* = allowed unless flag off/shadow */
	unsigned		 guard_modes;	/* 1u << mode: claims checked */
	bool			 bridge_consent; /* the doctor agreed this turn */
	bool			 was_objection;	/* as claimed: objection open */
	bool			 was_reserva;	/* as claimed: booking confirmed */
};

/* Decide the turn. Borrows rs and in (strings of in are referenced by the
 * plan). Returns 0, or -1 when memory ran out (plan empty). */
int	turn_decide(const struct ruleset *, const struct turn_input *,
	    struct turn_plan *) MG_MUSTCHECK;
void	turn_plan_free(struct turn_plan *);

/* Let the parts of a plan read only at the turn's start go: the messages
 * (their rows encoded, the transcript taken) and the constraints (in the
 * request). A plan waits for the LLM, thousands at once, and turn_event,
 * turn_guard and turn_tool_refusal need neither. */
void	turn_plan_forget(struct turn_plan *);

/* Does a claimed message belong in the LLM's transcript? (young enough,
 * and text or a type asked to be text) */
bool	turn_in_transcript(const struct turn_msg_plan *);

/* A mid-turn event (a bridge made by a tool): route again from the
 * plan's state; the reply stays guarded against the prompt's mode too.
 * Returns the route, in plan->event until the next event, or NULL when
 * the flag is off (nothing routes), TURN_EVENTS_MAX were routed or
 * memory ran out (the plan unchanged). */
const struct turn_route *turn_event(const struct ruleset *,
	    struct turn_plan *, enum router_event);

/* The guard's verdict on a reply. */
enum turn_verdict { VERDICT_PASS, VERDICT_REGENERATE, VERDICT_FALLBACK };
const char	*turn_verdict_name(enum turn_verdict);

#define TURN_VIOLATIONS_MAX	8

struct turn_guard_result {
	bool			 checked;	/* flag off: not checked */
	bool			 enforced;	/* flag on */
	enum turn_verdict	 verdict;	/* what enforcement does */
	bool			 send;		/* the reply goes out as is */
	size_t			 n;		/* violations (<= MAX) */
	const char		*ids[TURN_VIOLATIONS_MAX]; /* borrowed */
};

/* Check reply against the forbidden claims of every mode in
 * plan->guard_modes; regen: regenerations so far (at most 2). */
void	turn_guard(const struct ruleset *, const struct turn_plan *,
	    const char *reply, int regen, struct turn_guard_result *);

/* The claims of the modes in modes (1u << mode) that reply makes, each id
 * once, in claims-file order; returns how many (may exceed max). */
size_t	turn_claims_made(const struct ruleset *, unsigned modes,
	    const char *reply, const char **ids, size_t max);

/* Why a tool the LLM called may not run now (a text the LLM can act on,
 * returned to it as an error), or NULL when it may. */
const char	*turn_tool_refusal(const struct turn_plan *, enum tool);

/* Today's date, weekday and time in Brasília (UTC-3, no daylight saving
 * since 2019) of a time in ms, as a Portuguese sentence. */
size_t	turn_today(int64_t now_ms, char *out, size_t outlen);

/* The LLM could not answer: a canned key, or NULL for a hand-off to a
 * human (handoff_configured: LLM_FALLBACK=handoff). */
const char	*turn_llm_failed(int regen, bool handoff_configured);

/* The constraints text of a state (policy text, layers 2 and 3, the
 * micro-confirmation prompt when pending). Returns its length. */
size_t	turn_constraints(const struct ruleset *, const struct mode_state *,
	    const char *policy_constraints, char *out, size_t outlen);

#endif
