-- test_lgpd.sql -- sql/functions/95_lgpd.sql: retention (mg_retain) keeps ids,
-- times, decisions, modes and funnel rows and blanks the personal fields
-- of old rows, through the owner's function only; forget (mg_forget)
-- pseudonymises one doctor and is refused during a turn; export.
-- SPDX-License-Identifier: MIT
BEGIN;
SELECT plan(48);

\set QUIET on
\i sql/roles.sql
\set QUIET off

-- Run q as the application role (as `modegate serve` does with roles.sql);
-- the role switch is undone with the statement, error or not.
CREATE FUNCTION pg_temp.as_app(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	r text;
BEGIN
	SET LOCAL ROLE modegate_app;
	EXECUTE q INTO r;
	RESET ROLE;
	RETURN r;
END $$;

-- One doctor with a year of history: old rows (200 days) and new (1 day).
INSERT INTO conversations (id, phone_number_id, wa_id, profile_name,
    conversation_mode, last_inbound_at)
VALUES (901, 'PN1', '5511977776666', 'Dra. Bia', 'oferta', now() - interval '1 day'),
       (902, 'PN1', '5511955554444', 'Dr. Caio', 'discovery', now() - interval '300 days');
INSERT INTO inbox (id, wamid, phone_number_id, sender_key, wa_id, profile_name,
    msg_type, received_at, raw, state, conversation_id)
VALUES (9001, 'wamid.old', 'PN1', '5511977776666', '5511977776666', 'Dra. Bia',
	'text', now() - interval '200 days', '{"id": "wamid.old", "from": "5511977776666",
	"timestamp": "1700000000", "type": "text", "text": {"body": "meu CRM é 123456 SP"}}',
	'done', 901),
       (9002, 'wamid.new', 'PN1', '5511977776666', '5511977776666', 'Dra. Bia',
	'text', now() - interval '1 day', '{"id": "wamid.new", "from": "5511977776666",
	"type": "text", "text": {"body": "tem plantão noturno?"}}', 'done', 901);
INSERT INTO outbox (id, conversation_id, inbox_id, kind, payload, to_key,
    phone_number_id, state, created_at, sent_at)
VALUES (9101, 901, 9001, 'text', '{"to": "+5511977776666", "type": "text",
	"text": {"body": "Oi Dra. Bia, anotei seu CRM"}}', '5511977776666', 'PN1',
	'sent', now() - interval '200 days', now() - interval '200 days'),
       (9102, 901, 9002, 'text', '{"to": "+5511977776666", "type": "text",
	"text": {"body": "Tenho sim!"}}', '5511977776666', 'PN1', 'sent',
	now() - interval '1 day', now() - interval '1 day');
INSERT INTO audit_log (id, conversation_id, inbox_id, step, decision, reason,
    details, created_at)
VALUES (9201, 901, 9001, 'llm', 'ok', 'end_turn', '{"model": "m", "input_tokens": 812,
	"latency_ms": 950, "prompt": {"tools": ["buscar_vagas"], "system":
	"Nome no WhatsApp: Dra. Bia", "messages": [{"role": "user", "text":
	"meu CRM é 123456 SP"}]}}', now() - interval '200 days'),
       (9202, 901, 9001, 'tool', 'executed', 'salvar_memoria', '{"round": 1,
	"args": "{\"fato\": \"CRM 123456\"}", "result": "{\"ok\": true}"}',
	now() - interval '200 days'),
       (9203, 901, 9001, 'guard', 'fallback', 'confirm_booking', '{"mode": "oferta",
	"attempt": 2, "forbidden_claims": ["confirm_booking"], "reply":
	"Dra. Bia, sua vaga está confirmada"}', now() - interval '200 days'),
       (9204, 901, 9001, 'router', 'CONFIRM', 'pending:confirmed', '{"from":
	"discovery", "mode": "oferta"}', now() - interval '200 days'),
       (9205, 901, 9002, 'llm', 'ok', 'end_turn', '{"prompt": {"tools": [],
	"messages": [{"role": "user", "text": "tem plantão noturno?"}]}}',
	now() - interval '1 day');
INSERT INTO funnel_events (id, conversation_id, status, doctor_key, metadata,
    created_at)
