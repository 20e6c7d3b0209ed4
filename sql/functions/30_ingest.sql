-- 30_ingest.sql -- what ingest's rows become: the text of an inbound
-- message, the transcript view, and the linking of new inbox rows to
-- their conversation.
-- Re-applied by `modegate migrate` on every run (CREATE OR REPLACE): edit
-- a function here, never in a numbered migration.
-- SPDX-License-Identifier: MIT

-- Transcript -------------------------------------------------------------

-- The text of an inbound message as the LLM should see it: the body, a
-- button or list title, or "[image]" (with its caption) for other types.
CREATE OR REPLACE FUNCTION mg_inbound_text(msg_type text,
    raw jsonb) RETURNS text
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
CREATE OR REPLACE VIEW transcript AS
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

-- Claim ------------------------------------------------------------------

-- Link pending inbox rows to their conversation, creating it when new
-- (ingest does not write conversations). Rows are taken in id order with
-- SKIP LOCKED, so concurrent callers never wait on each other; at most
-- p_max rows per call.
CREATE OR REPLACE FUNCTION mg_link_inbox(p_max int DEFAULT 5000) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
	n int;
BEGIN
	WITH rows AS (
		SELECT id, phone_number_id, sender_key, user_id, profile_name
		FROM inbox
		WHERE conversation_id IS NULL
		ORDER BY id
		LIMIT p_max
		FOR UPDATE SKIP LOCKED
	), keys AS (
		SELECT DISTINCT ON (phone_number_id, sender_key)
		    phone_number_id, sender_key, user_id, profile_name
		FROM rows
		ORDER BY phone_number_id, sender_key, id DESC
	), ins AS (
		INSERT INTO conversations (phone_number_id, wa_id, user_id,
		    profile_name)
		SELECT phone_number_id, sender_key, user_id, profile_name
		FROM keys ORDER BY phone_number_id, sender_key
		ON CONFLICT (phone_number_id, wa_id) DO NOTHING
		RETURNING id
	)
	SELECT count(*) INTO n FROM ins;
	UPDATE inbox i SET conversation_id = c.id
	FROM conversations c
	WHERE i.conversation_id IS NULL
	    AND i.id IN (SELECT id FROM inbox WHERE conversation_id IS NULL
		ORDER BY id LIMIT p_max FOR UPDATE SKIP LOCKED)
	    AND c.phone_number_id = i.phone_number_id
	    AND c.wa_id = i.sender_key;
	GET DIAGNOSTICS n = ROW_COUNT;
	RETURN n;
END $$;
