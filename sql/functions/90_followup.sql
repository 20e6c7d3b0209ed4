-- 90_followup.sql -- scheduled work: the follow-up of every bridge
-- (DESIGN.md §3), its outcome when the doctor stays silent
-- (sem_resposta), and the expiry of stale micro-confirmations, all in
-- one function (mg_followup_sweep) that each modegate process calls on a
-- libevent timer (src/followup.c). The life of a follow-up row is told
-- in sql/0007_followups.sql; every change is audited (step "followup").
-- Re-applied by `modegate migrate` on every run (CREATE OR REPLACE): edit
-- a function here, never in a numbered migration.
-- SPDX-License-Identifier: MIT

-- The doctor wrote to the conversation after p_at (a message already
-- linked to it, or one ingest stored that no worker has linked yet).
CREATE OR REPLACE FUNCTION mg_inbound_after(p_conv conversations,
    p_at timestamptz)
RETURNS boolean LANGUAGE sql STABLE AS $$
	SELECT EXISTS (SELECT 1 FROM inbox i
		WHERE i.conversation_id = p_conv.id
		    AND i.received_at > p_at)
	    OR EXISTS (SELECT 1 FROM inbox i
		WHERE i.conversation_id IS NULL
		    AND i.phone_number_id = p_conv.phone_number_id
		    AND i.sender_key = p_conv.wa_id AND i.received_at > p_at)
$$;

-- The conversation has inbound work not yet answered (a turn would
-- queue its reply; the follow-up must not jump ahead of it).
CREATE OR REPLACE FUNCTION mg_inbound_open(p_conv conversations) RETURNS boolean
LANGUAGE sql STABLE AS $$
	SELECT EXISTS (SELECT 1 FROM inbox i
		WHERE i.conversation_id = p_conv.id AND i.done_at IS NULL
		    AND i.state IN ('pending', 'claimed'))
	    OR EXISTS (SELECT 1 FROM inbox i
		WHERE i.conversation_id IS NULL
		    AND i.phone_number_id = p_conv.phone_number_id
		    AND i.sender_key = p_conv.wa_id
		    AND i.state IN ('pending', 'claimed'))
$$;

-- An outcome (fechado_com_responsavel, nao_fechou, sem_resposta) for
-- the shift, or for no shift, recorded at or after p_at.
CREATE OR REPLACE FUNCTION mg_outcome_since(p_conversation_id bigint,
    p_vaga_id bigint,
    p_at timestamptz) RETURNS text
LANGUAGE sql STABLE AS $$
	SELECT f.status FROM funnel_events f
	WHERE f.conversation_id = p_conversation_id
	    AND f.status IN ('fechado_com_responsavel', 'nao_fechou',
		'sem_resposta')
	    AND (f.vaga_id = p_vaga_id OR f.vaga_id IS NULL)
	    AND f.created_at >= p_at
	ORDER BY f.created_at, f.id LIMIT 1
$$;

-- Why a conversation gets no follow-up at all (NULL: it may get one).
CREATE OR REPLACE FUNCTION mg_followup_blocked(p_conv conversations) RETURNS
text
LANGUAGE sql STABLE AS $$
	SELECT CASE
	WHEN p_conv.opted_out_at IS NOT NULL THEN 'opt_out'
	WHEN p_conv.serious_objection_at IS NOT NULL THEN 'objecao_grave'
	WHEN p_conv.control = 'human' THEN 'controle_humano'
	END
$$;

-- The follow-up message for a conversation: the text inside the 24-hour
-- window, else the 'followup' template, else the 'window_closed' one,
-- else NULL (nothing can reach the doctor). Returns {"kind","payload"}.
CREATE OR REPLACE FUNCTION mg_followup_message(p_conv conversations,
    p_text text)
