-- test_round_trips.sql -- 0009: the claim with its context, and the read
-- receipt and the commit leasing their outbox rows to the sender.
-- SPDX-License-Identifier: MIT
BEGIN;
SELECT plan(45);

CREATE FUNCTION pg_temp.msg(w text, s text, body text, age interval)
RETURNS bigint LANGUAGE sql AS $$
	INSERT INTO inbox (wamid, phone_number_id, sender_key, wa_id, msg_type,
	    wa_timestamp, received_at, raw)
	VALUES (w, 'PN9', s, s, 'text', now() - age, now() - age,
	    jsonb_build_object('text', jsonb_build_object('body', body)))
	RETURNING id
$$;
CREATE FUNCTION pg_temp.cid(s text) RETURNS bigint LANGUAGE sql AS
    $$SELECT id FROM conversations WHERE phone_number_id = 'PN9' AND wa_id = s$$;
CREATE FUNCTION pg_temp.reply(body text) RETURNS jsonb LANGUAGE sql AS $$
	SELECT jsonb_build_object('outbox', jsonb_build_array(jsonb_build_object(
	    'kind', 'text', 'payload', jsonb_build_object('type', 'text',
		'text', jsonb_build_object('body', body)))))
$$;

-- The claim carries each turn's context.
SELECT pg_temp.msg('r1', '5511977770001', 'oi', '10 s');
SELECT pg_temp.msg('r2', '5511977770001', 'quero vagas', '9 s');
SELECT pg_temp.msg('r3', '5511977770002', 'bom dia', '10 s');
CREATE TEMP TABLE c AS SELECT j FROM mg_claim_turns('w1', 60, 2000, 10, 0, 60, 20, 5) j;
SELECT is((SELECT count(*) FROM c), 2::bigint, 'claim: one row per due conversation');
SELECT is((SELECT jsonb_path_query_array(j -> 'context' -> 'messages', '$[*].wamid')
    FROM c WHERE (j ->> 'conversation_id')::bigint = pg_temp.cid('5511977770001')),
    '["r1", "r2"]', 'claim: the context holds the claimed messages, in order');
SELECT is((SELECT j -> 'context' FROM c
    WHERE (j ->> 'conversation_id')::bigint = pg_temp.cid('5511977770002')),
    mg_context(pg_temp.cid('5511977770002'),
	(SELECT array_agg(id) FROM inbox WHERE wamid = 'r3'), 20),
    'claim: the context is mg_context''s, read after the claim');
SELECT is((SELECT j #>> '{context,conversation,wa_id}' FROM c
    WHERE (j ->> 'conversation_id')::bigint = pg_temp.cid('5511977770002')),
    '5511977770002', 'claim: the context names its conversation');
SELECT is((SELECT lease_owner FROM conversations WHERE id = pg_temp.cid('5511977770001')),
    'w1', 'claim: the lease is held as with mg_claim');

-- The read receipt, leased to the sender at once.
CREATE TEMP TABLE rd AS SELECT mg_start_read('w1', pg_temp.cid('5511977770001'),
    (SELECT id FROM inbox WHERE wamid = 'r2'), 's1', 30, 5) AS r;
SELECT is((SELECT jsonb_array_length(r -> 'send') FROM rd), 1,
    'read: the receipt comes back leased');
SELECT is((SELECT r -> 'send' -> 0 ->> 'id' FROM rd), (SELECT r ->> 'outbox_id' FROM rd),
    'read: the leased row is the receipt');
SELECT is((SELECT state || '/' || lease_owner FROM outbox
    WHERE id = (SELECT (r ->> 'outbox_id')::bigint FROM rd)),
    'sending/s1', 'read: the row is sending, leased to the sender');
