-- 60_turn.sql -- one PL/pgSQL function per database step of a turn:
-- each is one round trip for the C worker (jsonb in, jsonb out), atomic,
-- and tested in SQL (tests/sql/). All SECURITY INVOKER. Times come from
-- now() (the transaction's start), so a test in one transaction is
-- deterministic.
--
-- The claim returns each turn's context (mg_claim_turns: mg_claim, the
-- per-sender turn limit of mg_claim_limited, mg_context); the commit
-- leases the reply to the process's sender (mg_commit_send). A message
-- whose turn keeps dying with its process ends dead (mg_claim_turns); a
-- reply is withheld when a human took the chat over while its turn ran
-- (mg_commit_send).
--
-- Per-sender turn limit: at most p_turns turns start per conversation in
-- any p_window_s seconds; messages that arrive while the sender is over
-- the limit are stored as always and wait, and the next allowed turn
-- answers all of them at once (the double-texting coalescing of
-- mg_claim), with one audit row (step 'worker', decision
-- 'rate_limited'). The hold rides on mg_claim's backoff predicate
-- (conversations.next_attempt_at), which the trigger
-- conversations_hold_sender keeps no earlier than next_turn_at even when
-- mg_commit_turn / mg_fail_turn clear or shorten it.
-- Re-applied by `modegate migrate` on every run (CREATE OR REPLACE): edit
-- a function here, never in a numbered migration.
-- SPDX-License-Identifier: MIT

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
-- locked with FOR NO KEY UPDATE SKIP LOCKED and the lease is written in
-- the same statement: never two live leases on one conversation. The
-- candidates come from the index conversations_open, in the order of
-- each conversation's oldest open message (open_first_id, kept by the
-- inbox triggers of 30_ingest.sql): a claim costs per turn claimed, not
-- per message waiting (sql/0016_flat_claim.sql).
CREATE OR REPLACE FUNCTION mg_claim(p_worker text, p_lease_seconds int,
    p_window_ms int, p_limit int) RETURNS SETOF jsonb
LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY SELECT * FROM mg_claim_limited(p_worker, p_lease_seconds,
	    p_window_ms, p_limit, 0, 0);
END $$;

