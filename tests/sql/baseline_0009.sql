-- baseline_0009.sql -- the schema of a database that ran the migrations
-- 0001-0009 as they were before the re-baseline of issue 12 (functions in
-- numbered migrations), for tests/cli/sql_baseline.sh: restore it, run
-- `modegate migrate`, and the result must equal a fresh migrate.
-- Generated once (do not edit), from the tree at commit e266be4:
--   for f in sql/0*.sql; do psql -1 -f $f; done   # + schema_migrations rows
--   pg_dump --schema-only --no-owner --no-privileges
--   pg_dump --data-only --inserts -t schema_migrations -t feature_flags \
--       -t feature_flag_changes
-- (PostgreSQL 15; the \restrict lines of pg_dump removed.)
-- SPDX-License-Identifier: MIT

--
-- PostgreSQL database dump
--


-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: mg_append_only(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_append_only() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
	RAISE EXCEPTION '%: append-only table, % refused', TG_TABLE_NAME, TG_OP
	    USING ERRCODE = 'insufficient_privilege';
END $$;


--
-- Name: mg_apply_conversation(bigint, jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_apply_conversation(p_id bigint, p_set jsonb) RETURNS void
    LANGUAGE plpgsql
    AS $$
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


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: conversations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.conversations (
    id bigint NOT NULL,
    phone_number_id text NOT NULL,
    wa_id text NOT NULL,
    control text DEFAULT 'ai'::text NOT NULL,
    last_inbound_at timestamp with time zone,
    conversation_mode text DEFAULT 'discovery'::text NOT NULL,
    mode_updated_at timestamp with time zone,
    mode_updated_reason text,
    mode_source text DEFAULT 'inbound'::text NOT NULL,
    pending_transition text,
    pending_transition_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    user_id text,
    profile_name text,
    especialidade text,
    regiao text,
    opted_out_at timestamp with time zone,
    opt_out_confirmed_at timestamp with time zone,
    cooling_off_until timestamp with time zone,
    serious_objection_at timestamp with time zone,
    reserva_confirmada boolean DEFAULT false NOT NULL,
    objecao_resolvida boolean DEFAULT false NOT NULL,
    last_outbound_at timestamp with time zone,
    lease_owner text,
    lease_until timestamp with time zone,
    next_attempt_at timestamp with time zone,
    control_updated_at timestamp with time zone,
    control_updated_by text,
    context_since timestamp with time zone,
    turn_starts timestamp with time zone[] DEFAULT '{}'::timestamp with time zone[] NOT NULL,
    next_turn_at timestamp with time zone,
    CONSTRAINT conversations_control_check CHECK ((control = ANY (ARRAY['ai'::text, 'human'::text]))),
    CONSTRAINT conversations_conversation_mode_check CHECK ((conversation_mode = ANY (ARRAY['discovery'::text, 'oferta'::text, 'followup'::text, 'reativacao'::text]))),
    CONSTRAINT conversations_mode_source_check CHECK (((mode_source = ANY (ARRAY['inbound'::text, 'manual'::text])) OR (mode_source ~~ 'campaign:%'::text))),
    CONSTRAINT conversations_pending_transition_check CHECK ((pending_transition = ANY (ARRAY['discovery'::text, 'oferta'::text, 'followup'::text, 'reativacao'::text])))
);


--
-- Name: mg_apply_handoffs(public.conversations, jsonb, bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_apply_handoffs(p_conv public.conversations, p_list jsonb, p_inbox_id bigint) RETURNS integer
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: mg_apply_status(text, text, timestamp with time zone, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_apply_status(p_wamid text, p_status text, p_at timestamp with time zone, p_error_code integer) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
	o outbox;
BEGIN
	SELECT * INTO o FROM outbox WHERE wamid = p_wamid FOR UPDATE;
	IF NOT FOUND OR mg_status_rank(p_status) = 0 OR
	    mg_status_rank(p_status) <= mg_status_rank(o.delivery_status) THEN
		RETURN;
	END IF;
	UPDATE outbox SET delivery_status = p_status,
	    delivery_status_at = coalesce(p_at, now()),
	    error_code = CASE WHEN p_status = 'failed' THEN p_error_code
		ELSE error_code END
	WHERE id = o.id;
	IF p_status = 'failed' THEN
		IF p_error_code = 131047 THEN
			PERFORM mg_window_closed(o.id, 'failed status 131047');
		ELSE
			UPDATE outbox SET state = 'failed' WHERE id = o.id;
			INSERT INTO audit_log (conversation_id, inbox_id, step,
			    decision, reason, details)
			VALUES (o.conversation_id, o.inbox_id, 'send', 'failed',
			    'failed status', jsonb_build_object('outbox_id',
				o.id, 'error_code', p_error_code));
		END IF;
	END IF;
END $$;


--
-- Name: mg_arr(jsonb, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_arr(p_turn jsonb, p_key text) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE
    AS $$
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


--
-- Name: mg_claim(text, integer, integer, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_claim(p_worker text, p_lease_seconds integer, p_window_ms integer, p_limit integer) RETURNS SETOF jsonb
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: mg_claim_limited(text, integer, integer, integer, integer, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_claim_limited(p_worker text, p_lease_seconds integer, p_window_ms integer, p_limit integer, p_turns integer, p_window_s integer) RETURNS SETOF jsonb
    LANGUAGE plpgsql
    AS $$
DECLARE
	r	jsonb;
BEGIN
	FOR r IN SELECT * FROM mg_claim(p_worker, p_lease_seconds, p_window_ms,
	    p_limit) LOOP
		IF p_turns > 0 AND NOT (r ->> 'retaken')::boolean THEN
			PERFORM mg_sender_turn((r ->> 'conversation_id')::bigint,
			    r -> 'inbox_ids', p_turns, p_window_s, p_window_ms);
		END IF;
		RETURN NEXT r;
	END LOOP;
END $$;


--
-- Name: mg_claim_outbox(text, integer, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_claim_outbox(p_worker text, p_lease_seconds integer, p_limit integer) RETURNS SETOF jsonb
    LANGUAGE plpgsql
    AS $$
BEGIN
	-- A lost claim is harmless (the row is still due and is claimed
	-- again), so this transaction need not wait for its WAL flush.
	PERFORM set_config('synchronous_commit', 'off', true);
	RETURN QUERY SELECT * FROM mg_lease_outbox(p_worker, p_lease_seconds,
	    p_limit, NULL);
END $$;


--
-- Name: mg_claim_turns(text, integer, integer, integer, integer, integer, integer, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_claim_turns(p_worker text, p_lease_seconds integer, p_window_ms integer, p_limit integer, p_turns integer, p_window_s integer, p_history integer, p_max_attempts integer) RETURNS SETOF jsonb
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: mg_commit_send(text, bigint, jsonb, text, integer, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_commit_send(p_worker text, p_conversation_id bigint, p_turn jsonb, p_sender text, p_send_lease_seconds integer, p_send_limit integer) RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: mg_commit_turn(text, bigint, jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_commit_turn(p_worker text, p_conversation_id bigint, p_turn jsonb) RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: mg_complete_payload(jsonb, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_complete_payload(p_payload jsonb, p_key text) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    AS $$
	SELECT CASE WHEN p_payload ->> 'status' = 'read' THEN
		jsonb_build_object('messaging_product', 'whatsapp') || p_payload
	ELSE
		jsonb_build_object('messaging_product', 'whatsapp',
		    'recipient_type', 'individual') || mg_recipient(p_key) ||
		    p_payload
	END
$$;


--
-- Name: mg_context(bigint, bigint[], integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_context(p_conversation_id bigint, p_inbox_ids bigint[], p_history integer) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    AS $$
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


--
-- Name: mg_conversations_of(text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_conversations_of(p_wa_id text, p_phone_number_id text) RETURNS SETOF public.conversations
    LANGUAGE sql STABLE
    AS $$
	SELECT * FROM conversations
	WHERE wa_id IN (p_wa_id, ltrim(p_wa_id, '+'))
	    AND (p_phone_number_id IS NULL OR phone_number_id = p_phone_number_id)
	ORDER BY id
$$;


--
-- Name: mg_enqueue_read(text, bigint, bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_enqueue_read(p_worker text, p_conversation_id bigint, p_inbox_id bigint) RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
DECLARE
	cv	conversations;
	w	text;
	nid	bigint;
BEGIN
	-- A lost claim is harmless (the row is still due and is claimed
	-- again), so this transaction need not wait for its WAL flush; the
	-- commits that must be durable (ingest, mg_commit_turn,
	-- mg_outbox_result) keep synchronous_commit on.
	PERFORM set_config('synchronous_commit', 'off', true);
	SELECT * INTO cv FROM conversations
	WHERE id = p_conversation_id AND lease_owner = p_worker
	    AND lease_until >= now();
	IF NOT FOUND THEN
		RETURN jsonb_build_object('ok', false, 'reason', 'lease_lost');
	END IF;
	SELECT wamid INTO w FROM inbox
	WHERE id = p_inbox_id AND conversation_id = cv.id;
	IF w IS NULL THEN
		RETURN jsonb_build_object('ok', false, 'reason', 'no_message');
	END IF;
	INSERT INTO outbox (conversation_id, inbox_id, kind, payload, to_key,
	    phone_number_id)
	VALUES (cv.id, p_inbox_id, 'read', mg_complete_payload(
	    jsonb_build_object('status', 'read', 'message_id', w,
		'typing_indicator', jsonb_build_object('type', 'text')),
	    cv.wa_id), cv.wa_id, cv.phone_number_id)
	RETURNING id INTO nid;
	RETURN jsonb_build_object('ok', true, 'outbox_id', nid);
END $$;


--
-- Name: mg_expire_pendings(interval, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_expire_pendings(p_timeout interval, p_limit integer) RETURNS integer
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: mg_fail_turn(text, bigint, bigint[], text, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_fail_turn(p_worker text, p_conversation_id bigint, p_inbox_ids bigint[], p_error text, p_max_attempts integer) RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: mg_flag_history(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_flag_history() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
	o feature_flags;
	n feature_flags;
BEGIN
	IF TG_OP <> 'INSERT' THEN o := OLD; END IF;
	IF TG_OP <> 'DELETE' THEN n := NEW; END IF;
	INSERT INTO feature_flag_changes (name, old_value, new_value,
	    old_percent, new_percent, changed_by, reason)
	VALUES (coalesce(n.name, o.name), o.value, n.value, o.percent,
	    n.percent, coalesce(n.updated_by, session_user), n.reason);
	PERFORM pg_notify('modegate_flags', json_build_object(
	    'name', coalesce(n.name, o.name), 'value', n.value,
	    'percent', n.percent)::text);
	RETURN NULL;
END $$;


--
-- Name: feature_flags; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.feature_flags (
    name text NOT NULL,
    value text NOT NULL,
    percent integer DEFAULT 100 NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_by text,
    reason text,
    CONSTRAINT feature_flags_percent_check CHECK (((percent >= 0) AND (percent <= 100))),
    CONSTRAINT feature_flags_value_check CHECK ((value = ANY (ARRAY['on'::text, 'off'::text, 'shadow'::text])))
);


--
-- Name: mg_flag_set(text, text, integer, text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_flag_set(p_name text, p_value text, p_percent integer, p_who text, p_reason text) RETURNS public.feature_flags
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: mg_flag_stamp(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_flag_stamp() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
	NEW.updated_at := now();
	IF TG_OP = 'UPDATE' THEN
		IF NEW.updated_by IS NOT DISTINCT FROM OLD.updated_by AND
		    NEW.reason IS NOT DISTINCT FROM OLD.reason THEN
			NEW.updated_by := session_user;
			NEW.reason := NULL;
		END IF;
	END IF;
	NEW.updated_by := coalesce(NEW.updated_by, session_user);
	RETURN NEW;
END $$;


--
-- Name: mg_fold(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_fold(s text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
	SELECT lower(translate(s,
	    'ÁÀÂÃÄáàâãäÉÈÊËéèêëÍÌÎÏíìîïÓÒÔÕÖóòôõöÚÙÛÜúùûüÇçÑñ',
	    'AAAAAaaaaaEEEEeeeeIIIIiiiiOOOOOoooooUUUUuuuuCcNn'))
$$;


--
-- Name: mg_followup_blocked(public.conversations); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_followup_blocked(p_conv public.conversations) RETURNS text
    LANGUAGE sql STABLE
    AS $$
	SELECT CASE
	WHEN p_conv.opted_out_at IS NOT NULL THEN 'opt_out'
	WHEN p_conv.serious_objection_at IS NOT NULL THEN 'objecao_grave'
	WHEN p_conv.control = 'human' THEN 'controle_humano'
	END
$$;


--
-- Name: mg_followup_close(interval, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_followup_close(p_no_answer interval, p_limit integer) RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: mg_followup_conv(public.conversations, text, interval, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_followup_conv(p_conv public.conversations, p_owner text, p_after interval, p_text text) RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: mg_followup_message(public.conversations, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_followup_message(p_conv public.conversations, p_text text) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
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


--
-- Name: mg_followup_settle(integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_followup_settle(p_limit integer) RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: mg_followup_sweep(text, integer, integer, integer, text, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_followup_sweep(p_owner text, p_after_s integer, p_no_answer_s integer, p_pending_timeout_s integer, p_text text, p_limit integer DEFAULT 100) RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: mg_funnel_bridge(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_funnel_bridge() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: mg_funnel_metrics(date, date); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_funnel_metrics(p_since date, p_until date) RETURNS TABLE(period text, day date, ord integer, metric text, numerator bigint, denominator bigint, value numeric, unit text, target text, met boolean)
    LANGUAGE sql STABLE
    AS $$
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


--
-- Name: mg_funnel_stage(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_funnel_stage(p_status text) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$
	SELECT CASE p_status
	WHEN 'interesse_confirmado' THEN 'qualificando'
	WHEN 'ponte_feita' THEN 'contatado'
	WHEN 'aguardando_desfecho' THEN 'aguardando'
	WHEN 'fechado_com_responsavel' THEN 'convertido'
	WHEN 'nao_fechou' THEN 'nao_convertido'
	WHEN 'sem_resposta' THEN 'sem_resposta' END
$$;


--
-- Name: mg_hold_sender(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_hold_sender() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
	IF NEW.next_turn_at > now() AND (NEW.next_attempt_at IS NULL OR
	    NEW.next_attempt_at < NEW.next_turn_at) THEN
		NEW.next_attempt_at := NEW.next_turn_at;
	END IF;
	RETURN NEW;
END $$;


--
-- Name: mg_in_period(date, date, date, date); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_in_period(p_d date, p_day date, p_since date, p_until date) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $$
	SELECT CASE WHEN p_day IS NOT NULL THEN p_d = p_day
	    ELSE (p_since IS NULL OR p_d >= p_since)
		AND (p_until IS NULL OR p_d <= p_until) END
$$;


--
-- Name: mg_inbound_after(public.conversations, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_inbound_after(p_conv public.conversations, p_at timestamp with time zone) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
	SELECT EXISTS (SELECT 1 FROM inbox i
		WHERE i.conversation_id = p_conv.id
		    AND i.received_at > p_at)
	    OR EXISTS (SELECT 1 FROM inbox i
		WHERE i.conversation_id IS NULL
		    AND i.phone_number_id = p_conv.phone_number_id
		    AND i.sender_key = p_conv.wa_id AND i.received_at > p_at)
$$;


--
-- Name: mg_inbound_open(public.conversations); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_inbound_open(p_conv public.conversations) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
	SELECT EXISTS (SELECT 1 FROM inbox i
		WHERE i.conversation_id = p_conv.id
		    AND i.state IN ('pending', 'claimed'))
	    OR EXISTS (SELECT 1 FROM inbox i
		WHERE i.conversation_id IS NULL
		    AND i.phone_number_id = p_conv.phone_number_id
		    AND i.sender_key = p_conv.wa_id
		    AND i.state IN ('pending', 'claimed'))
$$;


--
-- Name: mg_inbound_text(text, jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_inbound_text(msg_type text, raw jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
	SELECT CASE
	WHEN msg_type = 'text' THEN raw -> 'text' ->> 'body'
	WHEN msg_type = 'button' THEN coalesce(raw -> 'button' ->> 'text',
	    raw -> 'button' ->> 'payload')
	WHEN msg_type = 'interactive' THEN coalesce(
	    raw -> 'interactive' -> 'button_reply' ->> 'title',
	    raw -> 'interactive' -> 'list_reply' ->> 'title',
	    raw -> 'interactive' -> 'nfm_reply' ->> 'body', '[interactive]')
	WHEN msg_type IN ('image', 'video', 'document', 'audio', 'sticker')
	    THEN '[' || msg_type || ']' || coalesce(' ' ||
	    (raw -> msg_type ->> 'caption'), '')
	WHEN msg_type = 'reaction' THEN '[reaction ' ||
	    coalesce(raw -> 'reaction' ->> 'emoji', '') || ']'
	WHEN msg_type = 'location' THEN '[location]' ||
	    coalesce(' ' || (raw -> 'location' ->> 'name'), '')
	ELSE '[' || msg_type || ']'
	END
$$;


--
-- Name: mg_lease_outbox(text, integer, integer, bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_lease_outbox(p_worker text, p_lease_seconds integer, p_limit integer, p_conversation_id bigint) RETURNS SETOF jsonb
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: mg_lease_send(jsonb, text, integer, integer, bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_lease_send(p_result jsonb, p_sender text, p_lease_seconds integer, p_limit integer, p_conversation_id bigint) RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
BEGIN
	IF NOT (p_result ->> 'ok')::boolean OR p_sender IS NULL THEN
		RETURN p_result || '{"send": []}';
	END IF;
	RETURN p_result || jsonb_build_object('send',
	    (SELECT coalesce(jsonb_agg(r), '[]')
	    FROM mg_lease_outbox(p_sender, p_lease_seconds, p_limit,
		p_conversation_id) r));
END $$;


--
-- Name: mg_link_inbox(integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_link_inbox(p_max integer DEFAULT 5000) RETURNS integer
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: mg_on_status(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_on_status() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
	PERFORM mg_apply_status(NEW.wamid, NEW.status, NEW.wa_timestamp,
	    NEW.error_code);
	RETURN NULL;
END $$;


--
-- Name: mg_outbox_result(bigint, jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_outbox_result(p_id bigint, p_result jsonb) RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
DECLARE
	o	outbox;
	r	text := p_result ->> 'result';
	code	int := (p_result ->> 'error_code')::int;
	det	text := p_result ->> 'error_detail';
	maxa	int := coalesce((p_result ->> 'max_attempts')::int, 8);
	st	text;
	s	record;
BEGIN
	SELECT * INTO o FROM outbox WHERE id = p_id FOR UPDATE;
	IF NOT FOUND OR o.state <> 'sending' THEN
		RETURN jsonb_build_object('ok', false, 'reason', 'not_sending');
	END IF;
	IF r IN ('sent', 'dry_run') THEN
		IF r = 'sent' AND o.kind <> 'read' AND
		    coalesce(p_result ->> 'wamid', '') = '' THEN
			RETURN jsonb_build_object('ok', false,
			    'reason', 'bad_result');
		END IF;
		UPDATE outbox SET state = r,
		    wamid = nullif(p_result ->> 'wamid', ''),
		    sent_at = now(), lease_owner = NULL, lease_until = NULL,
		    attempts = attempts + 1
		WHERE id = o.id;
		UPDATE conversations SET last_outbound_at = now()
		WHERE id = o.conversation_id AND o.kind <> 'read';
		FOR s IN SELECT * FROM message_statuses
		    WHERE wamid = p_result ->> 'wamid'
		    ORDER BY mg_status_rank(status) LOOP
			PERFORM mg_apply_status(s.wamid, s.status,
			    s.wa_timestamp, s.error_code);
		END LOOP;
		st := r;
	ELSIF r = 'retry' THEN
		st := CASE WHEN o.attempts + 1 >= maxa THEN 'dead'
		    ELSE 'pending' END;
		UPDATE outbox SET state = st, attempts = attempts + 1,
		    error_code = code, error_detail = det,
		    lease_owner = NULL, lease_until = NULL,
		    next_attempt_at = CASE WHEN st = 'pending' THEN now() +
			coalesce(make_interval(secs =>
			    (p_result ->> 'retry_after_s')::double precision),
			    least(interval '15 min',
				interval '5 s' * power(2, o.attempts))) END
		WHERE id = o.id;
	ELSIF r = 'failed' THEN
		st := 'failed';
		UPDATE outbox SET state = 'failed', attempts = attempts + 1,
		    error_code = code, error_detail = det,
		    lease_owner = NULL, lease_until = NULL
		WHERE id = o.id;
	ELSIF r = 'window_closed' THEN
		PERFORM mg_window_closed(o.id, coalesce(det, 'error 131047'));
		SELECT state INTO st FROM outbox WHERE id = o.id;
		RETURN jsonb_build_object('ok', true, 'state', st);
	ELSE
		RETURN jsonb_build_object('ok', false, 'reason', 'bad_result');
	END IF;
	INSERT INTO audit_log (conversation_id, inbox_id, step, decision,
	    reason, details)
	VALUES (o.conversation_id, o.inbox_id, 'send', st, r,
	    jsonb_strip_nulls(jsonb_build_object('outbox_id', o.id,
		'kind', o.kind, 'wamid', p_result ->> 'wamid',
		'error_code', code, 'error_detail', det,
		'attempts', o.attempts + 1)));
	RETURN jsonb_build_object('ok', true, 'state', st);
END $$;


--
-- Name: mg_outcome_since(bigint, bigint, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_outcome_since(p_conversation_id bigint, p_vaga_id bigint, p_at timestamp with time zone) RETURNS text
    LANGUAGE sql STABLE
    AS $$
	SELECT f.status FROM funnel_events f
	WHERE f.conversation_id = p_conversation_id
	    AND f.status IN ('fechado_com_responsavel', 'nao_fechou',
		'sem_resposta')
	    AND (f.vaga_id = p_vaga_id OR f.vaga_id IS NULL)
	    AND f.created_at >= p_at
	ORDER BY f.created_at, f.id LIMIT 1
$$;


--
-- Name: mg_recipient(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_recipient(p_key text) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    AS $$
	SELECT CASE
	WHEN p_key ~ '^[A-Z]{2}\.' THEN jsonb_build_object('recipient', p_key)
	WHEN p_key LIKE '+%' THEN jsonb_build_object('to', p_key)
	ELSE jsonb_build_object('to', '+' || p_key) END
$$;


--
-- Name: mg_release(text, text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_release(p_wa_id text, p_who text, p_phone_number_id text DEFAULT NULL::text) RETURNS bigint[]
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: mg_renew_lease(text, bigint, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_renew_lease(p_worker text, p_conversation_id bigint, p_lease_seconds integer) RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: mg_sender_turn(bigint, jsonb, integer, integer, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_sender_turn(p_conversation_id bigint, p_inbox_ids jsonb, p_turns integer, p_window_s integer, p_window_ms integer) RETURNS void
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: mg_set_mode(text, text, text, text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_set_mode(p_wa_id text, p_mode text, p_reason text, p_who text, p_phone_number_id text DEFAULT NULL::text) RETURNS bigint[]
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: mg_setting(text, numeric); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_setting(p_name text, p_default numeric) RETURNS numeric
    LANGUAGE sql STABLE
    AS $$
	SELECT coalesce(nullif(current_setting('modegate.' || p_name, true),
	    '')::numeric, p_default)
$$;


--
-- Name: mg_start_read(text, bigint, bigint, text, integer, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_start_read(p_worker text, p_conversation_id bigint, p_inbox_id bigint, p_sender text, p_send_lease_seconds integer, p_send_limit integer) RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
BEGIN
	RETURN mg_lease_send(mg_enqueue_read(p_worker, p_conversation_id,
	    p_inbox_id), p_sender, p_send_lease_seconds, p_send_limit,
	    p_conversation_id);
END $$;


--
-- Name: mg_status_rank(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_status_rank(s text) RETURNS integer
    LANGUAGE sql IMMUTABLE
    AS $$
	SELECT CASE s WHEN 'sent' THEN 1 WHEN 'delivered' THEN 2
	    WHEN 'read' THEN 3 WHEN 'played' THEN 4 WHEN 'failed' THEN 9
	    ELSE 0 END
$$;


--
-- Name: mg_takeover(text, text, text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_takeover(p_wa_id text, p_who text, p_reason text, p_phone_number_id text DEFAULT NULL::text) RETURNS bigint[]
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: mg_tool_args(jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_tool_args(p_args jsonb) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE
    AS $$
BEGIN
	IF p_args IS NULL THEN
		RETURN '{}';
	END IF;
	IF jsonb_typeof(p_args) = 'string' THEN
		BEGIN
			p_args := (p_args #>> '{}')::jsonb;
		EXCEPTION WHEN others THEN
			RETURN '{}';
		END;
	END IF;
	IF jsonb_typeof(p_args) <> 'object' THEN
		RETURN '{}';
	END IF;
	RETURN p_args;
END $$;


--
-- Name: mg_tool_buscar_vagas(bigint, jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_tool_buscar_vagas(p_conversation_id bigint, p_args jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    AS $$
DECLARE
	a	jsonb := mg_tool_args(p_args);
	d1	date;
	d2	date;
	res	jsonb;
	total	int;
BEGIN
	BEGIN
		d1 := nullif(a ->> 'data', '')::date;
		d2 := nullif(a ->> 'data_ate', '')::date;
	EXCEPTION WHEN others THEN
		RETURN jsonb_build_object('ok', false,
		    'erro', 'data inválida: use AAAA-MM-DD');
	END;
	WITH hits AS (
		SELECT v FROM vagas v
		WHERE v.status = 'aberta' AND v.data >= current_date
		    AND mg_words_match(v.especialidade, a ->> 'especialidade')
		    AND mg_words_match(v.regiao, a ->> 'regiao')
		    AND mg_words_match(v.turno, a ->> 'turno')
		    AND (d1 IS NULL OR (d2 IS NULL AND v.data = d1) OR
			(d2 IS NOT NULL AND v.data >= d1))
		    AND (d2 IS NULL OR v.data <= d2)
	)
	SELECT (SELECT count(*) FROM hits),
	    coalesce((SELECT jsonb_agg(mg_vaga_json(h.v)
		ORDER BY (h.v).data, (h.v).id)
		FROM (SELECT v FROM hits ORDER BY (v).data, (v).id LIMIT 5) h),
		'[]')
	INTO total, res;
	RETURN jsonb_build_object('ok', true, 'vagas', res, 'total', total);
END $$;


--
-- Name: mg_tool_criar_handoff_externo(bigint, jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_tool_criar_handoff_externo(p_conversation_id bigint, p_args jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    AS $$
DECLARE
	v vagas := mg_tool_vaga(p_args);
BEGIN
	IF v.id IS NULL THEN
		RETURN jsonb_build_object('ok', false,
		    'erro', 'vaga_id inexistente');
	END IF;
	IF v.status <> 'aberta' THEN
		RETURN jsonb_build_object('ok', false,
		    'erro', 'vaga já fechada');
	END IF;
	RETURN jsonb_build_object('ok', true, 'vaga', mg_vaga_json(v),
	    'responsavel', jsonb_build_object('nome', v.responsavel_nome,
		'contato', v.responsavel_contato),
	    'ja_existente', EXISTS (SELECT 1 FROM handoffs h
		WHERE h.conversation_id = p_conversation_id
		    AND h.vaga_id = v.id),
	    'commit', jsonb_build_object('handoffs',
		jsonb_build_array(jsonb_build_object('vaga_id', v.id))));
END $$;


--
-- Name: mg_tool_encaminhar_humano(bigint, jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_tool_encaminhar_humano(p_conversation_id bigint, p_args jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    AS $$
	SELECT jsonb_build_object('ok', true, 'commit', jsonb_build_object(
	    'conversation', jsonb_build_object('control', 'human',
		'control_updated_by', 'encaminhar_humano'),
	    'audit', jsonb_build_array(jsonb_build_object('step', 'tool',
		'decision', 'handoff_humano',
		'reason', coalesce(mg_tool_args(p_args) ->> 'motivo',
		    'pedido de atendimento humano')))))
$$;


--
-- Name: mg_tool_registrar_status_intermediacao(bigint, jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_tool_registrar_status_intermediacao(p_conversation_id bigint, p_args jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    AS $$
DECLARE
	a	jsonb := mg_tool_args(p_args);
	st	text := lower(trim(a ->> 'status'));
	v	vagas;
BEGIN
	IF st IS NULL OR st NOT IN ('interesse_confirmado',
	    'aguardando_desfecho', 'fechado_com_responsavel', 'nao_fechou',
	    'sem_resposta') THEN
		RETURN jsonb_build_object('ok', false, 'erro',
		    'status inválido: use interesse_confirmado, '
		    'aguardando_desfecho, fechado_com_responsavel, '
		    'nao_fechou ou sem_resposta');
	END IF;
	IF a ? 'vaga_id' AND jsonb_typeof(a -> 'vaga_id') <> 'null' THEN
		v := mg_tool_vaga(a);
		IF v.id IS NULL THEN
			RETURN jsonb_build_object('ok', false,
			    'erro', 'vaga_id inexistente');
		END IF;
	END IF;
	RETURN jsonb_build_object('ok', true, 'status', st,
	    'commit', jsonb_build_object('funnel', jsonb_build_array(
		jsonb_build_object('status', st, 'vaga_id', v.id,
		    'metadata', jsonb_strip_nulls(jsonb_build_object(
			'observacao', a ->> 'observacao', 'source', 'tool'))))));
END $$;


--
-- Name: mg_tool_salvar_memoria(bigint, jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_tool_salvar_memoria(p_conversation_id bigint, p_args jsonb) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE
    AS $$
DECLARE
	a	jsonb := mg_tool_args(p_args);
	fato	text := trim(coalesce(a ->> 'fato', a ->> 'fact'));
	conv	jsonb := '{}';
BEGIN
	IF fato IS NULL OR fato = '' OR length(fato) > 500 THEN
		RETURN jsonb_build_object('ok', false,
		    'erro', 'fato obrigatório (até 500 caracteres)');
	END IF;
	IF nullif(trim(a ->> 'especialidade'), '') IS NOT NULL THEN
		conv := conv || jsonb_build_object('especialidade',
		    trim(a ->> 'especialidade'));
	END IF;
	IF nullif(trim(a ->> 'regiao'), '') IS NOT NULL THEN
		conv := conv || jsonb_build_object('regiao', trim(a ->> 'regiao'));
	END IF;
	RETURN jsonb_build_object('ok', true, 'commit',
	    jsonb_build_object('memory', jsonb_build_array(fato)) ||
	    CASE WHEN conv = '{}' THEN '{}'::jsonb
		ELSE jsonb_build_object('conversation', conv) END);
END $$;


--
-- Name: vagas; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.vagas (
    id bigint NOT NULL,
    hospital text NOT NULL,
    especialidade text NOT NULL,
    regiao text NOT NULL,
    turno text NOT NULL,
    data date NOT NULL,
    valor_bruto numeric(10,2),
    responsavel_nome text NOT NULL,
    responsavel_contato text NOT NULL,
    status text DEFAULT 'aberta'::text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT vagas_status_check CHECK ((status = ANY (ARRAY['aberta'::text, 'fechada'::text])))
);


--
-- Name: mg_tool_vaga(jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_tool_vaga(p_args jsonb) RETURNS public.vagas
    LANGUAGE sql STABLE
    AS $_$
	SELECT v FROM vagas v
	WHERE (mg_tool_args(p_args) ->> 'vaga_id') ~ '^\s*[0-9]{1,18}\s*$'
	    AND v.id = trim(mg_tool_args(p_args) ->> 'vaga_id')::bigint
$_$;


--
-- Name: mg_vaga_json(public.vagas); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_vaga_json(v public.vagas) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    AS $$
	SELECT jsonb_build_object('id', v.id, 'hospital', v.hospital,
	    'especialidade', v.especialidade, 'regiao', v.regiao,
	    'turno', v.turno, 'data', v.data)
$$;


--
-- Name: mg_window_closed(bigint, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_window_closed(p_outbox_id bigint, p_detail text) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
	o	outbox;
	tpl	jsonb;
	nid	bigint;
BEGIN
	SELECT * INTO o FROM outbox WHERE id = p_outbox_id FOR UPDATE;
	IF NOT FOUND THEN
		RETURN NULL;
	END IF;
	SELECT payload INTO tpl FROM wa_templates WHERE purpose = 'window_closed';
	UPDATE outbox SET
	    state = CASE WHEN tpl IS NULL AND state <> 'sent' THEN 'dropped'
		ELSE 'failed' END,
	    error_code = 131047, error_detail = p_detail,
	    lease_owner = NULL, lease_until = NULL
	WHERE id = o.id;
	IF o.kind = 'text' AND tpl IS NOT NULL THEN
		INSERT INTO outbox (conversation_id, inbox_id, kind, payload,
		    to_key, phone_number_id)
		VALUES (o.conversation_id, o.inbox_id, 'template',
		    mg_complete_payload(tpl, o.to_key), o.to_key,
		    o.phone_number_id)
		RETURNING id INTO nid;
	END IF;
	INSERT INTO audit_log (conversation_id, inbox_id, step, decision,
	    reason, details)
	VALUES (o.conversation_id, o.inbox_id, 'send',
	    CASE WHEN nid IS NULL THEN 'dropped' ELSE 'template' END,
	    'window_closed', jsonb_build_object('outbox_id', o.id,
		'error_code', 131047, 'template_outbox_id', nid,
		'detail', p_detail));
	RETURN nid;
END $$;


--
-- Name: mg_window_open(bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_window_open(p_conversation_id bigint) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
	SELECT coalesce(last_inbound_at > now() - interval '24 hours', false)
	FROM conversations WHERE id = p_conversation_id
$$;


--
-- Name: mg_words_match(text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.mg_words_match(p_hay text, p_needle text) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $$
	SELECT NOT EXISTS (
		SELECT 1 FROM regexp_split_to_table(mg_fold(coalesce(p_needle,
		    '')), '[^a-z0-9]+') w
		WHERE w <> '' AND position(' ' || w IN ' ' ||
		    regexp_replace(mg_fold(p_hay), '[^a-z0-9]+', ' ', 'g')) = 0)
$$;


--
-- Name: audit_log; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.audit_log (
    id bigint NOT NULL,
    conversation_id bigint,
    inbox_id bigint,
    step text NOT NULL,
    decision text,
    reason text,
    details jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: audit_log_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.audit_log_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: audit_log_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.audit_log_id_seq OWNED BY public.audit_log.id;


--
-- Name: conversations_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.conversations_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: conversations_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.conversations_id_seq OWNED BY public.conversations.id;


--
-- Name: doctor_memory; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.doctor_memory (
    id bigint NOT NULL,
    conversation_id bigint NOT NULL,
    fact text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT doctor_memory_fact_check CHECK (((length(fact) >= 1) AND (length(fact) <= 500)))
);


--
-- Name: doctor_memory_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.doctor_memory_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: doctor_memory_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.doctor_memory_id_seq OWNED BY public.doctor_memory.id;


--
-- Name: feature_flag_changes; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.feature_flag_changes (
    id bigint NOT NULL,
    name text NOT NULL,
    old_value text,
    new_value text,
    old_percent integer,
    new_percent integer,
    changed_by text,
    db_user text DEFAULT SESSION_USER NOT NULL,
    reason text,
    changed_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: feature_flag_changes_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.feature_flag_changes_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: feature_flag_changes_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.feature_flag_changes_id_seq OWNED BY public.feature_flag_changes.id;


--
-- Name: followups; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.followups (
    id bigint NOT NULL,
    handoff_id bigint NOT NULL,
    conversation_id bigint NOT NULL,
    vaga_id bigint NOT NULL,
    state text NOT NULL,
    reason text,
    kind text,
    outbox_id bigint,
    owner text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    sent_at timestamp with time zone,
    closed_at timestamp with time zone,
    CONSTRAINT followups_kind_check CHECK ((kind = ANY (ARRAY['text'::text, 'template'::text]))),
    CONSTRAINT followups_state_check CHECK ((state = ANY (ARRAY['queued'::text, 'sent'::text, 'answered'::text, 'sem_resposta'::text, 'failed'::text, 'skipped'::text])))
);


--
-- Name: followups_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.followups_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: followups_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.followups_id_seq OWNED BY public.followups.id;


--
-- Name: funnel_events; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.funnel_events (
    id bigint NOT NULL,
    conversation_id bigint NOT NULL,
    vaga_id bigint,
    status text NOT NULL,
    doctor_key text,
    responsavel text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    CONSTRAINT funnel_events_status_check CHECK ((status = ANY (ARRAY['interesse_confirmado'::text, 'ponte_feita'::text, 'aguardando_desfecho'::text, 'fechado_com_responsavel'::text, 'nao_fechou'::text, 'sem_resposta'::text])))
);


--
-- Name: funnel_bridges; Type: VIEW; Schema: public; Owner: -
--

CREATE VIEW public.funnel_bridges AS
 SELECT b.conversation_id,
    b.vaga_id,
    b.created_at AS bridged_at,
    ( SELECT max(i.created_at) AS max
           FROM public.funnel_events i
          WHERE ((i.conversation_id = b.conversation_id) AND (i.status = 'interesse_confirmado'::text) AND ((i.vaga_id = b.vaga_id) OR (i.vaga_id IS NULL)) AND (i.created_at <= b.created_at))) AS interest_at,
    ( SELECT min(f.created_at) AS min
           FROM public.funnel_events f
          WHERE ((f.conversation_id = b.conversation_id) AND (f.status = ANY (ARRAY['aguardando_desfecho'::text, 'fechado_com_responsavel'::text, 'nao_fechou'::text, 'sem_resposta'::text])) AND ((f.vaga_id = b.vaga_id) OR (f.vaga_id IS NULL)) AND (f.created_at >= b.created_at))) AS followed_up_at,
    (EXISTS ( SELECT 1
           FROM public.funnel_events f
          WHERE ((f.conversation_id = b.conversation_id) AND (f.status = 'fechado_com_responsavel'::text) AND ((f.vaga_id = b.vaga_id) OR (f.vaga_id IS NULL)) AND (f.created_at >= b.created_at)))) AS closed
   FROM ( SELECT DISTINCT ON (funnel_events.conversation_id, funnel_events.vaga_id) funnel_events.conversation_id,
            funnel_events.vaga_id,
            funnel_events.created_at
           FROM public.funnel_events
          WHERE (funnel_events.status = 'ponte_feita'::text)
          ORDER BY funnel_events.conversation_id, funnel_events.vaga_id, funnel_events.created_at, funnel_events.id) b;


--
-- Name: funnel_current; Type: VIEW; Schema: public; Owner: -
--

CREATE VIEW public.funnel_current AS
 WITH ev AS (
         SELECT f.id,
            f.conversation_id,
            f.vaga_id,
            f.status,
            f.doctor_key,
            f.responsavel,
            f.created_at,
            f.metadata,
            COALESCE(f.vaga_id, ( SELECT b.vaga_id
                   FROM public.funnel_events b
                  WHERE ((b.conversation_id = f.conversation_id) AND (b.status = 'ponte_feita'::text) AND (b.created_at <= f.created_at))
                  ORDER BY b.created_at DESC, b.id DESC
                 LIMIT 1)) AS vaga
           FROM public.funnel_events f
        ), latest AS (
         SELECT DISTINCT ON (ev.conversation_id, ev.vaga) ev.id,
            ev.conversation_id,
            ev.vaga_id,
            ev.status,
            ev.doctor_key,
            ev.responsavel,
            ev.created_at,
            ev.metadata,
            ev.vaga
           FROM ev
          ORDER BY ev.conversation_id, ev.vaga, ev.created_at DESC, ev.id DESC
        )
 SELECT l.conversation_id,
    c.phone_number_id,
    c.wa_id,
    l.vaga AS vaga_id,
    v.hospital,
    v.data AS vaga_data,
    l.status,
    public.mg_funnel_stage(l.status) AS stage,
    l.created_at AS status_at,
    COALESCE(l.responsavel, v.responsavel_nome) AS responsavel
   FROM ((latest l
     JOIN public.conversations c ON ((c.id = l.conversation_id)))
     LEFT JOIN public.vagas v ON ((v.id = l.vaga)))
  WHERE ((l.vaga IS NOT NULL) OR (NOT (EXISTS ( SELECT 1
           FROM ev e
          WHERE ((e.conversation_id = l.conversation_id) AND (e.vaga IS NOT NULL))))));


--
-- Name: funnel_events_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.funnel_events_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: funnel_events_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.funnel_events_id_seq OWNED BY public.funnel_events.id;


--
-- Name: funnel_metrics; Type: VIEW; Schema: public; Owner: -
--

CREATE VIEW public.funnel_metrics AS
 SELECT mg_funnel_metrics.period,
    mg_funnel_metrics.day,
    mg_funnel_metrics.ord,
    mg_funnel_metrics.metric,
    mg_funnel_metrics.numerator,
    mg_funnel_metrics.denominator,
    mg_funnel_metrics.value,
    mg_funnel_metrics.unit,
    mg_funnel_metrics.target,
    mg_funnel_metrics.met
   FROM public.mg_funnel_metrics(NULL::date, NULL::date) mg_funnel_metrics(period, day, ord, metric, numerator, denominator, value, unit, target, met);


--
-- Name: handoffs; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.handoffs (
    id bigint NOT NULL,
    conversation_id bigint NOT NULL,
    vaga_id bigint NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: handoffs_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.handoffs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: handoffs_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.handoffs_id_seq OWNED BY public.handoffs.id;


--
-- Name: inbox; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.inbox (
    id bigint NOT NULL,
    wamid text NOT NULL,
    phone_number_id text NOT NULL,
    sender_key text NOT NULL,
    wa_id text,
    user_id text,
    profile_name text,
    msg_type text NOT NULL,
    wa_timestamp timestamp with time zone,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    raw jsonb NOT NULL,
    state text DEFAULT 'pending'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    last_error text,
    conversation_id bigint,
    claimed_by text,
    claimed_at timestamp with time zone,
    next_attempt_at timestamp with time zone,
    done_at timestamp with time zone,
    done_reason text,
    CONSTRAINT inbox_state_check CHECK ((state = ANY (ARRAY['pending'::text, 'claimed'::text, 'done'::text, 'dead'::text, 'skipped'::text])))
);


--
-- Name: inbox_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.inbox_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: inbox_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.inbox_id_seq OWNED BY public.inbox.id;


--
-- Name: message_statuses; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.message_statuses (
    wamid text NOT NULL,
    status text NOT NULL,
    wa_timestamp timestamp with time zone,
    recipient text,
    error_code integer,
    raw jsonb NOT NULL,
    received_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: outbox; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.outbox (
    id bigint NOT NULL,
    conversation_id bigint NOT NULL,
    inbox_id bigint,
    kind text NOT NULL,
    payload jsonb NOT NULL,
    to_key text NOT NULL,
    phone_number_id text NOT NULL,
    state text DEFAULT 'pending'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    next_attempt_at timestamp with time zone,
    lease_owner text,
    lease_until timestamp with time zone,
    wamid text,
    error_code integer,
    error_detail text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    sent_at timestamp with time zone,
    delivery_status text,
    delivery_status_at timestamp with time zone,
    CONSTRAINT outbox_delivery_status_check CHECK ((delivery_status = ANY (ARRAY['sent'::text, 'delivered'::text, 'read'::text, 'failed'::text, 'played'::text]))),
    CONSTRAINT outbox_kind_check CHECK ((kind = ANY (ARRAY['text'::text, 'template'::text, 'read'::text]))),
    CONSTRAINT outbox_state_check CHECK ((state = ANY (ARRAY['pending'::text, 'sending'::text, 'sent'::text, 'dry_run'::text, 'failed'::text, 'dead'::text, 'dropped'::text])))
);


--
-- Name: outbox_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.outbox_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: outbox_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.outbox_id_seq OWNED BY public.outbox.id;


--
-- Name: schema_migrations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.schema_migrations (
    version integer NOT NULL,
    name text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: transcript; Type: VIEW; Schema: public; Owner: -
--

CREATE VIEW public.transcript AS
 SELECT i.conversation_id,
    COALESCE(i.wa_timestamp, i.received_at) AS at,
    'in'::text AS direction,
    public.mg_inbound_text(i.msg_type, i.raw) AS text,
    i.id AS inbox_id,
    NULL::bigint AS outbox_id
   FROM public.inbox i
  WHERE (i.conversation_id IS NOT NULL)
UNION ALL
 SELECT o.conversation_id,
    COALESCE(o.sent_at, o.created_at) AS at,
    'out'::text AS direction,
        CASE o.kind
            WHEN 'text'::text THEN ((o.payload -> 'text'::text) ->> 'body'::text)
            ELSE (('[template '::text || COALESCE(((o.payload -> 'template'::text) ->> 'name'::text), ''::text)) || ']'::text)
        END AS text,
    NULL::bigint AS inbox_id,
    o.id AS outbox_id
   FROM public.outbox o
  WHERE ((o.kind <> 'read'::text) AND (o.state <> ALL (ARRAY['failed'::text, 'dead'::text, 'dropped'::text])));


--
-- Name: vagas_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.vagas_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: vagas_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.vagas_id_seq OWNED BY public.vagas.id;


--
-- Name: wa_templates; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.wa_templates (
    purpose text NOT NULL,
    payload jsonb NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT wa_templates_payload_check CHECK (((payload ->> 'type'::text) = 'template'::text))
);


--
-- Name: webhook_events; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.webhook_events (
    id bigint NOT NULL,
    field text NOT NULL,
    raw jsonb NOT NULL,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    digest text GENERATED ALWAYS AS (md5(((field || ':'::text) || (raw)::text))) STORED
);


--
-- Name: webhook_events_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.webhook_events_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: webhook_events_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.webhook_events_id_seq OWNED BY public.webhook_events.id;


--
-- Name: webhook_failures; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.webhook_failures (
    id bigint NOT NULL,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    reason text NOT NULL,
    body bytea NOT NULL,
    digest bytea GENERATED ALWAYS AS (sha256(body)) STORED
);


--
-- Name: webhook_failures_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.webhook_failures_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: webhook_failures_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.webhook_failures_id_seq OWNED BY public.webhook_failures.id;


--
-- Name: audit_log id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.audit_log ALTER COLUMN id SET DEFAULT nextval('public.audit_log_id_seq'::regclass);


--
-- Name: conversations id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.conversations ALTER COLUMN id SET DEFAULT nextval('public.conversations_id_seq'::regclass);


--
-- Name: doctor_memory id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.doctor_memory ALTER COLUMN id SET DEFAULT nextval('public.doctor_memory_id_seq'::regclass);


--
-- Name: feature_flag_changes id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.feature_flag_changes ALTER COLUMN id SET DEFAULT nextval('public.feature_flag_changes_id_seq'::regclass);


--
-- Name: followups id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.followups ALTER COLUMN id SET DEFAULT nextval('public.followups_id_seq'::regclass);


--
-- Name: funnel_events id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.funnel_events ALTER COLUMN id SET DEFAULT nextval('public.funnel_events_id_seq'::regclass);


--
-- Name: handoffs id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.handoffs ALTER COLUMN id SET DEFAULT nextval('public.handoffs_id_seq'::regclass);


--
-- Name: inbox id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.inbox ALTER COLUMN id SET DEFAULT nextval('public.inbox_id_seq'::regclass);


--
-- Name: outbox id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox ALTER COLUMN id SET DEFAULT nextval('public.outbox_id_seq'::regclass);


--
-- Name: vagas id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.vagas ALTER COLUMN id SET DEFAULT nextval('public.vagas_id_seq'::regclass);


--
-- Name: webhook_events id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_events ALTER COLUMN id SET DEFAULT nextval('public.webhook_events_id_seq'::regclass);


--
-- Name: webhook_failures id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_failures ALTER COLUMN id SET DEFAULT nextval('public.webhook_failures_id_seq'::regclass);


--
-- Name: audit_log audit_log_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.audit_log
    ADD CONSTRAINT audit_log_pkey PRIMARY KEY (id);


--
-- Name: conversations conversations_phone_number_id_wa_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.conversations
    ADD CONSTRAINT conversations_phone_number_id_wa_id_key UNIQUE (phone_number_id, wa_id);


--
-- Name: conversations conversations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.conversations
    ADD CONSTRAINT conversations_pkey PRIMARY KEY (id);


--
-- Name: doctor_memory doctor_memory_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.doctor_memory
    ADD CONSTRAINT doctor_memory_pkey PRIMARY KEY (id);


--
-- Name: feature_flag_changes feature_flag_changes_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.feature_flag_changes
    ADD CONSTRAINT feature_flag_changes_pkey PRIMARY KEY (id);


--
-- Name: feature_flags feature_flags_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.feature_flags
    ADD CONSTRAINT feature_flags_pkey PRIMARY KEY (name);


--
-- Name: followups followups_handoff_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.followups
    ADD CONSTRAINT followups_handoff_id_key UNIQUE (handoff_id);


--
-- Name: followups followups_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.followups
    ADD CONSTRAINT followups_pkey PRIMARY KEY (id);


--
-- Name: funnel_events funnel_events_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.funnel_events
    ADD CONSTRAINT funnel_events_pkey PRIMARY KEY (id);


--
-- Name: handoffs handoffs_conversation_id_vaga_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.handoffs
    ADD CONSTRAINT handoffs_conversation_id_vaga_id_key UNIQUE (conversation_id, vaga_id);


--
-- Name: handoffs handoffs_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.handoffs
    ADD CONSTRAINT handoffs_pkey PRIMARY KEY (id);


--
-- Name: inbox inbox_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.inbox
    ADD CONSTRAINT inbox_pkey PRIMARY KEY (id);


--
-- Name: inbox inbox_wamid_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.inbox
    ADD CONSTRAINT inbox_wamid_key UNIQUE (wamid);


--
-- Name: message_statuses message_statuses_wamid_status_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.message_statuses
    ADD CONSTRAINT message_statuses_wamid_status_key UNIQUE (wamid, status);


--
-- Name: outbox outbox_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox
    ADD CONSTRAINT outbox_pkey PRIMARY KEY (id);


--
-- Name: outbox outbox_wamid_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox
    ADD CONSTRAINT outbox_wamid_key UNIQUE (wamid);


--
-- Name: schema_migrations schema_migrations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.schema_migrations
    ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (version);


--
-- Name: vagas vagas_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.vagas
    ADD CONSTRAINT vagas_pkey PRIMARY KEY (id);


--
-- Name: wa_templates wa_templates_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.wa_templates
    ADD CONSTRAINT wa_templates_pkey PRIMARY KEY (purpose);


--
-- Name: webhook_events webhook_events_digest_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_events
    ADD CONSTRAINT webhook_events_digest_key UNIQUE (digest);


--
-- Name: webhook_events webhook_events_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_events
    ADD CONSTRAINT webhook_events_pkey PRIMARY KEY (id);


--
-- Name: webhook_failures webhook_failures_digest_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_failures
    ADD CONSTRAINT webhook_failures_digest_key UNIQUE (digest);


--
-- Name: webhook_failures webhook_failures_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_failures
    ADD CONSTRAINT webhook_failures_pkey PRIMARY KEY (id);


--
-- Name: audit_log_conv; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX audit_log_conv ON public.audit_log USING btree (conversation_id, created_at);


--
-- Name: audit_log_step; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX audit_log_step ON public.audit_log USING btree (step, created_at);


--
-- Name: conversations_pending; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX conversations_pending ON public.conversations USING btree (pending_transition_at) WHERE (pending_transition IS NOT NULL);


--
-- Name: conversations_wa_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX conversations_wa_id ON public.conversations USING btree (wa_id);


--
-- Name: doctor_memory_conv; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX doctor_memory_conv ON public.doctor_memory USING btree (conversation_id, id);


--
-- Name: followups_conv; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX followups_conv ON public.followups USING btree (conversation_id, id);


--
-- Name: followups_open; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX followups_open ON public.followups USING btree (state, id) WHERE (state = ANY (ARRAY['queued'::text, 'sent'::text]));


--
-- Name: funnel_events_conv; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX funnel_events_conv ON public.funnel_events USING btree (conversation_id, created_at);


--
-- Name: funnel_events_conv_vaga; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX funnel_events_conv_vaga ON public.funnel_events USING btree (conversation_id, vaga_id, created_at, id);


--
-- Name: funnel_events_status; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX funnel_events_status ON public.funnel_events USING btree (status, created_at);


--
-- Name: handoffs_created; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX handoffs_created ON public.handoffs USING btree (created_at);


--
-- Name: inbox_conv; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX inbox_conv ON public.inbox USING btree (conversation_id, id) WHERE (conversation_id IS NOT NULL);


--
-- Name: inbox_conv_open; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX inbox_conv_open ON public.inbox USING btree (conversation_id, id) WHERE ((state = ANY (ARRAY['pending'::text, 'claimed'::text])) AND (conversation_id IS NOT NULL));


--
-- Name: inbox_unlinked; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX inbox_unlinked ON public.inbox USING btree (id) WHERE (conversation_id IS NULL);


--
-- Name: outbox_conv; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_conv ON public.outbox USING btree (conversation_id, id);


--
-- Name: outbox_failed; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_failed ON public.outbox USING btree (error_code, created_at) WHERE (state = ANY (ARRAY['failed'::text, 'dead'::text, 'dropped'::text]));


--
-- Name: outbox_unsent; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_unsent ON public.outbox USING btree (conversation_id, id) WHERE (state = ANY (ARRAY['pending'::text, 'sending'::text]));


--
-- Name: vagas_open; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX vagas_open ON public.vagas USING btree (data, id) WHERE (status = 'aberta'::text);


--
-- Name: audit_log audit_log_append_only; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER audit_log_append_only BEFORE DELETE OR UPDATE ON public.audit_log FOR EACH ROW EXECUTE FUNCTION public.mg_append_only();


--
-- Name: audit_log audit_log_no_truncate; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON public.audit_log FOR EACH STATEMENT EXECUTE FUNCTION public.mg_append_only();


--
-- Name: conversations conversations_hold_sender; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER conversations_hold_sender BEFORE UPDATE ON public.conversations FOR EACH ROW WHEN ((new.next_turn_at IS NOT NULL)) EXECUTE FUNCTION public.mg_hold_sender();


--
-- Name: feature_flag_changes feature_flag_changes_append_only; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER feature_flag_changes_append_only BEFORE DELETE OR UPDATE ON public.feature_flag_changes FOR EACH ROW EXECUTE FUNCTION public.mg_append_only();


--
-- Name: feature_flag_changes feature_flag_changes_no_truncate; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER feature_flag_changes_no_truncate BEFORE TRUNCATE ON public.feature_flag_changes FOR EACH STATEMENT EXECUTE FUNCTION public.mg_append_only();


--
-- Name: feature_flags feature_flags_history; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER feature_flags_history AFTER INSERT OR DELETE OR UPDATE ON public.feature_flags FOR EACH ROW EXECUTE FUNCTION public.mg_flag_history();


--
-- Name: feature_flags feature_flags_stamp; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER feature_flags_stamp BEFORE INSERT OR UPDATE ON public.feature_flags FOR EACH ROW EXECUTE FUNCTION public.mg_flag_stamp();


--
-- Name: funnel_events funnel_events_append_only; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER funnel_events_append_only BEFORE DELETE OR UPDATE ON public.funnel_events FOR EACH ROW EXECUTE FUNCTION public.mg_append_only();


--
-- Name: funnel_events funnel_events_bridge; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER funnel_events_bridge BEFORE INSERT ON public.funnel_events FOR EACH ROW WHEN (((new.vaga_id IS NULL) AND (new.status = ANY (ARRAY['aguardando_desfecho'::text, 'fechado_com_responsavel'::text, 'nao_fechou'::text, 'sem_resposta'::text])))) EXECUTE FUNCTION public.mg_funnel_bridge();


--
-- Name: funnel_events funnel_events_no_truncate; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER funnel_events_no_truncate BEFORE TRUNCATE ON public.funnel_events FOR EACH STATEMENT EXECUTE FUNCTION public.mg_append_only();


--
-- Name: message_statuses message_statuses_outbox; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER message_statuses_outbox AFTER INSERT ON public.message_statuses FOR EACH ROW EXECUTE FUNCTION public.mg_on_status();


--
-- Name: audit_log audit_log_conversation_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.audit_log
    ADD CONSTRAINT audit_log_conversation_id_fkey FOREIGN KEY (conversation_id) REFERENCES public.conversations(id);


--
-- Name: doctor_memory doctor_memory_conversation_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.doctor_memory
    ADD CONSTRAINT doctor_memory_conversation_id_fkey FOREIGN KEY (conversation_id) REFERENCES public.conversations(id);


--
-- Name: followups followups_conversation_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.followups
    ADD CONSTRAINT followups_conversation_id_fkey FOREIGN KEY (conversation_id) REFERENCES public.conversations(id);


--
-- Name: followups followups_handoff_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.followups
    ADD CONSTRAINT followups_handoff_id_fkey FOREIGN KEY (handoff_id) REFERENCES public.handoffs(id);


--
-- Name: followups followups_vaga_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.followups
    ADD CONSTRAINT followups_vaga_id_fkey FOREIGN KEY (vaga_id) REFERENCES public.vagas(id);


--
-- Name: funnel_events funnel_events_conversation_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.funnel_events
    ADD CONSTRAINT funnel_events_conversation_id_fkey FOREIGN KEY (conversation_id) REFERENCES public.conversations(id);


--
-- Name: funnel_events funnel_events_vaga_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.funnel_events
    ADD CONSTRAINT funnel_events_vaga_id_fkey FOREIGN KEY (vaga_id) REFERENCES public.vagas(id);


--
-- Name: handoffs handoffs_conversation_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.handoffs
    ADD CONSTRAINT handoffs_conversation_id_fkey FOREIGN KEY (conversation_id) REFERENCES public.conversations(id);


--
-- Name: handoffs handoffs_vaga_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.handoffs
    ADD CONSTRAINT handoffs_vaga_id_fkey FOREIGN KEY (vaga_id) REFERENCES public.vagas(id);


--
-- Name: inbox inbox_conversation_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.inbox
    ADD CONSTRAINT inbox_conversation_id_fkey FOREIGN KEY (conversation_id) REFERENCES public.conversations(id);


--
-- Name: outbox outbox_conversation_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox
    ADD CONSTRAINT outbox_conversation_id_fkey FOREIGN KEY (conversation_id) REFERENCES public.conversations(id);


--
-- PostgreSQL database dump complete
--


--
-- PostgreSQL database dump
--


-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Data for Name: feature_flag_changes; Type: TABLE DATA; Schema: public; Owner: -
--

SET SESSION AUTHORIZATION DEFAULT;

ALTER TABLE public.feature_flag_changes DISABLE TRIGGER ALL;

INSERT INTO public.feature_flag_changes VALUES (1, 'conversation_mode_enabled', NULL, 'on', NULL, 100, 'migration', 'modegate', 'initial value', '2026-11-25 13:27:53.523383+00');


ALTER TABLE public.feature_flag_changes ENABLE TRIGGER ALL;

--
-- Data for Name: feature_flags; Type: TABLE DATA; Schema: public; Owner: -
--

ALTER TABLE public.feature_flags DISABLE TRIGGER ALL;

INSERT INTO public.feature_flags VALUES ('conversation_mode_enabled', 'on', 100, '2026-11-25 13:27:53.523383+00', 'migration', 'initial value');


ALTER TABLE public.feature_flags ENABLE TRIGGER ALL;

--
-- Data for Name: schema_migrations; Type: TABLE DATA; Schema: public; Owner: -
--

ALTER TABLE public.schema_migrations DISABLE TRIGGER ALL;

INSERT INTO public.schema_migrations VALUES (1, '0001_init.sql', '2026-11-25 00:00:00+00');
INSERT INTO public.schema_migrations VALUES (2, '0002_turn.sql', '2026-11-25 00:00:00+00');
INSERT INTO public.schema_migrations VALUES (3, '0003_turn_fn.sql', '2026-11-25 00:00:00+00');
INSERT INTO public.schema_migrations VALUES (4, '0004_tools_outbox.sql', '2026-11-25 00:00:00+00');
INSERT INTO public.schema_migrations VALUES (5, '0005_ops.sql', '2026-11-25 00:00:00+00');
INSERT INTO public.schema_migrations VALUES (6, '0006_ingest_indexes.sql', '2026-11-25 00:00:00+00');
INSERT INTO public.schema_migrations VALUES (7, '0007_followups.sql', '2026-11-25 00:00:00+00');
INSERT INTO public.schema_migrations VALUES (8, '0008_rate_limit.sql', '2026-11-25 00:00:00+00');
INSERT INTO public.schema_migrations VALUES (9, '0009_turn_round_trips.sql', '2026-11-25 00:00:00+00');


ALTER TABLE public.schema_migrations ENABLE TRIGGER ALL;

--
-- Name: feature_flag_changes_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.feature_flag_changes_id_seq', 1, true);


--
-- PostgreSQL database dump complete
--


