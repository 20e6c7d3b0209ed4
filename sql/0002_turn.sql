-- 0002_turn.sql -- the turn's schema: doctor state, leases, shifts
-- (vagas), bridges, outbox, audit, funnel, feature flags, transcript.
-- The functions the worker calls (one round trip per step) are in
-- 0003_turn_fn.sql. Forward-only; applied in one transaction.
-- SPDX-License-Identifier: MIT

-- Accent- and case-folding for partial matches ("sao paulo" finds "São
-- Paulo") without the unaccent extension (no superuser needed).
CREATE FUNCTION mg_fold(s text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE RETURNS NULL ON NULL INPUT AS $$
	SELECT lower(translate(s,
	    'ÁÀÂÃÄáàâãäÉÈÊËéèêëÍÌÎÏíìîïÓÒÔÕÖóòôõöÚÙÛÜúùûüÇçÑñ',
	    'AAAAAaaaaaEEEEeeeeIIIIiiiiOOOOOoooooUUUUuuuuCcNn'))
$$;

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

-- A plain UPDATE that sets neither updated_by nor reason is attributed
-- to the database user, with no reason (never the previous change's).
CREATE FUNCTION mg_flag_stamp() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	NEW.updated_at := now();
	IF TG_OP = 'UPDATE' THEN
		IF NEW.updated_by IS NOT DISTINCT FROM OLD.updated_by AND
		    NEW.reason IS NOT DISTINCT FROM OLD.reason THEN
			NEW.updated_by := session_user;
			NEW.reason := NULL;
		END IF;
	END IF;
	NEW.updated_by := coalesce(NEW.updated_by, session_user);
	RETURN NEW;
END $$;

-- History row and NOTIFY for every insert, update or delete of a flag.
CREATE FUNCTION mg_flag_history() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
	o feature_flags;
	n feature_flags;
BEGIN
	IF TG_OP <> 'INSERT' THEN o := OLD; END IF;
	IF TG_OP <> 'DELETE' THEN n := NEW; END IF;
	INSERT INTO feature_flag_changes (name, old_value, new_value,
	    old_percent, new_percent, changed_by, reason)
	VALUES (coalesce(n.name, o.name), o.value, n.value, o.percent,
	    n.percent, coalesce(n.updated_by, session_user), n.reason);
	PERFORM pg_notify('modegate_flags', json_build_object(
	    'name', coalesce(n.name, o.name), 'value', n.value,
	    'percent', n.percent)::text);
	RETURN NULL;
END $$;

CREATE TRIGGER feature_flags_stamp BEFORE INSERT OR UPDATE ON feature_flags
	FOR EACH ROW EXECUTE FUNCTION mg_flag_stamp();
CREATE TRIGGER feature_flags_history
	AFTER INSERT OR UPDATE OR DELETE ON feature_flags
	FOR EACH ROW EXECUTE FUNCTION mg_flag_history();

INSERT INTO feature_flags (name, value, updated_by, reason)
VALUES ('conversation_mode_enabled', 'on', 'migration', 'initial value');

-- Append-only tables ---------------------------------------------------

-- Refuses UPDATE and DELETE (row trigger) and TRUNCATE (statement trigger).
CREATE FUNCTION mg_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION '%: append-only table, % refused', TG_TABLE_NAME, TG_OP
	    USING ERRCODE = 'insufficient_privilege';
END $$;

CREATE TRIGGER feature_flag_changes_append_only
	BEFORE UPDATE OR DELETE ON feature_flag_changes
	FOR EACH ROW EXECUTE FUNCTION mg_append_only();
CREATE TRIGGER feature_flag_changes_no_truncate
	BEFORE TRUNCATE ON feature_flag_changes
	FOR EACH STATEMENT EXECUTE FUNCTION mg_append_only();

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
	-- When the AI's memory of the chat starts again (set by mg_release in
	-- 0005): mg_context replays only messages after it, so the AI's
	-- hand-off reply and what was said while a human had the chat never
	-- reach the LLM. doctor_memory and the columns above stay.
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
CREATE INDEX inbox_conv_open ON inbox (conversation_id, id)
	WHERE state IN ('pending', 'claimed');
CREATE INDEX inbox_conv ON inbox (conversation_id, id);

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

CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
	FOR EACH ROW EXECUTE FUNCTION mg_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
	FOR EACH STATEMENT EXECUTE FUNCTION mg_append_only();
CREATE TRIGGER funnel_events_append_only
	BEFORE UPDATE OR DELETE ON funnel_events
	FOR EACH ROW EXECUTE FUNCTION mg_append_only();
CREATE TRIGGER funnel_events_no_truncate BEFORE TRUNCATE ON funnel_events
	FOR EACH STATEMENT EXECUTE FUNCTION mg_append_only();

-- Transcript -------------------------------------------------------------

-- The text of an inbound message as the LLM should see it: the body, a
-- button or list title, or "[image]" (with its caption) for other types.
CREATE FUNCTION mg_inbound_text(msg_type text, raw jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE
	WHEN msg_type = 'text' THEN raw -> 'text' ->> 'body'
	WHEN msg_type = 'button' THEN coalesce(raw -> 'button' ->> 'text',
	    raw -> 'button' ->> 'payload')
	WHEN msg_type = 'interactive' THEN coalesce(
	    raw -> 'interactive' -> 'button_reply' ->> 'title',
	    raw -> 'interactive' -> 'list_reply' ->> 'title',
	    raw -> 'interactive' -> 'nfm_reply' ->> 'body', '[interactive]')
	WHEN msg_type IN ('image', 'video', 'document', 'audio', 'sticker')
	    THEN '[' || msg_type || ']' || coalesce(' ' ||
	    (raw -> msg_type ->> 'caption'), '')
	WHEN msg_type = 'reaction' THEN '[reaction ' ||
	    coalesce(raw -> 'reaction' ->> 'emoji', '') || ']'
	WHEN msg_type = 'location' THEN '[location]' ||
	    coalesce(' ' || (raw -> 'location' ->> 'name'), '')
	ELSE '[' || msg_type || ']'
	END
$$;

-- Both directions of every conversation. Outbound rows that were never
-- and will never be delivered (failed, dead, dropped) and read receipts
-- are left out.
CREATE VIEW transcript AS
	SELECT i.conversation_id, coalesce(i.wa_timestamp, i.received_at) AS at,
	    'in'::text AS direction, mg_inbound_text(i.msg_type, i.raw) AS text,
	    i.id AS inbox_id, NULL::bigint AS outbox_id
	FROM inbox i
	WHERE i.conversation_id IS NOT NULL
	UNION ALL
	SELECT o.conversation_id, coalesce(o.sent_at, o.created_at),
	    'out', CASE o.kind
		WHEN 'text' THEN o.payload -> 'text' ->> 'body'
		ELSE '[template ' || coalesce(o.payload -> 'template' ->> 'name',
		    '') || ']' END,
	    NULL, o.id
	FROM outbox o
	WHERE o.kind <> 'read' AND o.state NOT IN ('failed', 'dead', 'dropped');