-- mg_renew_lease(worker, conversation_id, lease_seconds): extend a live
-- lease held by p_worker (a long LLM call). {"ok":true,"lease_until"} or
-- {"ok":false,"reason":"lease_lost"}.
CREATE OR REPLACE FUNCTION mg_renew_lease(p_worker text,
    p_conversation_id bigint,
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
-- In PL/pgSQL: a LANGUAGE sql function that cannot be inlined is planned
-- again at every call; PL/pgSQL keeps the plan for the session.
-- One turn of mg_contexts (below).
CREATE OR REPLACE FUNCTION mg_context(p_conversation_id bigint,
    p_inbox_ids bigint[],
    p_history int) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
BEGIN
	RETURN (SELECT x.context FROM mg_contexts(ARRAY[jsonb_build_object(
	    'conversation_id', p_conversation_id,
	    'inbox_ids', to_jsonb(p_inbox_ids))], p_history) x);
END $$;

-- mg_contexts(turns, history): mg_context of many turns in one query
-- (what a claim of 100 turns reads: one plan, not 100 calls). p_turns:
-- objects with "conversation_id" and "inbox_ids" (a claim's rows); one
-- row per turn whose conversation exists, k its position in p_turns.
CREATE OR REPLACE FUNCTION mg_contexts(p_turns jsonb[], p_history int)
RETURNS TABLE (k bigint, context jsonb)
LANGUAGE plpgsql STABLE
-- One plan for any number of turns (a nested loop of index probes per
-- turn): PostgreSQL would otherwise plan it again at every call, as the
-- array's size changes the estimate (0.75 ms of a one-turn claim's 2.4).
SET plan_cache_mode = force_generic_plan AS $$
BEGIN
	RETURN QUERY
	SELECT t.k, jsonb_build_object(
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
		'objecao_at', c.objecao_at, 'objecao_motivo', c.objecao_motivo,
		'shadow_mode', c.shadow_mode, 'shadow_pending', c.shadow_pending,
		'shadow_pending_at', c.shadow_pending_at,
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
		FROM (SELECT dm.id, dm.fact FROM doctor_memory dm
		    WHERE dm.conversation_id = c.id ORDER BY dm.id DESC
		    LIMIT 50) m),
		'[]'),
	    'history', coalesce((SELECT jsonb_agg(jsonb_build_object(
		    'at', h.at, 'direction', h.direction, 'text', h.text)
		    ORDER BY h.at, h.inbox_id, h.outbox_id)
		FROM (SELECT * FROM transcript tr
		    WHERE tr.conversation_id = c.id
			AND (c.context_since IS NULL OR tr.at >= c.context_since)
			AND (tr.inbox_id IS NULL OR
			    tr.inbox_id <> ALL (z.ids))
		    ORDER BY tr.at DESC, tr.inbox_id DESC NULLS LAST,
			tr.outbox_id DESC NULLS LAST
		    LIMIT greatest(p_history, 0)) h), '[]'),
	    'messages', coalesce((SELECT jsonb_agg(jsonb_build_object(
		    'id', i.id, 'wamid', i.wamid, 'type', i.msg_type,
		    'text', mg_inbound_text(i.msg_type, i.raw),
		    'wa_timestamp', i.wa_timestamp,
		    'received_at', i.received_at, 'attempts', i.attempts,
		    'raw', i.raw)
		    ORDER BY coalesce(i.wa_timestamp, i.received_at),
			i.received_at, i.id)
		FROM unnest(z.ids) AS u(id) JOIN inbox i ON i.id = u.id
		WHERE i.conversation_id = c.id),
		'[]'))
	FROM unnest(p_turns) WITH ORDINALITY AS t(r, k)
	CROSS JOIN LATERAL (SELECT ARRAY(SELECT x::bigint
	    FROM jsonb_array_elements_text(coalesce(t.r -> 'inbox_ids',
		'[]')) x) AS ids) z
	JOIN conversations c ON c.id = (t.r ->> 'conversation_id')::bigint
	ORDER BY t.k;
END $$;

-- Commit -----------------------------------------------------------------

-- Apply the keys present in p_set to conversation p_id (JSON null clears
-- a column). "mode" moves conversation_mode and stamps mode_updated_at.
-- Timestamps are ISO 8601 strings ('now' works).
CREATE OR REPLACE FUNCTION mg_apply_conversation(p_id bigint, p_set jsonb)
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
	    'especialidade', 'regiao', 'profile_name', 'control_updated_by',
	    'objecao_at', 'objecao_motivo', 'shadow_mode', 'shadow_pending',
	    'shadow_pending_at');
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
		THEN p_set ->> 'profile_name' ELSE c.profile_name END,
	    objecao_at = CASE WHEN p_set ? 'objecao_at'
		THEN (p_set ->> 'objecao_at')::timestamptz ELSE c.objecao_at END,
	    objecao_motivo = CASE WHEN p_set ? 'objecao_motivo'
		THEN p_set ->> 'objecao_motivo' ELSE c.objecao_motivo END,
	    shadow_mode = CASE WHEN p_set ? 'shadow_mode'
		THEN p_set ->> 'shadow_mode' ELSE c.shadow_mode END,
	    shadow_pending = CASE WHEN p_set ? 'shadow_pending'
		THEN p_set ->> 'shadow_pending' ELSE c.shadow_pending END,
	    shadow_pending_at = CASE WHEN p_set ? 'shadow_pending_at'
		THEN (p_set ->> 'shadow_pending_at')::timestamptz
		ELSE c.shadow_pending_at END
	WHERE c.id = p_id;
END $$;

