-- 85_campaign.sql -- campaigns: a template to a list of doctors, once per
-- doctor per campaign, moving each reached conversation to reativacao
-- (mode_source campaign:<id>), as the matrix's "any -> reativacao on
-- campaign" says.
-- Re-applied by `modegate migrate` on every run (CREATE OR REPLACE).
-- SPDX-License-Identifier: MIT

-- mg_campaign_start(id, template NAME:LANG, phone_number_id, wa_ids, per_minute):
-- for each listed doctor not yet in the campaign, a campaign_sends row:
-- skipped (opted_out, cooling_off, human_control, no_conversation: no
-- conversation and no phone_number_id to open one on) or queued: the
-- template goes to the outbox, paced per_minute (the sender posts a row
-- once its next_attempt_at has passed), the conversation moves to
-- reativacao with mode_source campaign:<id>, audited (step router,
-- APPLY, event:campaign). A doctor with several conversations gets the one
-- on phone_number_id, else the newest. Returns {"queued": n, "skipped": n,
-- "already": n}.
CREATE OR REPLACE FUNCTION mg_campaign_start(p_campaign text,
    p_template text, p_phone_number_id text, p_wa_ids text[],
    p_per_minute int) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
	w	text;
	c	conversations;
	name	text := split_part(p_template, ':', 1);
	lang	text := split_part(p_template, ':', 2);
	reason	text;
	oid	bigint;
	nq	int := 0;
	ns	int := 0;
	na	int := 0;
BEGIN
	IF p_campaign IS NULL OR p_campaign !~ '^[A-Za-z0-9_.-]{1,64}$' THEN
		RAISE EXCEPTION 'campaign id "%": 1-64 of A-Z a-z 0-9 _ . -',
		    p_campaign USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF name = '' OR lang = '' THEN
		RAISE EXCEPTION 'template "%": use NAME:LANGUAGE', p_template
		    USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF p_per_minute IS NULL OR p_per_minute NOT BETWEEN 1 AND 6000 THEN
		RAISE EXCEPTION 'rate % a minute: 1 to 6000', p_per_minute
		    USING ERRCODE = 'invalid_parameter_value';
	END IF;
	FOREACH w IN ARRAY p_wa_ids LOOP
		w := trim(w);
		CONTINUE WHEN w = '';
		IF EXISTS (SELECT 1 FROM campaign_sends
		    WHERE campaign_id = p_campaign AND wa_id = w) THEN
			na := na + 1;
			CONTINUE;
		END IF;
		c := NULL;
		SELECT * INTO c FROM conversations
		WHERE wa_id = w AND (p_phone_number_id IS NULL OR
		    phone_number_id = p_phone_number_id)
		ORDER BY id DESC LIMIT 1 FOR UPDATE;
		IF c.id IS NULL AND p_phone_number_id IS NOT NULL THEN
			INSERT INTO conversations (phone_number_id, wa_id)
			VALUES (p_phone_number_id, w)
			ON CONFLICT (phone_number_id, wa_id) DO NOTHING;
			SELECT * INTO c FROM conversations
			WHERE wa_id = w AND phone_number_id = p_phone_number_id
			FOR UPDATE;
		END IF;
		reason := CASE WHEN c.id IS NULL THEN 'no_conversation'
		    WHEN c.opted_out_at IS NOT NULL THEN 'opted_out'
		    WHEN c.cooling_off_until > now() THEN 'cooling_off'
		    WHEN c.control = 'human' THEN 'human_control' END;
		oid := NULL;
		IF reason IS NULL THEN
			INSERT INTO outbox (conversation_id, kind, payload, to_key,
			    phone_number_id, next_attempt_at)
			VALUES (c.id, 'template', mg_complete_payload(
			    jsonb_build_object('type', 'template', 'template',
				jsonb_build_object('name', name, 'language',
				    jsonb_build_object('code', lang,
					'policy', 'deterministic'))), c.wa_id),
			    c.wa_id, c.phone_number_id,
			    now() + make_interval(secs => 60.0 * nq / p_per_minute))
			RETURNING id INTO oid;
			UPDATE conversations SET conversation_mode = 'reativacao',
			    mode_updated_at = now(),
			    mode_updated_reason = 'event:campaign',
			    mode_source = 'campaign:' || p_campaign,
			    pending_transition = NULL, pending_transition_at = NULL
			WHERE id = c.id;
			INSERT INTO audit_log (conversation_id, step, decision,
			    reason, details)
			VALUES (c.id, 'router', 'APPLY', 'event:campaign',
			    jsonb_build_object('from', c.conversation_mode,
				'mode', 'reativacao', 'campaign', p_campaign,
				'template', p_template, 'outbox_id', oid,
				'applied', true));
			nq := nq + 1;
		ELSE
			ns := ns + 1;
		END IF;
		INSERT INTO campaign_sends (campaign_id, wa_id, phone_number_id,
		    conversation_id, state, skip_reason, outbox_id, template)
		VALUES (p_campaign, w, coalesce(c.phone_number_id,
		    p_phone_number_id), c.id, CASE WHEN reason IS NULL
		    THEN 'queued' ELSE 'skipped' END, reason, oid, p_template);
	END LOOP;
	RETURN jsonb_build_object('queued', nq, 'skipped', ns, 'already', na);
END $$;

-- One campaign's figures: how many doctors were queued, how many of those
-- the Graph API took (sent, delivered or read), skipped by reason, and
-- replied (an inbound message after the send).
CREATE OR REPLACE FUNCTION mg_campaign_status(p_campaign text)
RETURNS TABLE (what text, n bigint)
LANGUAGE sql STABLE AS $$
	SELECT 'queued', count(*) FROM campaign_sends
	WHERE campaign_id = p_campaign AND state = 'queued'
	UNION ALL
	SELECT 'sent', count(*) FROM campaign_sends s JOIN outbox o
	    ON o.id = s.outbox_id
	WHERE s.campaign_id = p_campaign AND o.state IN ('sent', 'dry_run')
	UNION ALL
	SELECT 'replied', count(*) FROM campaign_sends s
	WHERE s.campaign_id = p_campaign AND s.state = 'queued'
	    AND EXISTS (SELECT 1 FROM inbox i
		WHERE i.conversation_id = s.conversation_id
		    AND i.received_at > s.created_at)
	UNION ALL
	(SELECT 'skipped:' || skip_reason, count(*) FROM campaign_sends
	WHERE campaign_id = p_campaign AND state = 'skipped'
	GROUP BY skip_reason ORDER BY skip_reason)
$$;
