-- 80_ops.sql -- what operators touch: human takeover and release, the
-- mode set by hand, the feature flag set with an author and a reason.
-- Re-applied by `modegate migrate` on every run (CREATE OR REPLACE): edit
-- a function here, never in a numbered migration.
-- SPDX-License-Identifier: MIT

-- Operators ----------------------------------------------------------------

-- The conversations of a doctor: wa_id with or without a leading '+',
-- on one business number (p_phone_number_id) or on all (NULL).
CREATE OR REPLACE FUNCTION mg_conversations_of(p_wa_id text,
    p_phone_number_id text)
RETURNS SETOF conversations
LANGUAGE sql STABLE AS $$
	SELECT * FROM conversations
	WHERE wa_id IN (p_wa_id, ltrim(p_wa_id, '+'))
	    AND (p_phone_number_id IS NULL OR phone_number_id = p_phone_number_id)
	ORDER BY id
$$;

-- mg_takeover(wa_id, who, reason, phone_number_id): a human takes the
-- chat: control human (the worker stores and audits inbound messages
-- without calling the LLM), and AI replies still queued and not yet
-- posted (state pending) are dropped. One audit row per conversation
-- (step "control", decision "takeover", reason, details {by,
-- dropped_outbox, previous_control}). Returns the conversation ids
-- (empty: no such doctor).
CREATE OR REPLACE FUNCTION mg_takeover(p_wa_id text, p_who text, p_reason text,
    p_phone_number_id text DEFAULT NULL) RETURNS bigint[]
LANGUAGE plpgsql AS $$
DECLARE
	c	conversations;
	ids	bigint[] := '{}';
	n	int;
BEGIN
	FOR c IN SELECT * FROM mg_conversations_of(p_wa_id, p_phone_number_id)
	    FOR UPDATE LOOP
		UPDATE outbox SET state = 'dropped',
		    error_detail = 'human takeover'
		WHERE conversation_id = c.id AND state = 'pending'
		    AND kind IN ('text', 'template');
		GET DIAGNOSTICS n = ROW_COUNT;
		UPDATE conversations SET control = 'human',
		    control_updated_at = now(),
		    control_updated_by = coalesce(p_who, session_user)
		WHERE id = c.id;
		INSERT INTO audit_log (conversation_id, step, decision, reason,
		    details)
		VALUES (c.id, 'control', 'takeover', p_reason,
		    jsonb_build_object('by', coalesce(p_who, session_user),
			'dropped_outbox', n, 'previous_control', c.control));
		ids := ids || c.id;
	END LOOP;
	RETURN ids;
END $$;

