-- 0005_ops.sql -- the indexes the operators' commands (takeover,
-- release, set-mode, funnel; sql/functions/80_ops.sql and 70_funnel.sql)
-- and sql/queries/*.sql need. Forward-only.
-- SPDX-License-Identifier: MIT

-- takeover / release / set-mode look a doctor up by wa_id alone (the
-- unique key starts with phone_number_id).
CREATE INDEX conversations_wa_id ON conversations (wa_id);
-- Open pendings (queries/pending_open_expired.sql).
CREATE INDEX conversations_pending ON conversations (pending_transition_at)
	WHERE pending_transition IS NOT NULL;
-- Funnel per (conversation, shift) (funnel_current, the metrics' joins).
CREATE INDEX funnel_events_conv_vaga ON funnel_events
	(conversation_id, vaga_id, created_at, id);
-- Failed sends by error code (queries/send_failures_by_code.sql).
CREATE INDEX outbox_failed ON outbox (error_code, created_at)
	WHERE state IN ('failed', 'dead', 'dropped');
