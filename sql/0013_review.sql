-- 0013_review.sql -- the review loop of the intent detector (issue 14):
-- production messages the detector was unsure of (low confidence, or the
-- rules and the learned model disagreeing), listed for an operator who
-- labels them into the corpus (modegate review list | label).
--
-- The evidence is the "policy" audit row of each message: details.intent,
-- details.confidence and, once the turn records them, details.rule_intent
-- and details.model_intent (the detector's struct intent_result). The
-- functions mg_review_list and mg_review_item are in
-- sql/functions/80_ops.sql.

-- One row per message an operator labelled: it leaves the review list,
-- and the corpus line can be traced back to it.
CREATE TABLE review_labels (
	inbox_id	bigint PRIMARY KEY,	-- no FK: inbox stays truncatable
	intent		text NOT NULL CHECK (intent ~ '^[A-Z_]+$'),
	detected	text,		-- what the detector said
	labelled_by	text,
	corpus_file	text NOT NULL,
	labelled_at	timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX audit_log_policy_inbox ON audit_log (inbox_id)
	WHERE step = 'policy';
