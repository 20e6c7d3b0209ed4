-- 0009_turn_round_trips.sql -- fewer database round trips per turn. The
-- claim returns each turn's context (no separate mg_context query), and
-- the statements that create outbox rows (the read receipt at turn
-- start, the reply at commit) lease them to the process's sender in the
-- same transaction, so the sender posts them without claiming them
-- first. The rules of mg_claim_outbox (a conversation's messages one at
-- a time and in order, read receipts never waiting, a closed 24-hour
-- window sending text down the template path) hold for both: they live
-- in mg_lease_outbox below, which mg_claim_outbox now calls.
--
-- Also: a message whose turn keeps dying with its process ends dead
-- (mg_claim_turns); a reply is withheld when a human took the chat over
-- while its turn ran (mg_commit_send); an outcome recorded without its
-- shift is tied to the conversation's latest bridge (mg_funnel_bridge).
-- SPDX-License-Identifier: MIT

-- mg_lease_outbox(worker, lease_seconds, limit, conversation_id): lease
-- due outbox rows to p_worker, of one conversation or (NULL) of all.
-- The body of mg_claim_outbox (0004), which see.
CREATE FUNCTION mg_lease_outbox(p_worker text, p_lease_seconds int,
    p_limit int, p_conversation_id bigint) RETURNS SETOF jsonb
LANGUAGE plpgsql AS $$
DECLARE
	o	outbox;
	until	timestamptz := now() + make_interval(secs => p_lease_seconds);
BEGIN
	IF p_limit <= 0 THEN
		RETURN;
	END IF;
	FOR o IN
		-- Messages go out in order, one per conversation at a time;
		-- read receipts are not messages and never wait behind one.
		WITH heads AS (
			SELECT DISTINCT ON (conversation_id) id
			FROM outbox WHERE state IN ('pending', 'sending')
			    AND kind <> 'read'
			    AND (p_conversation_id IS NULL OR
				conversation_id = p_conversation_id)
			ORDER BY conversation_id, id
		)
		SELECT x.* FROM outbox x
		WHERE (x.kind = 'read' OR x.id IN (SELECT id FROM heads))
		  AND (p_conversation_id IS NULL OR
			x.conversation_id = p_conversation_id)
		  AND ((x.state = 'pending' AND (x.next_attempt_at IS NULL OR
			x.next_attempt_at <= now()))
		    OR (x.state = 'sending' AND x.lease_until < now()))
		ORDER BY x.id
		LIMIT p_limit
		FOR UPDATE OF x SKIP LOCKED
	LOOP
		IF o.kind = 'text' AND NOT mg_window_open(o.conversation_id) THEN
			PERFORM mg_window_closed(o.id,
			    '24-hour window closed before sending');
			CONTINUE;
		END IF;
		UPDATE outbox SET state = 'sending', lease_owner = p_worker,
		    lease_until = until
		WHERE id = o.id;
		RETURN NEXT jsonb_build_object('id', o.id,
		    'conversation_id', o.conversation_id, 'kind', o.kind,
		    'payload', o.payload, 'phone_number_id', o.phone_number_id,
		    'to_key', o.to_key, 'attempts', o.attempts,
		    'inbox_id', o.inbox_id, 'lease_until', until);
	END LOOP;
END $$;

CREATE OR REPLACE FUNCTION mg_claim_outbox(p_worker text,
    p_lease_seconds int, p_limit int) RETURNS SETOF jsonb
LANGUAGE plpgsql AS $$
BEGIN
	-- A lost claim is harmless (the row is still due and is claimed
	-- again), so this transaction need not wait for its WAL flush.
	PERFORM set_config('synchronous_commit', 'off', true);
	RETURN QUERY SELECT * FROM mg_lease_outbox(p_worker, p_lease_seconds,
	    p_limit, NULL);
END $$;

-- p_result (an answer {"ok": ...}) with "send": up to p_limit of the
-- conversation's due outbox rows leased to p_sender (as mg_claim_outbox
-- returns them); "send": [] when p_result is not ok or p_sender is NULL.
CREATE FUNCTION mg_lease_send(p_result jsonb, p_sender text,
    p_lease_seconds int, p_limit int, p_conversation_id bigint)
RETURNS jsonb
LANGUAGE plpgsql AS $$
BEGIN
	IF NOT (p_result ->> 'ok')::boolean OR p_sender IS NULL THEN
		RETURN p_result || '{"send": []}';
	END IF;
	RETURN p_result || jsonb_build_object('send',
	    (SELECT coalesce(jsonb_agg(r), '[]')
	    FROM mg_lease_outbox(p_sender, p_lease_seconds, p_limit,
		p_conversation_id) r));
