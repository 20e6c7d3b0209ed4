-- test_claim.sql -- mg_claim: leases, take-over, double texting, order.
-- SPDX-License-Identifier: MIT
BEGIN;
SELECT plan(20);

-- An inbound text from sender s, received age ago (wa_timestamp = wa_age
-- ago when given).
CREATE FUNCTION pg_temp.msg(w text, s text, body text, age interval,
    wa_age interval DEFAULT NULL) RETURNS bigint LANGUAGE sql AS $$
	INSERT INTO inbox (wamid, phone_number_id, sender_key, wa_id, msg_type,
	    wa_timestamp, received_at, raw)
	VALUES (w, 'PN1', s, s, 'text', now() - coalesce(wa_age, age),
	    now() - age, jsonb_build_object('text', jsonb_build_object('body', body)))
	RETURNING id
$$;

SELECT pg_temp.msg('a1', '5511900000001', 'oi', '10 s');
SELECT pg_temp.msg('a2', '5511900000001', 'tudo bem?', '9 s');
SELECT pg_temp.msg('b1', '5511900000002', 'quero vagas', '10 s');
SELECT pg_temp.msg('b2', '5511900000002', 'de pediatria', '1 s');

CREATE TEMP TABLE c1 AS SELECT * FROM mg_claim('w1', 60, 2000, 10) j;

SELECT is((SELECT count(*) FROM c1), 1::bigint,
    'double texting: a burst whose newest message is inside the window is not claimed yet');
SELECT is((SELECT j -> 'inbox_ids' FROM c1),
    (SELECT jsonb_agg(id ORDER BY id) FROM inbox WHERE wamid IN ('a1', 'a2')),
    'both messages of the quiet conversation come in one claim, in order');
SELECT is((SELECT count(*) FROM conversations WHERE phone_number_id = 'PN1'),
    2::bigint, 'a conversation row is created per (business number, doctor)');
SELECT is((SELECT count(*) FROM inbox WHERE conversation_id IS NULL), 0::bigint,
    'every inbox row is linked to its conversation');
SELECT is((SELECT array_agg(DISTINCT state || '/' || claimed_by) FROM inbox
    WHERE wamid IN ('a1', 'a2')), ARRAY['claimed/w1'],
    'claimed rows record the state and the worker');
SELECT is((SELECT lease_owner FROM conversations WHERE wa_id = '5511900000001'),
    'w1', 'the conversation holds the lease of w1');

SELECT is((SELECT count(*) FROM mg_claim('w2', 60, 2000, 10)), 0::bigint,
    'a second claim while the lease is live gets nothing');

-- The burst goes quiet: now it is due, with both messages.
UPDATE inbox SET received_at = now() - interval '3 s' WHERE wamid = 'b2';
CREATE TEMP TABLE c2 AS SELECT * FROM mg_claim('w2', 60, 2000, 10) j;
SELECT is((SELECT j -> 'inbox_ids' FROM c2),
    (SELECT jsonb_agg(id ORDER BY id) FROM inbox WHERE wamid IN ('b1', 'b2')),
    'after the window the whole burst is claimed once');

-- A crashed worker: its lease expires and another worker takes over.
UPDATE conversations SET lease_until = now() - interval '1 s'
WHERE wa_id = '5511900000001';
CREATE TEMP TABLE c3 AS SELECT * FROM mg_claim('w3', 60, 2000, 10) j;
SELECT is((SELECT j -> 'inbox_ids' FROM c3), (SELECT j -> 'inbox_ids' FROM c1),
    'an expired lease is taken over with the same messages');
SELECT is((SELECT (j ->> 'retaken')::boolean FROM c3), true,
    'the take-over is flagged as retaken');
SELECT is((SELECT array_agg(DISTINCT attempts) FROM inbox
    WHERE wamid IN ('a1', 'a2')), ARRAY[1],
    'a take-over counts as an attempt');
SELECT is(mg_commit_turn('w1', (SELECT (j ->> 'conversation_id')::bigint FROM c1),
    '{}') ->> 'reason', 'lease_lost',
    'the crashed worker can no longer commit');

-- Order: by wa_timestamp, then arrival, then id.
SELECT pg_temp.msg('c2', '5511900000003', 'segunda', '10 s', '20 s');
SELECT pg_temp.msg('c1', '5511900000003', 'primeira', '9 s', '30 s');
CREATE TEMP TABLE c4 AS SELECT * FROM mg_claim('w4', 60, 2000, 10) j;
SELECT is((SELECT j -> 'inbox_ids' FROM c4 WHERE (j ->> 'conversation_id')::bigint =
	(SELECT id FROM conversations WHERE wa_id = '5511900000003')),
    (SELECT jsonb_agg(id ORDER BY wamid) FROM inbox WHERE wamid IN ('c1', 'c2')),
    'messages are returned in WhatsApp timestamp order');

