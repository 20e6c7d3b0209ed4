-- 0016_flat_claim.sql -- a claim that stays flat, and a commit that does
-- not block foreign-key checks.
--
-- mg_claim (0003) aggregated every open inbox row to pick the oldest due
-- conversations: with 300,000 unanswered messages one claim took ~0.6 s.
-- Each conversation now carries its oldest open message id and newest
-- open arrival (open_first_id, open_newest), kept by triggers on inbox
-- for every path that links a message or moves it in or out of the open
-- states (pending, claimed), and the claim walks the partial index
-- conversations_open in that order.
--
-- The triggers recompute under the conversation's row lock, taken in a
-- statement before the one that reads inbox, so the recompute sees every
-- committed change and no other transaction can hold an uncommitted one
-- (its own trigger would hold the lock). Locks are taken in id order.
--
-- mg_commit_turn, the hot path, keeps its conversation's open columns
-- in the UPDATE it already makes (the trigger stands aside).
--
-- mg_commit_turn and mg_commit_send take the conversation FOR NO KEY
-- UPDATE instead of FOR UPDATE: it changes no key, and FOR UPDATE also
-- blocked every concurrent insert referencing the conversation (its
-- foreign-key check takes FOR KEY SHARE), such as ingest linking new
-- messages to it.
-- SPDX-License-Identifier: MIT

ALTER TABLE conversations
	ADD COLUMN open_first_id	bigint,		-- oldest open inbox id
	ADD COLUMN open_newest		timestamptz;	-- newest open arrival

UPDATE conversations c SET open_first_id = x.f, open_newest = x.n
FROM (SELECT conversation_id, min(id) AS f, max(received_at) AS n
	FROM inbox
	WHERE state IN ('pending', 'claimed') AND conversation_id IS NOT NULL
	GROUP BY conversation_id) x
WHERE c.id = x.conversation_id;

CREATE INDEX conversations_open ON conversations (open_first_id)
	WHERE open_first_id IS NOT NULL;

