-- pending_open_expired.sql -- Conversations with a pending mode
-- transition (waiting for the doctor to confirm), open or already past
-- its timeout (modegate.pending_timeout_minutes, default 30, as in
-- mode/transitions.json) but not yet cleared: the router clears an
-- expired pending only at the doctor's next message.
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
