-- tools_removed_by_mode.sql -- Which tools the mode gate took away from
-- the LLM, per mode: turns where the tool was removed (flag on,
-- details.tools_removed) and turns where it would have been (flag shadow:
-- details.tools_would_remove of the rows with details.flag = 'shadow').
-- The worker also writes tools_would_remove on flag off turns (the
-- gate off, every tool offered): those are not shadow comparisons and
-- are not counted. Reads audit_log step "gate": the mode is
-- details.mode or else the decision column; conversations counts those
-- with a counted row.
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
	    a.details -> 'tools_would_remove', '[]')) x
	WHERE a.details ->> 'flag' = 'shadow') t
WHERE a.step = 'gate'
GROUP BY 1, 2
ORDER BY 1, 2;
