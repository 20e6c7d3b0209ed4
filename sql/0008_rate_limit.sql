-- 0008_rate_limit.sql -- a per-sender turn limit: a flood from one number
-- cannot turn into a flood of LLM calls. At most p_turns turns start per
-- conversation in any p_window_s seconds; messages that arrive while the
-- sender is over the limit are stored as always and wait, and the next
-- allowed turn answers all of them at once (the double-texting
-- coalescing of mg_claim), with one audit row (step 'worker', decision
-- 'rate_limited').
--
-- mg_claim itself is untouched: the hold rides on its existing backoff
-- predicate (conversations.next_attempt_at), which a trigger keeps no
-- earlier than next_turn_at even when mg_commit_turn / mg_fail_turn clear
-- or shorten it. The worker calls mg_claim_limited, which records each
-- turn's start after mg_claim has leased it.
-- SPDX-License-Identifier: MIT

ALTER TABLE conversations
	-- Starts of the latest turns, oldest first, at most the limit.
	ADD COLUMN turn_starts	timestamptz[] NOT NULL DEFAULT '{}',
	-- The sender is over its limit until then: no turn starts before.
	ADD COLUMN next_turn_at	timestamptz;

-- next_attempt_at is "claim no earlier than": never earlier than the
-- sender's next allowed turn, whoever writes it.
CREATE FUNCTION mg_hold_sender() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.next_turn_at > now() AND (NEW.next_attempt_at IS NULL OR
	    NEW.next_attempt_at < NEW.next_turn_at) THEN
		NEW.next_attempt_at := NEW.next_turn_at;
	END IF;
	RETURN NEW;
END $$;

CREATE TRIGGER conversations_hold_sender BEFORE UPDATE ON conversations
	FOR EACH ROW WHEN (NEW.next_turn_at IS NOT NULL)
	EXECUTE FUNCTION mg_hold_sender();

-- mg_sender_turn(conversation_id, inbox_ids, turns, window_s, window_ms):
-- a turn of the conversation starts now (just claimed, its lease held).
-- When some of its messages became due (newest + the double-texting
-- window p_window_ms) before the hold ended, the limit delayed them:
-- one audit row says how many this turn answers at once. Then now() is
-- recorded and, with p_turns starts in the last p_window_s seconds, the
-- next turn is held until the oldest of them is p_window_s old.
CREATE FUNCTION mg_sender_turn(p_conversation_id bigint, p_inbox_ids jsonb,
    p_turns int, p_window_s int, p_window_ms int) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	cv	conversations;
	held	int;
	first	bigint;
	starts	timestamptz[];
	n	int;
BEGIN
	SELECT * INTO cv FROM conversations WHERE id = p_conversation_id;
	IF cv.next_turn_at IS NOT NULL THEN
		SELECT count(*), min(i.id) INTO held, first FROM inbox i
		WHERE i.id IN (SELECT x::bigint
			FROM jsonb_array_elements_text(p_inbox_ids) x)
		    AND i.received_at + make_interval(secs => p_window_ms /
			1000.0) < cv.next_turn_at;
		IF held > 0 THEN
			INSERT INTO audit_log (conversation_id, inbox_id, step,
			    decision, reason, details)
			VALUES (cv.id, first, 'worker', 'rate_limited',
			    format('sender over %s turns in %s s', p_turns,
				p_window_s),
			    jsonb_build_object('held', held,
				'messages', jsonb_array_length(p_inbox_ids),
				'held_until', cv.next_turn_at,
				'turns', p_turns, 'window_s', p_window_s));
		END IF;
	END IF;
	starts := cv.turn_starts || now();
	n := cardinality(starts);
	IF n > p_turns THEN
		starts := starts[n - p_turns + 1 : n];
		n := p_turns;
	END IF;
	UPDATE conversations SET turn_starts = starts,
	    next_turn_at = CASE WHEN n >= p_turns THEN
		starts[1] + make_interval(secs => p_window_s) END
	WHERE id = cv.id;
END $$;

-- mg_claim_limited(worker, lease_seconds, window_ms, limit, turns,
-- window_s): mg_claim, then each new turn is counted against its sender
-- (mg_sender_turn). A take-over (retaken) is the same turn, not a new
-- one. p_turns 0: no limit (mg_claim alone).
CREATE FUNCTION mg_claim_limited(p_worker text, p_lease_seconds int,
    p_window_ms int, p_limit int, p_turns int, p_window_s int)
RETURNS SETOF jsonb
LANGUAGE plpgsql AS $$
DECLARE
	r	jsonb;
BEGIN
	FOR r IN SELECT * FROM mg_claim(p_worker, p_lease_seconds, p_window_ms,
	    p_limit) LOOP
		IF p_turns > 0 AND NOT (r ->> 'retaken')::boolean THEN
			PERFORM mg_sender_turn((r ->> 'conversation_id')::bigint,
			    r -> 'inbox_ids', p_turns, p_window_s, p_window_ms);
		END IF;
		RETURN NEXT r;
	END LOOP;
END $$;
