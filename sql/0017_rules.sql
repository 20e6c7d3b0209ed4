-- 0017_rules.sql -- Julia's rules (issue 13): an objection made in oferta
-- is recorded (what and when) until the doctor confirms its revisit.
ALTER TABLE conversations
    ADD COLUMN objecao_at timestamptz,
    ADD COLUMN objecao_motivo text;
COMMENT ON COLUMN conversations.objecao_at IS
    'when the open (or last) objection was made in oferta';
COMMENT ON COLUMN conversations.objecao_motivo IS
    'what was objected (the words the detector matched, no message text)';

-- The funnel of the design (issue 13): where a shift came from and who is
-- responsible for it, on the shift and on every funnel row about it, and
-- the seconds from the doctor's interest to the bridge on ponte_feita.
ALTER TABLE vagas
    ADD COLUMN origem_vaga text NOT NULL DEFAULT 'manual',
    ADD COLUMN responsavel_id text;
COMMENT ON COLUMN vagas.origem_vaga IS
    'where the shift came from (manual, an import, a partner...)';
COMMENT ON COLUMN vagas.responsavel_id IS
    'the responsible person''s id in the staffing system, if any';
ALTER TABLE funnel_events
    ADD COLUMN tempo_ate_ponte integer,
    ADD COLUMN origem_vaga text,
    ADD COLUMN responsavel_id text;
COMMENT ON COLUMN funnel_events.tempo_ate_ponte IS
    'ponte_feita: seconds from the interest it answered to the bridge';

-- Campaigns (issue 13): one row per doctor and campaign, whatever became of
-- it; unique, so starting a campaign again sends nothing new.
CREATE TABLE campaign_sends (
	id		bigserial PRIMARY KEY,
	campaign_id	text NOT NULL,
	wa_id		text NOT NULL,
	phone_number_id	text,
	conversation_id	bigint REFERENCES conversations (id),
	state		text NOT NULL CHECK (state IN ('queued', 'skipped')),
	skip_reason	text CHECK ((state = 'skipped') = (skip_reason IS NOT NULL)),
	outbox_id	bigint,
	template	text NOT NULL,
	created_at	timestamptz NOT NULL DEFAULT now(),
	UNIQUE (campaign_id, wa_id)
);
CREATE INDEX campaign_sends_conv ON campaign_sends (conversation_id);

-- Shadow mode's own state (issue 17): with the flag at shadow the router
-- decides from, and moves, these columns only, so the whole path (pending
-- micro-confirmations, CONFIRM) is measured without touching the real mode.
ALTER TABLE conversations
    ADD COLUMN shadow_mode text CHECK (shadow_mode IN ('discovery', 'oferta',
	'followup', 'reativacao')),
    ADD COLUMN shadow_pending text CHECK (shadow_pending IN ('discovery',
	'oferta', 'followup', 'reativacao')),
    ADD COLUMN shadow_pending_at timestamptz;
