-- 30_ingest.sql -- what ingest's rows become: the text of an inbound
-- message, the transcript view, and the linking of new inbox rows to
-- their conversation.
-- Re-applied by `modegate migrate` on every run (CREATE OR REPLACE): edit
-- a function here, never in a numbered migration.
-- SPDX-License-Identifier: MIT

-- Transcript -------------------------------------------------------------

-- The text of an inbound message as the LLM should see it: the body, a
-- button or list title, or "[image]" (with its caption) for other types;
-- "[apagado]" once redacted (95_lgpd.sql), never a missing text.
CREATE OR REPLACE FUNCTION mg_inbound_text(msg_type text,
    raw jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE
	WHEN raw ? 'redacted' THEN '[apagado]'
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
--
-- A newly linked row is open (pending, not done): it can only lower
-- open_first_id and raise open_newest of its conversation. Those two are
-- moved here from the linked rows alone, under the conversations' locks
-- taken in id order, and the inbox trigger stands aside; it would
-- recompute both from the conversation's every open message.
CREATE OR REPLACE FUNCTION mg_link_inbox(p_max int DEFAULT 5000) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
	n	int;
	ids	bigint[];
	firsts	bigint[];
	newest	timestamptz[];
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
	PERFORM set_config('modegate.open_kept', 'on', true);
	WITH linked AS (
		UPDATE inbox i SET conversation_id = c.id
		FROM conversations c
		WHERE i.conversation_id IS NULL
		    AND i.id IN (SELECT id FROM inbox
			WHERE conversation_id IS NULL
			ORDER BY id LIMIT p_max FOR UPDATE SKIP LOCKED)
		    AND c.phone_number_id = i.phone_number_id
		    AND c.wa_id = i.sender_key
		RETURNING i.id, i.conversation_id, i.received_at,
		    i.state IN ('pending', 'claimed') AND i.done_at IS NULL
		    AS open
	), per AS (
		SELECT conversation_id AS cid, count(*) AS k,
		    min(id) FILTER (WHERE open) AS f,
		    max(received_at) FILTER (WHERE open) AS r
		FROM linked GROUP BY conversation_id
	)
	SELECT coalesce(sum(k), 0), array_agg(cid ORDER BY cid),
	    array_agg(f ORDER BY cid), array_agg(r ORDER BY cid)
	INTO n, ids, firsts, newest FROM per;
	PERFORM set_config('modegate.open_kept', '', true);
	IF n > 0 THEN
		PERFORM 1 FROM conversations WHERE id = ANY (ids)
		ORDER BY id FOR NO KEY UPDATE;
		UPDATE conversations c
		SET open_first_id = least(c.open_first_id, x.f),
		    open_newest = greatest(c.open_newest, x.r)
		FROM unnest(ids, firsts, newest) AS x(id, f, r)
		WHERE c.id = x.id AND x.f IS NOT NULL;
	END IF;
	RETURN n;
END $$;

-- Open messages per conversation (sql/0016_flat_claim.sql) ----------------

-- mg_open_refresh(ids): recompute open_first_id and open_newest of the
-- conversations p_ids from inbox, under their row locks.
CREATE OR REPLACE FUNCTION mg_open_refresh(p_ids bigint[]) RETURNS void
LANGUAGE plpgsql
-- One plan for any number of ids (index probes per id), not a new one
-- at every call (most calls link one message: 0.6 ms of planning).
SET plan_cache_mode = force_generic_plan AS $$
BEGIN
	PERFORM 1 FROM conversations WHERE id = ANY (p_ids)
	ORDER BY id FOR NO KEY UPDATE;
	-- A new statement, a new snapshot: sees what the lock waited for.
	UPDATE conversations c SET open_first_id = x.f, open_newest = x.n
	FROM (SELECT k.id,
		(SELECT min(i.id) FROM inbox i WHERE i.conversation_id = k.id
		    AND i.done_at IS NULL
		    AND i.state IN ('pending', 'claimed')) AS f,
		(SELECT max(i.received_at) FROM inbox i
		    WHERE i.conversation_id = k.id AND i.done_at IS NULL
		    AND i.state IN ('pending', 'claimed')) AS n
	    FROM unnest(p_ids) AS k(id)) x
	WHERE c.id = x.id AND (c.open_first_id IS DISTINCT FROM x.f OR
	    c.open_newest IS DISTINCT FROM x.n);
END $$;

-- inbox AFTER UPDATE (per statement): conversations whose open set may
-- have changed -- a message linked, moved in or out of the open states,
-- or an open message's arrival time rewritten.
-- The transition tables have no statistics and no index: the planner
-- takes them for one row each, and a join of the two would be a nested
-- loop (quadratic: 18 ms for a claim of 300 messages). An UPDATE's old
-- and new rows are the same ids, so both are sorted by id and compared
-- side by side (unnest of the arrays zips them): linear, no join.
CREATE OR REPLACE FUNCTION mg_inbox_open_update() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
	nc	bigint[];
	nop	boolean[];
	nr	timestamptz[];
	oc	bigint[];
	oop	boolean[];
	orr	timestamptz[];
	ids	bigint[];
BEGIN
	IF current_setting('modegate.open_kept', true) = 'on' THEN
		RETURN NULL;	/* mg_commit_turn keeps them itself */
	END IF;
	SELECT array_agg(conversation_id ORDER BY id),
	    array_agg(state IN ('pending', 'claimed') ORDER BY id),
	    array_agg(received_at ORDER BY id)
	INTO nc, nop, nr FROM n;
	SELECT array_agg(conversation_id ORDER BY id),
	    array_agg(state IN ('pending', 'claimed') ORDER BY id),
	    array_agg(received_at ORDER BY id)
	INTO oc, oop, orr FROM o;
	SELECT array_agg(DISTINCT k) INTO ids
	FROM unnest(nc, oc, nop, oop, nr, orr) AS z(nc, oc, nop, oop, nr, orr),
	    unnest(ARRAY[z.nc, z.oc]) AS k
	WHERE k IS NOT NULL AND (z.nc IS DISTINCT FROM z.oc OR
	    z.nop <> z.oop OR (z.nop AND z.nr IS DISTINCT FROM z.orr));
	IF ids IS NOT NULL THEN
		PERFORM mg_open_refresh(ids);
	END IF;
	RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER inbox_open_update AFTER UPDATE ON inbox
	REFERENCING OLD TABLE AS o NEW TABLE AS n
	FOR EACH STATEMENT EXECUTE FUNCTION mg_inbox_open_update();

-- inbox AFTER INSERT of a row already linked (ingest inserts unlinked
-- rows: no cost there).
CREATE OR REPLACE FUNCTION mg_inbox_open_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM mg_open_refresh(ARRAY[NEW.conversation_id]);
	RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER inbox_open_insert AFTER INSERT ON inbox
	FOR EACH ROW WHEN (NEW.conversation_id IS NOT NULL)
	EXECUTE FUNCTION mg_inbox_open_insert();

-- inbox AFTER DELETE (per statement): the deleted rows' conversations.
CREATE OR REPLACE FUNCTION mg_inbox_open_delete() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
	ids	bigint[];
BEGIN
	SELECT array_agg(DISTINCT o.conversation_id) INTO ids FROM o
	WHERE o.conversation_id IS NOT NULL
	    AND o.state IN ('pending', 'claimed');
	IF ids IS NOT NULL THEN
		PERFORM mg_open_refresh(ids);
	END IF;
	RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER inbox_open_delete AFTER DELETE ON inbox
	REFERENCING OLD TABLE AS o
	FOR EACH STATEMENT EXECUTE FUNCTION mg_inbox_open_delete();

-- inbox AFTER TRUNCATE: no conversation has an open message left.
CREATE OR REPLACE FUNCTION mg_inbox_open_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	UPDATE conversations SET open_first_id = NULL, open_newest = NULL
	WHERE open_first_id IS NOT NULL;
	RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER inbox_open_truncate AFTER TRUNCATE ON inbox
	FOR EACH STATEMENT EXECUTE FUNCTION mg_inbox_open_truncate();
