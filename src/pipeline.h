/*
 * pipeline.h -- the decision part of a turn for one inbound message,
 * shared by `modegate explain` and the worker: intent -> policy -> mode
 * router (when the flag lets it run) -> gate constraints; and the output
 * guard for a mode. No I/O: time and state come in as arguments.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_PIPELINE_H
#define MG_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ruleset.h"

/* What one message is decided on; text is borrowed. */
struct pipeline_input {
	const char		*text;
	size_t			 len;
	struct mode_state	 state;		/* before this message */
	bool			 route;		/* flag on or shadow */
	bool			 human_control;
	int64_t			 opted_out_at;	/* ms; 0: never */
	int64_t			 cooling_off_until; /* ms; 0: none */
	bool			 serious_objection_open;
	bool			 reserva_confirmada;
	bool			 objecao_resolvida;
	int64_t			 last_message_at_ms; /* 0: none */
	int64_t			 now_ms;
};

struct pipeline_result {
	struct intent_result	intent;
	struct policy_result	policy;
	bool			routed;	/* the router ran (policy ALLOW) */
	struct router_result	route;
	struct mode_state	state;	/* after: route.state or the input's */
	char			constraints[GATE_TEXT_MAX]; /* for state */
};

/* Decide one message. Borrows rs and in; deterministic. */
void	pipeline_decide(const struct ruleset *, const struct pipeline_input *,
	    struct pipeline_result *out);

/* The constraints text for a state: policy text, the mode's layers 2 and
 * 3 and the micro-confirmation prompt when pending. Returns the length. */
size_t	pipeline_constraints(const struct ruleset *, const struct mode_state *,
	    const char *policy_constraints, char *out, size_t outlen);

#define PIPELINE_VIOLATIONS_MAX	8

/* The forbidden claims of mode m found in reply: their ids (borrowed from
 * rs) in ids[0..max); returns how many were found (may exceed max). */
size_t	pipeline_guard(const struct ruleset *, enum mode m, const char *reply,
	    const char **ids, size_t max);

#endif
