-- test_followup.sql -- the scheduler's sweep (sql/functions/): which bridges
-- are due, text or template by the 24-hour window, skipped bridges,
-- conversations a turn holds, sent → aguardando_desfecho, sem_resposta,
-- answered, failed sends, the 131047 template hand-over, stale pendings
-- expired and audited, and idempotence.
-- SPDX-License-Identifier: MIT
\set q_fu `cat sql/queries/followups_by_state.sql`
BEGIN;
SELECT plan(35);

INSERT INTO vagas (id, hospital, especialidade, regiao, turno, data,
    responsavel_nome, responsavel_contato)
VALUES (901, 'Hospital A', 'Clínica Médica', 'Zona Sul', 'noturno',
    current_date + 3, 'Mariana', '+55 11 90000-0001');
INSERT INTO wa_templates (purpose, payload) VALUES ('followup',
    '{"type":"template","template":{"name":"acompanhamento_ponte",
      "language":{"code":"pt_BR","policy":"deterministic"}}}');

-- One conversation per situation; k is its wa_id.
CREATE FUNCTION pg_temp.conv(k text, inbound interval) RETURNS bigint
LANGUAGE sql AS $$
	INSERT INTO conversations (phone_number_id, wa_id, last_inbound_at,
	    conversation_mode)
	VALUES ('PNF', k, now() - inbound, 'followup') RETURNING id
$$;
CREATE FUNCTION pg_temp.cid(k text) RETURNS bigint LANGUAGE sql AS
    $$SELECT id FROM conversations WHERE wa_id = k$$;
-- A bridge made age ago (handoff + funnel ponte_feita, as mg_commit_turn).
CREATE FUNCTION pg_temp.bridge(k text, age interval) RETURNS void
LANGUAGE sql AS $$
	INSERT INTO handoffs (conversation_id, vaga_id, created_at)
	VALUES (pg_temp.cid(k), 901, now() - age);
	INSERT INTO funnel_events (conversation_id, vaga_id, status, doctor_key,
	    created_at)
	VALUES (pg_temp.cid(k), 901, 'ponte_feita', k, now() - age);
$$;
CREATE FUNCTION pg_temp.sweep(no_answer_s int DEFAULT 3600) RETURNS jsonb
LANGUAGE sql AS $$
	SELECT mg_followup_sweep('test', 86400, no_answer_s, 1800,
	    'Oi! Deu certo o plantão?', 100)
$$;
CREATE FUNCTION pg_temp.fu(k text) RETURNS text LANGUAGE sql AS $$
	SELECT string_agg(state || coalesce(':' || reason, ''), ',' ORDER BY id)
	FROM followups WHERE conversation_id = pg_temp.cid(k)
$$;
CREATE FUNCTION pg_temp.funnel(k text) RETURNS text LANGUAGE sql AS $$
	SELECT string_agg(status, ',' ORDER BY created_at, id)
	FROM funnel_events WHERE conversation_id = pg_temp.cid(k)
$$;

SELECT pg_temp.conv('open', '1 hour'), pg_temp.conv('closed', '30 hours'),
    pg_temp.conv('young', '1 hour'), pg_temp.conv('known', '1 hour'),
    pg_temp.conv('optout', '1 hour'), pg_temp.conv('leased', '1 hour'),
    pg_temp.conv('unread', '1 hour'), pg_temp.conv('dropped', '1 hour'),
    pg_temp.conv('w131047', '1 hour');
SELECT pg_temp.bridge(k, '25 hours') FROM unnest(ARRAY['open', 'closed',
    'known', 'optout', 'leased', 'unread', 'dropped', 'w131047']) k;
SELECT pg_temp.bridge('young', '2 hours');
INSERT INTO funnel_events (conversation_id, vaga_id, status, created_at)
VALUES (pg_temp.cid('known'), NULL, 'nao_fechou', now() - interval '3 hours');
UPDATE conversations SET opted_out_at = now() - interval '1 day'
WHERE wa_id = 'optout';
UPDATE conversations SET lease_owner = 'w9', lease_until = now() + interval '1 minute'
WHERE wa_id = 'leased';
INSERT INTO inbox (wamid, phone_number_id, sender_key, msg_type, raw,
    conversation_id)
