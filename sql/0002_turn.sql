-- 0002_turn.sql -- the turn's schema: doctor state, leases, shifts
-- (vagas), bridges, outbox, audit, funnel, feature flags. The functions
-- the worker calls (one round trip per step), the triggers and the
-- transcript view are in sql/functions/. Forward-only; applied in one
-- transaction.
-- SPDX-License-Identifier: MIT

-- Feature flags --------------------------------------------------------

-- Runtime switches read by every process (issue 5). A change is
-- recorded in feature_flag_changes and announced with NOTIFY
-- modegate_flags (payload: {"name","value","percent"}).
CREATE TABLE feature_flags (
	name		text PRIMARY KEY,
	value		text NOT NULL CHECK (value IN ('on', 'off', 'shadow')),
	percent		int NOT NULL DEFAULT 100 CHECK (percent BETWEEN 0 AND 100),
	updated_at	timestamptz NOT NULL DEFAULT now(),
	updated_by	text,
	reason		text
);

-- Append-only history of feature_flags (who, when, old, new, reason).
CREATE TABLE feature_flag_changes (
	id		bigserial PRIMARY KEY,
	name		text NOT NULL,
	old_value	text,
	new_value	text,
	old_percent	int,
	new_percent	int,
	changed_by	text,		-- updated_by of the new row
	db_user		text NOT NULL DEFAULT session_user,
	reason		text,
	changed_at	timestamptz NOT NULL DEFAULT now()
);

-- The first flag and its history row (the triggers of
-- sql/functions/20_audit.sql that write history come later).
INSERT INTO feature_flags (name, value, updated_by, reason)
VALUES ('conversation_mode_enabled', 'on', 'migration', 'initial value');
INSERT INTO feature_flag_changes (name, new_value, new_percent, changed_by,
    reason)
VALUES ('conversation_mode_enabled', 'on', 100, 'migration',
    'initial value');

-- Conversations: the doctor's state and the worker's lease ---------------

ALTER TABLE conversations
	ADD COLUMN user_id		text,	-- BSUID, when known
	ADD COLUMN profile_name		text,
	ADD COLUMN especialidade	text,
	ADD COLUMN regiao		text,
	ADD COLUMN opted_out_at		timestamptz,
	ADD COLUMN opt_out_confirmed_at	timestamptz,
	ADD COLUMN cooling_off_until	timestamptz,
	ADD COLUMN serious_objection_at	timestamptz,	-- open serious objection
	ADD COLUMN reserva_confirmada	boolean NOT NULL DEFAULT false,
	ADD COLUMN objecao_resolvida	boolean NOT NULL DEFAULT false,
	ADD COLUMN last_outbound_at	timestamptz,
	ADD COLUMN lease_owner		text,
	ADD COLUMN lease_until		timestamptz,
	ADD COLUMN next_attempt_at	timestamptz,	-- backoff after a failed turn
	ADD COLUMN control_updated_at	timestamptz,
	ADD COLUMN control_updated_by	text,
	-- When the AI's memory of the chat starts again (set by mg_release,
	-- sql/functions/80_ops.sql): mg_context replays only messages after
	-- it, so the AI's hand-off reply and what was said while a human had
	-- the chat never reach the LLM. doctor_memory and the columns above stay.
	ADD COLUMN context_since	timestamptz;

