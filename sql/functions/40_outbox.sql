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
CREATE OR REPLACE FUNCTION mg_recipient(p_key text) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE
	WHEN p_key ~ '^[A-Z]{2}\.' THEN jsonb_build_object('recipient', p_key)
	WHEN p_key LIKE '+%' THEN jsonb_build_object('to', p_key)
	ELSE jsonb_build_object('to', '+' || p_key) END
$$;

-- Complete a Graph API body for a conversation: messaging_product,
-- recipient_type and to/recipient are added when the payload lacks them.
CREATE OR REPLACE FUNCTION mg_complete_payload(p_payload jsonb, p_key text)
RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
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
CREATE OR REPLACE FUNCTION mg_window_open(p_conversation_id bigint) RETURNS
boolean
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

-- mg_claim_outbox(worker, lease_seconds, limit): lease due outbox rows
-- to post, of all conversations (mg_lease_outbox below has the rules).
-- Per conversation only the OLDEST unsent row (pending or sending) is a
-- candidate, so a row is never posted while an older one of the same
-- conversation is unsent. Due: pending with next_attempt_at passed, or
-- sending with an expired lease (a crashed sender: posted again -- the
-- exactly-once boundary, see the file header). A text whose 24-hour
-- window is closed is not returned: it takes the template path
-- (mg_window_closed) here. Each row: {"id","conversation_id","kind",
-- "payload" (the complete Graph API body),"phone_number_id","to_key",
-- "attempts","inbox_id","lease_until"}.
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

-- message_statuses AFTER INSERT: move the matching outbox row's status.
CREATE OR REPLACE FUNCTION mg_on_status() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM mg_apply_status(NEW.wamid, NEW.status, NEW.wa_timestamp,
	    NEW.error_code);
	RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER message_statuses_outbox
	AFTER INSERT ON message_statuses
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
CREATE OR REPLACE FUNCTION mg_outbox_result(p_id bigint,
    p_result jsonb) RETURNS jsonb
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

-- mg_lease_outbox(worker, lease_seconds, limit, conversation_id): lease
-- due outbox rows to p_worker, of one conversation or (NULL) of all,
-- by the rules of mg_claim_outbox above.
CREATE OR REPLACE FUNCTION mg_lease_outbox(p_worker text, p_lease_seconds int,
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
