-- send_failures_by_code.sql -- Replies WhatsApp did not take, per Graph
-- API error code: given up (failed, dead, or the 131047 window-closed
-- path: replaced by a template or dropped) and retried (back to
-- pending), with conversations and the latest error text. Mark-as-read
-- rows are not replies and are left out. Reads audit_log step "send"
-- (written by mg_outbox_result, mg_apply_status, mg_window_closed):
-- decision = the row's new state, details.error_code,
-- details.error_detail (or details.detail), details.outbox_id,
-- details.kind.
-- SPDX-License-Identifier: MIT
SELECT (a.details ->> 'error_code')::int AS error_code,
    count(*) FILTER (WHERE a.decision IN ('failed', 'dead', 'dropped',
	'template')) AS given_up,
    count(*) FILTER (WHERE a.decision = 'pending') AS retried,
    count(DISTINCT a.conversation_id) AS conversations,
    (array_agg(coalesce(a.details ->> 'error_detail', a.details ->> 'detail')
	ORDER BY a.created_at DESC, a.id DESC) FILTER (WHERE
	coalesce(a.details ->> 'error_detail', a.details ->> 'detail')
	IS NOT NULL))[1] AS last_detail
FROM audit_log a
LEFT JOIN outbox o ON o.id = (a.details ->> 'outbox_id')::bigint
WHERE a.step = 'send' AND a.details ? 'error_code'
    AND a.details ->> 'error_code' IS NOT NULL
    AND coalesce(o.kind, a.details ->> 'kind', 'text') <> 'read'
GROUP BY 1
ORDER BY count(*) DESC, error_code;
