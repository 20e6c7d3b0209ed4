-- 0016_flat_claim.sql -- a claim that stays flat, and a commit that does
-- not block foreign-key checks.
--
-- mg_claim (0003) aggregated every open inbox row to pick the oldest due
-- conversations: with 300,000 unanswered messages one claim took ~0.6 s.
-- Each conversation now carries its oldest open message id and newest
-- open arrival (open_first_id, open_newest), kept by triggers on inbox
-- for every path that links a message or moves it in or out of the open
-- states (pending, claimed), and the claim walks the partial index
-- conversations_open in that order.
--
-- The triggers recompute under the conversation's row lock, taken in a
-- statement before the one that reads inbox, so the recompute sees every
-- committed change and no other transaction can hold an uncommitted one
-- (its own trigger would hold the lock). Locks are taken in id order.
--
-- mg_commit_turn, the hot path, keeps its conversation's open columns
-- in the UPDATE it already makes (the trigger stands aside).
--
-- mg_commit_turn and mg_commit_send take the conversation FOR NO KEY
-- UPDATE instead of FOR UPDATE: it changes no key, and FOR UPDATE also
-- blocked every concurrent insert referencing the conversation (its
-- foreign-key check takes FOR KEY SHARE), such as ingest linking new
-- messages to it.
-- This file holds the columns, their backfill and the index; the
-- triggers live in sql/functions/30_ingest.sql, mg_claim, mg_commit_turn
-- and mg_commit_send in sql/functions/60_turn.sql.
-- SPDX-License-Identifier: MIT

ALTER TABLE conversations
	ADD COLUMN open_first_id	bigint,		-- oldest open inbox id
	ADD COLUMN open_newest		timestamptz;	-- newest open arrival

UPDATE conversations c SET open_first_id = x.f, open_newest = x.n
FROM (SELECT conversation_id, min(id) AS f, max(received_at) AS n
	FROM inbox
	WHERE state IN ('pending', 'claimed') AND conversation_id IS NOT NULL
	GROUP BY conversation_id) x
WHERE c.id = x.conversation_id;

CREATE INDEX conversations_open ON conversations (open_first_id)
	WHERE open_first_id IS NOT NULL;
