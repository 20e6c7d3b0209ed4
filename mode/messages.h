/*
 * messages.h -- mode/messages.json: what a message type gets (answered as
 * text, asked to be text, ignored) and Julia's canned replies by key.
 * Pure: no I/O; loaded from the flat form like every rule file.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_MESSAGES_H
#define MG_MESSAGES_H

#include "flat.h"

enum msg_action { MSG_TEXT, MSG_ASK_TEXT, MSG_IGNORE };

/* The canned replies every rule folder must hold. */
#define MESSAGES_REPLY_LIST(X)						\
	X("ask_text")							\
	X("opt_out_confirmation")					\
	X("fallback")							\
	X("guard_fallback")						\
	X("followup")							\
	X("opt_in_confirmation")					\
	X("handoff_confirmation")

struct messages;

/* NULL only when memory ran out; problems (an unknown action, a missing
 * reply) go to d. */
struct messages	*messages_load(const struct flat *, struct diag *d);
void		 messages_free(struct messages *);

/* The action of a message type (the "default" one when the type is not
 * listed or NULL). */
enum msg_action	 messages_action(const struct messages *, const char *type);
const char	*messages_action_name(enum msg_action);

/* A canned reply's text, or NULL when the key is unknown. */
const char	*messages_reply(const struct messages *, const char *key);

#endif
