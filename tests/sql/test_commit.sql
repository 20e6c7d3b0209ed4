-- test_commit.sql -- mg_context, mg_commit_turn, mg_fail_turn.
-- SPDX-License-Identifier: MIT
BEGIN;
SELECT plan(36);

CREATE FUNCTION pg_temp.msg(w text, s text, body text, age interval)
RETURNS bigint LANGUAGE sql AS $$
	INSERT INTO inbox (wamid, phone_number_id, sender_key, wa_id, msg_type,
	    wa_timestamp, received_at, raw)
	VALUES (w, 'PN1', s, s, 'text', now() - age, now() - age,
	    jsonb_build_object('text', jsonb_build_object('body', body)))
	RETURNING id
$$;

-- A conversation with history: an earlier turn, done, and a reply sent.
SELECT pg_temp.msg('h1', '5511911111111', 'boa tarde', '2 hours');
CREATE TEMP TABLE t0 AS SELECT j FROM mg_claim('w1', 60, 0, 10) j;
SELECT is(mg_commit_turn('w1', (SELECT (j ->> 'conversation_id')::bigint FROM t0),
    '{"outbox":[{"kind":"text","payload":{"type":"text","text":{"body":"Oi! Sou a Julia."}}}]}'
    ) ->> 'ok', 'true', 'a first turn commits');
CREATE TEMP TABLE cv AS SELECT id FROM conversations WHERE wa_id = '5511911111111';
SELECT is((SELECT last_inbound_at FROM conversations WHERE id = (SELECT id FROM cv)),
    now() - interval '2 hours', 'the commit moves last_inbound_at to the message time');
SELECT is((SELECT lease_owner FROM conversations WHERE id = (SELECT id FROM cv)),
    NULL, 'the commit releases the lease');

-- The next turn.
SELECT pg_temp.msg('h2', '5511911111111', 'Quero saber de vagas!', '10 s');
INSERT INTO doctor_memory (conversation_id, fact)
SELECT id, 'pediatra' FROM cv;
CREATE TEMP TABLE t1 AS SELECT j FROM mg_claim('w1', 60, 2000, 10) j;
CREATE TEMP TABLE ctx AS SELECT mg_context((SELECT id FROM cv),
    ARRAY(SELECT jsonb_array_elements_text(j -> 'inbox_ids')::bigint FROM t1), 10) AS c;
