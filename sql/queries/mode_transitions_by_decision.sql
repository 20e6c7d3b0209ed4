-- mode_transitions_by_decision.sql -- How the mode router decided, per
-- decision (APPLY, PENDING, CONFIRM, CANCEL, REJECT, NONE, EXPIRED) and
-- move (from mode -> resulting mode, and the mode proposed): how many
-- messages, how many conversations, and how many were applied (flag on)
-- rather than only audited (flag shadow). Reads audit_log step "router":
-- decision column (or details.decision), details.from, details.mode,
-- details.proposal, details.applied.
-- SPDX-License-Identifier: MIT
SELECT coalesce(a.decision, a.details ->> 'decision') AS decision,
    a.details ->> 'from' AS from_mode,
    a.details ->> 'mode' AS to_mode,
    coalesce(a.details ->> 'proposal', '-') AS proposal,
    count(*) AS messages,
    count(DISTINCT a.conversation_id) AS conversations,
    count(*) FILTER (WHERE coalesce((a.details ->> 'applied')::boolean,
	true)) AS applied
FROM audit_log a
WHERE a.step = 'router'
GROUP BY 1, 2, 3, 4
ORDER BY 1, 2, 3, 4;
