-- 95_lgpd.sql -- personal data under the LGPD (the tables are in
-- sql/0011_lgpd.sql): the retention pass mg_retain, erasure mg_forget,
-- access mg_export, and their helpers. mg_retain and mg_forget are
-- SECURITY DEFINER functions of the schema's owner: the only way to blank
-- personal columns of the append-only audit_log and funnel_events (see
-- mg_append_only in 20_audit.sql).
-- Re-applied by `modegate migrate` on every run (CREATE OR REPLACE): edit
-- a function here, never in a numbered migration.
-- SPDX-License-Identifier: MIT

-- An inbound message object without its content: its id, sender, time
-- and type stay (p_why: 'retention' or 'forget').
CREATE OR REPLACE FUNCTION mg_redact_raw(p_raw jsonb, p_why text) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
	SELECT jsonb_strip_nulls(jsonb_build_object('id', p_raw -> 'id',
	    'from', p_raw -> 'from', 'timestamp', p_raw -> 'timestamp',
	    'type', p_raw -> 'type', 'redacted', p_why))
$$;

-- An outbox payload without its text: a text's body becomes "[apagado]",
-- a template loses its parameters; the rest (type, recipient) stays.
CREATE OR REPLACE FUNCTION mg_redact_payload(p_payload jsonb, p_why text)
RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE
	WHEN p_payload ? 'text' THEN jsonb_set(p_payload, '{text,body}',
	    '"[apagado]"')
	ELSE p_payload #- '{template,components}'
	END || jsonb_build_object('redacted', p_why)
$$;

-- Audit details without the personal parts: the LLM prompt's system text
-- and transcript (its tools list stays), a tool's arguments and result, a
-- reply the guard quoted. Counts, latencies, decisions and modes stay.
-- Details with none of those come back unchanged.
CREATE OR REPLACE FUNCTION mg_redact_details(p_step text, p_details jsonb,
    p_why text) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE
	WHEN p_details ? 'prompt' OR p_details ? 'reply' OR
	    (p_step = 'tool' AND (p_details ? 'args' OR p_details ? 'result'))
	THEN (p_details - 'reply' - 'prompt' - CASE WHEN p_step = 'tool'
		THEN ARRAY['args', 'result'] ELSE ARRAY[]::text[] END) ||
	    CASE WHEN p_details ? 'prompt' THEN jsonb_build_object('prompt',
		jsonb_strip_nulls(jsonb_build_object('tools',
		p_details -> 'prompt' -> 'tools'))) ELSE '{}' END ||
	    jsonb_build_object('redacted', p_why)
	ELSE p_details
	END
$$;

-- The ids after p_last, in order, up to p_limit, as long as each row is
-- old enough (p_old): the prefix a retention pass may redact. Rows are
-- looked at in id order and the pass stops at the first one too young,
-- so nothing is skipped when ids and times disagree by a little.
CREATE OR REPLACE FUNCTION mg_retain_prefix(p_ids bigint[], p_old boolean[])
RETURNS bigint[] LANGUAGE sql IMMUTABLE AS $$
	SELECT coalesce(array_agg(id ORDER BY n), '{}')
	FROM unnest(p_ids, p_old) WITH ORDINALITY AS u(id, old, n)
	WHERE n < coalesce((SELECT min(n2) FROM unnest(p_old)
	    WITH ORDINALITY AS v(old2, n2) WHERE NOT old2), 2147483647)
$$;

-- mg_retain(days, limit): one retention pass (the scheduler's sweep calls
-- it with MODEGATE_RETAIN_DAYS; 0 keeps everything). Rows older than the
-- limit lose their personal fields:
--   inbox           the message's content (mg_redact_raw), profile name
--   outbox          the text sent (mg_redact_payload) once it is final
--   audit_log       prompts, tool arguments and results, quoted replies
--   funnel_events   free-text notes (metadata.observacao)
--   webhook_events  the whole payload (echoes and contacts hold texts
--                   and names)
--   webhook_failures the rows (bytes kept for replay by hand)
--   conversations   the profile name of a doctor silent that long
-- At most p_limit rows per table a pass; a pass finding another one
-- running (any process) returns at once. Returns the counts; when it
-- redacted anything, one audit row (step 'retention', decision
-- 'redacted') says what, how old and why.
CREATE OR REPLACE FUNCTION mg_retain(p_days int, p_limit int DEFAULT 5000)
RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER
SET search_path = public, pg_temp AS $$
DECLARE
	cutoff	timestamptz := now() - make_interval(days => p_days);
	ids	bigint[];
	n	int;
	total	int := 0;
	res	jsonb := '{}';