-- The jsonb array at p_turn->key, or an empty array; anything else is
-- an error.
CREATE OR REPLACE FUNCTION mg_arr(p_turn jsonb, p_key text) RETURNS jsonb
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
CREATE OR REPLACE FUNCTION mg_apply_handoffs(p_conv conversations, p_list jsonb,
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
CREATE OR REPLACE FUNCTION mg_commit_turn(p_worker text, p_conversation_id bigint,
    p_turn jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
	cv	conversations;
	oids	bigint[];
	nh	int;
	ndone	int;
	last_in	bigint;
	newest	timestamptz;
	bad	text;
BEGIN
	SELECT * INTO cv FROM conversations
	WHERE id = p_conversation_id AND lease_owner = p_worker
	    AND lease_until >= now()
	FOR NO KEY UPDATE;
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

	-- One statement per kind of row, not one per row (the rows keep
	-- the turn's order: ids follow it).
	INSERT INTO audit_log (conversation_id, inbox_id, step, decision,
	    reason, details)
	SELECT cv.id, coalesce((e ->> 'inbox_id')::bigint, last_in),
	    e ->> 'step', e ->> 'decision', e ->> 'reason',
	    coalesce(e -> 'details', '{}')
	FROM jsonb_array_elements(mg_arr(p_turn, 'audit')) WITH ORDINALITY
	    AS x(e, n)
	ORDER BY x.n;

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

	WITH ins AS (
		INSERT INTO outbox (conversation_id, inbox_id, kind, payload,
		    to_key, phone_number_id)
		SELECT cv.id, coalesce((e ->> 'inbox_id')::bigint, last_in),
		    coalesce(e ->> 'kind', 'text'),
		    mg_complete_payload(e -> 'payload', cv.wa_id), cv.wa_id,
		    cv.phone_number_id
		FROM jsonb_array_elements(mg_arr(p_turn, 'outbox'))
		    WITH ORDINALITY AS x(e, n)
		ORDER BY x.n
		RETURNING id
	)
	SELECT coalesce(array_agg(id ORDER BY id), '{}') INTO oids FROM ins;

	-- Only this conversation's messages change, and its row is locked
	-- since the first statement: the UPDATE below keeps its open
	-- columns, so the inbox trigger need not (modegate.open_kept).
	PERFORM set_config('modegate.open_kept', 'on', true);
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
	PERFORM set_config('modegate.open_kept', '', true);

	UPDATE conversations SET
	    last_inbound_at = CASE WHEN newest IS NULL THEN last_inbound_at
		ELSE greatest(last_inbound_at, newest) END,
	    lease_owner = NULL, lease_until = NULL, next_attempt_at = NULL,
	    open_first_id = (SELECT i.id FROM inbox i
		WHERE i.conversation_id = cv.id AND i.done_at IS NULL
		    AND i.state IN ('pending', 'claimed')
		ORDER BY i.conversation_id, i.id LIMIT 1),
	    open_newest = (SELECT max(i.received_at) FROM inbox i
		WHERE i.conversation_id = cv.id AND i.done_at IS NULL
		    AND i.state IN ('pending', 'claimed'))
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
CREATE OR REPLACE FUNCTION mg_fail_turn(p_worker text, p_conversation_id bigint,
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

-- next_attempt_at is "claim no earlier than": never earlier than the
-- sender's next allowed turn, whoever writes it.
CREATE OR REPLACE FUNCTION mg_hold_sender() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.next_turn_at > now() AND (NEW.next_attempt_at IS NULL OR
	    NEW.next_attempt_at < NEW.next_turn_at) THEN
		NEW.next_attempt_at := NEW.next_turn_at;
	END IF;
	RETURN NEW;
END $$;

CREATE OR REPLACE TRIGGER conversations_hold_sender
	BEFORE UPDATE ON conversations
	FOR EACH ROW WHEN (NEW.next_turn_at IS NOT NULL)
	EXECUTE FUNCTION mg_hold_sender();

-- mg_sender_turn(conversation_id, inbox_ids, turns, window_s, window_ms):
-- a turn of the conversation starts now (just claimed, its lease held).
-- When some of its messages became due (newest + the double-texting
-- window p_window_ms) before the hold ended, the limit delayed them:
-- one audit row says how many this turn answers at once. Then now() is
-- recorded and, with p_turns starts in the last p_window_s seconds, the
-- next turn is held until the oldest of them is p_window_s old.
CREATE OR REPLACE FUNCTION mg_sender_turn(p_conversation_id bigint,
    p_inbox_ids jsonb,
    p_turns int, p_window_s int, p_window_ms int) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	cv	conversations;
	held	int;
	first	bigint;
	starts	timestamptz[];
	n	int;
BEGIN
	SELECT * INTO cv FROM conversations WHERE id = p_conversation_id;
	IF cv.next_turn_at IS NOT NULL THEN
		SELECT count(*), min(i.id) INTO held, first FROM inbox i
		WHERE i.id IN (SELECT x::bigint
			FROM jsonb_array_elements_text(p_inbox_ids) x)
		    AND i.received_at + make_interval(secs => p_window_ms /
			1000.0) < cv.next_turn_at;
		IF held > 0 THEN
			INSERT INTO audit_log (conversation_id, inbox_id, step,
			    decision, reason, details)
			VALUES (cv.id, first, 'worker', 'rate_limited',
			    format('sender over %s turns in %s s', p_turns,
				p_window_s),
			    jsonb_build_object('held', held,
				'messages', jsonb_array_length(p_inbox_ids),
				'held_until', cv.next_turn_at,
				'turns', p_turns, 'window_s', p_window_s));
		END IF;
	END IF;
	starts := cv.turn_starts || now();
	n := cardinality(starts);
	IF n > p_turns THEN
		starts := starts[n - p_turns + 1 : n];
		n := p_turns;
	END IF;
	UPDATE conversations SET turn_starts = starts,
	    next_turn_at = CASE WHEN n >= p_turns THEN
		starts[1] + make_interval(secs => p_window_s) END
	WHERE id = cv.id;
END $$;

-- mg_claim_limited(worker, lease_seconds, window_ms, limit, turns,
-- window_s): mg_claim, then each new turn is counted against its sender
-- (as mg_sender_turn does, for every turn in one statement). A take-over
-- (retaken) is the same turn, not a new one. p_turns 0: no limit
-- (mg_claim alone).
--
-- One statement picks, leases and counts every turn (sql/0019): the
-- claim of 100 turns costs one plan, not 100 function calls. The inbox
-- rows are not locked before their UPDATE (the UPDATE locks them and
-- re-checks that they are still open); moving pending to claimed leaves
-- the open set of each conversation as it was, so the inbox trigger
-- stands aside (modegate.open_kept) while it runs.
CREATE OR REPLACE FUNCTION mg_claim_limited(p_worker text, p_lease_seconds int,
    p_window_ms int, p_limit int, p_turns int, p_window_s int)
RETURNS SETOF jsonb
LANGUAGE plpgsql AS $$
DECLARE
	until	timestamptz := now() + make_interval(secs => p_lease_seconds);
	win	interval := make_interval(secs => p_window_ms / 1000.0);
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
	PERFORM set_config('modegate.open_kept', 'on', true);
	RETURN QUERY
	WITH cand AS MATERIALIZED (
		SELECT cv.id, cv.ctid AS tid, cv.open_first_id AS ord,
		    cv.next_turn_at, cv.turn_starts
		FROM conversations cv
		WHERE cv.open_first_id IS NOT NULL
		    AND (cv.lease_until IS NULL OR cv.lease_until < now())
		    AND (cv.next_attempt_at IS NULL OR cv.next_attempt_at <= now())
		    AND cv.open_newest <= now() - win
		    -- not while a message of its doctor is still unlinked
		    -- (another process's link holds it): it may be older
		    -- than those linked (sql/0021)
		    AND NOT EXISTS (SELECT 1 FROM inbox u
			WHERE u.conversation_id IS NULL
			    AND u.phone_number_id = cv.phone_number_id
			    AND u.sender_key = cv.wa_id)
		ORDER BY cv.open_first_id
		LIMIT p_limit
		FOR NO KEY UPDATE OF cv SKIP LOCKED
	), picked AS MATERIALIZED (
		-- at most 20 per conversation; the rest come in the next turn
		SELECT m.id, m.tid, m.state, m.received_at, c.id AS cid, c.ord
		FROM cand c CROSS JOIN LATERAL (
			SELECT i.id, i.ctid AS tid, i.state, i.received_at
			FROM inbox i
			WHERE i.conversation_id = c.id AND i.done_at IS NULL
			    AND i.state IN ('pending', 'claimed')
			ORDER BY coalesce(i.wa_timestamp, i.received_at),
			    i.received_at, i.id
			LIMIT 20) m
	), upd AS (
		UPDATE inbox i SET state = 'claimed', claimed_by = p_worker,
		    claimed_at = now(),
		    attempts = i.attempts + (p.state = 'claimed')::int,
		    last_error = CASE WHEN p.state = 'claimed' THEN
			'lease of ' || coalesce(i.claimed_by, '?') ||
			' expired' ELSE i.last_error END
		FROM picked p
		WHERE i.ctid = p.tid AND i.state IN ('pending', 'claimed')
		RETURNING i.id, p.cid, p.ord, i.attempts,
		    p.state = 'claimed' AS retaken,
		    coalesce(i.wa_timestamp, i.received_at) AS t1,
		    i.received_at AS t2
	), turns AS MATERIALIZED (
		-- per conversation: a new turn (not a take-over) counted
		-- against its sender; the messages its hold delayed; the
		-- sender's turn starts with this one, the last p_turns kept
		SELECT c.id AS cid, c.tid, c.ord, c.next_turn_at,
		    p_turns > 0 AND NOT bool_or(p.state = 'claimed') AS counted,
		    count(*) AS messages,
		    count(*) FILTER (WHERE p.received_at + win <
			c.next_turn_at) AS held,
		    min(p.id) FILTER (WHERE p.received_at + win <
			c.next_turn_at) AS first,
		    (c.turn_starts || now())[greatest(cardinality(
			c.turn_starts || now()) - p_turns + 1, 1):] AS starts
		FROM cand c JOIN picked p ON p.cid = c.id
		GROUP BY c.id, c.tid, c.ord, c.next_turn_at, c.turn_starts
	), lease AS (
		UPDATE conversations cv SET lease_owner = p_worker,
		    lease_until = until,
		    turn_starts = CASE WHEN t.counted THEN t.starts
			ELSE cv.turn_starts END,
		    next_turn_at = CASE WHEN NOT t.counted THEN cv.next_turn_at
			WHEN cardinality(t.starts) >= p_turns THEN
			    t.starts[1] + make_interval(secs => p_window_s) END
		FROM turns t
		WHERE cv.ctid = t.tid
		RETURNING cv.id
	), held AS (
		INSERT INTO audit_log (conversation_id, inbox_id, step,
		    decision, reason, details)
		SELECT t.cid, t.first, 'worker', 'rate_limited',
		    format('sender over %s turns in %s s', p_turns, p_window_s),
		    jsonb_build_object('held', t.held, 'messages', t.messages,
			'held_until', t.next_turn_at, 'turns', p_turns,
			'window_s', p_window_s)
		FROM turns t
		WHERE t.counted AND t.held > 0
		ORDER BY t.ord
	)
	SELECT jsonb_build_object('conversation_id', u.cid,
	    'inbox_ids', to_jsonb(array_agg(u.id ORDER BY u.t1, u.t2, u.id)),
	    'lease_until', until, 'attempts', max(u.attempts),
	    'retaken', bool_or(u.retaken))
	FROM upd u
	WHERE u.cid IN (SELECT id FROM lease)
	GROUP BY u.cid, u.ord
	ORDER BY u.ord;
	PERFORM set_config('modegate.open_kept', '', true);
END $$;

-- mg_claim_turns(worker, lease_seconds, window_ms, limit, turns,
-- window_s, history, max_attempts): mg_claim_limited (above), each row
-- with "context": mg_context(conversation, its inbox_ids, p_history)
-- (above), read after the claim in the same transaction.
--
-- A message whose turn keeps dying with its process (its lease expired
-- and was taken over, attempts + 1 each time) must not take every new
-- process down with it: retaken with attempts >= p_max_attempts it is
-- 'dead', audited like mg_fail_turn's (step "worker", decision "dead",
-- its last_error, details {max_attempts, worker, retaken: true}), and
-- left out of the turn; a turn left with no message is not returned and
-- its lease is released.
CREATE OR REPLACE FUNCTION mg_claim_turns(p_worker text, p_lease_seconds int,
    p_window_ms int, p_limit int, p_turns int, p_window_s int,
    p_history int, p_max_attempts int) RETURNS SETOF jsonb
LANGUAGE plpgsql AS $$
DECLARE
	turns	jsonb[];
	r	jsonb;
	j	int;
	cid	bigint;
	ids	bigint[];
	ndead	int;
BEGIN
	turns := ARRAY(SELECT * FROM mg_claim_limited(p_worker,
	    p_lease_seconds, p_window_ms, p_limit, p_turns, p_window_s));
	-- Take-overs (rare) one by one; every context in one query below.
	FOR j IN 1 .. coalesce(cardinality(turns), 0) LOOP
		r := turns[j];
		CONTINUE WHEN NOT (r ->> 'retaken')::boolean;
		cid := (r ->> 'conversation_id')::bigint;
		ids := ARRAY(SELECT x::bigint FROM
		    jsonb_array_elements_text(r -> 'inbox_ids') x);
		WITH d AS (
			UPDATE inbox SET state = 'dead', done_at = now()
			WHERE id = ANY (ids)
			    AND attempts >= p_max_attempts
			RETURNING id, last_error
		), a AS (
			INSERT INTO audit_log (conversation_id, inbox_id,
			    step, decision, reason, details)
			SELECT cid, d.id, 'worker', 'dead', d.last_error,
			    jsonb_build_object('max_attempts',
				p_max_attempts, 'worker', p_worker,
				'retaken', true)
			FROM d
		)
		SELECT count(*) INTO ndead FROM d;
		IF ndead = cardinality(ids) THEN
			UPDATE conversations SET lease_owner = NULL,
			    lease_until = NULL
			WHERE id = cid;
			turns[j] := NULL;
		ELSIF ndead > 0 THEN
			ids := ARRAY(SELECT id FROM inbox
			    WHERE id = ANY (ids) AND state = 'claimed'
			    ORDER BY coalesce(wa_timestamp, received_at),
				received_at, id);
			turns[j] := jsonb_set(r, '{inbox_ids}', to_jsonb(ids));
		END IF;
	END LOOP;
	RETURN QUERY
	SELECT turns[x.k] || jsonb_build_object('context', x.context)
	FROM mg_contexts(turns, p_history) x
	ORDER BY x.k;
END $$;

-- mg_start_read(worker, conversation_id, inbox_id, sender,
-- send_lease_seconds, send_limit): mg_enqueue_read (40_outbox.sql),
-- then up to p_send_limit of the conversation's due outbox rows (the
-- receipt among them) leased to p_sender:
-- {"ok":true,"outbox_id","send":[rows as
-- mg_claim_outbox returns them]}. p_sender NULL or p_send_limit 0: the
-- sender's own claim takes them ("send": []).
CREATE OR REPLACE FUNCTION mg_start_read(p_worker text,
    p_conversation_id bigint,
    p_inbox_id bigint, p_sender text, p_send_lease_seconds int,
    p_send_limit int)
RETURNS jsonb
LANGUAGE plpgsql AS $$
BEGIN
	RETURN mg_lease_send(mg_enqueue_read(p_worker, p_conversation_id,
	    p_inbox_id), p_sender, p_send_lease_seconds, p_send_limit,
	    p_conversation_id);
END $$;

-- mg_commit_send(worker, conversation_id, turn, sender,
-- send_lease_seconds, send_limit): mg_commit_turn (above), then up to
-- p_send_limit of the conversation's due outbox rows (the turn's reply
-- when nothing of the conversation is still in flight) leased to
-- p_sender in the same transaction: the commit's answer gains
-- "send": [rows as mg_claim_outbox returns them].
--
-- A human who took the chat over (mg_takeover) while the turn ran gets
-- no AI reply behind their back: when the conversation is under human
-- control at commit and the turn did not hand it over itself (its
-- "conversation" sets no "control"), the turn commits without its
-- outbox rows, audited (step "control", decision "human", reason
-- "reply_withheld", details {outbox: rows withheld}).
CREATE OR REPLACE FUNCTION mg_commit_send(p_worker text, p_conversation_id bigint,
    p_turn jsonb, p_sender text, p_send_lease_seconds int,
    p_send_limit int) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
	turn	jsonb := p_turn;
	ctl	text;
BEGIN
	-- The lock mg_commit_turn takes, taken first: no takeover between
	-- this check and the commit.
	SELECT control INTO ctl FROM conversations
	WHERE id = p_conversation_id FOR NO KEY UPDATE;
	IF ctl = 'human' AND jsonb_array_length(mg_arr(p_turn, 'outbox')) > 0
	    AND NOT coalesce(p_turn -> 'conversation' ? 'control', false) THEN
		turn := p_turn || jsonb_build_object('outbox', '[]'::jsonb,
		    'audit', mg_arr(p_turn, 'audit') || jsonb_build_object(
			'step', 'control', 'decision', 'human',
			'reason', 'reply_withheld', 'details',
			jsonb_build_object('outbox',
			    jsonb_array_length(mg_arr(p_turn, 'outbox')))));
	END IF;
	RETURN mg_lease_send(mg_commit_turn(p_worker, p_conversation_id, turn),
	    p_sender, p_send_lease_seconds, p_send_limit, p_conversation_id);
END $$;

-- (the read receipts' batch form, in main for an hour of 2026-11-28:
-- unused since, not left behind)
DROP FUNCTION IF EXISTS mg_start_read_many(jsonb);

-- Group commit (src/db/queue.c): the commits of many turns in one
-- transaction. p_calls: one
-- array per call, its parameters as text in the single function's order;
-- one row per call (n its 1-based position, r its answer as text). The
-- calls run in conversation order, as every batch that locks
-- conversations takes them, so two batches do not deadlock. One call's
-- error rolls back the batch: the caller then sends each call alone.
CREATE OR REPLACE FUNCTION mg_commit_send_many(p_calls jsonb)
RETURNS TABLE (n bigint, r text)
LANGUAGE plpgsql AS $$
DECLARE
	e	jsonb;
BEGIN
	FOR n, e IN SELECT x.n, x.e
	    FROM jsonb_array_elements(p_calls) WITH ORDINALITY AS x(e, n)
	    ORDER BY (x.e ->> 1)::bigint, x.n LOOP
		r := mg_commit_send(e ->> 0, (e ->> 1)::bigint,
		    (e ->> 2)::jsonb, e ->> 3, (e ->> 4)::int,
		    (e ->> 5)::int)::text;
		RETURN NEXT;
	END LOOP;
END $$;
