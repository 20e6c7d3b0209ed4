-- test_handoff_tool.sql -- mg_tool_encaminhar_humano: its commit fragment
-- (control human, who set it, the handoff audited with the reason) and
-- that fragment applied by mg_commit_turn.
-- SPDX-License-Identifier: MIT
BEGIN;
SELECT plan(10);

INSERT INTO conversations (phone_number_id, wa_id) VALUES ('PN1', '5511944444444');
CREATE TEMP TABLE cv AS SELECT id FROM conversations WHERE wa_id = '5511944444444';

SELECT is(mg_tool_encaminhar_humano((SELECT id FROM cv), '{"motivo":"quer falar com a coordenação"}'),
    '{"ok":true,"commit":{"conversation":{"control":"human","control_updated_by":"encaminhar_humano"},
      "audit":[{"step":"tool","decision":"handoff_humano","reason":"quer falar com a coordenação"}]}}',
    'encaminhar_humano: the commit fragment sets control human and audits the handoff with the reason');
SELECT is(mg_tool_encaminhar_humano((SELECT id FROM cv), '{}') #>> '{commit,audit,0,reason}',
    'pedido de atendimento humano', 'encaminhar_humano: without motivo, a default reason');
SELECT is(mg_tool_encaminhar_humano((SELECT id FROM cv), '"{\"motivo\":\"pediu\"}"') #>> '{commit,audit,0,reason}',
    'pediu', 'encaminhar_humano: arguments as a JSON string');
SELECT is(mg_tool_encaminhar_humano((SELECT id FROM cv), '[1,2]') #> '{commit,conversation}',
    '{"control":"human","control_updated_by":"encaminhar_humano"}',
    'encaminhar_humano: malformed arguments still hand off (the doctor asked for a person)');
SELECT is(mg_tool_encaminhar_humano((SELECT id FROM cv), NULL) ->> 'ok', 'true',
    'encaminhar_humano: NULL arguments hand off too');

-- The fragment applied at the end of a turn, with the turn's reply.
INSERT INTO inbox (wamid, phone_number_id, sender_key, wa_id, msg_type,
    wa_timestamp, received_at, raw)
VALUES ('eh1', 'PN1', '5511944444444', '5511944444444', 'text', now(), now(),
    '{"text":{"body":"quero falar com uma pessoa"}}');
CREATE TEMP TABLE t0 AS SELECT j FROM mg_claim('w1', 60, 0, 10) j;
SELECT is(mg_commit_turn('w1', (SELECT id FROM cv),
    (mg_tool_encaminhar_humano((SELECT id FROM cv), '{"motivo":"pediu"}') -> 'commit') ||
    '{"outbox":[{"kind":"text","payload":{"type":"text","text":{"body":"Vou te passar para um colega."}}}]}'
    ) ->> 'ok', 'true', 'a turn with the fragment commits');
SELECT is((SELECT control || '/' || control_updated_by FROM conversations WHERE id = (SELECT id FROM cv)),
    'human/encaminhar_humano', 'after the commit: control human, set by encaminhar_humano');
SELECT ok((SELECT control_updated_at IS NOT NULL FROM conversations WHERE id = (SELECT id FROM cv)),
    'after the commit: control_updated_at recorded');
SELECT is((SELECT array_agg(decision || '/' || reason || '/' || (inbox_id = (SELECT id FROM inbox WHERE wamid = 'eh1'))::text)
    FROM audit_log WHERE conversation_id = (SELECT id FROM cv) AND step = 'tool'),
    '{handoff_humano/pediu/true}', 'the handoff audited on the turn''s message');
SELECT is((SELECT count(*) FROM outbox WHERE conversation_id = (SELECT id FROM cv) AND kind = 'text'),
    1::bigint, 'the turn''s own reply is still queued');

SELECT * FROM finish();
ROLLBACK;
