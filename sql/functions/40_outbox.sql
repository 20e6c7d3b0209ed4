-- 40_outbox.sql -- the outbox sender's steps: payloads, claim and
-- lease, result, delivery statuses, the 24-hour window / template path.
--
-- Exactly-once boundary of the sender: a row is 'sending' (leased) while
-- it is posted; mg_outbox_result records the answer. If the process
-- dies after the Graph API accepted the message and before
-- mg_outbox_result commits, the lease expires and the row is posted
-- again (at-least-once). The window is one HTTP round trip plus one
-- short transaction; everything before it (the turn's commit) is
-- exactly-once, and nothing is ever lost.
--
-- The statements that create outbox rows (the read receipt at turn
-- start, the reply at commit) lease them to the process's sender in the
-- same transaction (mg_lease_send), so the sender posts them without
-- claiming them first. The rules of mg_claim_outbox (a conversation's
-- messages one at a time and in order, read receipts never waiting, a
-- closed 24-hour window sending text down the template path) hold for
-- both: they live in mg_lease_outbox, which mg_claim_outbox calls.
-- Re-applied by `modegate migrate` on every run (CREATE OR REPLACE): edit
-- a function here, never in a numbered migration.
-- SPDX-License-Identifier: MIT

-- The Graph API recipient fields for a doctor key: a BSUID ("US.123...")
-- goes to "recipient", a phone number to "to" with a leading "+".
-- STABLE, not IMMUTABLE, as jsonb_build_object is: the planner then
-- inlines it (and mg_complete_payload, mg_send_payload) into the
-- statement that calls it instead of running a function per row.
CREATE OR REPLACE FUNCTION mg_recipient(p_key text) RETURNS jsonb
LANGUAGE sql STABLE AS $$
	SELECT CASE
	WHEN p_key ~ '^[A-Z]{2}\.' THEN jsonb_build_object('recipient', p_key)
	WHEN p_key LIKE '+%' THEN jsonb_build_object('to', p_key)
	ELSE jsonb_build_object('to', '+' || p_key) END
$$;

-- Complete a Graph API body for a conversation: messaging_product,
-- recipient_type and to/recipient are added when the payload lacks them.
CREATE OR REPLACE FUNCTION mg_complete_payload(p_payload jsonb, p_key text)
RETURNS jsonb LANGUAGE sql STABLE AS $$
	SELECT CASE WHEN p_payload ->> 'status' = 'read' THEN
		jsonb_build_object('messaging_product', 'whatsapp') || p_payload
	ELSE
		jsonb_build_object('messaging_product', 'whatsapp',
		    'recipient_type', 'individual') || mg_recipient(p_key) ||
		    p_payload
	END
$$;

-- Outbox sender ------------------------------------------------------------

-- The 24-hour customer-service window is open for this conversation.
-- In PL/pgSQL, which keeps its plan: a LANGUAGE sql function with a FROM
-- is planned again at every call (0.15 ms of each reply's lease).
CREATE OR REPLACE FUNCTION mg_window_open(p_conversation_id bigint) RETURNS
boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
	RETURN (SELECT coalesce(last_inbound_at > now() - interval '24 hours',
	    false)
	FROM conversations WHERE id = p_conversation_id);
END $$;

-- A free text that cannot reach the doctor (window closed, 131047,
-- synchronous or as a failed status): the row becomes 'failed' with
-- error_code 131047 and, when wa_templates has a 'window_closed'
-- template, a template row is queued for the conversation; otherwise
-- the text is 'dropped'. Audited (step "send", decision "template" or
-- "dropped"). Returns the template row's id or NULL.
CREATE OR REPLACE FUNCTION mg_window_closed(p_outbox_id bigint, p_detail text)
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


-- mg_claim_outbox(worker, lease_seconds, limit[, reconcile_s]): the
-- sender's claim; ambiguous rows are posted again p_reconcile_s after
-- their lease expired with no status naming them (omitted: the setting
-- modegate.send_reconcile_s, default 30).
CREATE OR REPLACE FUNCTION mg_claim_outbox(p_worker text, p_lease_seconds int,
    p_limit int, p_reconcile_s int DEFAULT NULL) RETURNS SETOF jsonb
LANGUAGE plpgsql AS $$
BEGIN
	-- A lost claim is harmless (the row is still due and is claimed
	-- again), so this transaction need not wait for its WAL flush.
	PERFORM set_config('synchronous_commit', 'off', true);
	RETURN QUERY SELECT * FROM mg_lease_outbox(p_worker, p_lease_seconds,
	    p_limit, NULL, greatest(coalesce(p_reconcile_s,
		mg_setting('send_reconcile_s', 30)::int), 0));
END $$;

-- mg_enqueue_read(worker, conversation_id, inbox_id): queue "mark as
-- read + typing indicator" for the inbound message p_inbox_id when a
-- turn starts (lease required). It never waits behind the conversation's
-- messages and is never gated by the 24-hour window.
-- {"ok":true,"outbox_id"} or {"ok":false,"reason":"lease_lost"}.
CREATE OR REPLACE FUNCTION mg_enqueue_read(p_worker text,
    p_conversation_id bigint,
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
CREATE OR REPLACE FUNCTION mg_status_rank(s text) RETURNS int
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE s WHEN 'sent' THEN 1 WHEN 'delivered' THEN 2
	    WHEN 'read' THEN 3 WHEN 'played' THEN 4 WHEN 'failed' THEN 9
	    ELSE 0 END
$$;

-- Apply one delivery status to the outbox row with that wamid (if any).
-- A failed 131047 takes the template path like a synchronous one; any
-- other failure records its error code.
CREATE OR REPLACE FUNCTION mg_apply_status(p_wamid text, p_status text,
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

CREATE OR REPLACE FUNCTION mg_reconcile_count(p_outcome text) RETURNS void
LANGUAGE sql AS $$
	UPDATE send_reconcile_counts SET n = n + 1 WHERE outcome = p_outcome
$$;

-- The biz_opaque_callback_data of outbox row p_id.
CREATE OR REPLACE FUNCTION mg_callback_data(p_id bigint) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT 'modegate:outbox:' || p_id::text
$$;

-- The outbox row a biz_opaque_callback_data names, or NULL.
CREATE OR REPLACE FUNCTION mg_callback_outbox(p_data text) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
	SELECT substring(p_data FROM '^modegate:outbox:([0-9]{1,18})$')::bigint
$$;

-- The body the sender posts for row o: its payload, a message naming its
-- row in biz_opaque_callback_data (a read receipt takes none).
CREATE OR REPLACE FUNCTION mg_send_payload(o outbox) RETURNS jsonb
LANGUAGE sql STABLE AS $$
	SELECT CASE WHEN o.kind = 'read' THEN o.payload
	    ELSE o.payload || jsonb_build_object('biz_opaque_callback_data',
		mg_callback_data(o.id)) END
$$;

-- Record a duplicate: Meta reported p_wamid for row o, already recorded
-- with another message id. Counted and audited once per message id.
CREATE OR REPLACE FUNCTION mg_outbox_duplicate(o outbox, p_wamid text, p_how text)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO outbox_duplicates (wamid, outbox_id, first_wamid)
	VALUES (p_wamid, o.id, o.wamid) ON CONFLICT DO NOTHING;
	IF FOUND THEN
		PERFORM mg_reconcile_count('duplicate');
		INSERT INTO audit_log (conversation_id, inbox_id, step,
		    decision, reason, details)
		VALUES (o.conversation_id, o.inbox_id, 'send', 'duplicate',
		    p_how, jsonb_build_object('outbox_id', o.id,
			'wamid', p_wamid, 'first_wamid', o.wamid));
	END IF;
END $$;

-- mg_settle_outbox(id, wamid, status): a status webhook named outbox row
-- p_id in its biz_opaque_callback_data, so Meta accepted the row as
-- message p_wamid. A row not yet recorded as sent ('sending', in flight
-- or ambiguous; 'pending' or 'dead' after a post whose answer was lost)
-- becomes 'sent' with that wamid, its retries cancelled, audited (step
-- "send", decision "sent", reason "status"). A row already recorded with
-- another wamid was posted twice (mg_outbox_duplicate). Returns what it
-- did: settled | known | duplicate | ignored.
CREATE OR REPLACE FUNCTION mg_settle_outbox(p_id bigint, p_wamid text, p_status text)
RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	o	outbox;
	expired	boolean;
BEGIN
	SELECT * INTO o FROM outbox WHERE id = p_id FOR UPDATE;
	IF NOT FOUND OR o.kind = 'read' THEN
		RETURN 'ignored';
	END IF;
	IF o.wamid = p_wamid THEN
		RETURN 'known';
	END IF;
	IF o.wamid IS NOT NULL THEN
		PERFORM mg_outbox_duplicate(o, p_wamid, 'status');
		RETURN 'duplicate';
	END IF;
	-- A wamid already on another row: not ours to take (a restored
	-- database reusing ids); never break the ingest batch over it.
	IF o.state NOT IN ('sending', 'pending', 'dead') OR
	    EXISTS (SELECT 1 FROM outbox WHERE wamid = p_wamid) THEN
		RETURN 'ignored';
	END IF;
	expired := o.state <> 'sending' OR o.lease_until < now();
	UPDATE outbox SET state = 'sent', wamid = p_wamid,
	    sent_at = coalesce(sent_at, now()), reconciled_at = now(),
	    lease_owner = NULL, lease_until = NULL, next_attempt_at = NULL,
	    attempts = CASE WHEN o.state = 'sending' THEN attempts + 1
		ELSE attempts END
	WHERE id = o.id;
	UPDATE conversations SET last_outbound_at = now()
	WHERE id = o.conversation_id;
	IF expired THEN
		PERFORM mg_reconcile_count('settled');
	END IF;
	INSERT INTO audit_log (conversation_id, inbox_id, step, decision,
	    reason, details)
	VALUES (o.conversation_id, o.inbox_id, 'send', 'sent', 'status',
	    jsonb_build_object('outbox_id', o.id, 'kind', o.kind,
		'wamid', p_wamid, 'status', p_status, 'was', o.state,
		'lease_expired', expired, 'attempts', o.attempts));
	RETURN 'settled';
END $$;

-- message_statuses AFTER INSERT: settle the outbox row the status names
-- (biz_opaque_callback_data), then move the status of the row with that
-- wamid (0004).
CREATE OR REPLACE FUNCTION mg_on_status() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
	oid	bigint := mg_callback_outbox(NEW.callback_data);
BEGIN
	IF oid IS NOT NULL THEN
		PERFORM mg_settle_outbox(oid, NEW.wamid, NEW.status);
	END IF;
	PERFORM mg_apply_status(NEW.wamid, NEW.status, NEW.wa_timestamp,
	    NEW.error_code);
	RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER message_statuses_outbox
	AFTER INSERT ON message_statuses
	FOR EACH ROW EXECUTE FUNCTION mg_on_status();

-- mg_outbox_result (0004), also when a status settled the row first:
-- the same wamid answers ok; another wamid is a second post that reached
-- WhatsApp (mg_outbox_duplicate); an error for a row Meta reported as
-- accepted changes nothing.
CREATE OR REPLACE FUNCTION mg_outbox_result(p_id bigint, p_result jsonb)
RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
	o	outbox;
	r	text := p_result ->> 'result';
	code	int := (p_result ->> 'error_code')::int;
	det	text := p_result ->> 'error_detail';
	maxa	int := coalesce((p_result ->> 'max_attempts')::int, 8);
	w	text := nullif(p_result ->> 'wamid', '');
	st	text;
	s	record;
BEGIN
	SELECT * INTO o FROM outbox WHERE id = p_id FOR UPDATE;
	IF FOUND AND o.state = 'sent' AND o.reconciled_at IS NOT NULL THEN
		IF r = 'sent' AND w IS NOT NULL AND w <> o.wamid THEN
			PERFORM mg_outbox_duplicate(o, w, 'result');
			RETURN jsonb_build_object('ok', true, 'state', 'sent',
			    'duplicate', true);
		END IF;
		RETURN jsonb_build_object('ok', true, 'state', 'sent',
		    'settled', 'status');
	END IF;
	IF NOT FOUND OR o.state <> 'sending' THEN
		RETURN jsonb_build_object('ok', false, 'reason', 'not_sending');
	END IF;
	IF r IN ('sent', 'dry_run') THEN
		IF r = 'sent' AND o.kind <> 'read' AND w IS NULL THEN
			RETURN jsonb_build_object('ok', false,
			    'reason', 'bad_result');
		END IF;
		UPDATE outbox SET state = r, wamid = w,
		    sent_at = now(), lease_owner = NULL, lease_until = NULL,
		    attempts = attempts + 1
		WHERE id = o.id;
		IF o.kind <> 'read' THEN
			UPDATE conversations SET last_outbound_at = now()
			WHERE id = o.conversation_id;
		END IF;
		FOR s IN SELECT * FROM message_statuses
		    WHERE wamid = w
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
		'kind', o.kind, 'wamid', w,
		'error_code', code, 'error_detail', det,
		'attempts', o.attempts + 1, 'reposts', nullif(o.reposts, 0))));
	RETURN jsonb_build_object('ok', true, 'state', st);
END $$;

-- The answers of many posts in one transaction (group commit,
-- src/db/queue.c; as mg_commit_send_many in 60_turn.sql): p_calls one
-- [id, result] array per call; one row per call (n its 1-based position,
-- r its answer as text), run in conversation order.
CREATE OR REPLACE FUNCTION mg_outbox_result_many(p_calls jsonb)
RETURNS TABLE (n bigint, r text)
LANGUAGE plpgsql AS $$
DECLARE
	e	jsonb;
BEGIN
	-- (a probe of the primary key per call: a join planned for the
	-- default 100 rows hashed the whole outbox, 4 ms a batch)
	FOR n, e IN SELECT x.n, x.e
	    FROM jsonb_array_elements(p_calls) WITH ORDINALITY AS x(e, n)
	    ORDER BY (SELECT o.conversation_id FROM outbox o
		WHERE o.id = (x.e ->> 0)::bigint), (x.e ->> 0)::bigint, x.n LOOP
		r := mg_outbox_result((e ->> 0)::bigint, (e ->> 1)::jsonb)::text;
		RETURN NEXT;
	END LOOP;
END $$;

-- May a sender take row x now? Pending and due, or leased by a sender
-- whose lease ran out (a message's only after the reconcile wait too: its
-- status may still settle it). SQL, so it is inlined into the queries.
CREATE OR REPLACE FUNCTION mg_outbox_due(x outbox, p_reconcile_s int)
RETURNS boolean
LANGUAGE sql STABLE AS $$
	SELECT (x.state = 'pending' AND (x.next_attempt_at IS NULL OR
		x.next_attempt_at <= now()))
	    OR (x.state = 'sending' AND x.lease_until < now() AND
		(x.kind = 'read' OR x.lease_until + make_interval(
		    secs => p_reconcile_s) < now()))
$$;

CREATE OR REPLACE FUNCTION mg_lease_outbox(p_worker text, p_lease_seconds int,
    p_limit int, p_conversation_id bigint, p_reconcile_s int DEFAULT NULL)
RETURNS SETOF jsonb
LANGUAGE plpgsql AS $$
DECLARE
	o	outbox;
	until	timestamptz := now() + make_interval(secs => p_lease_seconds);
	again	boolean;
	cur	refcursor;
BEGIN
	IF p_limit <= 0 THEN
		RETURN;
	END IF;
	-- Messages go out in order, one per conversation at a time; read
	-- receipts are not messages and never wait behind one. One query
	-- per case, each with its own cached plan: a generic plan of one
	-- query with "p_conversation_id IS NULL OR conversation_id = ..."
	-- scanned every unsent row for one conversation's (0.5 ms a turn
	-- with 10,000 read receipts queued). The sender's own claim walks
	-- the unsent rows in id order (outbox_unsent_id, sql/0020), never
	-- the sent ones: without the state filter it read the whole table
	-- (1.2-7 ms a claim after a few thousand turns, growing with it).
	IF p_conversation_id IS NULL THEN
		OPEN cur FOR
		WITH heads AS (
			SELECT DISTINCT ON (conversation_id) id
			FROM outbox WHERE state IN ('pending', 'sending')
			    AND kind <> 'read'
			ORDER BY conversation_id, id
		)
		SELECT x.* FROM outbox x
		WHERE x.state IN ('pending', 'sending')
		  AND (x.kind = 'read' OR x.id IN (SELECT id FROM heads))
		  AND mg_outbox_due(x, p_reconcile_s)
		ORDER BY x.id
		LIMIT p_limit
		FOR UPDATE OF x SKIP LOCKED;
	ELSE
		OPEN cur FOR
		SELECT x.* FROM outbox x
		WHERE x.conversation_id = p_conversation_id
		  AND x.state IN ('pending', 'sending')
		  AND (x.kind = 'read' OR x.id = (SELECT h.id FROM outbox h
			WHERE h.conversation_id = p_conversation_id
			    AND h.state IN ('pending', 'sending')
			    AND h.kind <> 'read'
			ORDER BY h.id LIMIT 1))
		  AND mg_outbox_due(x, p_reconcile_s)
		ORDER BY x.id
		LIMIT p_limit
		FOR UPDATE OF x SKIP LOCKED;
	END IF;
	LOOP
		FETCH cur INTO o;
		EXIT WHEN NOT FOUND;
		again := o.state = 'sending' AND o.kind <> 'read';
		IF o.kind = 'text' AND NOT mg_window_open(o.conversation_id) THEN
			PERFORM mg_window_closed(o.id,
			    '24-hour window closed before sending');
			CONTINUE;
		END IF;
		UPDATE outbox SET state = 'sending', lease_owner = p_worker,
		    lease_until = until,
		    reposts = reposts + CASE WHEN again THEN 1 ELSE 0 END
		WHERE id = o.id;
		IF again THEN
			PERFORM mg_reconcile_count('reposted');
			INSERT INTO audit_log (conversation_id, inbox_id, step,
			    decision, reason, details)
			VALUES (o.conversation_id, o.inbox_id, 'send', 'repost',
			    'no_status', jsonb_build_object('outbox_id', o.id,
				'kind', o.kind, 'lease_until', o.lease_until,
				'reconcile_s', p_reconcile_s,
				'previous_owner', o.lease_owner));
		END IF;
		RETURN NEXT jsonb_build_object('id', o.id,
		    'conversation_id', o.conversation_id, 'kind', o.kind,
		    'payload', mg_send_payload(o),
		    'phone_number_id', o.phone_number_id,
		    'to_key', o.to_key, 'attempts', o.attempts,
		    'inbox_id', o.inbox_id, 'lease_until', until,
		    'reposted', again);
	END LOOP;
END $$;

-- p_result (an answer {"ok": ...}) with "send": up to p_limit of the
-- conversation's due outbox rows leased to p_sender (as mg_claim_outbox
-- returns them); "send": [] when p_result is not ok or p_sender is NULL.
CREATE OR REPLACE FUNCTION mg_lease_send(p_result jsonb, p_sender text,
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

-- Rows whose lease expired with no recorded answer: waiting for a status
-- (or for MODEGATE_SEND_RECONCILE_S to pass, then posted again).
CREATE OR REPLACE VIEW outbox_ambiguous AS
	SELECT id, conversation_id, kind, lease_owner, lease_until AS since,
	    now() - lease_until AS waiting, attempts, reposts
	FROM outbox
	WHERE state = 'sending' AND lease_until < now() AND kind <> 'read';
