-- 0003_turn_fn.sql -- one PL/pgSQL function per database step of a turn:
-- each is one round trip for the C worker (jsonb in, jsonb out), atomic,
-- and tested in SQL (tests/sql/). All SECURITY INVOKER. Times come from
-- now() (the transaction's start), so a test in one transaction is
-- deterministic.
-- SPDX-License-Identifier: MIT

-- The Graph API recipient fields for a doctor key: a BSUID ("US.123...")
-- goes to "recipient", a phone number to "to" with a leading "+".
CREATE FUNCTION mg_recipient(p_key text) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE
	WHEN p_key ~ '^[A-Z]{2}\.' THEN jsonb_build_object('recipient', p_key)
	WHEN p_key LIKE '+%' THEN jsonb_build_object('to', p_key)
	ELSE jsonb_build_object('to', '+' || p_key) END
$$;

-- Complete a Graph API body for a conversation: messaging_product,
-- recipient_type and to/recipient are added when the payload lacks them.
CREATE FUNCTION mg_complete_payload(p_payload jsonb, p_key text)
RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN p_payload ->> 'status' = 'read' THEN
		jsonb_build_object('messaging_product', 'whatsapp') || p_payload
	ELSE
		jsonb_build_object('messaging_product', 'whatsapp',
		    'recipient_type', 'individual') || mg_recipient(p_key) ||
		    p_payload
	END
$$;

-- Claim ------------------------------------------------------------------

-- Link pending inbox rows to their conversation, creating it when new
-- (ingest does not write conversations). Rows are taken in id order with
-- SKIP LOCKED, so concurrent callers never wait on each other; at most
-- p_max rows per call.
CREATE FUNCTION mg_link_inbox(p_max int DEFAULT 5000) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
	n int;
BEGIN
	WITH rows AS (
		SELECT id, phone_number_id, sender_key, user_id, profile_name
		FROM inbox
		WHERE conversation_id IS NULL
		ORDER BY id
		LIMIT p_max
		FOR UPDATE SKIP LOCKED
	), keys AS (
		SELECT DISTINCT ON (phone_number_id, sender_key)
		    phone_number_id, sender_key, user_id, profile_name
		FROM rows
		ORDER BY phone_number_id, sender_key, id DESC
	), ins AS (
		INSERT INTO conversations (phone_number_id, wa_id, user_id,
		    profile_name)
		SELECT phone_number_id, sender_key, user_id, profile_name
		FROM keys ORDER BY phone_number_id, sender_key
		ON CONFLICT (phone_number_id, wa_id) DO NOTHING
		RETURNING id
	)
	SELECT count(*) INTO n FROM ins;
	UPDATE inbox i SET conversation_id = c.id
	FROM conversations c
	WHERE i.conversation_id IS NULL
	    AND i.id IN (SELECT id FROM inbox WHERE conversation_id IS NULL
		ORDER BY id LIMIT p_max FOR UPDATE SKIP LOCKED)
	    AND c.phone_number_id = i.phone_number_id
	    AND c.wa_id = i.sender_key;
	GET DIAGNOSTICS n = ROW_COUNT;
	RETURN n;
END $$;

-- mg_claim(worker, lease_seconds, window_ms, limit): lease up to p_limit
-- conversations with due inbound work and return, per conversation,
-- {"conversation_id", "inbox_ids":[...], "lease_until", "attempts",
-- "retaken"}. A conversation is due when no live lease is held on it
-- (an expired lease is taken over: its 'claimed' rows are claimed again,
-- attempts + 1, "retaken": true), its backoff (next_attempt_at) has
-- passed, and its NEWEST open message arrived (received_at) more than
-- p_window_ms ago: a burst of messages (double texting) is one turn.
-- inbox_ids are ordered by wa_timestamp, received_at, id; at most 20 per
-- conversation (the rest come in the next turn). Conversations are
-- locked with FOR UPDATE SKIP LOCKED and the lease is written in the same
-- statement's transaction: never two live leases on one conversation.
CREATE FUNCTION mg_claim(p_worker text, p_lease_seconds int, p_window_ms int,
    p_limit int) RETURNS SETOF jsonb
LANGUAGE plpgsql AS $$
DECLARE
	c	record;
	ids	bigint[];
	att	int;
	retook	boolean;
	until	timestamptz := now() + make_interval(secs => p_lease_seconds);
BEGIN
	-- A lost claim is harmless (the row is still due and is claimed
	-- again), so this transaction need not wait for its WAL flush; the
	-- commits that must be durable (ingest, mg_commit_turn,
	-- mg_outbox_result) keep synchronous_commit on.
	PERFORM set_config('synchronous_commit', 'off', true);
	IF p_worker IS NULL OR p_worker = '' THEN
		RAISE EXCEPTION 'mg_claim: worker name required';
	END IF;
	PERFORM mg_link_inbox();
	FOR c IN
		WITH open AS (
			SELECT conversation_id, min(id) AS first_id,
			    max(received_at) AS newest
			FROM inbox
			WHERE state IN ('pending', 'claimed')
			    AND conversation_id IS NOT NULL
			GROUP BY conversation_id
		)
		SELECT cv.id
		FROM conversations cv JOIN open o ON o.conversation_id = cv.id
		WHERE (cv.lease_until IS NULL OR cv.lease_until < now())
		    AND (cv.next_attempt_at IS NULL OR cv.next_attempt_at <= now())
		    AND o.newest <= now() - make_interval(secs => p_window_ms / 1000.0)
		ORDER BY o.first_id
		LIMIT p_limit
		FOR UPDATE OF cv SKIP LOCKED
	LOOP
		WITH picked AS (
			SELECT id, state FROM inbox
			WHERE conversation_id = c.id
			    AND state IN ('pending', 'claimed')
			ORDER BY coalesce(wa_timestamp, received_at), received_at, id
			LIMIT 20
			FOR UPDATE
		), upd AS (
			UPDATE inbox i SET state = 'claimed', claimed_by = p_worker,
			    claimed_at = now(),
			    attempts = i.attempts + (p.state = 'claimed')::int,
			    last_error = CASE WHEN p.state = 'claimed' THEN
				'lease of ' || coalesce(i.claimed_by, '?') ||
				' expired' ELSE i.last_error END
			FROM picked p WHERE p.id = i.id
			RETURNING i.id, i.attempts, p.state = 'claimed' AS retaken,
			    coalesce(i.wa_timestamp, i.received_at) AS t1,
			    i.received_at AS t2
		)
		SELECT array_agg(id ORDER BY t1, t2, id), coalesce(max(attempts), 0),
		    coalesce(bool_or(retaken), false)
		INTO ids, att, retook FROM upd;
		IF ids IS NULL THEN
			CONTINUE;	-- committed by another worker meanwhile
		END IF;
		UPDATE conversations SET lease_owner = p_worker,
		    lease_until = until
		WHERE id = c.id;
		RETURN NEXT jsonb_build_object('conversation_id', c.id,
		    'inbox_ids', to_jsonb(ids), 'lease_until', until,
		    'attempts', att, 'retaken', retook);
	END LOOP;
END $$;

-- mg_renew_lease(worker, conversation_id, lease_seconds): extend a live
-- lease held by p_worker (a long LLM call). {"ok":true,"lease_until"} or
-- {"ok":false,"reason":"lease_lost"}.
CREATE FUNCTION mg_renew_lease(p_worker text, p_conversation_id bigint,
    p_lease_seconds int) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
	until timestamptz;
BEGIN
	-- A lost claim is harmless (the row is still due and is claimed
	-- again), so this transaction need not wait for its WAL flush; the
	-- commits that must be durable (ingest, mg_commit_turn,
	-- mg_outbox_result) keep synchronous_commit on.
	PERFORM set_config('synchronous_commit', 'off', true);
	UPDATE conversations
	SET lease_until = now() + make_interval(secs => p_lease_seconds)
	WHERE id = p_conversation_id AND lease_owner = p_worker
	    AND lease_until >= now()
	RETURNING lease_until INTO until;
	IF NOT FOUND THEN
		RETURN jsonb_build_object('ok', false, 'reason', 'lease_lost');
	END IF;
	RETURN jsonb_build_object('ok', true, 'lease_until', until);
END $$;

-- Context ----------------------------------------------------------------

-- mg_context(conversation_id, inbox_ids, history): everything a turn
-- reads, in one object:
-- {"conversation": {id, phone_number_id, wa_id, user_id, profile_name,
--    mode, pending, pending_at, control, last_inbound_at (before this
--    turn), last_outbound_at, opted_out_at, opt_out_confirmed_at,
--    cooling_off_until, serious_objection_at, reserva_confirmada,
--    objecao_resolvida, especialidade, regiao, mode_updated_at,
--    mode_updated_reason,
--    mode_source},
--  "flag": {"value", "percent", "in_rollout" (stable by conversation id),
--    "effective" (value when in rollout, else "off")},
--  "memory": ["fact", ...] (oldest first, last 50),
--  "history": [{"at","direction":"in"|"out","text"}] (last p_history
--    messages, oldest first, without the claimed ones),
--  "messages": [{"id","wamid","type","text","wa_timestamp","received_at",
--    "attempts","raw"}] (the claimed ones, in order)}.
-- History starts at conversations.context_since when set (mg_release).
-- NULL when the conversation does not exist.
CREATE FUNCTION mg_context(p_conversation_id bigint, p_inbox_ids bigint[],
    p_history int) RETURNS jsonb
LANGUAGE sql STABLE AS $$
	SELECT jsonb_build_object(
	    'conversation', jsonb_build_object(
		'id', c.id, 'phone_number_id', c.phone_number_id,
		'wa_id', c.wa_id, 'user_id', c.user_id,
		'profile_name', c.profile_name,
		'mode', c.conversation_mode, 'pending', c.pending_transition,
		'pending_at', c.pending_transition_at, 'control', c.control,
		'last_inbound_at', c.last_inbound_at,
		'last_outbound_at', c.last_outbound_at,
		'opted_out_at', c.opted_out_at,
		'opt_out_confirmed_at', c.opt_out_confirmed_at,
		'cooling_off_until', c.cooling_off_until,
		'serious_objection_at', c.serious_objection_at,
		'reserva_confirmada', c.reserva_confirmada,
		'objecao_resolvida', c.objecao_resolvida,
		'especialidade', c.especialidade, 'regiao', c.regiao,
		'mode_updated_at', c.mode_updated_at,
		'mode_updated_reason', c.mode_updated_reason,
		'mode_source', c.mode_source),
	    'flag', (SELECT jsonb_build_object('value', f.value,
		    'percent', f.percent, 'in_rollout', r.inr,
		    'effective', CASE WHEN r.inr THEN f.value ELSE 'off' END)
		FROM feature_flags f,
		    LATERAL (SELECT (abs(hashtext('mg:' || c.id::text)) % 100)
			< f.percent AS inr) r
		WHERE f.name = 'conversation_mode_enabled'),
	    'memory', coalesce((SELECT jsonb_agg(m.fact ORDER BY m.id)
		FROM (SELECT id, fact FROM doctor_memory
		    WHERE conversation_id = c.id ORDER BY id DESC LIMIT 50) m),
		'[]'),
	    'history', coalesce((SELECT jsonb_agg(jsonb_build_object(
		    'at', h.at, 'direction', h.direction, 'text', h.text)
		    ORDER BY h.at, h.inbox_id, h.outbox_id)
		FROM (SELECT * FROM transcript t
		    WHERE t.conversation_id = c.id
			AND (c.context_since IS NULL OR t.at >= c.context_since)
			AND (t.inbox_id IS NULL OR
			    t.inbox_id <> ALL (coalesce(p_inbox_ids, '{}')))
		    ORDER BY t.at DESC, t.inbox_id DESC NULLS LAST,
			t.outbox_id DESC NULLS LAST
		    LIMIT greatest(p_history, 0)) h), '[]'),
	    'messages', coalesce((SELECT jsonb_agg(jsonb_build_object(
		    'id', i.id, 'wamid', i.wamid, 'type', i.msg_type,
		    'text', mg_inbound_text(i.msg_type, i.raw),
		    'wa_timestamp', i.wa_timestamp,
		    'received_at', i.received_at, 'attempts', i.attempts,
		    'raw', i.raw)
		    ORDER BY coalesce(i.wa_timestamp, i.received_at),
			i.received_at, i.id)
		FROM inbox i
		WHERE i.id = ANY (p_inbox_ids) AND i.conversation_id = c.id),
		'[]'))
	FROM conversations c
	WHERE c.id = p_conversation_id
$$;

-- Commit -----------------------------------------------------------------

-- Apply the keys present in p_set to conversation p_id (JSON null clears
-- a column). "mode" moves conversation_mode and stamps mode_updated_at.
-- Timestamps are ISO 8601 strings ('now' works).
CREATE FUNCTION mg_apply_conversation(p_id bigint, p_set jsonb)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	bad text[];
BEGIN
	IF p_set IS NULL OR p_set = '{}' THEN
		RETURN;
	END IF;
	IF jsonb_typeof(p_set) <> 'object' THEN
		RAISE EXCEPTION 'mg_commit_turn: conversation must be an object';
	END IF;
	SELECT array_agg(k) INTO bad FROM jsonb_object_keys(p_set) k
	WHERE k NOT IN ('mode', 'mode_updated_reason', 'mode_source',
	    'pending_transition', 'pending_transition_at', 'control',
	    'opted_out_at', 'opt_out_confirmed_at', 'serious_objection_at',
	    'cooling_off_until', 'reserva_confirmada', 'objecao_resolvida',
	    'especialidade', 'regiao', 'profile_name', 'control_updated_by');
	IF bad IS NOT NULL THEN
		RAISE EXCEPTION 'mg_commit_turn: unknown conversation keys %', bad;
	END IF;
	UPDATE conversations c SET
	    conversation_mode = CASE WHEN p_set ? 'mode'
		THEN p_set ->> 'mode' ELSE c.conversation_mode END,
	    mode_updated_at = CASE WHEN p_set ? 'mode' AND
		(p_set ->> 'mode') IS DISTINCT FROM c.conversation_mode
		THEN now() ELSE c.mode_updated_at END,
	    mode_updated_reason = CASE WHEN p_set ? 'mode_updated_reason'
		THEN p_set ->> 'mode_updated_reason' ELSE c.mode_updated_reason END,
	    mode_source = CASE WHEN p_set ? 'mode_source'
		THEN p_set ->> 'mode_source' ELSE c.mode_source END,
	    pending_transition = CASE WHEN p_set ? 'pending_transition'
		THEN p_set ->> 'pending_transition' ELSE c.pending_transition END,
	    pending_transition_at = CASE WHEN p_set ? 'pending_transition_at'
		THEN (p_set ->> 'pending_transition_at')::timestamptz
		ELSE c.pending_transition_at END,
	    control = CASE WHEN p_set ? 'control'
		THEN p_set ->> 'control' ELSE c.control END,
	    control_updated_at = CASE WHEN p_set ? 'control' AND
		(p_set ->> 'control') IS DISTINCT FROM c.control
		THEN now() ELSE c.control_updated_at END,
	    control_updated_by = CASE WHEN p_set ? 'control_updated_by'
		THEN p_set ->> 'control_updated_by' ELSE c.control_updated_by END,
	    opted_out_at = CASE WHEN p_set ? 'opted_out_at'
		THEN (p_set ->> 'opted_out_at')::timestamptz
		ELSE c.opted_out_at END,
	    opt_out_confirmed_at = CASE WHEN p_set ? 'opt_out_confirmed_at'
		THEN (p_set ->> 'opt_out_confirmed_at')::timestamptz
		ELSE c.opt_out_confirmed_at END,
	    serious_objection_at = CASE WHEN p_set ? 'serious_objection_at'
		THEN (p_set ->> 'serious_objection_at')::timestamptz
		ELSE c.serious_objection_at END,
	    cooling_off_until = CASE WHEN p_set ? 'cooling_off_until'
		THEN (p_set ->> 'cooling_off_until')::timestamptz
		ELSE c.cooling_off_until END,
	    reserva_confirmada = CASE WHEN p_set ? 'reserva_confirmada'
		THEN coalesce((p_set ->> 'reserva_confirmada')::boolean, false)
		ELSE c.reserva_confirmada END,
	    objecao_resolvida = CASE WHEN p_set ? 'objecao_resolvida'
		THEN coalesce((p_set ->> 'objecao_resolvida')::boolean, false)
		ELSE c.objecao_resolvida END,
	    especialidade = CASE WHEN p_set ? 'especialidade'
		THEN p_set ->> 'especialidade' ELSE c.especialidade END,
	    regiao = CASE WHEN p_set ? 'regiao'
		THEN p_set ->> 'regiao' ELSE c.regiao END,
	    profile_name = CASE WHEN p_set ? 'profile_name'
		THEN p_set ->> 'profile_name' ELSE c.profile_name END
	WHERE c.id = p_id;
END $$;

-- The jsonb array at p_turn->key, or an empty array; anything else is
-- an error.
CREATE FUNCTION mg_arr(p_turn jsonb, p_key text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	IF p_turn IS NULL OR NOT p_turn ? p_key OR
	    jsonb_typeof(p_turn -> p_key) = 'null' THEN
		RETURN '[]';
	END IF;
	IF jsonb_typeof(p_turn -> p_key) <> 'array' THEN
		RAISE EXCEPTION 'mg_commit_turn: % must be an array', p_key;
	END IF;
	RETURN p_turn -> p_key;
END $$;

-- Record bridges; each new one also writes funnel ponte_feita with the
-- shift's responsible person. Returns the number of new bridges.
CREATE FUNCTION mg_apply_handoffs(p_conv conversations, p_list jsonb,
    p_inbox_id bigint) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
	h	jsonb;
	v	vagas;
	n	int := 0;
BEGIN
	FOR h IN SELECT * FROM jsonb_array_elements(p_list) LOOP
		SELECT * INTO v FROM vagas WHERE id = (h ->> 'vaga_id')::bigint;
		IF NOT FOUND THEN
			RAISE EXCEPTION 'mg_commit_turn: vaga % not found',
			    h ->> 'vaga_id';
		END IF;
		INSERT INTO handoffs (conversation_id, vaga_id)
		VALUES (p_conv.id, v.id) ON CONFLICT DO NOTHING;
		IF FOUND THEN
			n := n + 1;
			INSERT INTO funnel_events (conversation_id, vaga_id, status,
			    doctor_key, responsavel, metadata)
			VALUES (p_conv.id, v.id, 'ponte_feita', p_conv.wa_id,
			    v.responsavel_nome, jsonb_build_object('inbox_id',
				p_inbox_id, 'hospital', v.hospital) ||
				coalesce(h -> 'metadata', '{}'));
		END IF;
	END LOOP;
	RETURN n;
END $$;

-- mg_commit_turn(worker, conversation_id, turn): the end of a turn, in
-- one transaction, only while p_worker still holds a live lease
-- (else {"ok":false,"reason":"lease_lost"} and nothing changes).
-- p_turn (every key optional):
--  "conversation": {key: value} -- only the keys present are written;
--      keys: mode, mode_updated_reason, mode_source, pending_transition,
--      pending_transition_at, control, control_updated_by, opted_out_at,
--      opt_out_confirmed_at, serious_objection_at, cooling_off_until,
--      reserva_confirmada, objecao_resolvida, especialidade, regiao,
--      profile_name; null clears; unknown keys are an error.
--  "inbox": [{"id", "state": "done"|"skipped", "reason"}] -- per-message
--      outcome; claimed rows not listed become "done".
--  "audit": [{"step", "decision", "reason", "details", "inbox_id"}]
--  "funnel": [{"status", "vaga_id", "responsavel", "metadata"}]
--      (doctor_key = the conversation's wa_id; responsavel defaults to
--      the shift's responsavel_nome)
--  "memory": ["fact", ...]  (or [{"fact": "..."}])
--  "handoffs": [{"vaga_id", "metadata"}] -- each NEW bridge also writes
--      funnel ponte_feita (do not list it in "funnel")
--  "outbox": [{"kind": "text"|"template"|"read", "payload": {...},
--      "inbox_id"}] -- payload completed with messaging_product and
--      to/recipient when absent; for a text, {"text":{"body":"..."}}
--      (plus "type":"text") is enough.
-- Also: last_inbound_at moves to the newest wa_timestamp of the turn's
-- messages; the lease is released; next_attempt_at cleared.
-- Returns {"ok":true, "outbox_ids":[...], "handoffs_new": n,
-- "inbox_done": n}. Malformed input raises an error (nothing applied).
CREATE FUNCTION mg_commit_turn(p_worker text, p_conversation_id bigint,
    p_turn jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
	cv	conversations;
	e	jsonb;
	oids	bigint[] := '{}';
	oid	bigint;
	nh	int;
	ndone	int;
	last_in	bigint;
	newest	timestamptz;
	bad	text;
BEGIN
	SELECT * INTO cv FROM conversations
	WHERE id = p_conversation_id AND lease_owner = p_worker
	    AND lease_until >= now()
	FOR UPDATE;
	IF NOT FOUND THEN
		RETURN jsonb_build_object('ok', false, 'reason', 'lease_lost');
	END IF;
	SELECT max(id), max(coalesce(wa_timestamp, received_at))
	INTO last_in, newest FROM inbox
	WHERE conversation_id = cv.id AND state = 'claimed'
	    AND claimed_by = p_worker;
	SELECT x ->> 'state' INTO bad
	FROM jsonb_array_elements(mg_arr(p_turn, 'inbox')) x
	WHERE coalesce(x ->> 'state', 'done') NOT IN ('done', 'skipped')
	LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'mg_commit_turn: inbox state % (done|skipped)', bad;
	END IF;

	PERFORM mg_apply_conversation(cv.id, p_turn -> 'conversation');

	FOR e IN SELECT * FROM jsonb_array_elements(mg_arr(p_turn, 'audit')) LOOP
		INSERT INTO audit_log (conversation_id, inbox_id, step, decision,
		    reason, details)
		VALUES (cv.id, coalesce((e ->> 'inbox_id')::bigint, last_in),
		    e ->> 'step', e ->> 'decision', e ->> 'reason',
		    coalesce(e -> 'details', '{}'));
	END LOOP;

	INSERT INTO funnel_events (conversation_id, vaga_id, status, doctor_key,
	    responsavel, metadata)
	SELECT cv.id, (f ->> 'vaga_id')::bigint, f ->> 'status', cv.wa_id,
	    coalesce(f ->> 'responsavel', v.responsavel_nome),
	    coalesce(f -> 'metadata', '{}')
	FROM jsonb_array_elements(mg_arr(p_turn, 'funnel')) f
	LEFT JOIN vagas v ON v.id = (f ->> 'vaga_id')::bigint;

	INSERT INTO doctor_memory (conversation_id, fact)
	SELECT cv.id, CASE jsonb_typeof(m) WHEN 'string' THEN m #>> '{}'
	    ELSE m ->> 'fact' END
	FROM jsonb_array_elements(mg_arr(p_turn, 'memory')) m;

	nh := mg_apply_handoffs(cv, mg_arr(p_turn, 'handoffs'), last_in);

	FOR e IN SELECT * FROM jsonb_array_elements(mg_arr(p_turn, 'outbox')) LOOP
		INSERT INTO outbox (conversation_id, inbox_id, kind, payload,
		    to_key, phone_number_id)
		VALUES (cv.id, coalesce((e ->> 'inbox_id')::bigint, last_in),
		    coalesce(e ->> 'kind', 'text'),
		    mg_complete_payload(e -> 'payload', cv.wa_id), cv.wa_id,
		    cv.phone_number_id)
		RETURNING id INTO oid;
		oids := oids || oid;
	END LOOP;

	UPDATE inbox i SET
	    state = coalesce(o.state, 'done'), done_at = now(),
	    done_reason = o.reason
	FROM (SELECT i2.id, x ->> 'state' AS state, x ->> 'reason' AS reason
		FROM inbox i2 LEFT JOIN
		    jsonb_array_elements(mg_arr(p_turn, 'inbox')) x
		    ON (x ->> 'id')::bigint = i2.id
		WHERE i2.conversation_id = cv.id AND i2.state = 'claimed'
		    AND i2.claimed_by = p_worker) o
	WHERE i.id = o.id;
	GET DIAGNOSTICS ndone = ROW_COUNT;

	UPDATE conversations SET
	    last_inbound_at = CASE WHEN newest IS NULL THEN last_inbound_at
		ELSE greatest(last_inbound_at, newest) END,
	    lease_owner = NULL, lease_until = NULL, next_attempt_at = NULL
	WHERE id = cv.id;

	RETURN jsonb_build_object('ok', true, 'outbox_ids', to_jsonb(oids),
	    'handoffs_new', nh, 'inbox_done', ndone);
END $$;

-- mg_fail_turn(worker, conversation_id, inbox_ids, error, max_attempts):
-- a turn failed (LLM down, database error...). The listed messages get
-- attempts + 1 and last_error; below p_max_attempts they go back to
-- pending with exponential backoff (5 s × 2^(attempts-1), at most 15 min,
-- also on the conversation, so later messages keep their order); at
-- p_max_attempts they go 'dead' with their error and an audit row
-- (step "worker", decision "dead"). Other claimed rows of the
-- conversation return to pending untouched. Releases the lease.
-- {"ok":true, "dead":[ids], "retry":[ids], "next_attempt_at"} or
-- {"ok":false,"reason":"lease_lost"} (nothing changed).
CREATE FUNCTION mg_fail_turn(p_worker text, p_conversation_id bigint,
    p_inbox_ids bigint[], p_error text, p_max_attempts int) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
	dead	bigint[];
	retry	bigint[];
	nxt	timestamptz;
BEGIN
	PERFORM 1 FROM conversations
	WHERE id = p_conversation_id AND lease_owner = p_worker
	    AND lease_until >= now()
	FOR UPDATE;
	IF NOT FOUND THEN
		RETURN jsonb_build_object('ok', false, 'reason', 'lease_lost');
	END IF;
	WITH upd AS (
		UPDATE inbox SET attempts = attempts + 1, last_error = p_error,
		    state = CASE WHEN attempts + 1 >= p_max_attempts
			THEN 'dead' ELSE 'pending' END,
		    next_attempt_at = CASE WHEN attempts + 1 >= p_max_attempts
			THEN NULL ELSE now() + least(interval '15 min',
			    interval '5 s' * power(2, attempts)) END,
		    done_at = CASE WHEN attempts + 1 >= p_max_attempts
			THEN now() END
		WHERE conversation_id = p_conversation_id
		    AND id = ANY (p_inbox_ids) AND state = 'claimed'
		    AND claimed_by = p_worker
		RETURNING id, state, next_attempt_at
	)
	SELECT array_agg(id ORDER BY id) FILTER (WHERE state = 'dead'),
	    array_agg(id ORDER BY id) FILTER (WHERE state = 'pending'),
	    max(next_attempt_at)
	INTO dead, retry, nxt FROM upd;
	UPDATE inbox SET state = 'pending'
	WHERE conversation_id = p_conversation_id AND state = 'claimed'
	    AND claimed_by = p_worker;
	INSERT INTO audit_log (conversation_id, inbox_id, step, decision,
	    reason, details)
	SELECT p_conversation_id, d, 'worker', 'dead', p_error,
	    jsonb_build_object('max_attempts', p_max_attempts,
		'worker', p_worker)
	FROM unnest(dead) d;
	UPDATE conversations SET lease_owner = NULL, lease_until = NULL,
	    next_attempt_at = nxt
	WHERE id = p_conversation_id;
	RETURN jsonb_build_object('ok', true,
	    'dead', to_jsonb(coalesce(dead, '{}')),
	    'retry', to_jsonb(coalesce(retry, '{}')), 'next_attempt_at', nxt);
END $$;
