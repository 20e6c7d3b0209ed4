-- funnel_by_week.sql -- The funnel's metrics per ISO week
-- (Monday), with the same definitions as mg_funnel_metrics (sql/0005):
-- bridge rate of the conversations first interested that week, conversion
-- and time to bridge of the bridges made that week, follow-up rate of
-- that week's bridges already due (modegate.followup_hours, default 48).
-- SPDX-License-Identifier: MIT
WITH interest AS (
	SELECT conversation_id, min(created_at) AS at
	FROM funnel_events WHERE status = 'interesse_confirmado'
	GROUP BY conversation_id
), conv AS (
	SELECT date_trunc('week', i.at)::date AS week,
	    EXISTS (SELECT 1 FROM funnel_events b
		WHERE b.conversation_id = i.conversation_id
		    AND b.status = 'ponte_feita' AND b.created_at >= i.at) AS bridged
	FROM interest i
), br AS (
	SELECT date_trunc('week', bridged_at)::date AS week, closed,
	    extract(epoch FROM bridged_at - interest_at) / 60.0 AS mins,
	    bridged_at <= now() - make_interval(hours =>
		mg_setting('followup_hours', 48)::int) AS due,
	    followed_up_at IS NOT NULL AS done
	FROM funnel_bridges
), weeks AS (
	SELECT week FROM conv UNION SELECT week FROM br
)
SELECT w.week,
    c.interested, c.bridged,
    round(100.0 * c.bridged / nullif(c.interested, 0), 1) AS bridge_rate_pct,
    b.bridges, b.closed,
    round(100.0 * b.closed / nullif(b.bridges, 0), 1) AS conversion_rate_pct,
    round(b.ttb_median::numeric, 1) AS time_to_bridge_median_min,
    b.due AS followups_due, b.done AS followups_done,
    round(100.0 * b.done / nullif(b.due, 0), 1) AS followup_rate_pct
FROM weeks w
LEFT JOIN LATERAL (SELECT count(*) AS interested,
	count(*) FILTER (WHERE bridged) AS bridged
    FROM conv WHERE conv.week = w.week) c ON true
LEFT JOIN LATERAL (SELECT count(*) AS bridges,
	count(*) FILTER (WHERE closed) AS closed,
	percentile_cont(0.5) WITHIN GROUP (ORDER BY mins) AS ttb_median,
	count(*) FILTER (WHERE due) AS due,
	count(*) FILTER (WHERE due AND done) AS done
    FROM br WHERE br.week = w.week) b ON true
ORDER BY w.week;