VALUES (9301, 901, 'interesse_confirmado', '5511977776666',
	'{"observacao": "a Dra. Bia prefere noturno", "source": "tool"}',
	now() - interval '200 days');
INSERT INTO webhook_events (id, field, raw, received_at)
VALUES (9401, 'smb_message_echoes', '{"text": {"body": "eco antigo"}}',
	now() - interval '200 days');
INSERT INTO webhook_failures (reason, body, received_at)
VALUES ('bad json', '{"from": "5511977776666"', now() - interval '200 days');

CREATE TEMP TABLE before AS
SELECT (SELECT count(*) FROM audit_log) AS audit,
    (SELECT count(*) FROM funnel_events) AS funnel,
    (SELECT to_jsonb(m) FROM funnel_metrics m WHERE period = 'total'
	AND metric = 'bridge_rate') AS bridge;

-- Retention, called as the application role ---------------------------
SELECT is(pg_temp.as_app('SELECT mg_retain(180)::text')::jsonb
    - 'before' - 'days', '{"inbox": 1, "outbox": 1, "audit_log": 3,
    "funnel_events": 1, "webhook_events": 1, "webhook_failures": 1,
    "conversations": 1, "total": 9}'::jsonb,
    'mg_retain as modegate_app redacts the old rows of every table');

-- What is gone.
SELECT is(mg_inbound_text(msg_type, raw), '[apagado]',
    'an old message''s body is gone (the transcript says [apagado])')
FROM inbox WHERE id = 9001;
SELECT ok(raw::text NOT LIKE '%123456%' AND profile_name IS NULL,
    'nothing of its text nor the profile name is left in the row')
FROM inbox WHERE id = 9001;
SELECT is(payload -> 'text' ->> 'body', '[apagado]', 'an old reply''s text is gone')
FROM outbox WHERE id = 9101;
SELECT ok(NOT details -> 'prompt' ? 'messages' AND NOT details -> 'prompt' ? 'system',
    'an old LLM prompt loses its transcript and system text')
FROM audit_log WHERE id = 9201;
SELECT ok(NOT details ? 'args' AND NOT details ? 'result',
    'an old tool call loses its arguments and result')
FROM audit_log WHERE id = 9202;
SELECT ok(NOT details ? 'reply', 'an old guard row loses the reply it quoted')
FROM audit_log WHERE id = 9203;
SELECT ok(NOT metadata ? 'observacao', 'an old funnel note is gone')
FROM funnel_events WHERE id = 9301;
SELECT is(raw, '{"id": 9401, "redacted": "retention"}'::jsonb,
    'an old webhook event keeps only its id')
FROM webhook_events WHERE id = 9401;
SELECT is((SELECT count(*) FROM webhook_failures), 0::bigint,
    'old failed bodies (kept for replay by hand) are deleted');
SELECT is((SELECT profile_name FROM conversations WHERE id = 902), NULL,
    'the name of a doctor silent for longer than the limit is gone');

-- What remains.
SELECT results_eq($$SELECT wamid, state, received_at < now() - interval '199 days',
    raw ->> 'from', raw ->> 'type' FROM inbox WHERE id = 9001$$,
    $$VALUES ('wamid.old'::text, 'done'::text, true, '5511977776666'::text, 'text'::text)$$,
    'the old message keeps its id, state, time, sender and type');
SELECT results_eq($$SELECT state, sent_at IS NOT NULL, to_key FROM outbox WHERE id = 9101$$,
    $$VALUES ('sent'::text, true, '5511977776666'::text)$$,
    'the old reply keeps its state, time and recipient');
SELECT results_eq($$SELECT step, decision, reason, conversation_id, inbox_id,
    (details ->> 'input_tokens')::int, (details ->> 'latency_ms')::int,
    details -> 'prompt' -> 'tools' FROM audit_log WHERE id = 9201$$,
    $$VALUES ('llm'::text, 'ok'::text, 'end_turn'::text, 901::bigint, 9001::bigint,
	812, 950, '["buscar_vagas"]'::jsonb)$$,
    'the old LLM row keeps step, decision, tokens, latency and the tools offered');
