-- 0017_rules.sql -- Julia's rules (issue 13): an objection made in oferta
-- is recorded (what and when) until the doctor confirms its revisit.
ALTER TABLE conversations
    ADD COLUMN objecao_at timestamptz,
    ADD COLUMN objecao_motivo text;
COMMENT ON COLUMN conversations.objecao_at IS
    'when the open (or last) objection was made in oferta';
COMMENT ON COLUMN conversations.objecao_motivo IS
    'what was objected (the words the detector matched, no message text)';
