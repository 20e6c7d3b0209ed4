-- tools_removed_by_mode.sql -- Which tools the mode gate took away from
-- the LLM, per mode: turns where the tool was removed (flag on,
-- details.tools_removed) and turns where it would have been (flag shadow,
-- details.tools_would_remove). Reads audit_log step "gate": the mode is
-- details.mode or else the decision column.
-- SPDX-License-Identifier: MIT
SELECT coalesce(a.details ->> 'mode', a.decision) AS mode, t.tool,
    count(*) FILTER (WHERE t.kind = 'removed') AS removed,
    count(*) FILTER (WHERE t.kind = 'would_remove') AS would_remove,
    count(DISTINCT a.conversation_id) AS conversations
FROM audit_log a,
    LATERAL (SELECT 'removed' AS kind, x AS tool
	FROM jsonb_array_elements_text(coalesce(a.details -> 'tools_removed',
	    '[]')) x
	UNION ALL
	SELECT 'would_remove', x
	FROM jsonb_array_elements_text(coalesce(
	    a.details -> 'tools_would_remove', '[]')) x) t
WHERE a.step = 'gate'
GROUP BY 1, 2
ORDER BY 1, 2;