SELECT results_eq($$SELECT decision, reason, details -> 'forbidden_claims',
    details ->> 'attempt' FROM audit_log WHERE id = 9203$$,
    $$VALUES ('fallback'::text, 'confirm_booking'::text, '["confirm_booking"]'::jsonb, '2'::text)$$,
    'the old guard row keeps its decision and the claims found');
SELECT is((SELECT details FROM audit_log WHERE id = 9204),
    '{"from": "discovery", "mode": "oferta"}'::jsonb,
    'a row with nothing personal (router) is untouched');
SELECT is(mg_inbound_text(msg_type, raw), 'tem plantão noturno?',
    'a message younger than the limit is untouched')
FROM inbox WHERE id = 9002;
SELECT is(payload -> 'text' ->> 'body', 'Tenho sim!', 'a young reply is untouched')
FROM outbox WHERE id = 9102;
SELECT is(details -> 'prompt' -> 'messages' -> 0 ->> 'text', 'tem plantão noturno?',
    'a young prompt is untouched')
FROM audit_log WHERE id = 9205;
SELECT is((SELECT profile_name FROM conversations WHERE id = 901), 'Dra. Bia',
    'an active doctor keeps the name');
SELECT results_eq($$SELECT status, doctor_key, metadata ->> 'source' FROM funnel_events
    WHERE id = 9301$$, $$VALUES ('interesse_confirmado'::text, '5511977776666'::text,
    'tool'::text)$$, 'the funnel row stays, with its status and doctor');
SELECT is((SELECT count(*) FROM funnel_events), (SELECT funnel FROM before),
    'no funnel row is removed');
SELECT is((SELECT to_jsonb(m) FROM funnel_metrics m WHERE period = 'total'
    AND metric = 'bridge_rate'), (SELECT bridge FROM before),
    'funnel_metrics gives the same figures');
SELECT is((SELECT count(*) FROM audit_log), (SELECT audit FROM before) + 1,
    'no audit row is removed; one is added');
SELECT results_eq($$SELECT decision, reason, (details ->> 'total')::int,
    (details ->> 'audit_log')::int, (details ->> 'days')::int
    FROM audit_log WHERE step = 'retention'$$,
    $$VALUES ('redacted'::text, 'MODEGATE_RETAIN_DAYS=180'::text, 9, 3, 180)$$,
    'the pass is audited: what it redacted and why');
SELECT is((SELECT count(*) FROM audit_log WHERE step = 'llm'
    AND details -> 'prompt' -> 'tools' ? 'buscar_vagas'), 1::bigint,
    'the README''s audit query on the tools offered still answers');

-- A second pass finds nothing and audits nothing; 0 keeps everything.
SELECT is(mg_retain(180) ->> 'total', '0', 'a second pass redacts nothing');
SELECT is(mg_retain(0), '{"days": 0}'::jsonb, 'MODEGATE_RETAIN_DAYS=0 keeps everything');
SELECT is((SELECT count(*) FROM audit_log WHERE step = 'retention'), 1::bigint,
    'an empty pass writes no audit row');

