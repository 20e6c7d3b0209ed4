-- test_ops.sql -- sql/functions/ and sql/queries/*.sql on a seeded
-- dataset: funnel_metrics and funnel_current with exact values, the
-- analysts' queries with their expected rows, takeover / release /
-- set-mode and mg_flag_set with their audit and history rows.
-- (Append-only audit_log / funnel_events: test_audit_flags.sql.)
-- Run from the repository root (pg_prove by tests/cli/sql_turn.sh).
-- SPDX-License-Identifier: MIT
\set ON_ERROR_STOP 1
\set q_week `cat sql/queries/funnel_by_week.sql`
\set q_trans `cat sql/queries/mode_transitions_by_decision.sql`
\set q_tools `cat sql/queries/tools_removed_by_mode.sql`
\set q_policy `cat sql/queries/policy_blocks_by_rule.sql`
\set q_pending `cat sql/queries/pending_open_expired.sql`
\set q_guard `cat sql/queries/guard_violations_by_claim.sql`
\set q_llm `cat sql/queries/llm_latency_tokens_by_day.sql`
\set q_send `cat sql/queries/send_failures_by_code.sql`
BEGIN;
SELECT plan(42);
SET LOCAL TimeZone = 'UTC';

-- Seed ---------------------------------------------------------------------
-- Week 1 (Mon 2025-03-10): c1 interested 10:00, bridged to v901 5 min
-- later, waited and closed; c2 interested, bridged 20 min later, did not
-- close; c3 interested only. Week 2 (Tue 2025-03-18): c4 interested
-- 09:00, bridged to v902 (4 min) and v903 (30 min), closed v903 only; c5
-- interested only; c6 bridged to v902 with no interest recorded. c7:
-- interested and bridged 10 minutes later today (not yet due for its
-- follow-up).
INSERT INTO vagas (id, hospital, especialidade, regiao, turno, data,
    responsavel_nome, responsavel_contato) VALUES
 (901, 'Hospital A', 'Pediatria', 'Zona Sul', 'noturno', '2025-03-20',
  'Mariana', '+55 11 90000-0001'),
 (902, 'Hospital B', 'Clínica Médica', 'Zona Leste', '12h', '2025-03-25',
  'Ricardo', '+55 11 90000-0002'),
 (903, 'Hospital C', 'Pediatria', 'Zona Oeste', 'diurno', '2025-03-26',
  'Fernanda', '+55 11 90000-0003');
INSERT INTO conversations (id, phone_number_id, wa_id, conversation_mode)
VALUES (9001, 'PN1', '5511900000001', 'followup'),
    (9002, 'PN1', '5511900000002', 'followup'),
    (9003, 'PN1', '5511900000003', 'oferta'),
    (9004, 'PN1', '5511900000004', 'followup'),
    (9005, 'PN1', '5511900000005', 'oferta'),
    (9006, 'PN1', '5511900000006', 'followup'),
    (9007, 'PN1', '5511900000007', 'followup'),
    (9008, 'PN2', '5511900000001', 'discovery');	-- c1 on another number
INSERT INTO funnel_events (conversation_id, vaga_id, status, created_at)
VALUES
 (9001, NULL, 'interesse_confirmado', '2025-03-10 10:00'),
 (9001, 901, 'ponte_feita', '2025-03-10 10:05'),
 (9001, NULL, 'aguardando_desfecho', '2025-03-12 10:00'),
 (9001, NULL, 'fechado_com_responsavel', '2025-03-12 12:00'),
 (9002, NULL, 'interesse_confirmado', '2025-03-10 11:00'),
 (9002, 901, 'ponte_feita', '2025-03-10 11:20'),
 (9002, 901, 'nao_fechou', '2025-03-13 09:00'),
 (9003, NULL, 'interesse_confirmado', '2025-03-10 12:00'),
 (9004, NULL, 'interesse_confirmado', '2025-03-18 09:00'),
 (9004, 902, 'ponte_feita', '2025-03-18 09:04'),
 (9004, 903, 'ponte_feita', '2025-03-18 09:30'),
 (9004, 903, 'fechado_com_responsavel', '2025-03-20 10:00'),
 (9005, NULL, 'interesse_confirmado', '2025-03-18 15:00'),
 (9006, 902, 'ponte_feita', '2025-03-18 16:00'),
 (9007, NULL, 'interesse_confirmado', date_trunc('day', now())),
 (9007, 901, 'ponte_feita', date_trunc('day', now()) + interval '10 minutes');

-- Funnel metrics -----------------------------------------------------------
SELECT results_eq($$SELECT period, metric, numerator, denominator, value, met
    FROM mg_funnel_metrics('2025-03-01', '2025-03-31')$$,
    $$VALUES
    ('total', 'bridge_rate', 3::bigint, 5::bigint, 60.0, false),
    ('total', 'conversion_rate', 2, 5, 40.0, true),
    ('total', 'time_to_bridge_median', NULL, 4, 12.5, false),
    ('total', 'time_to_bridge_avg', NULL, 4, 14.8, false),
    ('total', 'followup_rate', 3, 5, 60.0, false),
    ('2025-03-10', 'bridge_rate', 2, 3, 66.7, true),
    ('2025-03-10', 'conversion_rate', 1, 2, 50.0, true),
    ('2025-03-10', 'time_to_bridge_median', NULL, 2, 12.5, false),
    ('2025-03-10', 'time_to_bridge_avg', NULL, 2, 12.5, false),
    ('2025-03-10', 'followup_rate', 2, 2, 100.0, true),
    ('2025-03-18', 'bridge_rate', 1, 2, 50.0, false),
    ('2025-03-18', 'conversion_rate', 1, 3, 33.3, true),
    ('2025-03-18', 'time_to_bridge_median', NULL, 2, 17.0, false),
    ('2025-03-18', 'time_to_bridge_avg', NULL, 2, 17.0, false),
    ('2025-03-18', 'followup_rate', 1, 3, 33.3, false)$$,
    'funnel metrics over March 2025: total and per day, beside their targets');
SELECT results_eq($$SELECT metric, target FROM funnel_metrics
    WHERE period = 'total' ORDER BY ord$$,
    $$VALUES ('bridge_rate', '> 60 %'), ('conversion_rate', '> 30 %'),
    ('time_to_bridge_median', '< 10 min'), ('time_to_bridge_avg', '< 10 min'),
    ('followup_rate', '100 %')$$, 'each metric carries the seed''s target');
SELECT results_eq($$SELECT metric, numerator, denominator FROM funnel_metrics
    WHERE period = 'total' AND metric IN ('bridge_rate', 'followup_rate')
    ORDER BY ord$$,
    $$VALUES ('bridge_rate', 4::bigint, 6::bigint), ('followup_rate', 3, 5)$$,
    'the view counts today''s doctor; a bridge younger than 48 h is not due');
SELECT is((SELECT count(*) FROM funnel_metrics
    WHERE period = to_char(now(), 'YYYY-MM-DD')), 5::bigint,
    'today has its own rows in the view');
SELECT results_eq($$SELECT period FROM mg_funnel_metrics('2025-03-18', NULL)
    WHERE metric = 'bridge_rate' AND day IS NOT NULL$$,
    $$VALUES ('2025-03-18'), (to_char(now(), 'YYYY-MM-DD'))$$,
    'since filters the days');
SELECT is((SELECT denominator FROM mg_funnel_metrics('2025-03-11', '2025-03-31')
    WHERE period = 'total' AND metric = 'conversion_rate'), 3::bigint,
    'the total covers only the filtered range');
SET LOCAL modegate.followup_hours = '1000000';
SELECT is((SELECT denominator FROM funnel_metrics
    WHERE period = 'total' AND metric = 'followup_rate'), 0::bigint,
    'modegate.followup_hours sets when a follow-up is due');
RESET modegate.followup_hours;
SELECT is((SELECT met FROM mg_funnel_metrics('2030-01-01', NULL)
    WHERE period = 'total' AND metric = 'bridge_rate'), NULL,
    'nothing to measure: met is NULL, not false');

-- funnel_current -----------------------------------------------------------
SELECT results_eq($$SELECT conversation_id, vaga_id, status, stage, responsavel
    FROM funnel_current WHERE conversation_id BETWEEN 9001 AND 9007
    ORDER BY conversation_id, vaga_id NULLS FIRST$$,
    $$VALUES
    (9001::bigint, 901::bigint, 'fechado_com_responsavel', 'convertido', 'Mariana'),
    (9002, 901, 'nao_fechou', 'nao_convertido', 'Mariana'),
    (9003, NULL, 'interesse_confirmado', 'qualificando', NULL),
    (9004, 902, 'ponte_feita', 'contatado', 'Ricardo'),
    (9004, 903, 'fechado_com_responsavel', 'convertido', 'Fernanda'),
    (9005, NULL, 'interesse_confirmado', 'qualificando', NULL),
    (9006, 902, 'ponte_feita', 'contatado', 'Ricardo'),
    (9007, 901, 'ponte_feita', 'contatado', 'Mariana')$$,
    'funnel_current: the latest status per conversation and shift');

-- Analysts' queries ----------------------------------------------------------
SELECT results_eq(:'q_week',
    $$VALUES
    ('2025-03-10'::date, 3::bigint, 2::bigint, 66.7, 2::bigint, 1::bigint, 50.0,
	12.5, 2::bigint, 2::bigint, 100.0),
    ('2025-03-17', 2, 1, 50.0, 3, 1, 33.3, 17.0, 3, 1, 33.3),
    (date_trunc('week', now())::date, 1, 1, 100.0, 1, 0, 0.0, 10.0, 0, 0, NULL)$$,
    'queries/funnel_by_week.sql');

-- Audit rows as the worker and the sender write them.
INSERT INTO audit_log (conversation_id, step, decision, reason, details, created_at)
VALUES
 (9001, 'policy', 'ALLOW', NULL, '{"intent":"INTERESSE_VAGA","actions":[]}', '2025-03-10 10:00'),
 (9001, 'router', 'APPLY', 'intent', '{"from":"discovery","mode":"oferta","proposal":"oferta","pending":null,"expired":false,"applied":true}', '2025-03-10 10:00'),
 (9001, 'gate', 'oferta', 'enforced', '{"flag":"on","tools_offered":["buscar_vagas"],"tools_removed":["registrar_status_intermediacao"]}', '2025-03-10 10:00'),
 (9001, 'llm', 'ok', 'end', '{"model":"m","provider":"anthropic","input_tokens":1000,"output_tokens":100,"latency_ms":800,"rounds":1}', '2025-03-10 10:00'),
 (9001, 'guard', 'regenerate', 'reserva_garantida', '{"forbidden_claims":["reserva_garantida"],"attempt":0}', '2025-03-10 10:00'),
 (9001, 'guard', 'pass', NULL, '{"forbidden_claims":[],"attempt":1}', '2025-03-10 10:01'),
 (9001, 'llm', 'ok', 'end', '{"model":"m","provider":"anthropic","input_tokens":1200,"output_tokens":80,"latency_ms":1200,"rounds":2}', '2025-03-10 10:01'),
 (9002, 'router', 'PENDING', 'confirm_needed', '{"from":"discovery","mode":"discovery","proposal":"oferta","pending":"oferta","expired":false,"applied":true}', '2025-03-10 11:00'),
 (9002, 'router', 'APPLY', 'intent', '{"from":"discovery","mode":"oferta","proposal":"oferta","applied":false}', '2025-03-10 11:05'),
 (9002, 'gate', 'discovery', 'not_enforced', '{"flag":"shadow","tools_offered":[],"tools_would_remove":["criar_handoff_externo","registrar_status_intermediacao"]}', '2025-03-10 11:05'),
 (9002, 'gate', 'discovery', 'enforced', '{"flag":"on","tools_removed":["criar_handoff_externo"]}', '2025-03-10 11:06'),
 (9003, 'gate', 'discovery', 'not_enforced', '{"flag":"off","pending":null,"tools_offered":["buscar_vagas","criar_handoff_externo","registrar_status_intermediacao","salvar_memoria","encaminhar_humano"],"tools_would_remove":["buscar_vagas","criar_handoff_externo","registrar_status_intermediacao"]}', '2025-03-11 07:00'),
 (9003, 'gate', 'reativacao', 'not_enforced', '{"flag":"off","pending":null,"tools_offered":["buscar_vagas","criar_handoff_externo","registrar_status_intermediacao","salvar_memoria","encaminhar_humano"],"tools_would_remove":["buscar_vagas"]}', '2025-03-11 07:30'),
 (9002, 'llm', 'error', 'server', '{"model":"m","provider":"anthropic","input_tokens":0,"output_tokens":0,"latency_ms":3000,"rounds":1,"error":{"class":"server"}}', '2025-03-10 11:06'),
 (9002, 'llm', 'handoff', 'llm_unavailable', '{}', '2025-03-10 11:07'),
 (9002, 'guard', 'fallback', 'reserva_garantida', '{"forbidden_claims":["reserva_garantida","valor_prometido"],"attempt":2}', '2025-03-10 11:08'),
 (9003, 'guard', 'pass', 'shadow: not enforced', '{"violations":["valor_prometido"],"attempt":0}', '2025-03-11 08:00'),
 (9003, 'policy', 'BLOCK', 'opt_out_request', '{"intent":"OPT_OUT"}', '2025-03-11 08:00'),
 (9003, 'policy', 'BLOCK', 'opted_out', '{"intent":"SAUDACAO"}', '2025-03-11 09:00'),
 (9003, 'policy', 'BLOCK', 'opted_out', '{"intent":"NEUTRO"}', '2025-03-11 10:00'),
 (9004, 'policy', 'BLOCK', 'human_control', '{}', '2025-03-18 10:00'),
 (9004, 'llm', 'ok', 'end', '{"model":"m","provider":"openai","input_tokens":500,"output_tokens":50,"latency_ms":400,"rounds":1}', '2025-03-18 10:00'),
 (9004, 'send', 'sent', 'sent', '{"outbox_id":1,"kind":"text","wamid":"w1","attempts":1}', '2025-03-18 10:00'),
 (9004, 'send', 'pending', 'retry', '{"outbox_id":2,"kind":"text","error_code":131056,"error_detail":"pair rate limit","attempts":1}', '2025-03-18 10:01'),
 (9004, 'send', 'failed', 'failed', '{"outbox_id":2,"kind":"text","error_code":131026,"error_detail":"undeliverable","attempts":2}', '2025-03-18 10:02'),
 (9005, 'send', 'template', 'window_closed', '{"outbox_id":3,"error_code":131047,"template_outbox_id":4,"detail":"24-hour window closed"}', '2025-03-18 15:00'),
 (9006, 'send', 'dropped', 'window_closed', '{"outbox_id":5,"error_code":131047,"template_outbox_id":null,"detail":"re-engagement"}', '2025-03-18 16:00'),
 (9006, 'send', 'failed', 'failed status', '{"outbox_id":6,"error_code":131026}', '2025-03-18 16:30'),
 (9006, 'send', 'failed', 'failed', '{"outbox_id":7,"kind":"read","error_code":100,"error_detail":"bad read"}', '2025-03-18 16:31');

SELECT results_eq(:'q_trans',
    $$VALUES ('APPLY'::text, 'discovery'::text, 'oferta'::text, 'oferta'::text,
	2::bigint, 2::bigint, 1::bigint),
    ('PENDING', 'discovery', 'discovery', 'oferta', 1, 1, 1)$$,
    'queries/mode_transitions_by_decision.sql');
SELECT results_eq(:'q_tools',
    $$VALUES ('discovery'::text, 'criar_handoff_externo'::text, 1::bigint,
	1::bigint, 1::bigint),
    ('discovery', 'registrar_status_intermediacao', 0, 1, 1),
    ('oferta', 'registrar_status_intermediacao', 1, 0, 1)$$,
    'queries/tools_removed_by_mode.sql (flag off gate rows not counted as would_remove)');
SELECT results_eq($$SELECT rule, messages, conversations FROM (
    $$ || regexp_replace(:'q_policy', ';\s*$', '') || $$) q$$,
    $$VALUES ('opted_out'::text, 2::bigint, 1::bigint),
    ('human_control', 1, 1), ('opt_out_request', 1, 1)$$,
    'queries/policy_blocks_by_rule.sql');
SELECT results_eq(:'q_guard',
    $$VALUES ('reserva_garantida'::text, 2::bigint, 2::bigint, 1::bigint,
	1::bigint, 0::bigint),
    ('valor_prometido', 2, 2, 0, 1, 1)$$,
    'queries/guard_violations_by_claim.sql');
SELECT results_eq(:'q_llm',
    $$VALUES ('2025-03-10'::date, 3::bigint, 1::bigint, 1200::numeric,
	2820::numeric, 2200::bigint, 180::bigint),
    ('2025-03-18', 1, 0, 400, 400, 500, 50)$$,
    'queries/llm_latency_tokens_by_day.sql');
SELECT results_eq(:'q_send',
    $$VALUES (131026, 2::bigint, 0::bigint, 2::bigint, 'undeliverable'::text),
    (131047, 2, 0, 2, 're-engagement'),
    (131056, 0, 1, 1, 'pair rate limit')$$,
    'queries/send_failures_by_code.sql (mark-as-read failures left out)');

UPDATE conversations SET pending_transition = 'oferta',
    pending_transition_at = now() - interval '5 minutes' WHERE id = 9002;
UPDATE conversations SET pending_transition = 'followup',
    pending_transition_at = now() - interval '2 hours' WHERE id = 9003;
SELECT results_eq($$SELECT conversation_id, pending, age_min, state FROM (
    $$ || regexp_replace(:'q_pending', ';\s*$', '') || $$) q$$,
    $$VALUES (9003::bigint, 'followup'::text, 120.0, 'expired'::text),
    (9002, 'oferta', 5.0, 'open')$$,
    'queries/pending_open_expired.sql');

-- Takeover, release, set-mode ------------------------------------------------
INSERT INTO outbox (id, conversation_id, kind, payload, to_key, phone_number_id, state)
VALUES (99001, 9001, 'text', '{"type":"text","text":{"body":"Oi"}}', '5511900000001', 'PN1', 'pending'),
    (99002, 9001, 'read', '{"status":"read"}', '5511900000001', 'PN1', 'pending'),
    (99003, 9001, 'text', '{"type":"text","text":{"body":"x"}}', '5511900000001', 'PN1', 'sent');
UPDATE conversations SET pending_transition = 'oferta',
    pending_transition_at = now() WHERE id = 9001;

SELECT is(mg_takeover('+5511900000001', 'ana', 'doctor asked for a person', 'PN1'),
    ARRAY[9001::bigint], 'takeover on one business number: one conversation');
SELECT results_eq($$SELECT control, control_updated_by FROM conversations WHERE id = 9001$$,
    $$VALUES ('human'::text, 'ana'::text)$$, 'takeover: control human, by whom');
SELECT is((SELECT control FROM conversations WHERE id = 9008), 'ai',
    'the same doctor on the other number is untouched');
SELECT results_eq($$SELECT id, state FROM outbox WHERE id > 99000 ORDER BY id$$,
    $$VALUES (99001::bigint, 'dropped'::text), (99002, 'pending'), (99003, 'sent')$$,
    'takeover drops the AI replies not yet posted (not read receipts, not sent rows)');
SELECT results_eq($$SELECT decision, reason, details ->> 'by',
    (details ->> 'dropped_outbox')::int FROM audit_log
    WHERE conversation_id = 9001 AND step = 'control'$$,
    $$VALUES ('takeover'::text, 'doctor asked for a person'::text, 'ana'::text, 1)$$,
    'takeover audited');
SELECT is(mg_takeover('5511900000001', 'ana', NULL),
    ARRAY[9001::bigint, 9008], 'without a business number: every conversation of the doctor');
SELECT is(mg_takeover('5511999999999', 'ana', NULL), '{}'::bigint[],
    'an unknown doctor: no conversation');

-- Release: inbound while human, the AI's last words, then the release.
INSERT INTO inbox (wamid, phone_number_id, sender_key, msg_type, raw,
    received_at, conversation_id, state)
VALUES ('wamid.ops.1', 'PN1', '5511900000001', 'text',
    '{"text":{"body":"Oi, quero falar com alguém"}}', now() - interval '10 minutes',
    9001, 'done');
UPDATE outbox SET sent_at = now() - interval '9 minutes' WHERE id = 99003;
UPDATE conversations SET serious_objection_at = now() WHERE id = 9001;
SELECT is(jsonb_array_length(mg_context(9001, '{}', 10) -> 'history'), 2,
    'before release the history holds the human-control exchange');
SELECT is(mg_release('5511900000001', 'ana', 'PN1'), ARRAY[9001::bigint],
    'release one conversation');
SELECT results_eq($$SELECT control, conversation_mode, pending_transition,
    serious_objection_at, context_since = now() FROM conversations WHERE id = 9001$$,
    $$VALUES ('ai'::text, 'followup'::text, NULL::text, NULL::timestamptz, true)$$,
    'release: control ai, mode kept, pending and open objection cleared');
SELECT is(mg_context(9001, '{}', 10) -> 'history', '[]'::jsonb,
    'after release the prompt history carries nothing from before');
INSERT INTO inbox (wamid, phone_number_id, sender_key, msg_type, raw,
    received_at, conversation_id, state)
VALUES ('wamid.ops.2', 'PN1', '5511900000001', 'text',
    '{"text":{"body":"Voltei"}}', now(), 9001, 'done');
SELECT is(mg_context(9001, '{}', 10) -> 'history' -> 0 ->> 'text', 'Voltei',
    'messages after the release are in the history');
SELECT results_eq($$SELECT decision, details ->> 'by', details ->> 'cleared_pending',
    (details ->> 'cleared_serious_objection')::boolean FROM audit_log
    WHERE conversation_id = 9001 AND step = 'control' ORDER BY id DESC LIMIT 1$$,
    $$VALUES ('release'::text, 'ana'::text, 'oferta'::text, true)$$,
    'release audited with what it cleared');

UPDATE conversations SET pending_transition = 'oferta',
    pending_transition_at = now() WHERE id = 9005;
SELECT is(mg_set_mode('5511900000005', 'followup', 'bridged by phone', 'rui'),
    ARRAY[9005::bigint], 'set-mode one conversation');
SELECT results_eq($$SELECT conversation_mode, mode_source, mode_updated_reason,
    pending_transition, mode_updated_at = now() FROM conversations WHERE id = 9005$$,
    $$VALUES ('followup'::text, 'manual'::text, 'bridged by phone'::text, NULL::text, true)$$,
    'set-mode: mode, source manual, reason, pending cleared');
SELECT results_eq($$SELECT decision, reason, details ->> 'from', details ->> 'by',
    details ->> 'cleared_pending' FROM audit_log
    WHERE conversation_id = 9005 AND step = 'mode'$$,
    $$VALUES ('followup'::text, 'bridged by phone'::text, 'oferta'::text,
	'rui'::text, 'oferta'::text)$$, 'set-mode audited');
SELECT throws_ok($$SELECT mg_set_mode('5511900000005', 'booking', NULL, 'rui')$$,
    '22023', NULL, 'set-mode refuses an unknown mode');

-- Flags ----------------------------------------------------------------------
SELECT results_eq($$SELECT value, percent, updated_by, reason FROM
    mg_flag_set('conversation_mode_enabled', 'shadow', 25, 'ana', 'comparar')$$,
    $$VALUES ('shadow'::text, 25, 'ana'::text, 'comparar'::text)$$,
    'mg_flag_set returns the new state');
SELECT results_eq($$SELECT old_value, new_value, old_percent, new_percent,
    changed_by, reason FROM feature_flag_changes ORDER BY id DESC LIMIT 1$$,
    $$VALUES ('on'::text, 'shadow'::text, 100, 25, 'ana'::text, 'comparar'::text)$$,
    'the change is in the history');
SELECT is((SELECT percent FROM mg_flag_set('conversation_mode_enabled', 'on',
    NULL, 'rui', 'ligar')), 25, 'percent omitted: kept');
SELECT throws_ok($$SELECT mg_flag_set('conversation_mode_enabled', 'maybe', NULL, 'a', NULL)$$,
    '22023', NULL, 'a bad value is refused');
SELECT throws_ok($$SELECT mg_flag_set('conversation_mode_enabled', 'on', 101, 'a', NULL)$$,
    '22023', NULL, 'a percent above 100 is refused');
SELECT throws_ok($$SELECT mg_flag_set('no_such_flag', 'on', NULL, 'a', NULL)$$,
    '22023', NULL, 'an unknown flag is refused');
SELECT throws_ok($$DELETE FROM feature_flag_changes$$, '42501', NULL,
    'the flag history refuses DELETE');
SELECT throws_ok($$TRUNCATE feature_flag_changes$$, '42501', NULL,
    'the flag history refuses TRUNCATE');

SELECT * FROM finish();
ROLLBACK;
