-- llm_latency_tokens_by_day.sql -- LLM calls per day: how many, how many
-- failed, latency p50 and p95 (ms, whole call including tool rounds),
-- and tokens in and out. Reads audit_log step "llm": details.latency_ms,
-- details.input_tokens, details.output_tokens, details.error (present
-- on failure; also decision "error"). Rows without latency (the
-- "llm unavailable" hand-off) are not calls.
-- SPDX-License-Identifier: MIT
SELECT a.created_at::date AS day, count(*) AS calls,
    count(*) FILTER (WHERE a.decision = 'error' OR a.details ? 'error')
	AS errors,
    round(percentile_cont(0.5) WITHIN GROUP (ORDER BY
	(a.details ->> 'latency_ms')::numeric)::numeric) AS latency_p50_ms,
    round(percentile_cont(0.95) WITHIN GROUP (ORDER BY
	(a.details ->> 'latency_ms')::numeric)::numeric) AS latency_p95_ms,
    coalesce(sum((a.details ->> 'input_tokens')::bigint), 0)::bigint
	AS input_tokens,
    coalesce(sum((a.details ->> 'output_tokens')::bigint), 0)::bigint
	AS output_tokens
FROM audit_log a
WHERE a.step = 'llm' AND a.details ? 'latency_ms'
GROUP BY 1
ORDER BY 1;