RETURNS jsonb LANGUAGE sql STABLE AS $$
	SELECT CASE WHEN mg_window_open(p_conv.id) THEN
		jsonb_build_object('kind', 'text', 'payload',
		    jsonb_build_object('type', 'text', 'text',
			jsonb_build_object('preview_url', false,
			    'body', p_text)))
	ELSE (SELECT jsonb_build_object('kind', 'template', 'payload',
		    t.payload)
		FROM wa_templates t
		WHERE t.purpose IN ('followup', 'window_closed')
		ORDER BY t.purpose = 'followup' DESC LIMIT 1)
	END
$$;

-- Queue the follow-up of the due bridges of one locked conversation.
-- The bridges are read again here: this statement's snapshot sees a
-- follow-up another process committed after the caller's query, and the
-- unique handoff_id settles any remaining race (ON CONFLICT). Returns
-- {"queued","skipped"}.
CREATE OR REPLACE FUNCTION mg_followup_conv(p_conv conversations, p_owner text,
    p_after interval, p_text text) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
	h	record;
	blk	text := mg_followup_blocked(p_conv);
	msg	jsonb;
	oid	bigint;
	due	bigint[] := '{}';
	nskip	int := 0;
	nq	int := 0;
BEGIN
	FOR h IN SELECT x.* FROM handoffs x
	    WHERE x.conversation_id = p_conv.id
		AND x.created_at <= now() - p_after
		AND NOT EXISTS (SELECT 1 FROM followups f
		    WHERE f.handoff_id = x.id)
	    ORDER BY x.id LOOP
		IF blk IS NULL AND
		    mg_outcome_since(p_conv.id, h.vaga_id, h.created_at) IS NULL THEN
			due := due || h.id;
			CONTINUE;
		END IF;
		INSERT INTO followups (handoff_id, conversation_id, vaga_id,
		    state, reason, owner, closed_at)
		VALUES (h.id, p_conv.id, h.vaga_id, 'skipped',
		    coalesce(blk, 'desfecho_registrado'), p_owner, now())
		ON CONFLICT (handoff_id) DO NOTHING;
		IF FOUND THEN
			nskip := nskip + 1;
			INSERT INTO audit_log (conversation_id, step, decision,
			    reason, details)
			VALUES (p_conv.id, 'followup', 'skipped',
			    coalesce(blk, 'desfecho_registrado'),
			    jsonb_build_object('handoff_id', h.id,
				'vaga_id', h.vaga_id, 'owner', p_owner));
		END IF;
	END LOOP;
	IF cardinality(due) = 0 THEN
		RETURN jsonb_build_object('queued', 0, 'skipped', nskip);
	END IF;
	msg := mg_followup_message(p_conv, p_text);
	IF msg IS NOT NULL THEN
		INSERT INTO outbox (conversation_id, kind, payload, to_key,
		    phone_number_id)
		VALUES (p_conv.id, msg ->> 'kind',
		    mg_complete_payload(msg -> 'payload', p_conv.wa_id),
		    p_conv.wa_id, p_conv.phone_number_id)
		RETURNING id INTO oid;
	END IF;
	-- One message for all the conversation's due bridges; one row each.
	WITH ins AS (
		INSERT INTO followups (handoff_id, conversation_id, vaga_id,
		    state, reason, kind, outbox_id, owner, closed_at)
		SELECT x.id, p_conv.id, x.vaga_id,
		    CASE WHEN oid IS NULL THEN 'skipped' ELSE 'queued' END,
		    CASE WHEN oid IS NULL THEN 'sem_template' END,
		    msg ->> 'kind', oid, p_owner,
		    CASE WHEN oid IS NULL THEN now() END
		FROM handoffs x WHERE x.id = ANY (due)
		ON CONFLICT (handoff_id) DO NOTHING
		RETURNING handoff_id, vaga_id
	)
	SELECT count(*) INTO nq FROM ins;
	IF nq = 0 AND oid IS NOT NULL THEN
		-- Another process queued them meanwhile: take ours back.
		RAISE EXCEPTION 'mg_followup_sweep: follow-up raced'
		    USING ERRCODE = 'serialization_failure';
	END IF;
	INSERT INTO audit_log (conversation_id, step, decision, reason, details)
	VALUES (p_conv.id, 'followup',
	    CASE WHEN oid IS NULL THEN 'dropped' ELSE 'queued' END,
	    CASE WHEN oid IS NULL THEN 'window_closed_no_template'
		ELSE 'ponte_feita' END,
	    jsonb_strip_nulls(jsonb_build_object('handoffs', to_jsonb(due),
		'outbox_id', oid, 'kind', msg ->> 'kind',
		'template', msg -> 'payload' -> 'template' ->> 'name',
		'owner', p_owner)));
	IF oid IS NULL THEN
		RETURN jsonb_build_object('queued', 0, 'skipped', nskip + nq);
	END IF;
	RETURN jsonb_build_object('queued', nq, 'skipped', nskip);
