-- 0006_ingest_indexes.sql -- fewer inbox indexes paid by every webhook
-- insert. Ingest inserts rows with conversation_id NULL and state
-- 'pending', so before this migration each new row went into seven
-- btrees; profiles of the ingest benchmark showed index insertion as the
-- largest single share of PostgreSQL's CPU per request. Now a new row
-- enters three: the primary key, UNIQUE (wamid) (deduplication) and
-- inbox_unlinked (mg_link_inbox's queue).
-- SPDX-License-Identifier: MIT

-- No query reads these: the worker finds its work through
-- conversation_id (mg_link_inbox, then mg_claim), never by sender or by
-- a global pending scan.
DROP INDEX inbox_pending;
DROP INDEX inbox_sender;

-- The conversation indexes only matter once mg_link_inbox has set
-- conversation_id; every query using them filters on conversation_id
-- (= a value, or IS NOT NULL), which implies the predicate. Linking is
-- an UPDATE of conversation_id, which pays for them then.
DROP INDEX inbox_conv_open;
DROP INDEX inbox_conv;
CREATE INDEX inbox_conv ON inbox (conversation_id, id)
	WHERE conversation_id IS NOT NULL;
CREATE INDEX inbox_conv_open ON inbox (conversation_id, id)
	WHERE state IN ('pending', 'claimed') AND conversation_id IS NOT NULL;