BEGIN
	IF p_days IS NULL OR p_days <= 0 THEN
		RETURN jsonb_build_object('days', 0);
	END IF;
	-- One pass at a time across processes: another one running now does
	-- the same work.
	IF NOT pg_try_advisory_xact_lock(hashtext('mg_retain')) THEN
		RETURN jsonb_build_object('days', p_days, 'total', 0,
		    'busy', true);
	END IF;
	PERFORM set_config('modegate.redact', 'retention', true);

	SELECT mg_retain_prefix(array_agg(id ORDER BY id),
	    array_agg(received_at < cutoff AND state NOT IN ('pending',
		'claimed') ORDER BY id)) INTO ids
	FROM (SELECT id, received_at, state FROM inbox
	    WHERE id > (SELECT last_id FROM lgpd_retention WHERE tbl = 'inbox')
	    ORDER BY id LIMIT p_limit) s;
	UPDATE inbox SET raw = mg_redact_raw(raw, 'retention'),
	    profile_name = NULL
	WHERE id = ANY (ids) AND NOT raw ? 'redacted';
	GET DIAGNOSTICS n = ROW_COUNT;
	UPDATE lgpd_retention SET last_id = greatest(last_id,
	    coalesce(ids[cardinality(ids)], 0)) WHERE tbl = 'inbox';
	res := res || jsonb_build_object('inbox', n);
	total := total + n;

	SELECT mg_retain_prefix(array_agg(id ORDER BY id),
	    array_agg(created_at < cutoff AND state NOT IN ('pending',
		'sending') ORDER BY id)) INTO ids
	FROM (SELECT id, created_at, state FROM outbox
	    WHERE id > (SELECT last_id FROM lgpd_retention WHERE tbl = 'outbox')
	    ORDER BY id LIMIT p_limit) s;
	UPDATE outbox SET payload = mg_redact_payload(payload, 'retention')
	WHERE id = ANY (ids) AND kind <> 'read' AND NOT payload ? 'redacted';
	GET DIAGNOSTICS n = ROW_COUNT;
	UPDATE lgpd_retention SET last_id = greatest(last_id,
	    coalesce(ids[cardinality(ids)], 0)) WHERE tbl = 'outbox';
	res := res || jsonb_build_object('outbox', n);
	total := total + n;

	SELECT mg_retain_prefix(array_agg(id ORDER BY id),
	    array_agg(created_at < cutoff ORDER BY id)) INTO ids
	FROM (SELECT id, created_at FROM audit_log
	    WHERE id > (SELECT last_id FROM lgpd_retention
		WHERE tbl = 'audit_log')
	    ORDER BY id LIMIT p_limit) s;
	UPDATE audit_log SET details = mg_redact_details(step, details,
	    'retention')
	WHERE id = ANY (ids) AND
	    mg_redact_details(step, details, 'retention') <> details;
	GET DIAGNOSTICS n = ROW_COUNT;
	UPDATE lgpd_retention SET last_id = greatest(last_id,
	    coalesce(ids[cardinality(ids)], 0)) WHERE tbl = 'audit_log';
	res := res || jsonb_build_object('audit_log', n);
	total := total + n;

	SELECT mg_retain_prefix(array_agg(id ORDER BY id),
	    array_agg(created_at < cutoff ORDER BY id)) INTO ids
	FROM (SELECT id, created_at FROM funnel_events
	    WHERE id > (SELECT last_id FROM lgpd_retention
		WHERE tbl = 'funnel_events')
	    ORDER BY id LIMIT p_limit) s;
	UPDATE funnel_events SET metadata = metadata - 'observacao' ||
	    jsonb_build_object('redacted', 'retention')
	WHERE id = ANY (ids) AND metadata ? 'observacao';
	GET DIAGNOSTICS n = ROW_COUNT;
	UPDATE lgpd_retention SET last_id = greatest(last_id,
	    coalesce(ids[cardinality(ids)], 0)) WHERE tbl = 'funnel_events';
	res := res || jsonb_build_object('funnel_events', n);
	total := total + n;

	SELECT mg_retain_prefix(array_agg(id ORDER BY id),
	    array_agg(received_at < cutoff ORDER BY id)) INTO ids
	FROM (SELECT id, received_at FROM webhook_events
	    WHERE id > (SELECT last_id FROM lgpd_retention
		WHERE tbl = 'webhook_events')
	    ORDER BY id LIMIT p_limit) s;
	UPDATE webhook_events SET raw = jsonb_build_object('id', id,
	    'redacted', 'retention')
	WHERE id = ANY (ids) AND NOT raw ? 'redacted';
	GET DIAGNOSTICS n = ROW_COUNT;
	UPDATE lgpd_retention SET last_id = greatest(last_id,
	    coalesce(ids[cardinality(ids)], 0)) WHERE tbl = 'webhook_events';
	res := res || jsonb_build_object('webhook_events', n);
	total := total + n;

	DELETE FROM webhook_failures WHERE id IN (SELECT id
	    FROM webhook_failures WHERE received_at < cutoff ORDER BY id
	    LIMIT p_limit);
	GET DIAGNOSTICS n = ROW_COUNT;
	res := res || jsonb_build_object('webhook_failures', n);
	total := total + n;

	UPDATE conversations SET profile_name = NULL
	WHERE id IN (SELECT id FROM conversations WHERE profile_name IS NOT NULL
	    AND coalesce(last_inbound_at, created_at) < cutoff
	    AND (lease_until IS NULL OR lease_until < now())
	    ORDER BY id LIMIT p_limit);
	GET DIAGNOSTICS n = ROW_COUNT;
	res := res || jsonb_build_object('conversations', n);
	total := total + n;

	res := res || jsonb_build_object('days', p_days, 'before', cutoff,
	    'total', total);
	IF total > 0 THEN
		INSERT INTO audit_log (step, decision, reason, details)
		VALUES ('retention', 'redacted', 'MODEGATE_RETAIN_DAYS=' ||
		    p_days, res);
	END IF;
	PERFORM set_config('modegate.redact', '', true);
	RETURN res;
