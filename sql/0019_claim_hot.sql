-- 0019_claim_hot.sql -- a claim that updates in place.
--
-- The claim moves each message from 'pending' to 'claimed' and writes
-- its lease on the conversation. PostgreSQL writes such an update beside
-- the old row version with no new index entry (a HOT update) only when
-- no indexed column changes -- the columns of a partial index's
-- predicate count -- and the page has room. Neither held: the index of
-- open messages, inbox_conv_open, was partial on state, so every claimed
-- message added an entry to each of inbox's four indexes; and pages
-- filled by inserts (fill factor 100) have no room.
--
-- inbox_conv_open is now partial on done_at IS NULL, a column the claim
-- does not write: every open message (pending, claimed) has no done_at
-- (only mg_commit_turn, mg_fail_turn and mg_claim_turns set it, as a
-- message leaves the open states, and mg_fail_turn clears it on a
-- retry). The queries that walk it keep their state filter and add
-- done_at IS NULL. inbox and conversations keep a fifth of each page
-- free for these updates.
-- The queries are in sql/functions/30_ingest.sql, 60_turn.sql and
-- 90_followup.sql.
-- SPDX-License-Identifier: MIT

UPDATE inbox SET done_at = NULL
WHERE state IN ('pending', 'claimed') AND done_at IS NOT NULL;

DROP INDEX inbox_conv_open;
CREATE INDEX inbox_conv_open ON inbox (conversation_id, id)
	WHERE done_at IS NULL AND conversation_id IS NOT NULL;

ALTER TABLE inbox SET (fillfactor = 80);
ALTER TABLE conversations SET (fillfactor = 80);
