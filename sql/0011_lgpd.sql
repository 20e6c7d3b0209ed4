-- 0011_lgpd.sql -- personal data under the LGPD: retention, erasure,
-- access.
--
--   mg_retain(days)            the scheduler's retention pass: blanks the
--                              personal fields (message bodies, names,
--                              transcripts and prompts inside audit
--                              details, free-text notes) of rows older than
--                              MODEGATE_RETAIN_DAYS, keeping ids, times,
--                              decisions, modes and funnel rows
--   mg_forget(wa_id, by, why)  `modegate forget`: erases one doctor
--                              everywhere; the number becomes a keyed,
--                              stable pseudonym ("anon:<hex>")
--   mg_export(wa_id, by)       `modegate export`: everything stored about
--                              one doctor, as one JSON document
--
-- This migration holds their tables; the functions are in
-- sql/functions/95_lgpd.sql (and mg_append_only, 20_audit.sql; the
-- "[apagado]" of mg_inbound_text, 30_ingest.sql).
-- audit_log and funnel_events stay append-only: the application role has
-- no UPDATE or DELETE on them (sql/roles.sql). mg_retain and mg_forget are
-- SECURITY DEFINER functions of the schema's owner; they set the
-- transaction-local setting modegate.redact, and the append-only trigger
-- then lets the owner -- and only the owner -- change the personal
-- columns of a row (audit_log: details, reason; funnel_events:
-- doctor_key, metadata), nothing else. Each pass appends an audit row
-- saying what it redacted and why.
-- SPDX-License-Identifier: MIT

-- The key of the pseudonyms: random, made once, readable by the owner only
-- (sql/roles.sql revokes it from modegate_app). Without it a pseudonym of
-- a phone number cannot be recomputed by trying every number.
CREATE TABLE lgpd_key (
	id	int PRIMARY KEY DEFAULT 1 CHECK (id = 1),
	key	text NOT NULL
);
INSERT INTO lgpd_key (key) VALUES (replace(gen_random_uuid()::text ||
    gen_random_uuid()::text, '-', ''));

-- How far each table's retention pass has gone (rows with an id up to
-- last_id were looked at), so a pass reads only new rows by primary key.
CREATE TABLE lgpd_retention (
	tbl	text PRIMARY KEY,
	last_id	bigint NOT NULL DEFAULT 0
);
INSERT INTO lgpd_retention (tbl) VALUES ('inbox'), ('outbox'),
    ('audit_log'), ('funnel_events'), ('webhook_events');
