-- 0010_operator_week.sql -- what an operator's first week asked for.
-- An operator's command that would change nothing changes nothing:
-- mg_takeover of a chat a human already holds and mg_release of a chat the AI already holds leave the conversation
-- as it is (no reset of context_since, of the pending transition or of
-- an open serious objection; no outbox row dropped) and write no audit
-- row claiming a change. Both still return every conversation of the
-- doctor (empty: no such doctor); the caller tells the ones changed by
-- their control before the call (modegate takeover/release do, in the
-- same statement). And the router's pending timeout has one source
-- (rule_settings, below).
-- SPDX-License-Identifier: MIT

CREATE OR REPLACE FUNCTION mg_takeover(p_wa_id text, p_who text,
    p_reason text, p_phone_number_id text DEFAULT NULL) RETURNS bigint[]
LANGUAGE plpgsql AS $$
DECLARE
	c	conversations;
	ids	bigint[] := '{}';
	n	int;
BEGIN
	FOR c IN SELECT * FROM mg_conversations_of(p_wa_id, p_phone_number_id)
	    FOR UPDATE LOOP
		ids := ids || c.id;
		CONTINUE WHEN c.control = 'human';	-- already: nothing to do
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
	END LOOP;
	RETURN ids;
END $$;

CREATE OR REPLACE FUNCTION mg_release(p_wa_id text, p_who text,
    p_phone_number_id text DEFAULT NULL) RETURNS bigint[]
LANGUAGE plpgsql AS $$
DECLARE
	c	conversations;
	ids	bigint[] := '{}';
BEGIN
	FOR c IN SELECT * FROM mg_conversations_of(p_wa_id, p_phone_number_id)
	    FOR UPDATE LOOP
		ids := ids || c.id;
		CONTINUE WHEN c.control = 'ai';		-- already: nothing to do
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
	END LOOP;
	RETURN ids;
END $$;

-- The router's pending timeout has one source, mode/transitions.json
-- (pending_timeout_minutes): `modegate migrate` and every `modegate
-- serve` write it here, and mg_setting reads this table before any
-- modegate.* setting, so the SQL of the sweep, funnel_metrics and
-- sql/queries/ cannot disagree with the router.
CREATE TABLE rule_settings (
	name		text PRIMARY KEY,
	value		numeric NOT NULL,
	source		text NOT NULL,
	updated_at	timestamptz NOT NULL DEFAULT now()
);
INSERT INTO rule_settings (name, value, source)
VALUES ('pending_timeout_minutes', 30, 'mode/transitions.json (default)');

CREATE OR REPLACE FUNCTION mg_setting(p_name text, p_default numeric)
RETURNS numeric
LANGUAGE sql STABLE AS $$
	SELECT coalesce((SELECT value FROM rule_settings WHERE name = p_name),
	    nullif(current_setting('modegate.' || p_name, true), '')::numeric,
	    p_default)
$$;

-- mg_rule_setting_set(name, value, source): record a rule file's value
-- (only when it changed, so concurrent starts do not fight).
CREATE FUNCTION mg_rule_setting_set(p_name text, p_value numeric,
    p_source text) RETURNS void
LANGUAGE sql AS $$
	INSERT INTO rule_settings (name, value, source)
	VALUES (p_name, p_value, p_source)
	ON CONFLICT (name) DO UPDATE SET value = excluded.value,
	    source = excluded.source, updated_at = now()
	WHERE rule_settings.value IS DISTINCT FROM excluded.value
$$;
