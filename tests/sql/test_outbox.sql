-- test_outbox.sql -- the sender's steps and the delivery statuses.
-- SPDX-License-Identifier: MIT
BEGIN;
SELECT plan(34);

INSERT INTO conversations (phone_number_id, wa_id, last_inbound_at)
VALUES ('PN1', '5511944444441', now() - interval '1 hour'),
       ('PN1', '5511944444442', now() - interval '1 hour'),
       ('PN1', 'BR.99887766', now() - interval '25 hours');
CREATE TEMP TABLE cv AS SELECT id, wa_id FROM conversations WHERE phone_number_id = 'PN1';
CREATE FUNCTION pg_temp.cid(k text) RETURNS bigint LANGUAGE sql AS
    $$SELECT id FROM cv WHERE wa_id = k$$;
-- Queue a text for conversation k (as mg_commit_turn does).
CREATE FUNCTION pg_temp.q(k text, body text) RETURNS bigint LANGUAGE sql AS $$
	INSERT INTO outbox (conversation_id, kind, payload, to_key, phone_number_id)
	VALUES (pg_temp.cid(k), 'text', mg_complete_payload(jsonb_build_object(
	    'type', 'text', 'text', jsonb_build_object('body', body)), k), k, 'PN1')
	RETURNING id
$$;
CREATE FUNCTION pg_temp.claim(w text) RETURNS bigint[] LANGUAGE sql AS $$
	SELECT coalesce(array_agg((j ->> 'id')::bigint ORDER BY (j ->> 'id')::bigint), '{}')
	FROM mg_claim_outbox(w, 30, 10) j
$$;
CREATE TEMP TABLE ids AS SELECT pg_temp.q('5511944444441', 'um') AS a1,
    pg_temp.q('5511944444441', 'dois') AS a2, pg_temp.q('5511944444442', 'tres') AS b1;

SELECT is(pg_temp.claim('s1'), (SELECT ARRAY[a1, b1] FROM ids),
    'claim: only the oldest unsent row of each conversation');
SELECT is(pg_temp.claim('s2'), '{}'::bigint[],
    'claim: the next row waits while the older one is being sent');
SELECT is(mg_outbox_result((SELECT a1 FROM ids), '{"result":"sent","wamid":"wamid.A1"}'),
    '{"ok":true,"state":"sent"}', 'result: sent with its wamid');
SELECT is((SELECT last_outbound_at FROM conversations WHERE id = pg_temp.cid('5511944444441')),
    now(), 'a sent reply moves last_outbound_at');
SELECT is(pg_temp.claim('s2'), (SELECT ARRAY[a2] FROM ids),
    'claim: the next row of the conversation once the older one is sent');
SELECT is(mg_outbox_result((SELECT a1 FROM ids), '{"result":"sent","wamid":"x"}') ->> 'reason',
    'not_sending', 'result: a row not being sent is refused');

-- Retry with backoff, then dead; retry-after honoured.
SELECT is(mg_outbox_result((SELECT b1 FROM ids),
    '{"result":"retry","error_code":130429,"retry_after_s":7}') ->> 'state', 'pending',
    'result: retry puts the row back');
SELECT is((SELECT next_attempt_at FROM outbox WHERE id = (SELECT b1 FROM ids)),
    now() + interval '7 s', 'retry: retry_after_s is honoured');
SELECT is(pg_temp.claim('s3'), '{}'::bigint[], 'retry: not claimed before its time');
UPDATE outbox SET next_attempt_at = now() - interval '1 s', attempts = 7
WHERE id = (SELECT b1 FROM ids);
SELECT is(pg_temp.claim('s3'), (SELECT ARRAY[b1] FROM ids), 'retry: claimed again when due');
SELECT is(mg_outbox_result((SELECT b1 FROM ids), '{"result":"retry","error_code":131000}') ->> 'state',
    'dead', 'retry: dead after max_attempts');