END $$;

-- Queued follow-ups whose outbox row is settled: sent (funnel
-- aguardando_desfecho at the send time) or failed. A text that met a
-- closed window (131047) was replaced by a template row
-- (mg_window_closed): the follow-up follows it. Returns {"sent",
-- "failed"}.
CREATE OR REPLACE FUNCTION mg_followup_settle(p_limit int) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
	r	record;
	tid	bigint;
	nsent	int := 0;
	nfail	int := 0;
BEGIN
	FOR r IN SELECT f.id, f.conversation_id, f.vaga_id, f.kind,
		o.id AS oid, o.state AS ostate, o.sent_at, o.error_code,
		o.kind AS okind
	    FROM followups f JOIN outbox o ON o.id = f.outbox_id
	    WHERE f.state = 'queued'
		AND o.state IN ('sent', 'dry_run', 'failed', 'dead', 'dropped')
	    ORDER BY f.id LIMIT p_limit
	    FOR UPDATE OF f SKIP LOCKED LOOP
		IF r.ostate IN ('sent', 'dry_run') THEN
			UPDATE followups SET state = 'sent', sent_at = r.sent_at,
			    kind = r.okind
			WHERE id = r.id;
			INSERT INTO funnel_events (conversation_id, vaga_id,
			    status, doctor_key, responsavel, created_at, metadata)
			SELECT r.conversation_id, r.vaga_id,
			    'aguardando_desfecho', c.wa_id, v.responsavel_nome,
			    r.sent_at, jsonb_build_object('origem', 'followup',
				'followup_id', r.id, 'outbox_id', r.oid,
				'kind', r.okind)
			FROM conversations c, vagas v
			WHERE c.id = r.conversation_id AND v.id = r.vaga_id;
			INSERT INTO audit_log (conversation_id, step, decision,
			    reason, details)
			VALUES (r.conversation_id, 'followup', 'sent', r.ostate,
			    jsonb_build_object('followup_id', r.id,
				'outbox_id', r.oid, 'kind', r.okind));
			nsent := nsent + 1;
			CONTINUE;
		END IF;
		tid := NULL;
		IF r.ostate = 'failed' AND r.error_code = 131047 THEN
			SELECT (a.details ->> 'template_outbox_id')::bigint
			INTO tid FROM audit_log a
			WHERE a.conversation_id = r.conversation_id
			    AND a.step = 'send' AND a.reason = 'window_closed'
			    AND (a.details ->> 'outbox_id')::bigint = r.oid
			ORDER BY a.id DESC LIMIT 1;
		END IF;
		IF tid IS NOT NULL THEN
			UPDATE followups SET outbox_id = tid, kind = 'template'
			WHERE id = r.id;
			CONTINUE;
		END IF;
		UPDATE followups SET state = 'failed', closed_at = now(),
		    reason = 'outbox ' || r.ostate ||
			coalesce(' ' || r.error_code, '')
		WHERE id = r.id;
		INSERT INTO audit_log (conversation_id, step, decision, reason,
		    details)
		VALUES (r.conversation_id, 'followup', 'failed', r.ostate,
		    jsonb_strip_nulls(jsonb_build_object('followup_id', r.id,
			'outbox_id', r.oid, 'error_code', r.error_code)));
		nfail := nfail + 1;
	END LOOP;
	RETURN jsonb_build_object('sent', nsent, 'failed', nfail);
