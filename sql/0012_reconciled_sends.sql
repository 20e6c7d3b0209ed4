-- 0012_reconciled_sends.sql -- exactly-once replies across crashes.
--
-- The Graph API has no idempotency key, but every message may carry
-- biz_opaque_callback_data, which Meta echoes in the statuses webhooks of
-- that message (sent, delivered, read, failed). Every message modegate
-- posts (text, template, follow-up, campaign: every outbox row but a read
-- receipt) carries "modegate:outbox:<id>" naming its outbox row
-- (mg_lease_outbox adds it to the payload it hands the sender).
--
-- A row whose lease expired without a recorded answer is *ambiguous*: its
-- process died mid-post, and Meta may or may not have accepted it. It is
-- not posted again at once: the sender's claim leaves it alone for
-- MODEGATE_SEND_RECONCILE_S more seconds (its p_reconcile_s). A status
-- naming the row settles it (state sent, Meta's wamid, audited) and
-- nothing is posted again; only silence leads to a second post (audited,
-- counted in outbox.reposts and send_reconcile_counts). A status of a
-- second message id for a row already recorded with another one is a
-- duplicate that reached WhatsApp: recorded in outbox_duplicates and
-- counted. Visible in SQL (view outbox_ambiguous, the counts table, the
-- audit) and in /metrics. This file holds the tables; the functions
-- (mg_settle_outbox, mg_lease_outbox, mg_outbox_result, mg_on_status...)
-- and the view live in sql/functions/40_outbox.sql.
-- SPDX-License-Identifier: MIT

-- The biz_opaque_callback_data of a status, as Meta echoed it.
ALTER TABLE message_statuses ADD COLUMN callback_data text;

ALTER TABLE outbox
	ADD COLUMN reposts int NOT NULL DEFAULT 0,	-- posted again after
							-- silence
	ADD COLUMN reconciled_at timestamptz;		-- settled by a status

-- A second message id Meta reported for one outbox row: that row reached
-- WhatsApp twice.
CREATE TABLE outbox_duplicates (
	wamid		text PRIMARY KEY,
	outbox_id	bigint NOT NULL,
	first_wamid	text,
	detected_at	timestamptz NOT NULL DEFAULT now()
);

-- Cluster-wide counters behind modegate_send_reconcile_total: rows
-- settled by a status after their lease expired, rows posted again after
-- silence, duplicates detected. Each moves only on a crash's leftovers,
-- so the single rows are not hot.
CREATE TABLE send_reconcile_counts (
	outcome		text PRIMARY KEY
			CHECK (outcome IN ('settled', 'reposted', 'duplicate')),
	n		bigint NOT NULL DEFAULT 0
);
INSERT INTO send_reconcile_counts (outcome)
VALUES ('settled'), ('reposted'), ('duplicate');

-- mg_lease_outbox and mg_claim_outbox gain p_reconcile_s, with a default
-- (sql/functions/40_outbox.sql): their old forms would make every call
-- ambiguous.
DROP FUNCTION IF EXISTS mg_lease_outbox(text, int, int, bigint);
DROP FUNCTION IF EXISTS mg_claim_outbox(text, int, int);