END $$;

-- mg_context (0003), unchanged but for its language: a LANGUAGE sql
-- function that cannot be inlined is planned again at every call, and
-- this one is planned once per claim (0.8 ms of its 0.9); PL/pgSQL keeps
-- the plan for the session.
CREATE OR REPLACE FUNCTION mg_context(p_conversation_id bigint, p_inbox_ids bigint[],
    p_history int) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
BEGIN
	RETURN (SELECT jsonb_build_object(
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
	WHERE c.id = p_conversation_id);
END $$;

-- mg_claim_turns(worker, lease_seconds, window_ms, limit, turns,
-- window_s, history, max_attempts): mg_claim_limited (0008), each row
-- with "context": mg_context(conversation, its inbox_ids, p_history)
-- (0003), read after the claim in the same transaction.
--
-- A message whose turn keeps dying with its process (its lease expired
-- and was taken over, attempts + 1 each time) must not take every new
-- process down with it: retaken with attempts >= p_max_attempts it is
-- 'dead', audited like mg_fail_turn's (step "worker", decision "dead",
-- its last_error, details {max_attempts, worker, retaken: true}), and
-- left out of the turn; a turn left with no message is not returned and
-- its lease is released.
CREATE FUNCTION mg_claim_turns(p_worker text, p_lease_seconds int,
    p_window_ms int, p_limit int, p_turns int, p_window_s int,
    p_history int, p_max_attempts int) RETURNS SETOF jsonb
LANGUAGE plpgsql AS $$
DECLARE
	r	jsonb;
	cid	bigint;
	ids	bigint[];
	ndead	int;
BEGIN
	FOR r IN SELECT * FROM mg_claim_limited(p_worker, p_lease_seconds,
	    p_window_ms, p_limit, p_turns, p_window_s) LOOP
		cid := (r ->> 'conversation_id')::bigint;
		ids := ARRAY(SELECT x::bigint FROM
		    jsonb_array_elements_text(r -> 'inbox_ids') x);
		IF (r ->> 'retaken')::boolean THEN
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
				CONTINUE;
			ELSIF ndead > 0 THEN
				ids := ARRAY(SELECT id FROM inbox
				    WHERE id = ANY (ids) AND state = 'claimed'
				    ORDER BY coalesce(wa_timestamp, received_at),
					received_at, id);
				r := jsonb_set(r, '{inbox_ids}', to_jsonb(ids));
			END IF;
		END IF;
		RETURN NEXT r || jsonb_build_object('context',
		    mg_context(cid, ids, p_history));
	END LOOP;
END $$;

-- mg_start_read(worker, conversation_id, inbox_id, sender,
-- send_lease_seconds, send_limit): mg_enqueue_read (0004), then up to
-- p_send_limit of the conversation's due outbox rows (the receipt among
-- them) leased to p_sender: {"ok":true,"outbox_id","send":[rows as
-- mg_claim_outbox returns them]}. p_sender NULL or p_send_limit 0: the
-- sender's own claim takes them ("send": []).
CREATE FUNCTION mg_start_read(p_worker text, p_conversation_id bigint,
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
-- send_lease_seconds, send_limit): mg_commit_turn (0003), then up to
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
CREATE FUNCTION mg_commit_send(p_worker text, p_conversation_id bigint,
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
	WHERE id = p_conversation_id FOR UPDATE;
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

-- Funnel rows of an outcome written without their shift (the router
-- reads "fechei" in the doctor's words, not which shift it was) belong
-- to the conversation's latest bridge: its vaga and, when not given, its
-- responsible person.
CREATE FUNCTION mg_funnel_bridge() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
	b	record;
BEGIN
	SELECT h.vaga_id, v.responsavel_nome INTO b
	FROM handoffs h JOIN vagas v ON v.id = h.vaga_id
	WHERE h.conversation_id = NEW.conversation_id
	ORDER BY h.created_at DESC, h.id DESC LIMIT 1;
	IF FOUND THEN
		NEW.vaga_id := b.vaga_id;
		NEW.responsavel := coalesce(NEW.responsavel, b.responsavel_nome);
	END IF;
	RETURN NEW;
END $$;

CREATE TRIGGER funnel_events_bridge BEFORE INSERT ON funnel_events
	FOR EACH ROW WHEN (NEW.vaga_id IS NULL AND NEW.status IN
	    ('aguardando_desfecho', 'fechado_com_responsavel', 'nao_fechou',
	    'sem_resposta'))
	EXECUTE FUNCTION mg_funnel_bridge();
