-- 0001_init.sql -- the ingest schema: inbox, delivery statuses, webhook
-- events and failures, conversations.
-- Applied by `modegate migrate` inside one transaction; forward-only.
-- SPDX-License-Identifier: MIT

-- One row per inbound WhatsApp message (entry[].changes[].value.messages[]
-- of field "messages"), deduplicated on the WhatsApp message id: Meta
-- delivers at least once and retries for 7 days. The worker (a later
-- issue) claims pending rows with FOR UPDATE SKIP LOCKED, in id order per
-- (phone_number_id, sender_key).
CREATE TABLE inbox (
	id		bigserial PRIMARY KEY,
	wamid		text NOT NULL UNIQUE,
	phone_number_id	text NOT NULL,		-- the business number's id
	sender_key	text NOT NULL,		-- from, or from_user_id (BSUID)
	wa_id		text,			-- contacts[].wa_id (may be absent)
	user_id		text,			-- contacts[].user_id / from_user_id
	profile_name	text,			-- contacts[].profile.name
	msg_type	text NOT NULL,		-- as sent: text, image, button, ...
	wa_timestamp	timestamptz,		-- messages[].timestamp
	received_at	timestamptz NOT NULL DEFAULT now(),
	raw		jsonb NOT NULL,		-- the message object
	state		text NOT NULL DEFAULT 'pending'
			CHECK (state IN ('pending', 'claimed', 'done', 'dead',
			    'skipped')),
	attempts	int NOT NULL DEFAULT 0,
	last_error	text
);
-- A new row enters three btrees: the primary key, UNIQUE (wamid)
-- (deduplication) and inbox_unlinked (0002, mg_link_inbox's queue). No
-- query finds work by sender or by a global pending scan.

-- Delivery statuses of outgoing messages (statuses[] of field "messages"):
-- one row per (message, status); a replay adds nothing and a late
-- "delivered" never overwrites "read" because nothing is overwritten.
CREATE TABLE message_statuses (
	wamid		text NOT NULL,
	status		text NOT NULL,		-- sent, delivered, read, failed, ...
	wa_timestamp	timestamptz,
	recipient	text,			-- recipient_id or recipient_user_id
	error_code	int,			-- errors[0].code, when failed
	raw		jsonb NOT NULL,
	received_at	timestamptz NOT NULL DEFAULT now(),
	UNIQUE (wamid, status)
);

-- Everything else that arrives at the webhook, recorded on purpose and
-- never answered:
--   * every change whose field is not "messages" (account_update,
--     message_template_status_update, user_preferences,
--     smb_message_echoes, phone_number_quality_update, history, ...),
--     raw = the change's value;
--   * value.errors of a "messages" change (field "messages.errors"),
--     raw = the errors array.
-- Nothing is ignored silently. A replayed body adds nothing: rows are
-- unique on a digest of (field, raw).
CREATE TABLE webhook_events (
	id		bigserial PRIMARY KEY,
	field		text NOT NULL,
	raw		jsonb NOT NULL,
	received_at	timestamptz NOT NULL DEFAULT now(),
	digest		text GENERATED ALWAYS AS
			    (md5(field || ':' || raw::text)) STORED UNIQUE
);

-- Bodies with a valid signature that are not a WhatsApp webhook (bad
-- JSON, wrong shape): the bytes exactly as received, for replay by hand.
CREATE TABLE webhook_failures (
	id		bigserial PRIMARY KEY,
	received_at	timestamptz NOT NULL DEFAULT now(),
	reason		text NOT NULL,
	body		bytea NOT NULL,
	digest		bytea GENERATED ALWAYS AS (sha256(body)) STORED UNIQUE
);

-- One conversation per (business number, doctor). Ingest does not write
-- here: the worker creates the row and moves last_inbound_at when it
-- processes a message, in order, so it still sees the inactivity gap
-- before the message it is handling.
CREATE TABLE conversations (
	id			bigserial PRIMARY KEY,
	phone_number_id		text NOT NULL,
	wa_id			text NOT NULL,	-- phone number or BSUID
	control			text NOT NULL DEFAULT 'ai'
				CHECK (control IN ('ai', 'human')),
	last_inbound_at		timestamptz,
	conversation_mode	text NOT NULL DEFAULT 'discovery'
				CHECK (conversation_mode IN ('discovery',
				    'oferta', 'followup', 'reativacao')),
	mode_updated_at		timestamptz,
	mode_updated_reason	text,
	mode_source		text NOT NULL DEFAULT 'inbound'
				CHECK (mode_source IN ('inbound', 'manual') OR
				    mode_source LIKE 'campaign:%'),
	pending_transition	text
				CHECK (pending_transition IN ('discovery',
				    'oferta', 'followup', 'reativacao')),
	pending_transition_at	timestamptz,
	created_at		timestamptz NOT NULL DEFAULT now(),
	UNIQUE (phone_number_id, wa_id)
);