-- mg_release(wa_id, who, phone_number_id): the AI has the chat again,
-- without stale context: control ai; pending_transition and
-- pending_transition_at cleared (a proposal made before the takeover is
-- not confirmed by a later "sim"); serious_objection_at cleared (the
-- human handled it; otherwise policy would keep blocking); context_since
-- = now (the prompt's history starts here). The mode, opt-out, cooling
-- off and doctor_memory stay. Audited (step "control", decision
-- "release", details {by, previous_control, cleared_pending,
-- cleared_serious_objection}). Returns the conversation ids.
CREATE OR REPLACE FUNCTION mg_release(p_wa_id text, p_who text,
    p_phone_number_id text DEFAULT NULL) RETURNS bigint[]
LANGUAGE plpgsql AS $$
DECLARE
	c	conversations;
	ids	bigint[] := '{}';
BEGIN
	FOR c IN SELECT * FROM mg_conversations_of(p_wa_id, p_phone_number_id)
	    FOR UPDATE LOOP
		UPDATE conversations SET control = 'ai',
		    control_updated_at = now(),
		    control_updated_by = coalesce(p_who, session_user),
		    pending_transition = NULL, pending_transition_at = NULL,
		    serious_objection_at = NULL, context_since = now()
		WHERE id = c.id;
		INSERT INTO audit_log (conversation_id, step, decision, reason,
		    details)
		VALUES (c.id, 'control', 'release', 'operator release',
		    jsonb_build_object('by', coalesce(p_who, session_user),
			'previous_control', c.control,
			'cleared_pending', c.pending_transition,
			'cleared_serious_objection',
			    c.serious_objection_at IS NOT NULL));
		ids := ids || c.id;
	END LOOP;
	RETURN ids;
END $$;

-- mg_set_mode(wa_id, mode, reason, who, phone_number_id): an operator
-- sets the conversation mode: mode_source 'manual', mode_updated_at now,
-- mode_updated_reason, any pending transition cleared. Audited (step
-- "mode", decision = the new mode, reason, details {by, from, to,
-- source, cleared_pending}). An unknown mode raises (22023). Returns
-- the conversation ids.
CREATE OR REPLACE FUNCTION mg_set_mode(p_wa_id text, p_mode text, p_reason text,
    p_who text, p_phone_number_id text DEFAULT NULL) RETURNS bigint[]
LANGUAGE plpgsql AS $$
DECLARE
	c	conversations;
	ids	bigint[] := '{}';
BEGIN
	IF p_mode IS NULL OR p_mode NOT IN ('discovery', 'oferta', 'followup',
	    'reativacao') THEN
		RAISE EXCEPTION 'unknown mode "%" (discovery, oferta, followup, '
		    'reativacao)', p_mode USING ERRCODE = 'invalid_parameter_value';
	END IF;
	FOR c IN SELECT * FROM mg_conversations_of(p_wa_id, p_phone_number_id)
	    FOR UPDATE LOOP
		UPDATE conversations SET conversation_mode = p_mode,
		    mode_updated_at = now(),
		    mode_updated_reason = coalesce(p_reason, 'set by hand'),
		    mode_source = 'manual', pending_transition = NULL,
		    pending_transition_at = NULL
		WHERE id = c.id;
		INSERT INTO audit_log (conversation_id, step, decision, reason,
		    details)
		VALUES (c.id, 'mode', p_mode, coalesce(p_reason, 'set by hand'),
		    jsonb_build_object('by', coalesce(p_who, session_user),
			'from', c.conversation_mode, 'to', p_mode,
			'source', 'manual',
			'cleared_pending', c.pending_transition));
		ids := ids || c.id;
	END LOOP;
	RETURN ids;
END $$;

-- mg_flag_set(name, value, percent, who, reason): change an existing
-- flag (percent NULL keeps it); the triggers of 20_audit.sql record the history
-- and NOTIFY. Unknown flag or bad value/percent raise (22023). Returns
-- the new row.
CREATE OR REPLACE FUNCTION mg_flag_set(p_name text, p_value text, p_percent int,
    p_who text, p_reason text) RETURNS feature_flags
LANGUAGE plpgsql AS $$
DECLARE
	f feature_flags;
BEGIN
	IF p_value IS NULL OR p_value NOT IN ('on', 'off', 'shadow') THEN
		RAISE EXCEPTION 'flag value "%": use on, off or shadow', p_value
		    USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF p_percent IS NOT NULL AND p_percent NOT BETWEEN 0 AND 100 THEN
		RAISE EXCEPTION 'flag percent %: must be 0..100', p_percent
		    USING ERRCODE = 'invalid_parameter_value';
	END IF;
	UPDATE feature_flags SET value = p_value,
	    percent = coalesce(p_percent, percent),
	    updated_by = coalesce(p_who, session_user), reason = p_reason
	WHERE name = p_name
	RETURNING * INTO f;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'unknown flag "%"', p_name
		    USING ERRCODE = 'invalid_parameter_value';
	END IF;
	RETURN f;
END $$;

-- mg_opt_out(wa_id, who, phone_number_id) / mg_opt_in(...): an operator
-- records the doctor's opt-out (no message is sent: the doctor asked
-- elsewhere) or clears it (the doctor asked to come back elsewhere).
-- Audited (step "opt_out" / "opt_in", by whom). Returns the conversation
-- ids; one already in that state is left alone (and not audited).
CREATE OR REPLACE FUNCTION mg_opt(p_wa_id text, p_who text,
    p_phone_number_id text, p_out boolean) RETURNS bigint[]
LANGUAGE plpgsql AS $$
DECLARE
	c	conversations;
	ids	bigint[] := '{}';
BEGIN
	FOR c IN SELECT * FROM mg_conversations_of(p_wa_id, p_phone_number_id)
	    FOR UPDATE LOOP
		ids := ids || c.id;
		CONTINUE WHEN (c.opted_out_at IS NOT NULL) = p_out; /* already */
		UPDATE conversations SET
		    opted_out_at = CASE WHEN p_out THEN now() END,
		    opt_out_confirmed_at = CASE WHEN p_out THEN now() END
		WHERE id = c.id;
		INSERT INTO audit_log (conversation_id, step, decision, reason,
		    details)
		VALUES (c.id, CASE WHEN p_out THEN 'opt_out' ELSE 'opt_in' END,
		    CASE WHEN p_out THEN 'recorded' ELSE 'cleared' END,
		    'operator', jsonb_build_object('by',
			coalesce(p_who, session_user), 'opted_out_at',
			c.opted_out_at));
	END LOOP;
	RETURN ids;
END $$;

CREATE OR REPLACE FUNCTION mg_opt_out(p_wa_id text, p_who text,
    p_phone_number_id text DEFAULT NULL) RETURNS bigint[]
LANGUAGE sql AS $$ SELECT mg_opt(p_wa_id, p_who, p_phone_number_id, true) $$;

CREATE OR REPLACE FUNCTION mg_opt_in(p_wa_id text, p_who text,
    p_phone_number_id text DEFAULT NULL) RETURNS bigint[]