END $$;

-- The stable pseudonym of an identifier (a number, a BSUID, a wamid):
-- "anon:" and 24 hex digits of SHA-256 over the secret key and it. The
-- same doctor gets the same pseudonym on every business number and every
-- time, so distinct counts stay right.
CREATE OR REPLACE FUNCTION mg_pseudonym(p_key text, p_id text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT 'anon:' || left(encode(sha256(convert_to(p_key || ':' || p_id,
	    'UTF8')), 'hex'), 24)
$$;

-- p_text with every identifier of p_map (an object: identifier ->
-- pseudonym) replaced by its pseudonym, longest first (so a wamid goes
-- before the number it contains).
CREATE OR REPLACE FUNCTION mg_scrub(p_text text, p_map jsonb) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	k text;
BEGIN
	IF p_text IS NULL THEN
		RETURN NULL;
	END IF;
	FOR k IN SELECT key FROM jsonb_each_text(p_map)
	    ORDER BY length(key) DESC, key LOOP
		p_text := replace(p_text, k, p_map ->> k);
	END LOOP;
	RETURN p_text;
END $$;

-- mg_forget(wa_id, by, reason): erase one doctor's personal data
-- everywhere (LGPD Art. 18). The number (and each BSUID, each wamid of
-- the doctor's messages and replies, which embed the number) becomes its
-- pseudonym in conversations, inbox, outbox, message_statuses,
-- funnel_events, campaign_sends and audit details; webhook events naming
-- the doctor keep only their id; message contents,
-- replies' texts, names, memory, specialty, region and objection words,
-- prompts and tool data are removed; unsent replies are dropped and unanswered messages
-- skipped; signed bodies kept for replay that hold the number are
-- deleted. Counts, times, modes, decisions and funnel rows stay.
-- Refused while a turn holds one of the conversations or one of its
-- replies is being posted (SQLSTATE 55006: try again when it ends); an
-- unknown number is SQLSTATE P0002. Audited: one row per conversation
-- (step 'lgpd', decision 'forget'). Returns {"pseudonym", "conversations",
-- and a count per table}.
CREATE OR REPLACE FUNCTION mg_forget(p_wa_id text, p_who text, p_reason text)
RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER
SET search_path = public, pg_temp AS $$
DECLARE
	k	text := (SELECT key FROM lgpd_key);
	pseud	text;
	convs	bigint[];
	map	jsonb;
	n	int;
	res	jsonb := '{}';
BEGIN
	IF p_wa_id IS NULL OR btrim(p_wa_id) = '' OR p_wa_id LIKE 'anon:%' THEN
		RAISE EXCEPTION 'WA_ID must be a WhatsApp number or user id'
		    USING ERRCODE = 'invalid_parameter_value';
	END IF;
	pseud := mg_pseudonym(k, p_wa_id);
	SELECT coalesce(array_agg(id ORDER BY id), '{}') INTO convs
	FROM (SELECT id FROM conversations WHERE wa_id = p_wa_id
	    FOR UPDATE) c;
	IF EXISTS (SELECT 1 FROM conversations WHERE id = ANY (convs)
	    AND lease_owner IS NOT NULL AND lease_until > now()) OR
	    EXISTS (SELECT 1 FROM outbox WHERE conversation_id = ANY (convs)
	    AND state = 'sending' AND lease_until > now()) THEN
		RAISE EXCEPTION 'a turn or a send of this doctor is in '
		    'flight; try again when it ends'
		    USING ERRCODE = 'object_in_use';
	END IF;
	-- Messages no worker has linked yet join their conversation first.
	UPDATE inbox i SET conversation_id = c.id
	FROM conversations c
	WHERE c.id = ANY (convs) AND i.conversation_id IS NULL
	    AND i.phone_number_id = c.phone_number_id
	    AND i.sender_key = c.wa_id;
	IF cardinality(convs) = 0 AND NOT EXISTS (SELECT 1 FROM inbox
	    WHERE sender_key = p_wa_id OR wa_id = p_wa_id) AND NOT EXISTS (
	    SELECT 1 FROM campaign_sends WHERE wa_id = p_wa_id) THEN
		RAISE EXCEPTION 'nothing is stored about that WA_ID'
		    USING ERRCODE = 'no_data_found';
	END IF;
	PERFORM set_config('modegate.redact', 'forget', true);

	-- Every identifier to replace, with its pseudonym.
	SELECT jsonb_object_agg(id, mg_pseudonym(k, id)) INTO map
	FROM (SELECT p_wa_id AS id
	    UNION SELECT user_id FROM conversations
		WHERE id = ANY (convs) AND user_id IS NOT NULL
	    UNION SELECT user_id FROM inbox WHERE (conversation_id =
		ANY (convs) OR sender_key = p_wa_id OR wa_id = p_wa_id)
		AND user_id IS NOT NULL
	    UNION SELECT wamid FROM inbox WHERE conversation_id = ANY (convs)
		OR sender_key = p_wa_id OR wa_id = p_wa_id
	    UNION SELECT wamid FROM outbox WHERE conversation_id = ANY (convs)
		AND wamid IS NOT NULL
	    UNION SELECT wamid FROM message_statuses
		WHERE recipient = p_wa_id) s
	WHERE id <> '';

	UPDATE inbox SET wamid = mg_pseudonym(k, wamid), sender_key = pseud,
	    wa_id = CASE WHEN wa_id IS NULL THEN NULL ELSE pseud END,
	    user_id = NULL, profile_name = NULL,
	    raw = mg_scrub(mg_redact_raw(raw, 'forget')::text, map)::jsonb,
	    last_error = NULL,
	    state = CASE WHEN state = 'pending' THEN 'skipped' ELSE state END,
	    done_reason = CASE WHEN state = 'pending' THEN 'forgotten'
		ELSE done_reason END
	WHERE conversation_id = ANY (convs) OR sender_key = p_wa_id OR
	    wa_id = p_wa_id;
	GET DIAGNOSTICS n = ROW_COUNT;
	res := res || jsonb_build_object('inbox', n);

	UPDATE message_statuses SET wamid = mg_scrub(wamid, map),
	    recipient = mg_scrub(recipient, map),
	    raw = mg_scrub(raw::text, map)::jsonb
	WHERE wamid IN (SELECT wamid FROM outbox
		WHERE conversation_id = ANY (convs))
	    OR recipient = p_wa_id OR raw::text LIKE '%' || p_wa_id || '%';
	GET DIAGNOSTICS n = ROW_COUNT;
	res := res || jsonb_build_object('message_statuses', n);

	UPDATE outbox SET payload = mg_scrub(mg_redact_payload(payload,
		'forget')::text, map)::jsonb,
	    to_key = pseud, wamid = mg_scrub(wamid, map),
	    error_detail = mg_scrub(error_detail, map),
	    state = CASE WHEN state IN ('pending', 'sending') THEN 'dropped'
		ELSE state END,
	    lease_owner = NULL, lease_until = NULL
	WHERE conversation_id = ANY (convs);
	GET DIAGNOSTICS n = ROW_COUNT;
	res := res || jsonb_build_object('outbox', n);

	DELETE FROM doctor_memory WHERE conversation_id = ANY (convs);
	GET DIAGNOSTICS n = ROW_COUNT;
	res := res || jsonb_build_object('doctor_memory', n);

	UPDATE funnel_events SET doctor_key = pseud,
	    metadata = mg_scrub((metadata - 'observacao')::text, map)::jsonb
	WHERE conversation_id = ANY (convs);
	GET DIAGNOSTICS n = ROW_COUNT;
	res := res || jsonb_build_object('funnel_events', n);

	UPDATE audit_log SET details = mg_scrub(mg_redact_details(step,
		details, 'forget')::text, map)::jsonb,
	    reason = mg_scrub(reason, map)
	WHERE conversation_id = ANY (convs)
	    OR details::text LIKE '%' || p_wa_id || '%'
	    OR reason LIKE '%' || p_wa_id || '%';
	GET DIAGNOSTICS n = ROW_COUNT;
	res := res || jsonb_build_object('audit_log', n);

	-- Events naming the doctor (preferences, echoes) may hold the name
	-- and texts too: only their id stays.
	UPDATE webhook_events SET raw = jsonb_build_object('id', id,
	    'redacted', 'forget')
	WHERE raw::text LIKE '%' || p_wa_id || '%';
	GET DIAGNOSTICS n = ROW_COUNT;
	res := res || jsonb_build_object('webhook_events', n);

	DELETE FROM webhook_failures
	WHERE position(convert_to(p_wa_id, 'UTF8') IN body) > 0;
	GET DIAGNOSTICS n = ROW_COUNT;
	res := res || jsonb_build_object('webhook_failures', n);

	UPDATE campaign_sends SET wa_id = pseud
	WHERE wa_id = p_wa_id OR conversation_id = ANY (convs);
	GET DIAGNOSTICS n = ROW_COUNT;
	res := res || jsonb_build_object('campaign_sends', n);

	UPDATE conversations SET wa_id = pseud, user_id = NULL,
	    profile_name = NULL, especialidade = NULL, regiao = NULL,
	    objecao_motivo = NULL
	WHERE id = ANY (convs);

	res := res || jsonb_build_object('pseudonym', pseud,
	    'conversations', to_jsonb(convs));
	INSERT INTO audit_log (conversation_id, step, decision, reason,
	    details)
	SELECT c, 'lgpd', 'forget', coalesce(p_reason,
	    'pedido do titular (LGPD art. 18)'), res ||
	    jsonb_build_object('by', coalesce(p_who, session_user))
	FROM unnest(convs) c;
	PERFORM set_config('modegate.redact', '', true);
	RETURN res;
END $$;

-- mg_export(wa_id, by): everything stored about one doctor (LGPD Art. 18,
-- access), one document: per conversation its row, messages (with their
-- text), replies, memory, bridges (with the shift), follow-ups, funnel
-- and audit rows; plus delivery statuses, campaign sends and messages
-- not yet linked.
-- Audited (step 'lgpd', decision 'export'). SQLSTATE P0002 when nothing
-- is stored.
CREATE OR REPLACE FUNCTION mg_export(p_wa_id text, p_who text) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
	convs	bigint[];
	doc	jsonb;
BEGIN
	SELECT coalesce(array_agg(id ORDER BY id), '{}') INTO convs
	FROM conversations WHERE wa_id = p_wa_id;
	IF cardinality(convs) = 0 AND NOT EXISTS (SELECT 1 FROM inbox
	    WHERE sender_key = p_wa_id OR wa_id = p_wa_id) AND NOT EXISTS (
	    SELECT 1 FROM campaign_sends WHERE wa_id = p_wa_id) THEN
		RAISE EXCEPTION 'nothing is stored about that WA_ID'
		    USING ERRCODE = 'no_data_found';
	END IF;
	SELECT jsonb_build_object('wa_id', p_wa_id, 'exported_at', now(),
	    'conversations', coalesce(jsonb_agg(jsonb_build_object(
		'conversation', to_jsonb(c) - 'lease_owner' - 'lease_until',
		'messages', (SELECT coalesce(jsonb_agg(to_jsonb(i) ||
		    jsonb_build_object('text', mg_inbound_text(i.msg_type,
		    i.raw)) ORDER BY i.id), '[]') FROM inbox i
		    WHERE i.conversation_id = c.id),
		'replies', (SELECT coalesce(jsonb_agg(to_jsonb(o) -
		    'lease_owner' - 'lease_until' ORDER BY o.id), '[]')
		    FROM outbox o WHERE o.conversation_id = c.id),
		'memory', (SELECT coalesce(jsonb_agg(to_jsonb(m)
		    ORDER BY m.id), '[]') FROM doctor_memory m
		    WHERE m.conversation_id = c.id),
		'bridges', (SELECT coalesce(jsonb_agg(to_jsonb(h) ||
		    jsonb_build_object('vaga', mg_vaga_json(v)) ORDER BY h.id),
		    '[]') FROM handoffs h JOIN vagas v ON v.id = h.vaga_id
		    WHERE h.conversation_id = c.id),
		'followups', (SELECT coalesce(jsonb_agg(to_jsonb(f)
		    ORDER BY f.id), '[]') FROM followups f
		    WHERE f.conversation_id = c.id),
		'funnel', (SELECT coalesce(jsonb_agg(to_jsonb(e)
		    ORDER BY e.id), '[]') FROM funnel_events e
		    WHERE e.conversation_id = c.id),
		'audit', (SELECT coalesce(jsonb_agg(to_jsonb(a)
		    ORDER BY a.id), '[]') FROM audit_log a
		    WHERE a.conversation_id = c.id))
		ORDER BY c.id), '[]'),
	    'delivery_statuses', (SELECT coalesce(jsonb_agg(to_jsonb(s)
		ORDER BY s.received_at), '[]') FROM message_statuses s
		WHERE s.wamid IN (SELECT wamid FROM outbox
		    WHERE conversation_id = ANY (convs))
		OR s.recipient = p_wa_id),
	    'campaign_sends', (SELECT coalesce(jsonb_agg(to_jsonb(cs)
		ORDER BY cs.id), '[]') FROM campaign_sends cs
		WHERE cs.wa_id = p_wa_id OR cs.conversation_id = ANY (convs)),
	    'messages_not_linked', (SELECT coalesce(jsonb_agg(to_jsonb(i) ||
		jsonb_build_object('text', mg_inbound_text(i.msg_type, i.raw))
		ORDER BY i.id), '[]') FROM inbox i
		WHERE i.conversation_id IS NULL AND (i.sender_key = p_wa_id OR
		    i.wa_id = p_wa_id)))
	INTO doc
	FROM conversations c WHERE c.id = ANY (convs);
	INSERT INTO audit_log (conversation_id, step, decision, reason,
	    details)
	SELECT c, 'lgpd', 'export', 'pedido do titular (LGPD art. 18)',
	    jsonb_build_object('by', coalesce(p_who, session_user))
	FROM unnest(convs) c;
	RETURN doc;
END $$;
