-- 0005_sender.sql -- the outbox sender's corrections to 0004.
--
-- A mark-as-read row (kind 'read') answers {"success":true} and carries
-- no message id: mg_outbox_result now records it as 'sent' without a
-- wamid (the wamid stays NULL). Otherwise unchanged; see 0004's header
-- for the exactly-once boundary.
-- SPDX-License-Identifier: MIT

-- mg_outbox_result(id, result): as in 0004; "sent" needs a wamid except
-- for kind 'read'.
CREATE OR REPLACE FUNCTION mg_outbox_result(p_id bigint, p_result jsonb) RETURNS jsonb
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