LANGUAGE sql AS $$ SELECT mg_opt(p_wa_id, p_who, p_phone_number_id, false) $$;

-- mg_cooling_off(wa_id, days, who, phone_number_id): nothing proactive
-- (follow-ups, campaigns) goes to the doctor for days days from now;
-- days NULL clears it. An inbound message is still answered (policy rule
-- cooling_off: no shift offered unless asked). Audited (step
-- "cooling_off"). Returns the conversation ids.
CREATE OR REPLACE FUNCTION mg_cooling_off(p_wa_id text, p_days int,
    p_who text, p_phone_number_id text DEFAULT NULL) RETURNS bigint[]
LANGUAGE plpgsql AS $$
DECLARE
	c	conversations;
	ids	bigint[] := '{}';
	until	timestamptz;
BEGIN
	IF p_days IS NOT NULL AND p_days NOT BETWEEN 1 AND 3650 THEN
		RAISE EXCEPTION 'cooling-off of % days: 1 to 3650', p_days
		    USING ERRCODE = 'invalid_parameter_value';
	END IF;
	until := CASE WHEN p_days IS NULL THEN NULL
	    ELSE now() + make_interval(days => p_days) END;
	FOR c IN SELECT * FROM mg_conversations_of(p_wa_id, p_phone_number_id)
	    FOR UPDATE LOOP
		UPDATE conversations SET cooling_off_until = until
		WHERE id = c.id;
		INSERT INTO audit_log (conversation_id, step, decision, reason,
		    details)
		VALUES (c.id, 'cooling_off', CASE WHEN until IS NULL
		    THEN 'cleared' ELSE 'started' END, 'operator',
		    jsonb_build_object('by', coalesce(p_who, session_user),
			'until', until, 'was', c.cooling_off_until));
		ids := ids || c.id;
	END LOOP;
	RETURN ids;
END $$;

-- The review loop of the intent detector (issue 14; table review_labels,
-- sql/0013_review.sql) ------------------------------------------------

-- mg_review_list(since, max_confidence): the unlabelled messages since
-- that time whose intent had a confidence below max_confidence or whose
-- rules and model disagreed, oldest first, with the conversation's mode
-- when it was decided (the router row's "from", else the conversation's
-- mode now) and the decision taken (router decision, else the policy's).
CREATE OR REPLACE FUNCTION mg_review_list(p_since timestamptz, p_max_confidence numeric)
RETURNS TABLE (inbox_id bigint, at timestamptz, mode text, intent text,
    confidence numeric, rule_intent text, model_intent text,
    decision text, text text)
LANGUAGE sql STABLE AS $$
	SELECT a.inbox_id, a.created_at,
	    coalesce(r.details ->> 'from', c.conversation_mode::text),
	    a.details ->> 'intent',
	    (a.details ->> 'confidence')::numeric,
	    a.details ->> 'rule_intent', a.details ->> 'model_intent',
	    coalesce(r.decision, a.decision),
	    mg_inbound_text(i.msg_type, i.raw)
	FROM audit_log a
	JOIN inbox i ON i.id = a.inbox_id
	LEFT JOIN conversations c ON c.id = a.conversation_id
	LEFT JOIN LATERAL (SELECT x.details, x.decision FROM audit_log x
	    WHERE x.inbox_id = a.inbox_id AND x.step = 'router'
	    ORDER BY x.id LIMIT 1) r ON true
	WHERE a.step = 'policy' AND a.created_at >= p_since
	    AND NOT EXISTS (SELECT 1 FROM review_labels l
		WHERE l.inbox_id = a.inbox_id)
	    AND ((a.details ->> 'confidence')::numeric < p_max_confidence
		OR a.details ->> 'rule_intent' IS DISTINCT FROM
		    a.details ->> 'model_intent'
		    AND a.details ? 'model_intent')
	ORDER BY a.created_at, a.inbox_id
$$;

-- mg_review_item(inbox_id): the message, Julia's message before it (the
-- context of a short answer), the sender's profile name (to mask it) and
-- what the detector said; no row when the message is unknown.
CREATE OR REPLACE FUNCTION mg_review_item(p_inbox_id bigint)
RETURNS TABLE (text text, julia_before text, profile_name text,
    detected text)
LANGUAGE sql STABLE AS $$
	SELECT mg_inbound_text(i.msg_type, i.raw),
	    (SELECT t.text FROM transcript t
		WHERE t.conversation_id = i.conversation_id
		AND t.direction = 'out'
		AND t.at <= coalesce(i.wa_timestamp, i.received_at)
		ORDER BY t.at DESC, t.outbox_id DESC LIMIT 1),
	    i.profile_name,
	    (SELECT a.details ->> 'intent' FROM audit_log a
		WHERE a.inbox_id = i.id AND a.step = 'policy'
		ORDER BY a.id LIMIT 1)
	FROM inbox i WHERE i.id = p_inbox_id
$$;