-- The application role still cannot change the audit trail --------------
SELECT throws_ok($$SELECT pg_temp.as_app('UPDATE audit_log SET details = ''{}''
    WHERE id = 9205 RETURNING 1')$$, '42501', NULL,
    'modegate_app still cannot UPDATE audit_log');
SELECT throws_ok($$SELECT pg_temp.as_app('DELETE FROM audit_log RETURNING 1')$$,
    '42501', NULL, 'modegate_app still cannot DELETE audit_log');
SELECT throws_ok($$SELECT pg_temp.as_app('UPDATE funnel_events SET metadata = ''{}''
    RETURNING 1')$$, '42501', NULL, 'modegate_app still cannot UPDATE funnel_events');
SELECT throws_ok($$SELECT pg_temp.as_app('DELETE FROM funnel_events RETURNING 1')$$,
    '42501', NULL, 'modegate_app still cannot DELETE funnel_events');
SELECT set_config('modegate.redact', 'x', true);
SELECT throws_ok($$SELECT pg_temp.as_app('UPDATE audit_log SET details = ''{}''
    WHERE id = 9205 RETURNING 1')$$, '42501', NULL,
    'the redaction setting gives modegate_app nothing');
SELECT throws_ok($$UPDATE audit_log SET decision = 'REJECT' WHERE id = 9204$$,
    '42501', NULL, 'a redaction changes personal columns only, never a decision');
SELECT set_config('modegate.redact', '', true);
SELECT throws_ok($$SELECT pg_temp.as_app('SELECT key FROM lgpd_key')$$, '42501', NULL,
    'modegate_app cannot read the pseudonyms'' key');
SELECT throws_ok($$UPDATE audit_log SET details = '{}' WHERE id = 9205$$, '42501', NULL,
    'even the owner cannot UPDATE audit_log outside a redaction');

-- Forget ------------------------------------------------------------------
INSERT INTO conversations (id, phone_number_id, wa_id, profile_name)
VALUES (903, 'PN2', '5511977776666', 'Dra. Bia');
INSERT INTO campaign_sends (campaign_id, wa_id, phone_number_id,
    conversation_id, state, template)
VALUES ('reativar-nov', '5511977776666', 'PN1', 901, 'queued', 'retomar:pt_BR');
UPDATE conversations SET lease_owner = 'w1', lease_until = now() + interval '1 minute'
WHERE id = 903;
SELECT throws_ok($$SELECT mg_forget('5511977776666', 'ana', NULL)$$, '55006', NULL,
    'forget is refused while a turn holds one of the conversations');
SELECT is((SELECT count(*) FROM conversations WHERE wa_id = '5511977776666'), 2::bigint,
    'and nothing changed');
UPDATE conversations SET lease_owner = NULL, lease_until = NULL WHERE id = 903;
SELECT throws_ok($$SELECT mg_forget('5511900000000', 'ana', NULL)$$, 'P0002', NULL,
    'forget of an unknown number says so');

CREATE TEMP TABLE f AS
SELECT pg_temp.as_app($$SELECT mg_forget('5511977776666', 'ana', 'pedido')::text$$)::jsonb AS r;
SELECT is((SELECT r -> 'conversations' FROM f), '[901, 903]'::jsonb,
    'forget (as modegate_app) takes both business numbers');
SELECT is((SELECT count(DISTINCT wa_id) FROM conversations WHERE id IN (901, 903)),
    1::bigint, 'one stable pseudonym for both: distinct doctors still count right');
SELECT is((SELECT wa_id FROM conversations WHERE id = 901), (SELECT r ->> 'pseudonym' FROM f),
    'the number is replaced by the pseudonym');
SELECT is((SELECT count(*) FROM (
	SELECT to_jsonb(x)::text AS t FROM inbox x UNION ALL
	SELECT to_jsonb(x)::text FROM outbox x UNION ALL
	SELECT to_jsonb(x)::text FROM audit_log x UNION ALL
	SELECT to_jsonb(x)::text FROM funnel_events x UNION ALL
	SELECT to_jsonb(x)::text FROM conversations x UNION ALL
	SELECT to_jsonb(x)::text FROM campaign_sends x) a
    WHERE t LIKE '%5511977776666%' OR t LIKE '%tem plantão noturno%'
	OR t LIKE '%Dra. Bia%' OR t LIKE '%Tenho sim%'), 0::bigint,
    'neither the number, the name nor a text is left');
SELECT results_eq($$SELECT count(*), count(DISTINCT step) FILTER (WHERE step = 'lgpd')
    FROM audit_log WHERE step = 'lgpd' AND decision = 'forget' AND reason = 'pedido'
    AND details ->> 'by' = 'ana'$$, $$VALUES (2::bigint, 1::bigint)$$,
    'forget is audited once per conversation, with who and why');
SELECT is((SELECT count(*) FROM funnel_events WHERE conversation_id = 901), 1::bigint,
    'the funnel row stays (pseudonymised)');
SELECT is((SELECT wa_id FROM campaign_sends WHERE campaign_id = 'reativar-nov'),
    (SELECT r ->> 'pseudonym' FROM f), 'a campaign send keeps its row, under the pseudonym');
SELECT is(jsonb_array_length(mg_export((SELECT r ->> 'pseudonym' FROM f), 'ana')
    -> 'conversations'), 2, 'export finds the pseudonymised conversations');

SELECT * FROM finish();
ROLLBACK;
