-- 0005_ops.sql -- what operators and analysts touch: the funnel's
-- metrics and current state as views, human takeover and release, the
-- mode set by hand, the feature flag set with an author and a reason,
-- and the indexes the CLI and sql/queries/*.sql need. Forward-only.
--
-- Settings read here (ALTER DATABASE modegate SET ...; defaults in
-- brackets): modegate.followup_hours [48] -- a bridge older than this is
-- due for its follow-up; modegate.pending_timeout_minutes [30] -- must
-- match mode/transitions.json pending_timeout_minutes. Days are
-- calendar days in the session's TimeZone (set it to
-- America/Sao_Paulo for the operators' day).
-- SPDX-License-Identifier: MIT

-- Indexes ----------------------------------------------------------------

-- takeover / release / set-mode look a doctor up by wa_id alone (the
-- unique key starts with phone_number_id).
CREATE INDEX conversations_wa_id ON conversations (wa_id);
-- Open pendings (queries/pending_open_expired.sql).
CREATE INDEX conversations_pending ON conversations (pending_transition_at)
	WHERE pending_transition IS NOT NULL;
-- Funnel per (conversation, shift) (funnel_current, the metrics' joins).
CREATE INDEX funnel_events_conv_vaga ON funnel_events
	(conversation_id, vaga_id, created_at, id);
-- Failed sends by error code (queries/send_failures_by_code.sql).
CREATE INDEX outbox_failed ON outbox (error_code, created_at)
	WHERE state IN ('failed', 'dead', 'dropped');

-- Settings ---------------------------------------------------------------

-- A numeric setting (modegate.NAME) or its default.
CREATE FUNCTION mg_setting(p_name text, p_default numeric) RETURNS numeric
LANGUAGE sql STABLE AS $$
	SELECT coalesce(nullif(current_setting('modegate.' || p_name, true),
	    '')::numeric, p_default)
$$;

-- Funnel -----------------------------------------------------------------

-- The state name of DESIGN.md §3 for a funnel status.
CREATE FUNCTION mg_funnel_stage(p_status text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE p_status
	WHEN 'interesse_confirmado' THEN 'qualificando'
	WHEN 'ponte_feita' THEN 'contatado'
	WHEN 'aguardando_desfecho' THEN 'aguardando'
	WHEN 'fechado_com_responsavel' THEN 'convertido'
	WHEN 'nao_fechou' THEN 'nao_convertido'
	WHEN 'sem_resposta' THEN 'sem_resposta' END
$$;

-- One row per bridge (conversation, shift): when it was made, the
-- interest it answered (the latest interesse_confirmado of the
-- conversation for that shift or for no shift, at or before the
-- bridge), and what came after it for that shift or for no shift: the
-- first aguardando_desfecho or outcome, and whether it closed.
CREATE VIEW funnel_bridges AS
	SELECT b.conversation_id, b.vaga_id, b.created_at AS bridged_at,
	    (SELECT max(i.created_at) FROM funnel_events i
		WHERE i.conversation_id = b.conversation_id
		    AND i.status = 'interesse_confirmado'
		    AND (i.vaga_id = b.vaga_id OR i.vaga_id IS NULL)
		    AND i.created_at <= b.created_at) AS interest_at,
	    (SELECT min(f.created_at) FROM funnel_events f
		WHERE f.conversation_id = b.conversation_id
		    AND f.status IN ('aguardando_desfecho',
			'fechado_com_responsavel', 'nao_fechou', 'sem_resposta')
		    AND (f.vaga_id = b.vaga_id OR f.vaga_id IS NULL)
		    AND f.created_at >= b.created_at) AS followed_up_at,
	    EXISTS (SELECT 1 FROM funnel_events f
		WHERE f.conversation_id = b.conversation_id
		    AND f.status = 'fechado_com_responsavel'
		    AND (f.vaga_id = b.vaga_id OR f.vaga_id IS NULL)
		    AND f.created_at >= b.created_at) AS closed
	FROM (SELECT DISTINCT ON (conversation_id, vaga_id) conversation_id,
		vaga_id, created_at
	    FROM funnel_events WHERE status = 'ponte_feita'
	    ORDER BY conversation_id, vaga_id, created_at, id) b;

-- A day belongs to a period: the day itself, or (total) the range.
CREATE FUNCTION mg_in_period(p_d date, p_day date, p_since date,
    p_until date) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN p_day IS NOT NULL THEN p_d = p_day
	    ELSE (p_since IS NULL OR p_d >= p_since)
		AND (p_until IS NULL OR p_d <= p_until) END
$$;

-- mg_funnel_metrics(since, until): the seed's four metrics for the days
-- since..until (NULL: unbounded), one 'total' period for the whole range
-- and one per day (YYYY-MM-DD), in long form: period, day (NULL for
-- total), ord, metric, numerator, denominator, value, unit, target, met
-- (NULL when there is nothing to measure). Definitions:
--  bridge_rate      conversations with a first interesse_confirmado in
--                   the period that have a ponte_feita at or after it ÷
--                   those conversations (%, target > 60)
--  conversion_rate  bridges (conversation, shift) made in the period
--                   later closed (fechado_com_responsavel for that shift
--                   or for no shift) ÷ those bridges (%, > 30)
--  time_to_bridge_median / _avg  minutes from the interest a bridge
--                   answered to the bridge, for bridges made in the
--                   period that have one (target < 10; "met" on each)
--  followup_rate    bridges made in the period and older than
--                   modegate.followup_hours (default 48) that have an
--                   aguardando_desfecho or an outcome after them ÷ those
--                   bridges (%, target 100)
CREATE FUNCTION mg_funnel_metrics(p_since date, p_until date)
RETURNS TABLE (period text, day date, ord int, metric text,
    numerator bigint, denominator bigint, value numeric, unit text,
    target text, met boolean)
LANGUAGE sql STABLE AS $$
	WITH interest AS (
		SELECT f.conversation_id, min(f.created_at) AS at
		FROM funnel_events f WHERE f.status = 'interesse_confirmado'
		GROUP BY f.conversation_id
	), conv AS (
		SELECT i.at::date AS d, EXISTS (SELECT 1 FROM funnel_events b
			WHERE b.conversation_id = i.conversation_id
			    AND b.status = 'ponte_feita'
			    AND b.created_at >= i.at) AS bridged
		FROM interest i
	), br AS (
		SELECT b.bridged_at::date AS d, b.closed,
		    extract(epoch FROM b.bridged_at - b.interest_at) / 60.0 AS mins,
		    b.bridged_at <= now() - make_interval(hours =>
			mg_setting('followup_hours', 48)::int) AS due,
		    b.followed_up_at IS NOT NULL AS done
		FROM funnel_bridges b
	), periods AS (
		SELECT 'total'::text AS period, NULL::date AS day
		UNION ALL
		SELECT DISTINCT to_char(x.d, 'YYYY-MM-DD'), x.d
		FROM (SELECT d FROM conv UNION SELECT d FROM br) x
	), p AS (
		SELECT * FROM periods
		WHERE period = 'total' OR ((p_since IS NULL OR day >= p_since)
		    AND (p_until IS NULL OR day <= p_until))
	), m AS (
		SELECT p.period, p.day,
		    (SELECT count(*) FILTER (WHERE c.bridged) FROM conv c
			WHERE mg_in_period(c.d, p.day, p_since, p_until)) AS bn,
		    (SELECT count(*) FROM conv c
			WHERE mg_in_period(c.d, p.day, p_since, p_until)) AS bd,
		    (SELECT count(*) FILTER (WHERE b.closed) FROM br b
			WHERE mg_in_period(b.d, p.day, p_since, p_until)) AS cn,
		    (SELECT count(*) FROM br b
			WHERE mg_in_period(b.d, p.day, p_since, p_until)) AS cd,
		    (SELECT count(b.mins) FROM br b
			WHERE mg_in_period(b.d, p.day, p_since, p_until)) AS tn,
		    (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY b.mins)
			FROM br b
			WHERE mg_in_period(b.d, p.day, p_since, p_until)) AS tmed,
		    (SELECT avg(b.mins) FROM br b
			WHERE mg_in_period(b.d, p.day, p_since, p_until)) AS tavg,
		    (SELECT count(*) FILTER (WHERE b.due AND b.done) FROM br b
			WHERE mg_in_period(b.d, p.day, p_since, p_until)) AS fn,
		    (SELECT count(*) FILTER (WHERE b.due) FROM br b
			WHERE mg_in_period(b.d, p.day, p_since, p_until)) AS fd
		FROM p
	)
	SELECT m.period, m.day, x.ord, x.metric, x.num, x.den,
	    round(x.val::numeric, 1), x.unit, x.target,
	    CASE WHEN x.val IS NULL THEN NULL
		WHEN x.ord = 1 THEN x.val > 60 WHEN x.ord = 2 THEN x.val > 30
		WHEN x.ord IN (3, 4) THEN x.val < 10 ELSE x.val >= 100 END
	FROM m, LATERAL (VALUES
	    (1, 'bridge_rate', m.bn, m.bd,
		100.0 * m.bn / nullif(m.bd, 0), '%', '> 60 %'),
	    (2, 'conversion_rate', m.cn, m.cd,
		100.0 * m.cn / nullif(m.cd, 0), '%', '> 30 %'),
	    (3, 'time_to_bridge_median', NULL::bigint, m.tn,
		m.tmed::numeric, 'min', '< 10 min'),
	    (4, 'time_to_bridge_avg', NULL::bigint, m.tn,
		m.tavg::numeric, 'min', '< 10 min'),
	    (5, 'followup_rate', m.fn, m.fd,
		100.0 * m.fn / nullif(m.fd, 0), '%', '100 %'))
	    AS x (ord, metric, num, den, val, unit, target)
	ORDER BY m.day NULLS FIRST, x.ord
$$;

-- The four metrics overall ('total') and by day, each beside its target.
CREATE VIEW funnel_metrics AS
	SELECT * FROM mg_funnel_metrics(NULL, NULL);

-- The latest funnel status per conversation and shift. An event without
-- a shift (an outcome the doctor reported in chat) belongs to the
-- conversation's latest bridge made before it; a conversation's
-- shift-less row is shown only while it has no bridge.
CREATE VIEW funnel_current AS
	WITH ev AS (
		SELECT f.*, coalesce(f.vaga_id, (SELECT b.vaga_id
			FROM funnel_events b
			WHERE b.conversation_id = f.conversation_id
			    AND b.status = 'ponte_feita'
			    AND b.created_at <= f.created_at
			ORDER BY b.created_at DESC, b.id DESC LIMIT 1)) AS vaga
		FROM funnel_events f
	), latest AS (
		SELECT DISTINCT ON (conversation_id, vaga) *
		FROM ev
		ORDER BY conversation_id, vaga, created_at DESC, id DESC
	)
	SELECT l.conversation_id, c.phone_number_id, c.wa_id,
	    l.vaga AS vaga_id, v.hospital, v.data AS vaga_data, l.status,
	    mg_funnel_stage(l.status) AS stage,
	    l.created_at AS status_at,
	    coalesce(l.responsavel, v.responsavel_nome) AS responsavel
	FROM latest l
	JOIN conversations c ON c.id = l.conversation_id
	LEFT JOIN vagas v ON v.id = l.vaga
	WHERE l.vaga IS NOT NULL OR NOT EXISTS (SELECT 1 FROM ev e
		WHERE e.conversation_id = l.conversation_id
		    AND e.vaga IS NOT NULL);

-- Operators ----------------------------------------------------------------

-- The conversations of a doctor: wa_id with or without a leading '+',
-- on one business number (p_phone_number_id) or on all (NULL).
CREATE FUNCTION mg_conversations_of(p_wa_id text, p_phone_number_id text)
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
CREATE FUNCTION mg_takeover(p_wa_id text, p_who text, p_reason text,
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
CREATE FUNCTION mg_release(p_wa_id text, p_who text,
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
CREATE FUNCTION mg_set_mode(p_wa_id text, p_mode text, p_reason text,
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
-- flag (percent NULL keeps it); the triggers of 0002 record the history
-- and NOTIFY. Unknown flag or bad value/percent raise (22023). Returns
-- the new row.
CREATE FUNCTION mg_flag_set(p_name text, p_value text, p_percent int,
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