VALUES ('wamid.unread', 'PNF', 'unread', 'text', '{}', pg_temp.cid('unread'));
-- Pendings: one stale, one fresh, one stale but held by a turn.
INSERT INTO conversations (phone_number_id, wa_id, pending_transition,
    pending_transition_at, lease_owner, lease_until)
VALUES ('PNF', 'stale', 'oferta', now() - interval '31 minutes', NULL, NULL),
       ('PNF', 'fresh', 'oferta', now() - interval '10 minutes', NULL, NULL),
       ('PNF', 'busy', 'oferta', now() - interval '40 minutes', 'w9',
	now() + interval '1 minute');

SELECT is(pg_temp.sweep(), '{"queued":4,"skipped":2,"sent":0,"failed":0,'
    '"answered":0,"sem_resposta":0,"expired":1}'::jsonb,
    'sweep: 4 follow-ups queued, 2 skipped, 1 pending expired');
SELECT is(pg_temp.fu('open'), 'queued', 'due bridge: queued');
SELECT is((SELECT payload -> 'text' ->> 'body' FROM outbox
    WHERE conversation_id = pg_temp.cid('open')), 'Oi! Deu certo o plantão?',
    'window open: the text from the caller (messages.json)');
SELECT is((SELECT kind || ':' || (payload -> 'template' ->> 'name') ||
    ':' || (payload ->> 'to') FROM outbox
    WHERE conversation_id = pg_temp.cid('closed')),
    'template:acompanhamento_ponte:+closed',
    'window closed: the followup template, addressed');
SELECT is(pg_temp.fu('young'), NULL, 'a bridge younger than the delay waits');
SELECT is(pg_temp.fu('known'), 'skipped:desfecho_registrado',
    'outcome already reported: skipped');
SELECT is(pg_temp.fu('optout'), 'skipped:opt_out', 'opted out: skipped');
SELECT is((SELECT count(*)::int FROM outbox WHERE conversation_id IN
    (pg_temp.cid('known'), pg_temp.cid('optout'))), 0,
    'nothing queued for skipped bridges');
SELECT is(pg_temp.fu('leased') || pg_temp.fu('unread'), NULL,
    'a turn in flight or an unanswered message: waits for a later pass');
SELECT is((SELECT string_agg(decision || '/' || reason, ',' ORDER BY id)
    FROM audit_log WHERE step = 'followup'
	AND conversation_id = pg_temp.cid('optout')), 'skipped/opt_out',
    'skip audited');
SELECT is((SELECT details -> 'handoffs' FROM audit_log WHERE step = 'followup'
    AND decision = 'queued' AND conversation_id = pg_temp.cid('open')),
    (SELECT jsonb_build_array(id) FROM handoffs
	WHERE conversation_id = pg_temp.cid('open')), 'queue audited');

-- Stale pendings.
SELECT is((SELECT pending_transition FROM conversations WHERE wa_id = 'stale'),
    NULL, 'stale pending cleared');
SELECT is((SELECT decision || '/' || reason || '/' || (details ->> 'source') ||
    '/' || (details ->> 'expired_pending') || '/' || (details ->> 'applied')
    FROM audit_log WHERE conversation_id = pg_temp.cid('stale')),
    'EXPIRED/pending:expired/sweep/oferta/true',
    'expiry audited like the router (step router, EXPIRED)');
SELECT is((SELECT step FROM audit_log WHERE conversation_id = pg_temp.cid('stale')),
    'router', 'audit step router');
SELECT is((SELECT pending_transition FROM conversations WHERE wa_id = 'fresh'),
    'oferta', 'a pending younger than the timeout stays');
SELECT is((SELECT pending_transition FROM conversations WHERE wa_id = 'busy'),
    'oferta', 'a pending of a conversation a turn holds is left to the turn');

-- Idempotence: a second pass queues nothing more.
SELECT is(pg_temp.sweep() ->> 'queued', '0', 'second pass: nothing queued');
SELECT is((SELECT count(*)::int FROM outbox WHERE kind IN ('text', 'template')),
    4, 'still one outbox row per due conversation');
SELECT throws_ok($$INSERT INTO followups (handoff_id, conversation_id,
    vaga_id, state) SELECT handoff_id, conversation_id, vaga_id, 'queued'
    FROM followups LIMIT 1$$, '23505', NULL,
    'one follow-up per bridge (unique)');

