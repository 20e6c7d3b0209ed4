-- 0013_review.sql -- the review loop of the intent detector (issue 14):
-- production messages the detector was unsure of (low confidence, or the
-- rules and the learned model disagreeing), listed for an operator who
-- labels them into the corpus (modegate review list | label).
--
-- The evidence is the "policy" audit row of each message: details.intent,
-- details.confidence and, once the turn records them, details.rule_intent
-- and details.model_intent (the detector's struct intent_result).

-- One row per message an operator labelled: it leaves the review list,
-- and the corpus line can be traced back to it.
CREATE TABLE review_labels (
	inbox_id	bigint PRIMARY KEY REFERENCES inbox (id),
	intent		text NOT NULL CHECK (intent ~ '^[A-Z_]+$'),
	detected	text,		-- what the detector said
	labelled_by	text,
	corpus_file	text NOT NULL,
	labelled_at	timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX audit_log_policy_inbox ON audit_log (inbox_id)
	WHERE step = 'policy';

-- mg_review_list(since, max_confidence): the unlabelled messages since
-- that time whose intent had a confidence below max_confidence or whose
-- rules and model disagreed, oldest first, with the conversation's mode
-- when it was decided (the router row's "from", else the conversation's
-- mode now) and the decision taken (router decision, else the policy's).
CREATE FUNCTION mg_review_list(p_since timestamptz, p_max_confidence numeric)
RETURNS TABLE (inbox_id bigint, at timestamptz, mode text, intent text,
    confidence numeric, rule_intent text, model_intent text,
    decision text, text text)
LANGUAGE sql STABLE AS $$
	SELECT a.inbox_id, a.created_at,
	    coalesce(r.details ->> 'from', c.conversation_mode::text),
	    a.details ->> 'intent',
	    (a.details ->> 'confidence')::numeric,
	    a.details ->> 'rule_intent', a.details ->> 'model_intent',
	    coalesce(r.decision, a.decision),
	    mg_inbound_text(i.msg_type, i.raw)
	FROM audit_log a
	JOIN inbox i ON i.id = a.inbox_id
	LEFT JOIN conversations c ON c.id = a.conversation_id
	LEFT JOIN LATERAL (SELECT x.details, x.decision FROM audit_log x
	    WHERE x.inbox_id = a.inbox_id AND x.step = 'router'
	    ORDER BY x.id LIMIT 1) r ON true
	WHERE a.step = 'policy' AND a.created_at >= p_since
	    AND NOT EXISTS (SELECT 1 FROM review_labels l
		WHERE l.inbox_id = a.inbox_id)
	    AND ((a.details ->> 'confidence')::numeric < p_max_confidence
		OR a.details ->> 'rule_intent' IS DISTINCT FROM
		    a.details ->> 'model_intent'
		    AND a.details ? 'model_intent')
	ORDER BY a.created_at, a.inbox_id
$$;

-- mg_review_item(inbox_id): the message, Julia's message before it (the
-- context of a short answer), the sender's profile name (to mask it) and
-- what the detector said; no row when the message is unknown.
CREATE FUNCTION mg_review_item(p_inbox_id bigint)
RETURNS TABLE (text text, julia_before text, profile_name text,
    detected text)
LANGUAGE sql STABLE AS $$
	SELECT mg_inbound_text(i.msg_type, i.raw),
	    (SELECT t.text FROM transcript t
		WHERE t.conversation_id = i.conversation_id
		AND t.direction = 'out'
		AND t.at <= coalesce(i.wa_timestamp, i.received_at)
		ORDER BY t.at DESC, t.outbox_id DESC LIMIT 1),
	    i.profile_name,
	    (SELECT a.details ->> 'intent' FROM audit_log a
		WHERE a.inbox_id = i.id AND a.step = 'policy'
		ORDER BY a.id LIMIT 1)
	FROM inbox i WHERE i.id = p_inbox_id
$$;