-- Crash: a 'sending' row whose lease expired is ambiguous: the claim
-- leaves it alone for the reconcile wait (modegate.send_reconcile_s, 30 s),
-- then posts it again.
CREATE TEMP TABLE q4 AS SELECT pg_temp.q('5511944444442', 'quatro') AS id;
UPDATE outbox SET lease_until = now() - interval '1 s' WHERE state = 'sending';
SELECT is(pg_temp.claim('s4'), (SELECT ARRAY[q4.id] FROM q4),
    'a row left sending by a crashed sender is not posted again at once; a dead row blocks nothing');
SELECT is((SELECT array_agg(id) FROM outbox_ambiguous), (SELECT ARRAY[a2] FROM ids),
    'it is listed in outbox_ambiguous');
UPDATE outbox SET lease_until = now() - interval '31 s' WHERE id = (SELECT a2 FROM ids);
SELECT is((SELECT array_agg((j ->> 'id')::text || ':' || (j ->> 'reposted') ||
    ':' || (j #>> '{payload,biz_opaque_callback_data}')) FROM mg_claim_outbox('s4', 30, 10) j),
    (SELECT ARRAY[a2 || ':true:modegate:outbox:' || a2] FROM ids),
    'after 30 s of silence it is posted again, naming its row');
SELECT is((SELECT reposts || '/' || n FROM outbox, send_reconcile_counts
    WHERE id = (SELECT a2 FROM ids) AND outcome = 'reposted'), '1/1',
    'the repost is counted');
SELECT mg_outbox_result((SELECT id FROM q4), '{"result":"sent","wamid":"wamid.Q4"}');
SELECT is(mg_outbox_result((SELECT a2 FROM ids), '{"result":"dry_run"}') ->> 'state',
    'dry_run', 'result: dry run');

-- Delivery statuses: forward only; a late delivered never overwrites read.
INSERT INTO message_statuses (wamid, status, raw) VALUES ('wamid.A1', 'read', '{}');
INSERT INTO message_statuses (wamid, status, raw) VALUES ('wamid.A1', 'delivered', '{}');
SELECT is((SELECT delivery_status FROM outbox WHERE id = (SELECT a1 FROM ids)), 'read',
    'a late delivered does not overwrite read');
INSERT INTO message_statuses (wamid, status, raw) VALUES ('wamid.ZZ', 'read', '{}');
SELECT pass('a status for an unknown wamid is stored and ignored');

-- A status that arrives before the wamid is stored is applied at result time.
CREATE TEMP TABLE e AS SELECT pg_temp.q('5511944444442', 'cinco') AS id;
SELECT pg_temp.claim('s5');
INSERT INTO message_statuses (wamid, status, raw)
VALUES ('wamid.EARLY', 'delivered', '{}');
SELECT mg_outbox_result((SELECT id FROM outbox WHERE state = 'sending' AND
    conversation_id = pg_temp.cid('5511944444442')), '{"result":"sent","wamid":"wamid.EARLY"}');
SELECT is((SELECT delivery_status FROM outbox WHERE wamid = 'wamid.EARLY'), 'delivered',
    'an early status is reconciled when the wamid is stored');

-- 131047 as an asynchronous failed status, no template configured: dropped path.
SELECT pg_temp.q('5511944444442', 'sete');
SELECT pg_temp.claim('s6');
UPDATE outbox SET state = 'sent', wamid = 'wamid.F1' WHERE state = 'sending'
    AND conversation_id = pg_temp.cid('5511944444442');
INSERT INTO message_statuses (wamid, status, error_code, raw)
VALUES ('wamid.F1', 'failed', 131047, '{}');
SELECT is((SELECT state || '/' || error_code || '/' || delivery_status FROM outbox
    WHERE wamid = 'wamid.F1'), 'failed/131047/failed', 'failed status 131047 marks the row');
SELECT is((SELECT decision FROM audit_log WHERE step = 'send' AND reason = 'window_closed'
    ORDER BY id DESC LIMIT 1), 'dropped', 'without a template the window-closed text is dropped, audited');

-- With a template: the async failure queues it.
INSERT INTO wa_templates (purpose, payload) VALUES ('window_closed',
    '{"type":"template","template":{"name":"retomar_contato","language":{"code":"pt_BR"}}}');
UPDATE outbox SET wamid = 'wamid.F2', state = 'sent', delivery_status = 'delivered'
WHERE id = (SELECT id FROM e);
INSERT INTO message_statuses (wamid, status, error_code, raw)
VALUES ('wamid.F2', 'failed', 131047, '{}');
SELECT is((SELECT payload FROM outbox WHERE kind = 'template'
    AND conversation_id = pg_temp.cid('5511944444442')),
    '{"messaging_product":"whatsapp","recipient_type":"individual","to":"+5511944444442",
      "type":"template","template":{"name":"retomar_contato","language":{"code":"pt_BR"}}}'::jsonb,
    'failed 131047 with a template configured queues the template');
SELECT is((SELECT delivery_status FROM outbox WHERE id = (SELECT id FROM e)), 'failed',
    'failed overrides delivered');
INSERT INTO message_statuses (wamid, status, raw) VALUES ('wamid.F2', 'read', '{}');
SELECT is((SELECT delivery_status FROM outbox WHERE id = (SELECT id FROM e)), 'failed',
    'failed is terminal');

-- Window closed before sending (last inbound 25 h ago): never posted.
CREATE TEMP TABLE w AS SELECT pg_temp.q('BR.99887766', 'ola') AS id;
SELECT is(pg_temp.claim('s7') && (SELECT ARRAY[id] FROM w), false,
    'a free text outside the 24-hour window is not handed to the sender');
SELECT is((SELECT payload ->> 'recipient' FROM outbox WHERE kind = 'template'
    AND conversation_id = pg_temp.cid('BR.99887766')), 'BR.99887766',
    'it takes the template path; a BSUID is addressed with "recipient"');
SELECT is((SELECT state || '/' || error_code FROM outbox WHERE id = (SELECT id FROM w)),
    'failed/131047', 'the text is marked window-closed');

-- Synchronous 131047 from the Graph API.
CREATE TEMP TABLE s AS SELECT pg_temp.q('5511944444441', 'seis') AS id;
SELECT pg_temp.claim('s8');
SELECT is(mg_outbox_result((SELECT id FROM s), '{"result":"window_closed"}') ->> 'state',
    'failed', 'result: window_closed takes the template path');

-- A status naming an ambiguous row (biz_opaque_callback_data) settles it.
CREATE TEMP TABLE r AS SELECT pg_temp.q('5511944444441', 'oito') AS id;
UPDATE outbox SET state = 'sent' WHERE state IN ('pending', 'sending')
    AND id <> (SELECT id FROM r);
SELECT is(pg_temp.claim('s9'), (SELECT ARRAY[id] FROM r), 'claimed');
UPDATE outbox SET lease_until = now() - interval '5 s' WHERE id = (SELECT id FROM r);
INSERT INTO message_statuses (wamid, status, callback_data, raw)
SELECT 'wamid.R', 'sent', mg_callback_data(id), '{}' FROM r;
SELECT is((SELECT state || '/' || wamid || '/' || delivery_status FROM outbox
    WHERE id = (SELECT id FROM r)), 'sent/wamid.R/sent',
    'a status naming an ambiguous row settles it with its wamid');
SELECT is((SELECT n FROM send_reconcile_counts WHERE outcome = 'settled'), 1::bigint,
    'settled counted');
SELECT is((SELECT reason || '/' || (details ->> 'lease_expired') FROM audit_log
    WHERE step = 'send' AND decision = 'sent' ORDER BY id DESC LIMIT 1),
    'status/true', 'settled audited');
SELECT is(mg_outbox_result((SELECT id FROM r), '{"result":"sent","wamid":"wamid.R"}'),
    '{"ok":true,"state":"sent","settled":"status"}',
    'the late answer of a settled row is accepted, nothing changes');
INSERT INTO message_statuses (wamid, status, callback_data, raw)
SELECT 'wamid.R2', s, mg_callback_data(id), '{}' FROM r, unnest(ARRAY['sent', 'read']) s;
SELECT is((SELECT n FROM send_reconcile_counts WHERE outcome = 'duplicate') || '/' ||
    (SELECT string_agg(wamid || '<' || first_wamid, ',') FROM outbox_duplicates),
    '1/wamid.R2<wamid.R', 'a second message id for the row is one duplicate');

SELECT * FROM finish();
ROLLBACK;