-- The sender's results: sent (2 h and 30 min ago), dropped, 131047.
INSERT INTO wa_templates (purpose, payload) VALUES ('window_closed',
    '{"type":"template","template":{"name":"retomar_contato",
      "language":{"code":"pt_BR"}}}');
UPDATE outbox SET state = 'sent', sent_at = now() - interval '2 hours',
    wamid = 'wamid.fu1' WHERE conversation_id = pg_temp.cid('open');
UPDATE outbox SET state = 'dry_run', sent_at = now() - interval '30 minutes'
WHERE conversation_id = pg_temp.cid('closed');
UPDATE outbox SET state = 'dropped' WHERE conversation_id = pg_temp.cid('dropped');
SELECT isnt(mg_window_closed((SELECT id FROM outbox
    WHERE conversation_id = pg_temp.cid('w131047')), 'test'), NULL,
    '131047: a template row replaces the text');

SELECT is(pg_temp.sweep() - 'queued' - 'skipped' - 'expired',
    '{"sent":2,"failed":1,"answered":0,"sem_resposta":1}'::jsonb,
    'settle: 2 sent, 1 failed; the one sent 2 h ago has no answer');
SELECT is(pg_temp.funnel('open'), 'ponte_feita,aguardando_desfecho,sem_resposta',
    'sent → aguardando_desfecho; no inbound within the delay → sem_resposta');
SELECT is((SELECT created_at FROM funnel_events WHERE status = 'aguardando_desfecho'
    AND conversation_id = pg_temp.cid('open')), now() - interval '2 hours',
    'aguardando_desfecho carries the send time');
SELECT is((SELECT vaga_id::int FROM funnel_events WHERE status = 'sem_resposta'),
    901, 'sem_resposta names the shift');
SELECT is(pg_temp.fu('open'), 'sem_resposta', 'follow-up closed as sem_resposta');
SELECT is(pg_temp.fu('closed'), 'sent', 'sent 30 min ago: still waiting');
SELECT is(pg_temp.funnel('closed'), 'ponte_feita,aguardando_desfecho',
    'the template follow-up counts too');
SELECT is(pg_temp.fu('dropped'), 'failed:outbox dropped', 'dropped send: failed');
SELECT is(pg_temp.funnel('dropped'), 'ponte_feita', 'no funnel for a failed send');
SELECT is((SELECT f.state || '/' || f.kind || '/' || o.kind FROM followups f
    JOIN outbox o ON o.id = f.outbox_id
    WHERE f.conversation_id = pg_temp.cid('w131047')), 'queued/template/template',
    '131047: the follow-up follows the template row');

-- The doctor answers the template follow-up.
INSERT INTO inbox (wamid, phone_number_id, sender_key, msg_type, raw,
    received_at, state)
VALUES ('wamid.ans', 'PNF', 'closed', 'text', '{}', now(), 'done');
SELECT is(pg_temp.sweep() ->> 'answered', '1', 'an inbound after it: answered');
SELECT is(pg_temp.fu('closed'), 'answered', 'follow-up answered');
SELECT is(pg_temp.funnel('closed'), 'ponte_feita,aguardando_desfecho',
    'answered: no sem_resposta');

-- No template at all for a closed window: skipped, audited, nothing queued.
DELETE FROM wa_templates;
SELECT pg_temp.conv('notpl', '30 hours');
SELECT pg_temp.bridge('notpl', '25 hours');
SELECT pg_temp.sweep();
SELECT is(pg_temp.fu('notpl') || '/' || (SELECT count(*) FROM outbox
    WHERE conversation_id = pg_temp.cid('notpl')),
    'skipped:sem_template/0', 'closed window without a template: skipped');

SELECT results_eq('SELECT state, reason, sum(bridges)::int FROM (' ||
    rtrim(:'q_fu', E'; \n') || ') x GROUP BY 1, 2 ORDER BY 1, 2',
    $$VALUES ('answered', NULL, 1), ('failed', 'outbox dropped', 1),
    ('queued', NULL, 1), ('sem_resposta', NULL, 1),
    ('skipped', 'desfecho_registrado', 1), ('skipped', 'opt_out', 1),
    ('skipped', 'sem_template', 1), ('waiting', NULL, 3)$$,
    'queries/followups_by_state.sql');

SELECT * FROM finish();
ROLLBACK;
