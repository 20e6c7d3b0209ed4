-- guard_violations_by_claim.sql -- Forbidden claims the guard found in
-- the LLM's replies, per claim id: how many replies, how many
-- conversations, and what happened (regenerated, replaced by the
-- fallback, or only audited in shadow: decision "pass"). Reads audit_log
-- step "guard": details.forbidden_claims (or details.violations), an
-- array of claim ids.
-- SPDX-License-Identifier: MIT
SELECT v.claim, count(*) AS replies,
    count(DISTINCT a.conversation_id) AS conversations,
    count(*) FILTER (WHERE a.decision = 'regenerate') AS regenerated,
    count(*) FILTER (WHERE a.decision = 'fallback') AS fallback,
    count(*) FILTER (WHERE a.decision = 'pass') AS shadow
FROM audit_log a,
    LATERAL jsonb_array_elements_text(coalesce(a.details -> 'forbidden_claims',
	a.details -> 'violations', '[]')) AS v (claim)
WHERE a.step = 'guard'
GROUP BY v.claim
ORDER BY replies DESC, v.claim;
