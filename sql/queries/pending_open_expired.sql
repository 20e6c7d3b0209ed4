-- pending_open_expired.sql -- Conversations with a pending mode
-- transition (waiting for the doctor to confirm), open or already past
-- its timeout (pending_timeout_minutes of mode/transitions.json, which
-- migrate and serve record in rule_settings) but not yet cleared. An expired pending is
-- cleared (audited router EXPIRED) by whichever comes first: the
-- doctor's next message (the router) or the next follow-up sweep
-- (mg_expire_pendings in sql/0007_followups.sql, every MODEGATE_SWEEP_S
-- seconds in each modegate process; it skips a conversation while a
-- turn holds it). So 'expired' rows here are the ones no sweep has
-- reached yet -- many of them, or old ones, mean the sweep is not
-- running (MODEGATE_SWEEP_S=0 everywhere, or no process up).
-- SPDX-License-Identifier: MIT
SELECT c.id AS conversation_id, c.phone_number_id, c.wa_id,
    c.conversation_mode AS mode, c.pending_transition AS pending,
    c.pending_transition_at AS pending_at,
    round(extract(epoch FROM now() - c.pending_transition_at) / 60.0, 1)
	AS age_min,
    CASE WHEN c.pending_transition_at < now() - make_interval(mins =>
	mg_setting('pending_timeout_minutes', 30)::int)
	THEN 'expired' ELSE 'open' END AS state
FROM conversations c
WHERE c.pending_transition IS NOT NULL
ORDER BY c.pending_transition_at, c.id;
