-- followups_by_state.sql -- The follow-ups of bridges (sql/0007) per day
-- of the bridge and state (queued, sent, answered, sem_resposta, failed,
-- skipped with its reason), beside the bridges still waiting for one.
-- SPDX-License-Identifier: MIT
SELECT h.created_at::date AS bridged_on,
    coalesce(f.state, 'waiting') AS state, f.reason,
    count(*) AS bridges,
    round(avg(extract(epoch FROM f.sent_at - h.created_at) / 3600.0), 1)
	AS hours_to_followup
FROM handoffs h LEFT JOIN followups f ON f.handoff_id = h.id
GROUP BY 1, 2, 3
ORDER BY 1, 2, 3;