-- Facts about the doctor (tool salvar_memoria).
CREATE TABLE doctor_memory (
	id		bigserial PRIMARY KEY,
	conversation_id	bigint NOT NULL REFERENCES conversations (id),
	fact		text NOT NULL CHECK (length(fact) BETWEEN 1 AND 500),
	created_at	timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX doctor_memory_conv ON doctor_memory (conversation_id, id);

-- Inbox: the worker's columns. conversation_id is filled by mg_claim
-- (ingest's INSERT stays a plain insert with no trigger cost).
ALTER TABLE inbox
	ADD COLUMN conversation_id	bigint REFERENCES conversations (id),
	ADD COLUMN claimed_by		text,
	ADD COLUMN claimed_at		timestamptz,
	ADD COLUMN next_attempt_at	timestamptz,
	ADD COLUMN done_at		timestamptz,
	ADD COLUMN done_reason		text;	-- why skipped (too old, human...)
CREATE INDEX inbox_unlinked ON inbox (id) WHERE conversation_id IS NULL;
-- The conversation indexes only matter once mg_link_inbox has set
-- conversation_id; every query using them filters on conversation_id
-- (= a value, or IS NOT NULL), which implies the predicate. Linking is
-- an UPDATE of conversation_id, which pays for them then.
CREATE INDEX inbox_conv ON inbox (conversation_id, id)
	WHERE conversation_id IS NOT NULL;
CREATE INDEX inbox_conv_open ON inbox (conversation_id, id)
	WHERE state IN ('pending', 'claimed') AND conversation_id IS NOT NULL;

-- Shifts and bridges ---------------------------------------------------

-- Open medical shifts (vagas de plantão). Julia never owns them: she
-- bridges the doctor to responsavel_nome / responsavel_contato.
CREATE TABLE vagas (
	id			bigserial PRIMARY KEY,
	hospital		text NOT NULL,
	especialidade		text NOT NULL,
	regiao			text NOT NULL,
	turno			text NOT NULL,	-- diurno, noturno, 12h, 24h...
	data			date NOT NULL,
	valor_bruto		numeric(10, 2),
	responsavel_nome	text NOT NULL,
	responsavel_contato	text NOT NULL,
	status			text NOT NULL DEFAULT 'aberta'
				CHECK (status IN ('aberta', 'fechada')),
	created_at		timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX vagas_open ON vagas (data, id) WHERE status = 'aberta';

-- A bridge (ponte) made between a doctor and a shift's responsible person.
CREATE TABLE handoffs (
	id		bigserial PRIMARY KEY,
	conversation_id	bigint NOT NULL REFERENCES conversations (id),
	vaga_id		bigint NOT NULL REFERENCES vagas (id),
	created_at	timestamptz NOT NULL DEFAULT now(),
	UNIQUE (conversation_id, vaga_id)
);

-- Outbox ---------------------------------------------------------------

-- Approved templates by purpose; 'window_closed' is what replaces a free
-- text that cannot be sent (24-hour window closed, error 131047). The
-- payload is a Graph API body without "to" (added per row). No row: the
-- text is dropped (audited).
CREATE TABLE wa_templates (
	purpose		text PRIMARY KEY,
	payload		jsonb NOT NULL CHECK (payload ->> 'type' = 'template'),
	updated_at	timestamptz NOT NULL DEFAULT now()
);

-- Messages to post to the Graph API, in id order per conversation.
-- payload is the complete request body (messaging_product, to or
-- recipient, type...): the sender posts it as is to
-- {WHATSAPP_API_BASE}/{phone_number_id}/messages.
CREATE TABLE outbox (
	id			bigserial PRIMARY KEY,
	conversation_id		bigint NOT NULL REFERENCES conversations (id),
	inbox_id		bigint,		-- the turn's last inbound (no FK:
						-- inbox stays truncatable)
	kind			text NOT NULL
				CHECK (kind IN ('text', 'template', 'read')),
	payload			jsonb NOT NULL,
	to_key			text NOT NULL,
	phone_number_id		text NOT NULL,
	state			text NOT NULL DEFAULT 'pending'
				CHECK (state IN ('pending', 'sending', 'sent',
				    'dry_run', 'failed', 'dead', 'dropped')),
	attempts		int NOT NULL DEFAULT 0,
	next_attempt_at		timestamptz,
	lease_owner		text,
	lease_until		timestamptz,
	wamid			text UNIQUE,
	error_code		int,
	error_detail		text,
	created_at		timestamptz NOT NULL DEFAULT now(),
	sent_at			timestamptz,
	delivery_status		text CHECK (delivery_status IN ('sent',
				    'delivered', 'read', 'failed', 'played')),
	delivery_status_at	timestamptz
);
CREATE INDEX outbox_unsent ON outbox (conversation_id, id)
	WHERE state IN ('pending', 'sending');
CREATE INDEX outbox_conv ON outbox (conversation_id, id);

-- Audit and funnel (append-only) ----------------------------------------

-- One row per pipeline step of a turn (and per send result).
CREATE TABLE audit_log (
	id		bigserial PRIMARY KEY,
	conversation_id	bigint REFERENCES conversations (id),
	inbox_id	bigint,
	step		text NOT NULL,
	decision	text,
	reason		text,
	details		jsonb NOT NULL DEFAULT '{}',
	created_at	timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_log_conv ON audit_log (conversation_id, created_at);
CREATE INDEX audit_log_step ON audit_log (step, created_at);

-- One row per funnel status reached (DESIGN.md §3).
CREATE TABLE funnel_events (
	id		bigserial PRIMARY KEY,
	conversation_id	bigint NOT NULL REFERENCES conversations (id),
	vaga_id		bigint REFERENCES vagas (id),
	status		text NOT NULL CHECK (status IN ('interesse_confirmado',
			    'ponte_feita', 'aguardando_desfecho',
			    'fechado_com_responsavel', 'nao_fechou',
			    'sem_resposta')),
	doctor_key	text,
	responsavel	text,
	created_at	timestamptz NOT NULL DEFAULT now(),
	metadata	jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX funnel_events_conv ON funnel_events (conversation_id, created_at);
CREATE INDEX funnel_events_status ON funnel_events (status, created_at);
