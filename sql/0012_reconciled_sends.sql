-- 0012_reconciled_sends.sql -- exactly-once replies across crashes.
--
-- The Graph API has no idempotency key, but every message may carry
-- biz_opaque_callback_data, which Meta echoes in the statuses webhooks of
-- that message (sent, delivered, read, failed). Every message modegate
-- posts (text, template, follow-up, campaign: every outbox row but a read
-- receipt) carries "modegate:outbox:<id>" naming its outbox row
-- (mg_lease_outbox adds it to the payload it hands the sender).
--
-- A row whose lease expired without a recorded answer is *ambiguous*: its
-- process died mid-post, and Meta may or may not have accepted it. It is
-- not posted again at once: the sender's claim leaves it alone for
-- MODEGATE_SEND_RECONCILE_S more seconds (its p_reconcile_s). A status
-- naming the row settles it (state sent, Meta's wamid, audited) and
-- nothing is posted again; only silence leads to a second post (audited,
-- counted in outbox.reposts and send_reconcile_counts). A status of a
-- second message id for a row already recorded with another one is a
-- duplicate that reached WhatsApp: recorded in outbox_duplicates and
-- counted. Visible in SQL (view outbox_ambiguous, the counts table, the
-- audit) and in /metrics.
-- SPDX-License-Identifier: MIT

-- The biz_opaque_callback_data of a status, as Meta echoed it.
ALTER TABLE message_statuses ADD COLUMN callback_data text;

ALTER TABLE outbox
	ADD COLUMN reposts int NOT NULL DEFAULT 0,	-- posted again after
							-- silence
	ADD COLUMN reconciled_at timestamptz;		-- settled by a status

-- A second message id Meta reported for one outbox row: that row reached
-- WhatsApp twice.
CREATE TABLE outbox_duplicates (
	wamid		text PRIMARY KEY,
	outbox_id	bigint NOT NULL,
	first_wamid	text,
	detected_at	timestamptz NOT NULL DEFAULT now()
);

-- Cluster-wide counters behind modegate_send_reconcile_total: rows
-- settled by a status after their lease expired, rows posted again after
-- silence, duplicates detected. Each moves only on a crash's leftovers,
-- so the single rows are not hot.
CREATE TABLE send_reconcile_counts (
	outcome		text PRIMARY KEY
			CHECK (outcome IN ('settled', 'reposted', 'duplicate')),
	n		bigint NOT NULL DEFAULT 0
);
INSERT INTO send_reconcile_counts (outcome)
VALUES ('settled'), ('reposted'), ('duplicate');

-- Rows whose lease expired with no recorded answer: waiting for a status
-- (or for MODEGATE_SEND_RECONCILE_S to pass, then posted again).
CREATE VIEW outbox_ambiguous AS
	SELECT id, conversation_id, kind, lease_owner, lease_until AS since,
	    now() - lease_until AS waiting, attempts, reposts
	FROM outbox
	WHERE state = 'sending' AND lease_until < now() AND kind <> 'read';

CREATE FUNCTION mg_reconcile_count(p_outcome text) RETURNS void
LANGUAGE sql AS $$
	UPDATE send_reconcile_counts SET n = n + 1 WHERE outcome = p_outcome
$$;

-- The biz_opaque_callback_data of outbox row p_id.
CREATE FUNCTION mg_callback_data(p_id bigint) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT 'modegate:outbox:' || p_id::text
$$;

-- The outbox row a biz_opaque_callback_data names, or NULL.
CREATE FUNCTION mg_callback_outbox(p_data text) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
	SELECT substring(p_data FROM '^modegate:outbox:([0-9]{1,18})$')::bigint
$$;

-- The body the sender posts for row o: its payload, a message naming its
-- row in biz_opaque_callback_data (a read receipt takes none).
CREATE FUNCTION mg_send_payload(o outbox) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN o.kind = 'read' THEN o.payload
	    ELSE o.payload || jsonb_build_object('biz_opaque_callback_data',
		mg_callback_data(o.id)) END
$$;

-- Record a duplicate: Meta reported p_wamid for row o, already recorded
-- with another message id. Counted and audited once per message id.
CREATE FUNCTION mg_outbox_duplicate(o outbox, p_wamid text, p_how text)
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
CREATE FUNCTION mg_settle_outbox(p_id bigint, p_wamid text, p_status text)
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

-- mg_lease_outbox(worker, lease_seconds, limit, conversation_id,
-- reconcile_s): as in 0009, but a message whose lease expired with no
-- recorded answer (ambiguous) is leased again only by a caller that
-- gives p_reconcile_s (the sender's claim), and only once that many more
-- seconds passed with no status settling it: then it is posted again
-- (outbox.reposts + 1, audited: step "send", decision "repost", reason
-- "no_status", counted). Read receipts carry no callback and are posted
-- again at once. Each row's "payload" carries biz_opaque_callback_data;
-- "reposted" says whether it is a second post.
DROP FUNCTION mg_lease_outbox(text, int, int, bigint);
CREATE FUNCTION mg_lease_outbox(p_worker text, p_lease_seconds int,
    p_limit int, p_conversation_id bigint, p_reconcile_s int DEFAULT NULL)
RETURNS SETOF jsonb
LANGUAGE plpgsql AS $$
DECLARE
	o	outbox;
	until	timestamptz := now() + make_interval(secs => p_lease_seconds);
	again	boolean;
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
		    OR (x.state = 'sending' AND x.lease_until < now() AND
			(x.kind = 'read' OR x.lease_until + make_interval(
			    secs => p_reconcile_s) < now())))
		ORDER BY x.id
		LIMIT p_limit
		FOR UPDATE OF x SKIP LOCKED
	LOOP
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

-- mg_claim_outbox(worker, lease_seconds, limit, reconcile_s): the
-- sender's claim; ambiguous rows are posted again p_reconcile_s after
-- their lease expired with no status naming them.
CREATE FUNCTION mg_claim_outbox(p_worker text, p_lease_seconds int,
    p_limit int, p_reconcile_s int) RETURNS SETOF jsonb
LANGUAGE plpgsql AS $$
BEGIN
	-- A lost claim is harmless (the row is still due and is claimed
	-- again), so this transaction need not wait for its WAL flush.
	PERFORM set_config('synchronous_commit', 'off', true);
	RETURN QUERY SELECT * FROM mg_lease_outbox(p_worker, p_lease_seconds,
	    p_limit, NULL, greatest(p_reconcile_s, 0));
END $$;

-- The three-argument form (0004): reconcile window from the setting
-- modegate.send_reconcile_s, default 30.
CREATE OR REPLACE FUNCTION mg_claim_outbox(p_worker text,
    p_lease_seconds int, p_limit int) RETURNS SETOF jsonb
LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY SELECT * FROM mg_claim_outbox(p_worker, p_lease_seconds,
	    p_limit, mg_setting('send_reconcile_s', 30)::int);
END $$;

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
		UPDATE conversations SET last_outbound_at = now()
		WHERE id = o.conversation_id AND o.kind <> 'read';
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