-- mg_open_refresh(ids): recompute open_first_id and open_newest of the
-- conversations p_ids from inbox, under their row locks.
CREATE FUNCTION mg_open_refresh(p_ids bigint[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM 1 FROM conversations WHERE id = ANY (p_ids)
	ORDER BY id FOR NO KEY UPDATE;
	-- A new statement, a new snapshot: sees what the lock waited for.
	UPDATE conversations c SET open_first_id = x.f, open_newest = x.n
	FROM (SELECT k.id,
		(SELECT min(i.id) FROM inbox i WHERE i.conversation_id = k.id
		    AND i.state IN ('pending', 'claimed')) AS f,
		(SELECT max(i.received_at) FROM inbox i
		    WHERE i.conversation_id = k.id
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
CREATE FUNCTION mg_inbox_open_update() RETURNS trigger
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

CREATE TRIGGER inbox_open_update AFTER UPDATE ON inbox
	REFERENCING OLD TABLE AS o NEW TABLE AS n
	FOR EACH STATEMENT EXECUTE FUNCTION mg_inbox_open_update();

-- inbox AFTER INSERT of a row already linked (ingest inserts unlinked
-- rows: no cost there).
CREATE FUNCTION mg_inbox_open_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM mg_open_refresh(ARRAY[NEW.conversation_id]);
	RETURN NULL;
END $$;

CREATE TRIGGER inbox_open_insert AFTER INSERT ON inbox
	FOR EACH ROW WHEN (NEW.conversation_id IS NOT NULL)
	EXECUTE FUNCTION mg_inbox_open_insert();

-- inbox AFTER DELETE (per statement): the deleted rows' conversations.
CREATE FUNCTION mg_inbox_open_delete() RETURNS trigger
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

CREATE TRIGGER inbox_open_delete AFTER DELETE ON inbox
	REFERENCING OLD TABLE AS o
	FOR EACH STATEMENT EXECUTE FUNCTION mg_inbox_open_delete();

-- inbox AFTER TRUNCATE: no conversation has an open message left.
CREATE FUNCTION mg_inbox_open_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	UPDATE conversations SET open_first_id = NULL, open_newest = NULL
	WHERE open_first_id IS NOT NULL;
	RETURN NULL;
END $$;

CREATE TRIGGER inbox_open_truncate AFTER TRUNCATE ON inbox
	FOR EACH STATEMENT EXECUTE FUNCTION mg_inbox_open_truncate();

-- mg_claim (0003), same contract, index-driven and set-based: the due
-- conversations are read from conversations_open in the order of their
-- oldest open message (a few index entries however large the backlog),
-- and their messages are claimed and their leases written in one
-- statement rather than three per conversation.
CREATE OR REPLACE FUNCTION mg_claim(p_worker text, p_lease_seconds int,
    p_window_ms int, p_limit int) RETURNS SETOF jsonb
LANGUAGE plpgsql AS $$
DECLARE
	until	timestamptz := now() + make_interval(secs => p_lease_seconds);
BEGIN
	-- A lost claim is harmless (the row is still due and is claimed
	-- again), so this transaction need not wait for its WAL flush; the
	-- commits that must be durable (ingest, mg_commit_turn,
	-- mg_outbox_result) keep synchronous_commit on.
	PERFORM set_config('synchronous_commit', 'off', true);
	IF p_worker IS NULL OR p_worker = '' THEN
		RAISE EXCEPTION 'mg_claim: worker name required';
	END IF;
	PERFORM mg_link_inbox();
	RETURN QUERY
	WITH cand AS MATERIALIZED (
		SELECT cv.id, cv.open_first_id AS ord
		FROM conversations cv
		WHERE cv.open_first_id IS NOT NULL
		    AND (cv.lease_until IS NULL OR cv.lease_until < now())
		    AND (cv.next_attempt_at IS NULL OR cv.next_attempt_at <= now())
		    AND cv.open_newest <= now() -
			make_interval(secs => p_window_ms / 1000.0)
		ORDER BY cv.open_first_id
		LIMIT p_limit
		FOR NO KEY UPDATE OF cv SKIP LOCKED
	), picked AS MATERIALIZED (
		-- at most 20 per conversation; the rest come in the next turn
		SELECT m.id, m.state, c.id AS cid, c.ord
		FROM cand c CROSS JOIN LATERAL (
			SELECT i.id, i.state FROM inbox i
			WHERE i.conversation_id = c.id
			    AND i.state IN ('pending', 'claimed')
			ORDER BY coalesce(i.wa_timestamp, i.received_at),
			    i.received_at, i.id
			LIMIT 20
			FOR UPDATE) m
	), upd AS (
		UPDATE inbox i SET state = 'claimed', claimed_by = p_worker,
		    claimed_at = now(),
		    attempts = i.attempts + (p.state = 'claimed')::int,
		    last_error = CASE WHEN p.state = 'claimed' THEN
			'lease of ' || coalesce(i.claimed_by, '?') ||
			' expired' ELSE i.last_error END
		FROM picked p WHERE p.id = i.id
		RETURNING i.id, p.cid, p.ord, i.attempts,
		    p.state = 'claimed' AS retaken,
		    coalesce(i.wa_timestamp, i.received_at) AS t1,
		    i.received_at AS t2
	), lease AS (
		UPDATE conversations cv SET lease_owner = p_worker,
		    lease_until = until
		WHERE cv.id IN (SELECT cid FROM picked)
		RETURNING cv.id
	)
	SELECT jsonb_build_object('conversation_id', u.cid,
	    'inbox_ids', to_jsonb(array_agg(u.id ORDER BY u.t1, u.t2, u.id)),
	    'lease_until', until, 'attempts', max(u.attempts),
	    'retaken', bool_or(u.retaken))
	FROM upd u
	WHERE u.cid IN (SELECT id FROM lease)
	GROUP BY u.cid, u.ord
	ORDER BY u.ord;
END $$;


-- mg_commit_turn (0003), the conversation locked FOR NO KEY UPDATE.
CREATE OR REPLACE FUNCTION mg_commit_turn(p_worker text, p_conversation_id bigint,
    p_turn jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
	cv	conversations;
	e	jsonb;
	oids	bigint[] := '{}';
	oid	bigint;
	nh	int;
	ndone	int;
	last_in	bigint;
	newest	timestamptz;
	bad	text;
BEGIN
	SELECT * INTO cv FROM conversations
	WHERE id = p_conversation_id AND lease_owner = p_worker
	    AND lease_until >= now()
	FOR NO KEY UPDATE;
	IF NOT FOUND THEN
		RETURN jsonb_build_object('ok', false, 'reason', 'lease_lost');
	END IF;
	SELECT max(id), max(coalesce(wa_timestamp, received_at))
	INTO last_in, newest FROM inbox
	WHERE conversation_id = cv.id AND state = 'claimed'
	    AND claimed_by = p_worker;
	SELECT x ->> 'state' INTO bad
	FROM jsonb_array_elements(mg_arr(p_turn, 'inbox')) x
	WHERE coalesce(x ->> 'state', 'done') NOT IN ('done', 'skipped')
	LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'mg_commit_turn: inbox state % (done|skipped)', bad;
	END IF;

	PERFORM mg_apply_conversation(cv.id, p_turn -> 'conversation');

	FOR e IN SELECT * FROM jsonb_array_elements(mg_arr(p_turn, 'audit')) LOOP
		INSERT INTO audit_log (conversation_id, inbox_id, step, decision,
		    reason, details)
		VALUES (cv.id, coalesce((e ->> 'inbox_id')::bigint, last_in),
		    e ->> 'step', e ->> 'decision', e ->> 'reason',
		    coalesce(e -> 'details', '{}'));
	END LOOP;

	INSERT INTO funnel_events (conversation_id, vaga_id, status, doctor_key,
	    responsavel, metadata)
	SELECT cv.id, (f ->> 'vaga_id')::bigint, f ->> 'status', cv.wa_id,
	    coalesce(f ->> 'responsavel', v.responsavel_nome),
	    coalesce(f -> 'metadata', '{}')
	FROM jsonb_array_elements(mg_arr(p_turn, 'funnel')) f
	LEFT JOIN vagas v ON v.id = (f ->> 'vaga_id')::bigint;

	INSERT INTO doctor_memory (conversation_id, fact)
	SELECT cv.id, CASE jsonb_typeof(m) WHEN 'string' THEN m #>> '{}'
	    ELSE m ->> 'fact' END
	FROM jsonb_array_elements(mg_arr(p_turn, 'memory')) m;

	nh := mg_apply_handoffs(cv, mg_arr(p_turn, 'handoffs'), last_in);

	FOR e IN SELECT * FROM jsonb_array_elements(mg_arr(p_turn, 'outbox')) LOOP
		INSERT INTO outbox (conversation_id, inbox_id, kind, payload,
		    to_key, phone_number_id)
		VALUES (cv.id, coalesce((e ->> 'inbox_id')::bigint, last_in),
		    coalesce(e ->> 'kind', 'text'),
		    mg_complete_payload(e -> 'payload', cv.wa_id), cv.wa_id,
		    cv.phone_number_id)
		RETURNING id INTO oid;
		oids := oids || oid;
	END LOOP;

	-- Only this conversation's messages change, and its row is locked
	-- since the first statement: the UPDATE below keeps its open
	-- columns, so the inbox trigger need not (modegate.open_kept).
	PERFORM set_config('modegate.open_kept', 'on', true);
	UPDATE inbox i SET
	    state = coalesce(o.state, 'done'), done_at = now(),
	    done_reason = o.reason
	FROM (SELECT i2.id, x ->> 'state' AS state, x ->> 'reason' AS reason
		FROM inbox i2 LEFT JOIN
		    jsonb_array_elements(mg_arr(p_turn, 'inbox')) x
		    ON (x ->> 'id')::bigint = i2.id
		WHERE i2.conversation_id = cv.id AND i2.state = 'claimed'
		    AND i2.claimed_by = p_worker) o
	WHERE i.id = o.id;
	GET DIAGNOSTICS ndone = ROW_COUNT;
	PERFORM set_config('modegate.open_kept', '', true);

	UPDATE conversations SET
	    last_inbound_at = CASE WHEN newest IS NULL THEN last_inbound_at
		ELSE greatest(last_inbound_at, newest) END,
	    lease_owner = NULL, lease_until = NULL, next_attempt_at = NULL,
	    open_first_id = (SELECT i.id FROM inbox i
		WHERE i.conversation_id = cv.id
		    AND i.state IN ('pending', 'claimed')
		ORDER BY i.conversation_id, i.id LIMIT 1),
	    open_newest = (SELECT max(i.received_at) FROM inbox i
		WHERE i.conversation_id = cv.id
		    AND i.state IN ('pending', 'claimed'))
	WHERE id = cv.id;

	RETURN jsonb_build_object('ok', true, 'outbox_ids', to_jsonb(oids),
	    'handoffs_new', nh, 'inbox_done', ndone);
END $$;

-- mg_commit_send (0009), the same lock first.
CREATE OR REPLACE FUNCTION mg_commit_send(p_worker text, p_conversation_id bigint,
    p_turn jsonb, p_sender text, p_send_lease_seconds int,
    p_send_limit int) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
	turn	jsonb := p_turn;
	ctl	text;
BEGIN
	-- The lock mg_commit_turn takes, taken first: no takeover between
	-- this check and the commit.
	SELECT control INTO ctl FROM conversations
	WHERE id = p_conversation_id FOR NO KEY UPDATE;
	IF ctl = 'human' AND jsonb_array_length(mg_arr(p_turn, 'outbox')) > 0
	    AND NOT coalesce(p_turn -> 'conversation' ? 'control', false) THEN
		turn := p_turn || jsonb_build_object('outbox', '[]'::jsonb,
		    'audit', mg_arr(p_turn, 'audit') || jsonb_build_object(
			'step', 'control', 'decision', 'human',
			'reason', 'reply_withheld', 'details',
			jsonb_build_object('outbox',
			    jsonb_array_length(mg_arr(p_turn, 'outbox')))));
	END IF;
	RETURN mg_lease_send(mg_commit_turn(p_worker, p_conversation_id, turn),
	    p_sender, p_send_lease_seconds, p_send_limit, p_conversation_id);
END $$;
