-- test_audit_flags.sql -- append-only tables, flag history, schema checks.
-- SPDX-License-Identifier: MIT
BEGIN;
SELECT plan(20);

INSERT INTO conversations (phone_number_id, wa_id) VALUES ('PN1', '5511955555555');
INSERT INTO audit_log (conversation_id, step, decision)
SELECT id, 'router', 'APPLY' FROM conversations WHERE wa_id = '5511955555555';
INSERT INTO funnel_events (conversation_id, status)
SELECT id, 'interesse_confirmado' FROM conversations WHERE wa_id = '5511955555555';

SELECT throws_ok($$UPDATE audit_log SET decision = 'REJECT'$$, '42501', NULL,
    'audit_log refuses UPDATE');
SELECT throws_ok($$DELETE FROM audit_log$$, '42501', NULL, 'audit_log refuses DELETE');
SELECT throws_ok($$TRUNCATE audit_log$$, '42501', NULL, 'audit_log refuses TRUNCATE');
SELECT throws_ok($$UPDATE funnel_events SET status = 'ponte_feita'$$, '42501', NULL,
    'funnel_events refuses UPDATE');
SELECT throws_ok($$DELETE FROM funnel_events$$, '42501', NULL, 'funnel_events refuses DELETE');
SELECT throws_ok($$TRUNCATE funnel_events CASCADE$$, '42501', NULL,
    'funnel_events refuses TRUNCATE');
SELECT throws_ok($$INSERT INTO funnel_events (conversation_id, status)
    SELECT id, 'reservado' FROM conversations LIMIT 1$$, '23514', NULL,
    'funnel_events accepts only the DESIGN.md statuses');
SELECT is((SELECT count(*) FROM audit_log) + (SELECT count(*) FROM funnel_events),
    2::bigint, 'the rows are still there');

-- Flags.
SELECT is((SELECT value || '/' || percent FROM feature_flags
    WHERE name = 'conversation_mode_enabled'), 'on/100', 'the flag is seeded on');
UPDATE feature_flags SET value = 'shadow', percent = 50, updated_by = 'ana',
    reason = 'comparar antes de ligar' WHERE name = 'conversation_mode_enabled';
SELECT results_eq($$SELECT old_value, new_value, old_percent, new_percent, changed_by, reason
    FROM feature_flag_changes WHERE name = 'conversation_mode_enabled' ORDER BY id DESC LIMIT 1$$,
    $$VALUES ('on'::text, 'shadow'::text, 100, 50, 'ana'::text, 'comparar antes de ligar'::text)$$,
    'a flag change is recorded with who, old, new and reason');
UPDATE feature_flags SET value = 'off' WHERE name = 'conversation_mode_enabled';
SELECT is((SELECT old_value || '/' || new_value || '/' || changed_by || '/' ||
    coalesce(reason, '-') FROM feature_flag_changes ORDER BY id DESC LIMIT 1),
    'shadow/off/' || session_user || '/-',
    'a plain UPDATE is attributed to the database user, not to the previous author');
SELECT throws_ok($$UPDATE feature_flags SET value = 'maybe'$$, '23514', NULL,
    'a flag value is on, off or shadow');
SELECT throws_ok($$UPDATE feature_flag_changes SET reason = 'x'$$, '42501', NULL,
    'the flag history is append-only');
SELECT is((SELECT count(*) FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
    WHERE t.tgrelid = 'feature_flags'::regclass AND p.prosrc LIKE '%pg_notify(''modegate_flags''%'),
    1::bigint, 'a flag change triggers NOTIFY modegate_flags (delivery tested in multi_session.sh)');

-- The flag's rollout percentage is stable per conversation.
UPDATE feature_flags SET value = 'on', percent = 0 WHERE name = 'conversation_mode_enabled';
SELECT is(mg_context((SELECT id FROM conversations WHERE wa_id = '5511955555555'), '{}', 0)
    -> 'flag' ->> 'effective', 'off', 'percent 0: no conversation is in the rollout');
UPDATE feature_flags SET percent = 100 WHERE name = 'conversation_mode_enabled';
SELECT is(mg_context((SELECT id FROM conversations WHERE wa_id = '5511955555555'), '{}', 0)
    -> 'flag' ->> 'effective', 'on', 'percent 100: every conversation is in');

-- A partial rollout: 200 conversations at 30 % then 60 %.
INSERT INTO conversations (phone_number_id, wa_id)
SELECT 'PNR', 'r' || g FROM generate_series(1, 200) g;
CREATE FUNCTION pg_temp.inside() RETURNS bigint[] LANGUAGE sql AS $$
	SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM conversations
	WHERE phone_number_id = 'PNR'
	    AND mg_context(id, '{}', 0) -> 'flag' ->> 'effective' = 'on'
$$;
UPDATE feature_flags SET percent = 30 WHERE name = 'conversation_mode_enabled';
CREATE TEMP TABLE r30 AS SELECT pg_temp.inside() AS ids;
SELECT ok((SELECT cardinality(ids) BETWEEN 40 AND 80 FROM r30),
    'percent 30: about 30 % of 200 conversations are in (' ||
    (SELECT cardinality(ids) FROM r30) || ')');
SELECT is(pg_temp.inside(), (SELECT ids FROM r30),
    'percent 30: the same conversations on every read');
SELECT is((SELECT count(*) FROM conversations, r30 WHERE phone_number_id = 'PNR'
    AND NOT id = ANY (r30.ids)
    AND mg_context(id, '{}', 0) -> 'flag' ->> 'effective' <> 'off'), 0::bigint,
    'percent 30: the others behave as off');
UPDATE feature_flags SET percent = 60 WHERE name = 'conversation_mode_enabled';
SELECT ok((SELECT ids FROM r30) <@ pg_temp.inside() AND
    cardinality(pg_temp.inside()) > (SELECT cardinality(ids) FROM r30),
    'percent 60: everyone in at 30 % stays in, and more join');

SELECT * FROM finish();
ROLLBACK;
