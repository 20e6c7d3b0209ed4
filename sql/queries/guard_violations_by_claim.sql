-- guard_violations_by_claim.sql -- Forbidden claims the guard found in
-- the LLM's replies, per claim id: how many replies, how many
-- conversations, and what happened (regenerated, replaced by the
-- fallback, or only audited in shadow). A shadow row records what
-- enforcement would have done (decision regenerate or fallback) with
-- details.enforced = false; rows written before that said decision
-- "pass", reason "shadow: not enforced". Reads audit_log step "guard":
-- details.forbidden_claims (or details.violations), an array of claim ids.
-- SPDX-License-Identifier: MIT
SELECT v.claim, count(*) AS replies,
    count(DISTINCT a.conversation_id) AS conversations,
    count(*) FILTER (WHERE a.decision = 'regenerate' AND NOT s.shadow)
	AS regenerated,
    count(*) FILTER (WHERE a.decision = 'fallback' AND NOT s.shadow)
	AS fallback,
    count(*) FILTER (WHERE s.shadow) AS shadow
FROM audit_log a,
    LATERAL (SELECT coalesce((a.details ->> 'enforced')::boolean, true) =
	false OR (a.decision = 'pass' AND a.reason LIKE 'shadow%') AS shadow) s,
    LATERAL jsonb_array_elements_text(coalesce(a.details -> 'forbidden_claims',
	a.details -> 'violations', '[]')) AS v (claim)
WHERE a.step = 'guard'
GROUP BY v.claim
ORDER BY replies DESC, v.claim;