SELECT is((SELECT c #>> '{conversation,mode}' FROM ctx), 'discovery',
    'context: the conversation mode');
SELECT is((SELECT c -> 'flag' ->> 'effective' FROM ctx), 'on',
    'context: the feature flag');
SELECT is((SELECT c -> 'memory' FROM ctx), '["pediatra"]',
    'context: the doctor''s memory');
SELECT is((SELECT jsonb_path_query_array(c -> 'history', '$[*].text') FROM ctx),
    '["boa tarde", "Oi! Sou a Julia."]',
    'context: the transcript, both directions, oldest first, without the claimed message');
SELECT is((SELECT jsonb_path_query_array(c -> 'messages', '$[*].text') FROM ctx),
    '["Quero saber de vagas!"]', 'context: the claimed message with its text');
SELECT is((SELECT c #>> '{conversation,last_inbound_at}' FROM ctx)::timestamptz,
    now() - interval '2 hours', 'context: last_inbound_at is the one before this turn');
SELECT is(jsonb_array_length(mg_context((SELECT id FROM cv), '{}', 1) -> 'history'),
    1, 'context: history is bounded by p_history');

-- A commit by a worker that does not hold the lease changes nothing.
SELECT is(mg_commit_turn('intruder', (SELECT id FROM cv),
    '{"conversation":{"mode":"oferta"},"audit":[{"step":"x"}],
      "outbox":[{"kind":"text","payload":{"text":{"body":"nao"}}}]}'),
    '{"ok": false, "reason": "lease_lost"}', 'commit without the lease is refused');
SELECT is((SELECT count(*) FROM audit_log WHERE conversation_id = (SELECT id FROM cv)),
    0::bigint, 'the refused commit wrote no audit row');
SELECT is((SELECT count(*) FROM outbox WHERE conversation_id = (SELECT id FROM cv)),
    1::bigint, 'the refused commit queued nothing');
SELECT is((SELECT conversation_mode FROM conversations WHERE id = (SELECT id FROM cv)),
    'discovery', 'the refused commit left the mode');

-- An expired lease cannot commit either.
UPDATE conversations SET lease_until = now() - interval '1 s'
WHERE id = (SELECT id FROM cv);
SELECT is(mg_commit_turn('w1', (SELECT id FROM cv), '{}') ->> 'reason',
    'lease_lost', 'commit after the lease expired is refused');
UPDATE conversations SET lease_until = now() + interval '1 min'
WHERE id = (SELECT id FROM cv);

-- A malformed turn raises and applies nothing (one transaction).
SELECT throws_ok(format($$SELECT mg_commit_turn('w1', %s,
    '{"conversation":{"mode":"oferta"},"audit":[{"step":"router"}],
      "funnel":[{"status":"inventado"}]}')$$, (SELECT id FROM cv)),
    '23514', NULL, 'a bad funnel status makes the whole commit fail');
SELECT throws_ok(format($$SELECT mg_commit_turn('w1', %s,
    '{"conversation":{"modo":"oferta"}}')$$, (SELECT id FROM cv)),
    'P0001', NULL, 'an unknown conversation key is refused');
SELECT is((SELECT conversation_mode FROM conversations WHERE id = (SELECT id FROM cv)),
    'discovery', 'nothing of the failed commit remains');

-- The full commit.
CREATE TEMP TABLE r AS SELECT mg_commit_turn('w1', (SELECT id FROM cv), '{
  "conversation": {"mode": "oferta", "mode_updated_reason": "CONFIRM",
      "pending_transition": null, "pending_transition_at": null,
      "especialidade": "Pediatria"},
  "audit": [{"step": "router", "decision": "APPLY", "reason": "INTERESSE_VAGA",
             "details": {"confidence": 0.9}},
            {"step": "llm", "decision": "reply"}],
  "funnel": [{"status": "interesse_confirmado"}],
  "memory": ["prefere noturno", {"fact": "zona sul"}],
  "handoffs": [{"vaga_id": 2}],
  "outbox": [{"kind": "text", "payload": {"type": "text", "text": {"body": "Te passo o contato!"}}}]
}') AS r;
SELECT is((SELECT r ->> 'ok' FROM r), 'true', 'the full turn commits');
SELECT is((SELECT conversation_mode || '/' || coalesce(pending_transition, '-') ||
    '/' || mode_updated_reason || '/' || especialidade
    FROM conversations WHERE id = (SELECT id FROM cv)),
    'oferta/-/CONFIRM/Pediatria', 'conversation keys present are applied');
SELECT is((SELECT mode_updated_at FROM conversations WHERE id = (SELECT id FROM cv)),
    now(), 'a mode change stamps mode_updated_at');
SELECT results_eq($$SELECT step, decision FROM audit_log
    WHERE conversation_id = (SELECT id FROM cv) ORDER BY id$$,
    $$VALUES ('router'::text, 'APPLY'::text), ('llm', 'reply')$$,
    'audit rows in order');
SELECT is((SELECT inbox_id FROM audit_log WHERE step = 'router'),
    (SELECT id FROM inbox WHERE wamid = 'h2'),
    'audit rows default to the turn''s inbound message');
SELECT results_eq($$SELECT status, vaga_id, responsavel FROM funnel_events
    WHERE conversation_id = (SELECT id FROM cv) ORDER BY id$$,
    $$VALUES ('interesse_confirmado'::text, NULL::bigint, NULL::text),
	('ponte_feita', 2, 'Mariana Alves')$$,
    'funnel rows, and the bridge writes ponte_feita with the responsible person');
SELECT is((SELECT count(*) FROM handoffs WHERE conversation_id = (SELECT id FROM cv)),
    1::bigint, 'the bridge is recorded');
SELECT is((SELECT count(*) FROM doctor_memory WHERE conversation_id = (SELECT id FROM cv)),
    3::bigint, 'memory facts are added');
SELECT is((SELECT payload FROM outbox WHERE id = (SELECT (r -> 'outbox_ids' ->> 0)::bigint FROM r)),
    '{"messaging_product":"whatsapp","recipient_type":"individual","to":"+5511911111111",
      "type":"text","text":{"body":"Te passo o contato!"}}'::jsonb,
    'the outbox row holds the complete Graph API body');
SELECT is((SELECT state FROM inbox WHERE wamid = 'h2'), 'done',
    'the claimed message is done');

-- mg_fail_turn: backoff, then dead after N attempts.
SELECT pg_temp.msg('f1', '5511922222222', 'oi', '10 s');
CREATE TEMP TABLE f AS SELECT j FROM mg_claim('w2', 60, 0, 10) j;
CREATE TEMP TABLE fr AS SELECT mg_fail_turn('w2', (SELECT (j ->> 'conversation_id')::bigint FROM f),
    (SELECT array_agg(x::bigint) FROM f, jsonb_array_elements_text(j -> 'inbox_ids') x),
    'llm unavailable', 3) AS r;
SELECT is((SELECT state || '/' || attempts || '/' || last_error || '/' ||
    (next_attempt_at = now() + interval '5 s') FROM inbox WHERE wamid = 'f1'),
    'pending/1/llm unavailable/true', 'a failed turn retries with backoff');
UPDATE conversations SET next_attempt_at = NULL WHERE wa_id = '5511922222222';
UPDATE inbox SET attempts = 2, next_attempt_at = NULL WHERE wamid = 'f1';
DELETE FROM f;
INSERT INTO f SELECT j FROM mg_claim('w2', 60, 0, 10) j;
SELECT is(mg_fail_turn('w2', (SELECT (j ->> 'conversation_id')::bigint FROM f),
    (SELECT array_agg(x::bigint) FROM f, jsonb_array_elements_text(j -> 'inbox_ids') x),
    'llm unavailable', 3) -> 'dead',
    (SELECT jsonb_agg(id) FROM inbox WHERE wamid = 'f1'), 'after N attempts the message is dead');
SELECT is((SELECT state || '/' || last_error FROM inbox WHERE wamid = 'f1')
    || '/' || (SELECT count(*) FROM audit_log WHERE decision = 'dead' AND
	inbox_id = (SELECT id FROM inbox WHERE wamid = 'f1')),
    'dead/llm unavailable/1', 'the dead message keeps its error and is audited');

-- Skipped messages (too old, human control...) keep their reason; the
-- read receipt is queued ahead of the reply.
SELECT pg_temp.msg('o1', '5511933333339', 'mensagem antiga', '30 hours');
CREATE TEMP TABLE o AS SELECT j FROM mg_claim('w3', 60, 0, 10) j;
SELECT is(mg_enqueue_read('w3', (SELECT (j ->> 'conversation_id')::bigint FROM o),
    (SELECT id FROM inbox WHERE wamid = 'o1')) ->> 'ok', 'true', 'a read receipt is queued under the lease');
SELECT is((SELECT payload FROM outbox WHERE kind = 'read' AND
    conversation_id = (SELECT (j ->> 'conversation_id')::bigint FROM o)),
    '{"messaging_product":"whatsapp","status":"read","message_id":"o1","typing_indicator":{"type":"text"}}',
    'the read receipt is the Graph API mark-as-read body with the typing indicator');
SELECT throws_ok(format($$SELECT mg_commit_turn('w3', %s, '{"inbox":[{"id":%s,"state":"pending"}]}')$$,
    (SELECT j ->> 'conversation_id' FROM o), (SELECT id FROM inbox WHERE wamid = 'o1')),
    'P0001', NULL, 'an inbox outcome other than done or skipped is refused');
SELECT is(mg_commit_turn('w3', (SELECT (j ->> 'conversation_id')::bigint FROM o),
    format('{"inbox":[{"id":%s,"state":"skipped","reason":"too_old"}],
      "audit":[{"step":"worker","decision":"skip","reason":"too_old"}]}',
      (SELECT id FROM inbox WHERE wamid = 'o1'))::jsonb) ->> 'ok', 'true',
    'a turn that answers nothing commits');
SELECT is((SELECT state || '/' || done_reason FROM inbox WHERE wamid = 'o1'),
    'skipped/too_old', 'the skipped message is kept with its reason');

SELECT * FROM finish();
ROLLBACK;