SELECT is((SELECT r -> 'send' -> 0 #>> '{payload,message_id}' FROM rd), 'r2',
    'read: the leased row carries the mark-as-read body');
SELECT is(mg_start_read('w1', pg_temp.cid('5511977770002'),
    (SELECT id FROM inbox WHERE wamid = 'r3'), NULL, 30, 5) -> 'send', '[]',
    'read: no sender, nothing leased');
SELECT is((SELECT state FROM outbox WHERE kind = 'read'
    AND conversation_id = pg_temp.cid('5511977770002')), 'pending',
    'read: then the receipt waits for the sender''s claim');
SELECT is(mg_start_read('w9', pg_temp.cid('5511977770001'),
    (SELECT id FROM inbox WHERE wamid = 'r2'), 's1', 30, 5) ->> 'reason', 'lease_lost',
    'read: refused without the lease');

-- The commit leases the reply, after the receipt and in order.
CREATE TEMP TABLE cm AS SELECT mg_commit_send('w1', pg_temp.cid('5511977770001'),
    pg_temp.reply('Oi! Sou a Julia.'), 's1', 30, 5) AS r;
SELECT is((SELECT (r ->> 'ok') || '/' || jsonb_array_length(r -> 'send') FROM cm), 'true/1',
    'commit: committed, one row leased');
SELECT is((SELECT r -> 'send' -> 0 #>> '{payload,text,body}' FROM cm), 'Oi! Sou a Julia.',
    'commit: the leased row is the reply');
SELECT is((SELECT r -> 'send' -> 0 ->> 'id' FROM cm), (SELECT r -> 'outbox_ids' ->> 0 FROM cm),
    'commit: the reply''s outbox id');

-- A reply behind a message still in flight waits; the sender's claim
-- takes it later.
SELECT pg_temp.msg('r4', '5511977770001', 'e ai?', '5 s');
SELECT is((SELECT count(*) FROM mg_claim_turns('w1', 60, 0, 10, 0, 60, 20, 5)), 1::bigint,
    'the next message is claimed');
CREATE TEMP TABLE cm2 AS SELECT mg_commit_send('w1', pg_temp.cid('5511977770001'),
    pg_temp.reply('Segunda resposta'), 's1', 30, 5) AS r;
SELECT is((SELECT r -> 'send' FROM cm2), '[]',
    'commit: a reply behind a message being sent is not leased');
SELECT is((SELECT state FROM outbox WHERE id = (SELECT (r -> 'outbox_ids' ->> 0)::bigint FROM cm2)),
    'pending', 'commit: it stays pending, in order');

-- A lost lease commits nothing and leases nothing.
SELECT is(mg_commit_send('w9', pg_temp.cid('5511977770002'), pg_temp.reply('x'), 's1', 30, 5),
    '{"ok": false, "reason": "lease_lost", "send": []}'::jsonb,
    'commit: without the lease, nothing');

-- Send limit 0 (the sender is full): committed, left to the claim.
SELECT is((SELECT (r ->> 'ok') || '/' || (r -> 'send')::text FROM
    mg_commit_send('w1', pg_temp.cid('5511977770002'), pg_temp.reply('y'), 's1', 30, 0) r),
    'true/[]', 'commit: with no room in the sender, committed and not leased');

-- A human takes the chat over while a turn runs: no AI reply.
SELECT pg_temp.msg('r5', '5511977770003', 'quero falar de vagas', '5 s');
SELECT is((SELECT count(*) FROM mg_claim_turns('w1', 60, 0, 10, 0, 60, 20, 5)), 1::bigint,
    'takeover: the turn is claimed');
SELECT mg_takeover('5511977770003', 'ana', 'assumindo');
CREATE TEMP TABLE cm3 AS SELECT mg_commit_send('w1', pg_temp.cid('5511977770003'),
    pg_temp.reply('Resposta da IA') || '{"audit":[{"step":"policy","decision":"allow"}]}',
    's1', 30, 5) AS r;
SELECT is((SELECT (r ->> 'ok') || '/' || (r -> 'outbox_ids')::text || '/' || (r -> 'send')::text
    FROM cm3), 'true/[]/[]', 'takeover: the turn commits without its reply');
SELECT is((SELECT count(*) FROM outbox WHERE conversation_id = pg_temp.cid('5511977770003')
    AND kind = 'text'), 0::bigint, 'takeover: nothing queued for the doctor');
SELECT is((SELECT string_agg(step || '/' || decision || '/' || coalesce(reason, '-'), ',' ORDER BY id)
    FROM audit_log WHERE conversation_id = pg_temp.cid('5511977770003') AND step <> 'control'
    OR (conversation_id = pg_temp.cid('5511977770003') AND reason = 'reply_withheld')),
    'policy/allow/-,control/human/reply_withheld',
    'takeover: the turn''s audit is kept, and the withheld reply audited');
SELECT is((SELECT state FROM inbox WHERE wamid = 'r5'), 'done',
    'takeover: the message is done (the human answers it)');
-- A turn that hands over itself (encaminhar_humano) still says so.
SELECT pg_temp.msg('r6', '5511977770003', 'me passa pra alguem', '4 s');
UPDATE conversations SET control = 'ai' WHERE id = pg_temp.cid('5511977770003');
SELECT is((SELECT count(*) FROM mg_claim_turns('w1', 60, 0, 10, 0, 60, 20, 5)), 1::bigint,
    'handoff: the next turn is claimed');
UPDATE conversations SET control = 'human' WHERE id = pg_temp.cid('5511977770003');
SELECT is(jsonb_array_length(mg_commit_send('w1', pg_temp.cid('5511977770003'),
    pg_temp.reply('Vou te passar para um colega') ||
    '{"conversation":{"control":"human"}}', 's1', 30, 5) -> 'outbox_ids'), 1,
    'handoff: a turn that set human control itself keeps its reply');

-- A message whose turn keeps dying with its process ends dead.
SELECT pg_temp.msg('p1', '5511977770004', 'mensagem que derruba', '9 s');
SELECT pg_temp.msg('p2', '5511977770004', 'e outra depois', '8 s');
SELECT is((SELECT count(*) FROM mg_claim_turns('w1', 60, 0, 10, 0, 60, 20, 3)), 1::bigint,
    'poison: claimed');
-- The process dies twice more with the same turn (leases expire, retaken).
UPDATE conversations SET lease_until = now() - interval '1 s' WHERE id = pg_temp.cid('5511977770004');
SELECT is((SELECT j -> 'inbox_ids' FROM mg_claim_turns('w2', 60, 0, 10, 0, 60, 20, 3) j),
    (SELECT jsonb_agg(id ORDER BY id) FROM inbox WHERE wamid IN ('p1', 'p2')),
    'poison: retaken once, still both messages');
UPDATE conversations SET lease_until = now() - interval '1 s' WHERE id = pg_temp.cid('5511977770004');
SELECT is((SELECT j -> 'inbox_ids' FROM mg_claim_turns('w3', 60, 0, 10, 0, 60, 20, 3) j),
    (SELECT jsonb_agg(id ORDER BY id) FROM inbox WHERE wamid IN ('p1', 'p2')),
    'poison: retaken twice, still both');
UPDATE inbox SET attempts = 0 WHERE wamid = 'p2';	-- p2 came later: fewer deaths
UPDATE conversations SET lease_until = now() - interval '1 s' WHERE id = pg_temp.cid('5511977770004');
CREATE TEMP TABLE pz AS SELECT j FROM mg_claim_turns('w4', 60, 0, 10, 0, 60, 20, 3) j;
SELECT is((SELECT state || '/' || attempts FROM inbox WHERE wamid = 'p1'), 'dead/3',
    'poison: at max_attempts retakes the message is dead');
SELECT is((SELECT j -> 'inbox_ids' FROM pz), (SELECT jsonb_agg(id) FROM inbox WHERE wamid = 'p2'),
    'poison: the turn goes on with the other message');
SELECT is((SELECT jsonb_path_query_array(j -> 'context' -> 'messages', '$[*].wamid') FROM pz),
    '["p2"]', 'poison: and its context holds only that one');
SELECT is((SELECT reason || '/' || (details ->> 'retaken') FROM audit_log
    WHERE step = 'worker' AND decision = 'dead'
    AND inbox_id = (SELECT id FROM inbox WHERE wamid = 'p1')),
    'lease of w3 expired/true', 'poison: the dead message is audited with its last error');
-- Alone, the dead message leaves no turn and no lease behind.
SELECT pg_temp.msg('p3', '5511977770005', 'so esta', '9 s');
SELECT is((SELECT count(*) FROM mg_claim_turns('w1', 60, 0, 10, 0, 60, 20, 1)), 1::bigint,
    'poison alone: claimed');
UPDATE conversations SET lease_until = now() - interval '1 s' WHERE id = pg_temp.cid('5511977770005');
SELECT is((SELECT count(*) FROM mg_claim_turns('w2', 60, 0, 10, 0, 60, 20, 1)
    WHERE (mg_claim_turns ->> 'conversation_id')::bigint = pg_temp.cid('5511977770005')), 0::bigint,
    'poison alone: no turn');
SELECT is((SELECT coalesce(lease_owner, '-') FROM conversations WHERE id = pg_temp.cid('5511977770005')),
    '-', 'poison alone: the lease is released');

-- An outcome without its shift belongs to the latest bridge.
INSERT INTO conversations (phone_number_id, wa_id) VALUES ('PN9', '5511977770009');
INSERT INTO handoffs (conversation_id, vaga_id)
SELECT pg_temp.cid('5511977770009'), id FROM vagas ORDER BY id LIMIT 2;
INSERT INTO funnel_events (conversation_id, status, metadata)
VALUES (pg_temp.cid('5511977770009'), 'fechado_com_responsavel', '{"origem":"desfecho_relatado"}'),
       (pg_temp.cid('5511977770009'), 'interesse_confirmado', '{}'),
       (pg_temp.cid('5511977770003'), 'nao_fechou', '{}');
SELECT is((SELECT (vaga_id = (SELECT max(id) FROM (SELECT id FROM vagas ORDER BY id LIMIT 2) v))
    || '/' || (responsavel = (SELECT responsavel_nome FROM vagas WHERE id = f.vaga_id))
    FROM funnel_events f WHERE conversation_id = pg_temp.cid('5511977770009')
    AND status = 'fechado_com_responsavel'), 'true/true',
    'funnel: an outcome takes the latest bridge''s shift and responsible person');
SELECT is((SELECT vaga_id FROM funnel_events WHERE conversation_id = pg_temp.cid('5511977770009')
    AND status = 'interesse_confirmado'), NULL, 'funnel: interest stays without a shift');
SELECT is((SELECT vaga_id FROM funnel_events WHERE conversation_id = pg_temp.cid('5511977770003')
    AND status = 'nao_fechou'), NULL, 'funnel: no bridge, no shift');

-- Group commit (src/db/queue.c): many commits, and many send results, in
-- one statement; each call answers as alone, at its place.
SELECT pg_temp.msg('g1', '5511977770011', 'oi', '10 s');
SELECT pg_temp.msg('g2', '5511977770012', 'oi', '10 s');
SELECT is((SELECT count(*) FROM mg_claim_turns('wg', 60, 0, 10, 0, 60, 20, 5)), 2::bigint,
    'group: two turns claimed');
CREATE TEMP TABLE gr AS SELECT mg_start_read('wg', pg_temp.cid('5511977770011'),
    (SELECT id FROM inbox WHERE wamid = 'g1'), 'sg', 30, 5) AS r;
CREATE TEMP TABLE gc AS SELECT * FROM mg_commit_send_many(jsonb_build_array(
    jsonb_build_array('wg', pg_temp.cid('5511977770012')::text,
	pg_temp.reply('Oi, dois')::text, NULL, '30', '5'),
    jsonb_build_array('wg', pg_temp.cid('5511977770011')::text,
	pg_temp.reply('Oi, um')::text, NULL, '30', '5')));
SELECT is((SELECT string_agg(n || ':' || (r::jsonb ->> 'ok'), ',' ORDER BY n) FROM gc),
    '1:true,2:true', 'group commit: both committed, each at its place');
SELECT is((SELECT string_agg(payload #>> '{text,body}', ',' ORDER BY conversation_id)
    FROM outbox WHERE kind = 'text' AND conversation_id IN
    (pg_temp.cid('5511977770011'), pg_temp.cid('5511977770012'))), 'Oi, um,Oi, dois',
    'group commit: each reply in its own conversation');
SELECT throws_ok($$SELECT * FROM mg_commit_send_many(jsonb_build_array(
    jsonb_build_array('wg', pg_temp.cid('5511977770011')::text, '{}', NULL, '30', '5'),
    jsonb_build_array('wg', 'x', '{}', NULL, '30', '5')))$$,
    NULL, 'group commit: one bad call fails the statement (the caller sends each alone)');
CREATE TEMP TABLE go AS SELECT * FROM mg_outbox_result_many(jsonb_build_array(
    jsonb_build_array((SELECT r -> 'send' -> 0 ->> 'id' FROM gr),
	'{"result": "sent"}'),
    jsonb_build_array('0', '{"result": "sent"}')));
SELECT is((SELECT string_agg(n || ':' || r, ',' ORDER BY n) FROM go),
    '1:{"ok": true, "state": "sent"},2:{"ok": false, "reason": "not_sending"}',
    'group results: each row''s answer at its place');

SELECT * FROM finish();
ROLLBACK;