-- Backoff: a conversation with next_attempt_at in the future waits.
SELECT pg_temp.msg('d1', '5511900000004', 'oi', '10 s');
UPDATE conversations SET next_attempt_at = now() + interval '1 min'
WHERE wa_id = '5511900000004';
SELECT mg_link_inbox();
UPDATE conversations SET next_attempt_at = now() + interval '1 min'
WHERE wa_id = '5511900000004';
SELECT is((SELECT count(*) FROM mg_claim('w5', 60, 0, 10)), 0::bigint,
    'a conversation in backoff is not claimed');
UPDATE conversations SET next_attempt_at = now() - interval '1 s'
WHERE wa_id = '5511900000004';
SELECT is((SELECT count(*) FROM mg_claim('w5', 60, 0, 10)), 1::bigint,
    'it is claimed once the backoff has passed');

-- p_limit bounds the number of conversations.
SELECT pg_temp.msg('e' || g, '55119100' || g, 'oi', '10 s')
FROM generate_series(1, 5) g;
SELECT is((SELECT count(*) FROM mg_claim('w6', 60, 0, 3)), 3::bigint,
    'at most p_limit conversations per claim');
SELECT throws_ok($$SELECT mg_claim('', 60, 0, 3)$$, 'P0001', NULL,
    'a worker name is required');

-- Linking moves each conversation's open columns (sql/0016) to what a
-- recompute from its open messages gives: new conversations, new
-- messages of conversations with older open ones, and of one whose
-- messages are all done.
SELECT pg_temp.msg('k' || g, '5511930000' || g % 3, 'oi',
    ((20 - g) || ' s')::interval) FROM generate_series(1, 6) g;
SELECT mg_link_inbox();
UPDATE inbox SET state = 'done', done_at = now() WHERE wamid IN ('k3', 'k6');
SELECT pg_temp.msg('k' || g, '5511930000' || g % 3, 'oi',
    ((20 - g) || ' s')::interval) FROM generate_series(7, 9) g;
SELECT mg_link_inbox();
SELECT is((SELECT count(*) FROM conversations c, LATERAL (
	SELECT min(i.id) AS f, max(i.received_at) AS r FROM inbox i
	WHERE i.conversation_id = c.id AND i.done_at IS NULL
	    AND i.state IN ('pending', 'claimed')) x
    WHERE c.wa_id LIKE '5511930000%' AND c.open_first_id = x.f
	AND c.open_newest = x.r), 3::bigint,
    'linking keeps every conversation''s first open message and newest arrival');

-- The claim updates in place (sql/0019): moving a message to 'claimed'
-- and writing the lease change no indexed column, so each row's new
-- version is a HOT update (no index entry), which is what keeps a claim
-- of 100 turns within a few milliseconds.
SELECT count(*) FROM mg_claim('wx', 60, 0, 100);	-- nothing else due
SELECT pg_temp.msg('h' || g, '5511920000' || g % 2, 'oi', '10 s')
FROM generate_series(1, 4) g;
SELECT mg_link_inbox();
CREATE TEMP TABLE hot0 AS SELECT c.relname,
    pg_stat_get_xact_tuples_updated(c.oid) AS upd,
    pg_stat_get_xact_tuples_hot_updated(c.oid) AS hot
FROM pg_class c WHERE c.relname IN ('inbox', 'conversations');
SELECT count(*) FROM mg_claim('wh', 60, 0, 10);
SELECT is((SELECT pg_stat_get_xact_tuples_updated(c.oid) - h.upd ||
	' updated, ' || pg_stat_get_xact_tuples_hot_updated(c.oid) - h.hot ||
	' in place'
    FROM pg_class c JOIN hot0 h USING (relname) WHERE c.relname = 'inbox'),
    '4 updated, 4 in place',
    'the claim updates its messages in place (HOT: no index entry)');
SELECT is((SELECT pg_stat_get_xact_tuples_updated(c.oid) - h.upd ||
	' updated, ' || pg_stat_get_xact_tuples_hot_updated(c.oid) - h.hot ||
	' in place'
    FROM pg_class c JOIN hot0 h USING (relname)
    WHERE c.relname = 'conversations'),
    '2 updated, 2 in place',
    'the claim writes its leases in place (HOT: no index entry)');

SELECT * FROM finish();
ROLLBACK;
