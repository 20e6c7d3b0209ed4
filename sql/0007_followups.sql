-- 0007_followups.sql -- the table of scheduled follow-ups: one per
-- bridge (DESIGN.md §3). The sweep that queues, settles and closes them
-- (mg_followup_sweep, called by each modegate process on a libevent
-- timer, src/followup.c) is in sql/functions/90_followup.sql.
-- Forward-only.
--
-- The life of a follow-up (one row per bridge, unique on the handoff, so
-- it is queued at most once whatever the number of processes):
--   queued        the message is in the outbox (text inside the 24-hour
--                 window, else the approved template); it goes out
--                 through the same sender and the same per-conversation
--                 order as replies
--   sent          the outbox row was sent: funnel aguardando_desfecho is
--                 written with the send time (what funnel_metrics'
--                 followup_rate counts as "followed up")
--   answered      the doctor wrote after it (the outcome itself is
--                 recorded by the turn: intents DESFECHO_FECHOU /
--                 DESFECHO_NAO_FECHOU in followup mode, or the tool
--                 registrar_status_intermediacao)
--   sem_resposta  no inbound within the no-answer delay: funnel
--                 sem_resposta
--   failed        the outbox row failed, died or was dropped (no funnel)
--   skipped       not sent: the outcome was already known, the doctor
--                 opted out, has an open serious objection, a human has
--                 the chat, or no template exists for a closed window
-- Every change is audited (step "followup").
-- SPDX-License-Identifier: MIT

CREATE TABLE followups (
	id		bigserial PRIMARY KEY,
	handoff_id	bigint NOT NULL UNIQUE REFERENCES handoffs (id),
	conversation_id	bigint NOT NULL REFERENCES conversations (id),
	vaga_id		bigint NOT NULL REFERENCES vagas (id),
	state		text NOT NULL CHECK (state IN ('queued', 'sent',
			    'answered', 'sem_resposta', 'failed', 'skipped')),
	reason		text,		-- why skipped or failed
	kind		text CHECK (kind IN ('text', 'template')),
	outbox_id	bigint,		-- no FK: like inbox_id elsewhere
	owner		text,		-- the process whose sweep queued it
	created_at	timestamptz NOT NULL DEFAULT now(),
	sent_at		timestamptz,
	closed_at	timestamptz
);
CREATE INDEX followups_open ON followups (state, id)
	WHERE state IN ('queued', 'sent');
CREATE INDEX followups_conv ON followups (conversation_id, id);
-- Due bridges are found by age.
CREATE INDEX handoffs_created ON handoffs (created_at);