END $$;

-- Sent follow-ups: answered when an outcome was recorded since the send
-- or the doctor wrote after it (once that message's turn committed, so
-- the reason names the outcome it recorded); sem_resposta (funnel, for
-- that shift) once p_no_answer has passed without either. Returns
-- {"answered", "sem_resposta"}.
CREATE OR REPLACE FUNCTION mg_followup_close(p_no_answer interval, p_limit int)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
	r	record;
	outc	text;
	nans	int := 0;
	nsr	int := 0;
BEGIN
	FOR r IN SELECT f.*, c AS conv FROM followups f
	    JOIN conversations c ON c.id = f.conversation_id
	    WHERE f.state = 'sent'
	    ORDER BY f.id LIMIT p_limit
	    FOR UPDATE OF f SKIP LOCKED LOOP
		outc := mg_outcome_since(r.conversation_id, r.vaga_id, r.sent_at);
		IF outc IS NULL AND mg_inbound_open(r.conv) THEN
			CONTINUE;	-- its turn may record the outcome
		END IF;
		IF outc IS NOT NULL OR mg_inbound_after(r.conv, r.sent_at) THEN
			UPDATE followups SET state = 'answered',
			    closed_at = now(), reason = outc
			WHERE id = r.id;
			INSERT INTO audit_log (conversation_id, step, decision,
			    reason, details)
			VALUES (r.conversation_id, 'followup', 'answered',
			    coalesce(outc, 'inbound'), jsonb_build_object(
				'followup_id', r.id, 'vaga_id', r.vaga_id));
			nans := nans + 1;
		ELSIF r.sent_at <= now() - p_no_answer THEN
			UPDATE followups SET state = 'sem_resposta',
			    closed_at = now()
			WHERE id = r.id;
			INSERT INTO funnel_events (conversation_id, vaga_id,
			    status, doctor_key, responsavel, metadata)
			SELECT r.conversation_id, r.vaga_id, 'sem_resposta',
			    (r.conv).wa_id, v.responsavel_nome,
			    jsonb_build_object('origem', 'followup',
				'followup_id', r.id, 'sent_at', r.sent_at)
			FROM vagas v WHERE v.id = r.vaga_id;
			INSERT INTO audit_log (conversation_id, step, decision,
			    reason, details)
			VALUES (r.conversation_id, 'followup', 'sem_resposta',
			    'no inbound after the follow-up', jsonb_build_object(
				'followup_id', r.id, 'vaga_id', r.vaga_id,
				'sent_at', r.sent_at,
				'no_answer_s', extract(epoch FROM p_no_answer)));
			nsr := nsr + 1;
		END IF;
	END LOOP;
	RETURN jsonb_build_object('answered', nans, 'sem_resposta', nsr);
END $$;

-- Clear pending micro-confirmations older than p_timeout, as the router
-- would at the doctor's next message, so SQL shows the truth without
-- waiting for it. Only conversations no turn holds (a turn in flight
-- decides itself). Audited as the router audits it: step "router",
-- decision EXPIRED, reason "pending:expired", details {from, proposal,
-- mode, pending, expired, applied} plus {source "sweep", expired_pending,
-- pending_at}. The mode and its reason stay. Returns the count.
CREATE OR REPLACE FUNCTION mg_expire_pendings(p_timeout interval, p_limit int)
RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	c	conversations;
	n	int := 0;
