/*
 * wa.h -- the WhatsApp Cloud API webhook at the edge: signature check,
 * verification handshake, and payload extraction into plain structs.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_WA_H
#define MG_WA_H

#include <stddef.h>
#include <stdint.h>

#include "../../mode/core.h"

struct json_object;

#define WA_MAX_BODY	(3u * 1024 * 1024)	/* Meta: up to 3 MB */

/*
 * 1 when header is "sha256=" followed by 64 hex digits (either case)
 * equal to HMAC-SHA256(secret, body[0..len)), compared in constant time;
 * 0 otherwise (header NULL, wrong prefix, wrong length, wrong digest).
 */
int	wa_signature_ok(const char *header, const void *body, size_t len,
	    const char *secret);

/*
 * The GET /webhook handshake. query is the raw query string (borrowed).
 * Returns a new copy of hub.challenge (caller frees) when hub.mode is
 * "subscribe" and hub.verify_token equals verify_token (constant time);
 * NULL otherwise: answer 403.
 */
char	*wa_handshake(const char *query, const char *verify_token);
/* The same; on refusal *why says which check failed (static text). */
char	*wa_handshake_why(const char *query, const char *verify_token,
	    const char **why);

/* One inbound message (field "messages", value.messages[]). */
struct wa_message {
	const char	*wamid;
	const char	*phone_number_id;
	const char	*sender_key;	/* from, else from_user_id */
	const char	*wa_id;		/* contact wa_id or from; may be NULL */
	const char	*user_id;	/* from_user_id or contact user_id */
	const char	*profile_name;	/* may be NULL */
	const char	*type;		/* as sent, unknown types included */
	int64_t		 timestamp;	/* Unix seconds; -1 when absent */
	const char	*raw;		/* the message object as JSON text */
};

/* One delivery status (field "messages", value.statuses[]). */
struct wa_status {
	const char	*wamid;
	const char	*status;
	const char	*recipient;	/* recipient_id or recipient_user_id */
	const char	*callback;	/* biz_opaque_callback_data, or NULL */
	int64_t		 timestamp;	/* -1 when absent */
	int		 has_error;
	int		 error_code;	/* errors[0].code when has_error */
	const char	*raw;
};

/* Anything else: another field's value, or value.errors. */
struct wa_event {
	const char	*field;		/* "messages.errors" for value.errors */
	const char	*raw;
};

/*
 * A parsed webhook body. Every string is borrowed from the JSON tree the
 * payload owns, valid until wa_payload_free. raw texts hold no \u0000
 * (PostgreSQL's jsonb refuses it; it becomes \ufffd).
 */
struct wa_payload {
	struct json_object	*root;
	struct wa_message	*msgs;
	size_t			 nmsgs, capmsgs;
	struct wa_status	*stats;
	size_t			 nstats, capstats;
	struct wa_event		*events;
	size_t			 nevents, capevents;
};

/*
 * Parse body (strict JSON, valid UTF-8) as a WhatsApp Business Account
 * webhook and extract every entry[] x changes[] x messages[] / statuses[]
 * / errors and other fields. Returns 0, or -1 with the reason in err when
 * the body is not such a webhook (the payload is then empty but must
 * still be freed).
 */
int	wa_parse(struct wa_payload *, const char *body, size_t len, char *err,
	    size_t errlen) MG_MUSTCHECK;
void	wa_payload_free(struct wa_payload *);

#endif
