-- 0008_rate_limit.sql -- a per-sender turn limit: a flood from one number
-- cannot turn into a flood of LLM calls. At most p_turns turns start per
-- conversation in any p_window_s seconds; messages that arrive while the
-- sender is over the limit are stored as always and wait, and the next
-- allowed turn answers all of them at once (the double-texting
-- coalescing of mg_claim), with one audit row (step 'worker', decision
-- 'rate_limited').
--
-- The hold rides on mg_claim's backoff predicate
-- (conversations.next_attempt_at), which a trigger keeps no earlier than
-- next_turn_at; the worker calls mg_claim_limited, which records each
-- turn's start after mg_claim has leased it (all in
-- sql/functions/60_turn.sql). This migration holds the columns.
-- SPDX-License-Identifier: MIT

ALTER TABLE conversations
	-- Starts of the latest turns, oldest first, at most the limit.
	ADD COLUMN turn_starts	timestamptz[] NOT NULL DEFAULT '{}',
	-- The sender is over its limit until then: no turn starts before.
	ADD COLUMN next_turn_at	timestamptz;
