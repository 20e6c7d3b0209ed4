/*
 * router.h -- the mode router: the transition matrix of mode/transitions.json
 * (4b, the proposal) and the validator (4c) that turns an intent, the
 * events of the turn and the conversation's state into a decision and the
 * new state (4d).
 * Pure: no I/O.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_ROUTER_H
#define MG_ROUTER_H

#include "flat.h"

/* Events a transition may be triggered by, besides intents. */
#define EVENT_LIST(X)							\
	X(EVENT_BRIDGE_MADE, "bridge_made")				\
	X(EVENT_OUTCOME_REPORTED, "outcome_reported")			\
	X(EVENT_INACTIVITY, "inactivity")				\
	X(EVENT_CAMPAIGN, "campaign")

#define MG_ENUM_ITEM(e, s) e,
enum router_event { EVENT_LIST(MG_ENUM_ITEM) EVENT__COUNT };
#undef MG_ENUM_ITEM

const char	*event_name(int);		/* "?" when out of range */
int		 event_from_name(const char *);	/* -1 when unknown */

#define ROUTER_EV(e)		(1u << (e))

enum trans_how { HOW_AUTO, HOW_CONFIRM };

struct transition {
	enum mode	from, to;
	int		trigger_intent;	/* enum intent, or -1 */
	int		trigger_event;	/* enum router_event, or -1 */
	bool		trigger_any;	/* "any": any inbound message */
	enum trans_how	how;
};

struct matrix;

/*
 * Build the matrix from the flat form of mode/transitions.json. "from":
 * "any" stands for every mode other than "to". Problems (unknown mode,
 * intent, event or how, a transition to itself, duplicates, bad timeouts)
 * all go to d, and the bad entries are left out. Returns a new matrix
 * (matrix_free), or NULL only when memory ran out: the caller judges by d,
 * so cross-file checks can still run on what did load.
 */
struct matrix	*matrix_load(const struct flat *, struct diag *d);
void		 matrix_free(struct matrix *);

size_t		 matrix_count(const struct matrix *);
const struct transition *matrix_at(const struct matrix *, size_t);
int64_t		 matrix_pending_timeout_ms(const struct matrix *);
int		 matrix_inactivity_days(const struct matrix *);

/* The transition out of from for an intent (an exact match first, then
 * "any"), or for an event; NULL when the matrix has none. */
const struct transition *matrix_find_intent(const struct matrix *,
	    enum mode from, enum intent);
const struct transition *matrix_find_event(const struct matrix *,
	    enum mode from, enum router_event);
/* Does the matrix allow from -> to by any trigger? */
bool		 matrix_allows(const struct matrix *, enum mode from,
	    enum mode to);
/* Is there a transition from -> to that needs confirmation? A pending
 * transition is confirmed only then. */
bool		 matrix_confirms(const struct matrix *, enum mode from,
	    enum mode to);

#define ROUTER_REASON_MAX	96
#define ROUTER_SOURCE_MAX	64

/* The persisted state of a conversation (the seed's columns). */
struct mode_state {
	enum mode	mode;
	int		pending;	/* target mode, or -1: none */
	int64_t		pending_at_ms;	/* 0 when no pending */
	int64_t		updated_at_ms;
	char		reason[ROUTER_REASON_MAX];
	char		source[ROUTER_SOURCE_MAX]; /* inbound | campaign:<id>
						    * | manual */
};

/* A fresh conversation: discovery, nothing pending. */
void	mode_state_init(struct mode_state *, int64_t now_ms);

/*
 * One turn's input. An inbound message has intent >= 0; a turn without a
 * message (the shell reporting an event, a campaign, an operator) has -1.
 *
 * reserva_confirmada: the shell learnt that the booking was confirmed with
 * the person responsible; it counts as the event outcome_reported.
 * objection_open: the doctor objected in oferta and has not confirmed
 * since; a new move to oferta then always goes through a micro-confirmation
 * that revisits the objection (reason ...:revisit_objection), whose CONFIRM
 * resolves it (turn_decide records both).
 */
struct router_input {
	int		 intent;	 /* enum intent, or -1 */
	unsigned	 events;	 /* ROUTER_EV(EVENT_*) bits */
	const char	*campaign_id;	 /* with EVENT_CAMPAIGN; borrowed */
	int		 manual_target;	 /* operator's target mode, or -1 */
	int64_t		 last_message_at_ms; /* previous inbound; 0: none */
	bool		 reserva_confirmada;
	bool		 objection_open;
	int64_t		 now_ms;
};

/*
 * The outcome. decision is the final decision of the turn. When a pending
 * transition had expired it was cleared first: expired is true (audit it
 * as EXPIRED) and decision/reason describe how the message was then routed
 * afresh; reason then starts with "pending:expired;". proposal is the
 * matrix's target for this input (-1: none).
 */
struct router_result {
	enum decision		decision;
	bool			expired;
	int			proposal;
	char			reason[ROUTER_REASON_MAX]; /* of decision */
	struct mode_state	state;	/* the new state; its reason and
					 * updated_at change only when mode
					 * or pending does */
};

/* Route one turn. Borrows everything; same input, same output. */
void	router_route(const struct matrix *, const struct mode_state *,
	    const struct router_input *, struct router_result *out);

#endif
