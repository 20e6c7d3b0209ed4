-- test_rate_limit.sql -- the per-sender turn limit (0008): mg_claim_limited,
-- mg_sender_turn and the hold kept on next_attempt_at.
-- SPDX-License-Identifier: MIT
BEGIN;
SELECT plan(18);

CREATE FUNCTION pg_temp.msg(w text, s text, age interval) RETURNS bigint
LANGUAGE sql AS $$
	INSERT INTO inbox (wamid, phone_number_id, sender_key, wa_id, msg_type,
	    wa_timestamp, received_at, raw)
	VALUES (w, 'PN1', s, s, 'text', now() - age, now() - age,
	    jsonb_build_object('text', jsonb_build_object('body', 'oi')))
	RETURNING id
$$;
-- Claim with a limit of 2 turns per 60 s; conversation ids claimed.
CREATE FUNCTION pg_temp.claim(w text) RETURNS SETOF bigint LANGUAGE sql AS $$
	SELECT (j ->> 'conversation_id')::bigint
	FROM mg_claim_limited(w, 60, 2000, 10, 2, 60) j
$$;
CREATE FUNCTION pg_temp.conv(s text) RETURNS bigint LANGUAGE sql AS $$
	SELECT id FROM conversations WHERE wa_id = s
$$;
CREATE FUNCTION pg_temp.commit(w text, s text) RETURNS boolean
LANGUAGE sql AS $$
	SELECT (mg_commit_turn(w, pg_temp.conv(s), '{}') ->> 'ok')::boolean
$$;

-- Two turns within the window are allowed.
SELECT pg_temp.msg('a1', '5511900000001', '10 s');
SELECT is((SELECT count(*) FROM pg_temp.claim('w1')), 1::bigint,
    'the first turn of a sender is claimed');
SELECT ok(pg_temp.commit('w1', '5511900000001'), 'first turn commits');
SELECT is((SELECT next_turn_at FROM conversations
    WHERE wa_id = '5511900000001'), NULL,
    'one turn of two: the sender is not held');
SELECT pg_temp.msg('a2', '5511900000001', '9 s');
SELECT is((SELECT count(*) FROM pg_temp.claim('w1')), 1::bigint,
    'the second turn within the window is claimed');
SELECT ok(pg_temp.commit('w1', '5511900000001'), 'second turn commits');
SELECT is((SELECT next_attempt_at FROM conversations
    WHERE wa_id = '5511900000001'), now() + interval '60 s',
    'at the limit, the release keeps the hold (mg_commit_turn clears '
    'next_attempt_at, the trigger puts the hold back)');

-- Over the limit: the flood is stored and waits; other senders do not.
SELECT pg_temp.msg('a3', '5511900000001', '8 s');
SELECT pg_temp.msg('a4', '5511900000001', '7 s');
SELECT pg_temp.msg('b1', '5511900000002', '8 s');
SELECT is(ARRAY(SELECT pg_temp.claim('w2')),
    ARRAY[pg_temp.conv('5511900000002')],
    'the held sender is not claimed; another sender is');
SELECT is((SELECT count(*) FROM inbox WHERE wamid IN ('a3', 'a4')
    AND state = 'pending'), 2::bigint, 'held messages are stored, pending');

-- A minute later (the turn starts moved back 61 s): one turn answers both.
UPDATE conversations SET next_attempt_at = NULL,
    next_turn_at = now() - interval '1 s',
    turn_starts = ARRAY[now() - interval '61 s', now() - interval '61 s']
WHERE wa_id = '5511900000001';
CREATE TEMP TABLE c AS SELECT j FROM mg_claim_limited('w3', 60, 2000, 10, 2, 60) j;
SELECT is((SELECT j -> 'inbox_ids' FROM c),
    (SELECT jsonb_agg(id ORDER BY id) FROM inbox WHERE wamid IN ('a3', 'a4')),
    'when the hold ends, the held messages come in one turn');
SELECT is((SELECT jsonb_build_object('n', count(*), 'held',
	max(details ->> 'held'), 'inbox', max(inbox_id))
    FROM audit_log WHERE step = 'worker' AND decision = 'rate_limited'
    AND conversation_id = pg_temp.conv('5511900000001')),
    jsonb_build_object('n', 1, 'held', '2',
	'inbox', (SELECT id FROM inbox WHERE wamid = 'a3')),
    'one audit row: rate_limited, two messages held');
SELECT is((SELECT cardinality(turn_starts) FROM conversations
    WHERE wa_id = '5511900000001'), 2, 'only the last 2 turn starts are kept');
SELECT is((SELECT next_turn_at FROM conversations
    WHERE wa_id = '5511900000001'), now() - interval '1 s',
    'sliding window: the hold ends when the older of the two is 60 s old');

-- A take-over is the same turn, not a new one.
UPDATE conversations SET lease_until = now() - interval '1 s'
WHERE wa_id = '5511900000001';
SELECT is((SELECT count(*) FROM pg_temp.claim('w4')), 1::bigint,
    'an expired lease is retaken');
SELECT is((SELECT turn_starts FROM conversations
    WHERE wa_id = '5511900000001'),
    ARRAY[now() - interval '61 s', now()]::timestamptz[],
    'the retaken turn is not counted again');

-- A failed turn's longer backoff is kept; a shorter one becomes the hold.
SELECT mg_fail_turn('w4', pg_temp.conv('5511900000001'),
    ARRAY(SELECT id FROM inbox WHERE wamid IN ('a3', 'a4')), 'llm down', 5);
SELECT is((SELECT next_attempt_at FROM conversations
    WHERE wa_id = '5511900000001'), now() + interval '10 s',
    'a backoff (10 s) later than the hold is kept');
UPDATE conversations SET next_turn_at = now() + interval '30 s',
    next_attempt_at = now() + interval '5 s'
WHERE wa_id = '5511900000001';
SELECT is((SELECT next_attempt_at FROM conversations
    WHERE wa_id = '5511900000001'), now() + interval '30 s',
    'a backoff shorter than the hold is raised to it');

-- Limit 0: no limit, nothing recorded.
SELECT pg_temp.msg('c1', '5511900000003', '10 s');
SELECT is((SELECT count(*) FROM mg_claim_limited('w5', 60, 2000, 10, 0, 60)),
    1::bigint, 'limit 0 claims as mg_claim does');
SELECT is((SELECT cardinality(turn_starts) FROM conversations
    WHERE wa_id = '5511900000003'), 0, 'limit 0 records no turn start');

SELECT * FROM finish();
ROLLBACK;