BEGIN
	FOR c IN SELECT * FROM conversations
	    WHERE pending_transition IS NOT NULL
		AND pending_transition_at < now() - p_timeout
		AND (lease_until IS NULL OR lease_until < now())
	    ORDER BY pending_transition_at, id LIMIT p_limit
	    FOR UPDATE SKIP LOCKED LOOP
		UPDATE conversations SET pending_transition = NULL,
		    pending_transition_at = NULL
		WHERE id = c.id;
		INSERT INTO audit_log (conversation_id, step, decision, reason,
		    details)
		VALUES (c.id, 'router', 'EXPIRED', 'pending:expired',
		    jsonb_build_object('from', c.conversation_mode,
			'proposal', NULL, 'mode', c.conversation_mode,
			'pending', NULL, 'expired', true, 'applied', true,
			'source', 'sweep',
			'expired_pending', c.pending_transition,
			'pending_at', c.pending_transition_at));
		n := n + 1;
	END LOOP;
	RETURN n;
END $$;

-- mg_followup_sweep(owner, after_s, no_answer_s, pending_timeout_s, text,
-- limit): one pass of the scheduler, in one short transaction:
--   1. bridges older than after_s without a follow-up: one outbox row
--      per conversation (text in the window, else template), a
--      follow-up row per bridge (or skipped, with the reason); only for
--      conversations no turn holds and with no unanswered inbound, and
--      not cooling off (they wait for a later pass);
--   2. queued follow-ups whose row was sent: sent + funnel
--      aguardando_desfecho; or failed;
--   3. sent follow-ups: answered, or sem_resposta after no_answer_s;
--   4. pending micro-confirmations older than pending_timeout_s (NULL:
--      modegate.pending_timeout_minutes, default 30): EXPIRED.
-- Rows are taken with FOR UPDATE SKIP LOCKED and follow-ups are unique
-- per bridge, so concurrent sweeps of several processes never queue a
-- follow-up twice. At most p_limit conversations/rows per step.
-- {"queued","skipped","sent","failed","answered","sem_resposta",
-- "expired"}.
CREATE OR REPLACE FUNCTION mg_followup_sweep(p_owner text, p_after_s int,
    p_no_answer_s int, p_pending_timeout_s int, p_text text,
    p_limit int DEFAULT 100) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
	after	interval := make_interval(secs => p_after_s);
	c	conversations;
	r	jsonb;
	q	int := 0;
	sk	int := 0;
	st	jsonb;
	cl	jsonb;
	ex	int;
BEGIN
	IF p_owner IS NULL OR p_owner = '' OR p_after_s IS NULL OR
	    p_no_answer_s IS NULL OR coalesce(trim(p_text), '') = '' THEN
		RAISE EXCEPTION 'mg_followup_sweep: owner, delays and text '
		    'are required' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	FOR c IN SELECT cv.* FROM conversations cv
	    WHERE cv.id IN (SELECT h.conversation_id FROM handoffs h
		    WHERE h.created_at <= now() - after
			AND NOT EXISTS (SELECT 1 FROM followups f
			    WHERE f.handoff_id = h.id))
		AND (cv.lease_until IS NULL OR cv.lease_until < now())
		AND (cv.cooling_off_until IS NULL OR
		    cv.cooling_off_until <= now())
	    ORDER BY cv.id LIMIT p_limit
	    FOR UPDATE OF cv SKIP LOCKED LOOP
		IF mg_inbound_open(c) THEN
			CONTINUE;
		END IF;
		r := mg_followup_conv(c, p_owner, after, p_text);
		q := q + (r ->> 'queued')::int;
		sk := sk + (r ->> 'skipped')::int;
	END LOOP;
	st := mg_followup_settle(p_limit);
	cl := mg_followup_close(make_interval(secs => p_no_answer_s), p_limit);
	ex := mg_expire_pendings(make_interval(secs => coalesce(
	    p_pending_timeout_s, mg_setting('pending_timeout_minutes', 30) * 60)),
	    p_limit);
	RETURN jsonb_build_object('queued', q, 'skipped', sk) || st || cl ||
	    jsonb_build_object('expired', ex);
END $$;
