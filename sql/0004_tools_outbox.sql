-- 0004_tools_outbox.sql -- Julia's tools (read-only during the turn) and
-- the outbox sender's steps (claim, result, delivery statuses, 24-hour
-- window / template path).
--
-- Tool contract: mg_tool_<name>(conversation_id, args jsonb) returns a
-- jsonb object. Its "commit" member (when present) is a fragment of the
-- mg_commit_turn payload the worker merges into the turn (arrays
-- appended, "conversation" keys merged); everything else is the tool
-- result for the LLM (send it without "commit"). A tool never writes:
-- its effects land only if the turn commits with its lease. Invalid
-- arguments give {"ok":false,"erro":"..."} (in Portuguese, for the LLM).
-- Arguments arrive as an object; a JSON string holding an object is
-- accepted too.
--
-- Exactly-once boundary of the sender: a row is 'sending' (leased) while
-- it is posted; mg_outbox_result records the answer. If the process
-- dies after the Graph API accepted the message and before
-- mg_outbox_result commits, the lease expires and the row is posted
-- again (at-least-once). The window is one HTTP round trip plus one
-- short transaction; everything before it (the turn's commit) is
-- exactly-once, and nothing is ever lost.
-- SPDX-License-Identifier: MIT

-- The tool arguments as an object (a JSON string holding an object is
-- parsed; anything else is an empty object).
CREATE FUNCTION mg_tool_args(p_args jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
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

-- Every word of p_needle is the start of a word of p_hay, ignoring case
-- and accents (words: runs of letters and digits): "sao paulo sul"
-- matches "São Paulo - Zona Sul", "pedi" matches "Pediatria" but not
-- "Ortopedia". An empty needle matches.
CREATE FUNCTION mg_words_match(p_hay text, p_needle text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
	SELECT NOT EXISTS (
		SELECT 1 FROM regexp_split_to_table(mg_fold(coalesce(p_needle,
		    '')), '[^a-z0-9]+') w
		WHERE w <> '' AND position(' ' || w IN ' ' ||
		    regexp_replace(mg_fold(p_hay), '[^a-z0-9]+', ' ', 'g')) = 0)
$$;

-- The shift as shown to the doctor (no contact, no pay).
CREATE FUNCTION mg_vaga_json(v vagas) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
	SELECT jsonb_build_object('id', v.id, 'hospital', v.hospital,
	    'especialidade', v.especialidade, 'regiao', v.regiao,
	    'turno', v.turno, 'data', v.data)
$$;

-- buscar_vagas {especialidade?, regiao?, turno?, data? (YYYY-MM-DD),
-- data_ate?}: open shifts from today on; each text filter matches when
-- all its words start words of the column, ignoring case and accents
-- (mg_words_match); at most 5, soonest first.
-- {"ok":true,"vagas":[{id,hospital,especialidade,regiao,turno,data}],
-- "total": n} -- never the responsible person's contact.
CREATE FUNCTION mg_tool_buscar_vagas(p_conversation_id bigint, p_args jsonb)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
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

-- The shift of a tool's vaga_id argument (number or digit string), or NULL.
CREATE FUNCTION mg_tool_vaga(p_args jsonb) RETURNS vagas
LANGUAGE sql STABLE AS $$
	SELECT v FROM vagas v
	WHERE (mg_tool_args(p_args) ->> 'vaga_id') ~ '^\s*[0-9]{1,18}\s*$'
	    AND v.id = trim(mg_tool_args(p_args) ->> 'vaga_id')::bigint
$$;

-- criar_handoff_externo {vaga_id}: the shift must exist and be open.
-- {"ok":true,"vaga":{...},"responsavel":{"nome","contato"},
-- "ja_existente":bool,"commit":{"handoffs":[{"vaga_id"}]}} -- committing
-- it writes the bridge and funnel ponte_feita; the worker's core moves
-- oferta → followup (bridge made). Or {"ok":false,"erro"}.
CREATE FUNCTION mg_tool_criar_handoff_externo(p_conversation_id bigint,
    p_args jsonb) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
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

-- registrar_status_intermediacao {status, vaga_id?, observacao?}: status
-- is a funnel status other than ponte_feita (written by the bridge
-- itself); vaga_id, when given, must exist.
-- {"ok":true,"status","commit":{"funnel":[{status,vaga_id,metadata}]}}.
CREATE FUNCTION mg_tool_registrar_status_intermediacao(
    p_conversation_id bigint, p_args jsonb) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
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

-- salvar_memoria {fato, especialidade?, regiao?}: a fact about the
-- doctor (1..500 characters); specialty and region, when given, also
-- fill the conversation's columns.
-- {"ok":true,"commit":{"memory":[fato],"conversation":{...}}}.
CREATE FUNCTION mg_tool_salvar_memoria(p_conversation_id bigint,
    p_args jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
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

-- encaminhar_humano {motivo?}: hands the chat to a human operator.
-- {"ok":true,"commit":{"conversation":{"control":"human",
-- "control_updated_by":"encaminhar_humano"},"audit":[{step "tool",
-- decision "handoff_humano", reason motivo}]}}. After the commit the AI
-- stays silent until an operator releases the chat (issue 5).
CREATE FUNCTION mg_tool_encaminhar_humano(p_conversation_id bigint,
    p_args jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
	SELECT jsonb_build_object('ok', true, 'commit', jsonb_build_object(
	    'conversation', jsonb_build_object('control', 'human',
		'control_updated_by', 'encaminhar_humano'),
	    'audit', jsonb_build_array(jsonb_build_object('step', 'tool',
		'decision', 'handoff_humano',
		'reason', coalesce(mg_tool_args(p_args) ->> 'motivo',
		    'pedido de atendimento humano')))))
$$;

-- Outbox sender ------------------------------------------------------------

-- The 24-hour customer-service window is open for this conversation.
CREATE FUNCTION mg_window_open(p_conversation_id bigint) RETURNS boolean
LANGUAGE sql STABLE AS $$
	SELECT coalesce(last_inbound_at > now() - interval '24 hours', false)
	FROM conversations WHERE id = p_conversation_id
$$;

-- A free text that cannot reach the doctor (window closed, 131047,
-- synchronous or as a failed status): the row becomes 'failed' with
-- error_code 131047 and, when wa_templates has a 'window_closed'
-- template, a template row is queued for the conversation; otherwise
-- the text is 'dropped'. Audited (step "send", decision "template" or
-- "dropped"). Returns the template row's id or NULL.
CREATE FUNCTION mg_window_closed(p_outbox_id bigint, p_detail text)
RETURNS bigint LANGUAGE plpgsql AS $$
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

-- mg_claim_outbox(worker, lease_seconds, limit): lease due outbox rows
-- to post. Per conversation only the OLDEST unsent row (pending or
-- sending) is a candidate, so a row is never posted while an older one
-- of the same conversation is unsent. Due: pending with next_attempt_at
-- passed, or sending with an expired lease (a crashed sender: posted
-- again — the exactly-once boundary, see the file header). A text whose 24-hour
-- window is closed is not returned: it takes the template path
-- (mg_window_closed) here. Each row: {"id","conversation_id","kind",
-- "payload" (the complete Graph API body),"phone_number_id","to_key",
-- "attempts","inbox_id","lease_until"}.
CREATE FUNCTION mg_claim_outbox(p_worker text, p_lease_seconds int,
    p_limit int) RETURNS SETOF jsonb
LANGUAGE plpgsql AS $$
DECLARE
	o	outbox;
	until	timestamptz := now() + make_interval(secs => p_lease_seconds);
BEGIN
	-- A lost claim is harmless (the row is still due and is claimed
	-- again), so this transaction need not wait for its WAL flush; the
	-- commits that must be durable (ingest, mg_commit_turn,
	-- mg_outbox_result) keep synchronous_commit on.
	PERFORM set_config('synchronous_commit', 'off', true);
	FOR o IN
		-- Messages go out in order, one per conversation at a time;
		-- read receipts are not messages and never wait behind one.
		WITH heads AS (
			SELECT DISTINCT ON (conversation_id) id
			FROM outbox WHERE state IN ('pending', 'sending')
			    AND kind <> 'read'
			ORDER BY conversation_id, id
		)
		SELECT x.* FROM outbox x
		WHERE (x.kind = 'read' OR x.id IN (SELECT id FROM heads))
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

-- mg_enqueue_read(worker, conversation_id, inbox_id): queue "mark as
-- read + typing indicator" for the inbound message p_inbox_id when a
-- turn starts (lease required). It never waits behind the conversation's
-- messages and is never gated by the 24-hour window.
-- {"ok":true,"outbox_id"} or {"ok":false,"reason":"lease_lost"}.
CREATE FUNCTION mg_enqueue_read(p_worker text, p_conversation_id bigint,
    p_inbox_id bigint) RETURNS jsonb
LANGUAGE plpgsql AS $$
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

-- Rank of a delivery status: a status only moves forward (a late
-- "delivered" never overwrites "read"); "failed" is terminal.
CREATE FUNCTION mg_status_rank(s text) RETURNS int
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE s WHEN 'sent' THEN 1 WHEN 'delivered' THEN 2
	    WHEN 'read' THEN 3 WHEN 'played' THEN 4 WHEN 'failed' THEN 9
	    ELSE 0 END
$$;

-- Apply one delivery status to the outbox row with that wamid (if any).
-- A failed 131047 takes the template path like a synchronous one; any
-- other failure records its error code.
CREATE FUNCTION mg_apply_status(p_wamid text, p_status text,
    p_at timestamptz, p_error_code int) RETURNS void
LANGUAGE plpgsql AS $$
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

-- message_statuses AFTER INSERT: move the matching outbox row's status.
CREATE FUNCTION mg_on_status() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM mg_apply_status(NEW.wamid, NEW.status, NEW.wa_timestamp,
	    NEW.error_code);
	RETURN NULL;
END $$;

CREATE TRIGGER message_statuses_outbox AFTER INSERT ON message_statuses
	FOR EACH ROW EXECUTE FUNCTION mg_on_status();

-- mg_outbox_result(id, result): record what the Graph API said about a
-- row in state 'sending'. result.result:
--   "sent"          {"wamid"} (none for a read receipt, which answers
--                   {"success":true}): state sent; statuses that arrived
--                   before the wamid was stored are applied now
--   "dry_run"       no token: state dry_run, nothing posted
--   "retry"         {"error_code","error_detail","retry_after_s",
--                   "max_attempts" (default 8)}: back to pending after
--                   retry_after_s or 5 s × 2^attempts (≤ 15 min); at
--                   max_attempts 'dead'
--   "failed"        {"error_code","error_detail"}: permanent
--   "window_closed" {"error_detail"}: 131047, template path
-- last_outbound_at moves on sent/dry_run. Audited (step "send").
-- {"ok":true,"state"} or {"ok":false,"reason":"not_sending"|"bad_result"}.
CREATE FUNCTION mg_outbox_result(p_id bigint, p_result jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
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
