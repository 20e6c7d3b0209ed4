-- policy_blocks_by_rule.sql -- Messages the policy engine blocked (the AI
-- did not answer), per rule (human_control, opted_out, opt_out_request,
-- cooling_off, serious_objection...): messages, conversations, first and
-- last time. Reads audit_log step "policy" with decision BLOCK (column,
-- or details.decision); the rule is details.rule or else the reason
-- column.
-- SPDX-License-Identifier: MIT
SELECT coalesce(a.details ->> 'rule', a.reason) AS rule,
    count(*) AS messages,
    count(DISTINCT a.conversation_id) AS conversations,
    min(a.created_at) AS first_at, max(a.created_at) AS last_at
FROM audit_log a
WHERE a.step = 'policy'
    AND coalesce(a.decision, a.details ->> 'decision') = 'BLOCK'
GROUP BY 1
ORDER BY messages DESC, rule;
