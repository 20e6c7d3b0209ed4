# multi_session.sh -- sourced by tests/cli/sql_turn.sh (cluster running,
# schema applied): checks that need committed data or several sessions.
# SPDX-License-Identifier: MIT

# check NAME SQL: "ok" when SQL returns t.
check() {
	if [ "$(psql -X -At -c "$2" 2>&1)" = t ]; then
		echo "ok - multi_session: $1"
	else
		echo "not ok - multi_session: $1"
		psql -X -At -c "$2" 2>&1 | sed 's/^/# /' | head -5
	fi
}

# NOTIFY reaches a listener when a flag changes (committed).
psql -X -q -c 'LISTEN modegate_flags' \
    -c "UPDATE feature_flags SET value = 'shadow', updated_by = 'test', reason = 'notify' WHERE name = 'conversation_mode_enabled'" \
    -c 'SELECT 1' >"$tmp/notify.log" 2>&1
if grep -q 'notification "modegate_flags" with payload ".*"value" *: *"shadow"' "$tmp/notify.log"; then
	echo "ok - multi_session: a flag change is NOTIFYed on modegate_flags with its new value"
else
	echo "not ok - multi_session: a flag change is NOTIFYed on modegate_flags"
	sed 's/^/# /' "$tmp/notify.log"
fi
psql -X -q -c "UPDATE feature_flags SET value = 'on', updated_by = 'test', reason = 'restore' WHERE name = 'conversation_mode_enabled'"

# Four sessions run the claim → commit loop while messages keep arriving:
# each message is answered once, in order, never by two workers at once.
psql -X -q -v ON_ERROR_STOP=1 <<'SQL' >"$tmp/ms.log" 2>&1 || { echo "not ok - multi_session: setup"; sed 's/^/# /' "$tmp/ms.log"; }
CREATE TABLE t_ms (done boolean NOT NULL);
INSERT INTO t_ms VALUES (false);
CREATE TABLE t_ms_fail (worker text, conversation_id bigint, r jsonb);
-- One worker: claim (own transaction), then each turn's commit in its
-- own transaction, until the feeder is done and nothing is open.
CREATE PROCEDURE t_worker(w text) LANGUAGE plpgsql AS $$
DECLARE
	claims	jsonb;
	j	jsonb;
	r	jsonb;
	i	int := 0;
BEGIN
	LOOP
		i := i + 1;
		EXIT WHEN i > 3000;
		SELECT coalesce(jsonb_agg(x), '[]') INTO claims
		FROM mg_claim(w, 30, 0, 2) x;
		COMMIT;
		FOR j IN SELECT * FROM jsonb_array_elements(claims) LOOP
			PERFORM pg_sleep(random() * 0.003);
			r := mg_commit_turn(w, (j ->> 'conversation_id')::bigint,
			    jsonb_build_object('outbox', jsonb_build_array(
				jsonb_build_object('kind', 'text', 'payload',
				    jsonb_build_object('type', 'text', 'text',
					jsonb_build_object('body', w || '|' ||
					    (j -> 'inbox_ids')::text))))));
			IF NOT (r ->> 'ok')::boolean THEN
				INSERT INTO t_ms_fail VALUES (w,
				    (j ->> 'conversation_id')::bigint, r);
			END IF;
			COMMIT;
		END LOOP;
		IF jsonb_array_length(claims) = 0 THEN
			EXIT WHEN (SELECT done FROM t_ms) AND NOT EXISTS (
			    SELECT 1 FROM inbox WHERE state IN ('pending', 'claimed')
				AND phone_number_id = 'PNMS');
			PERFORM pg_sleep(0.005);
		END IF;
	END LOOP;
END $$;
SQL

pids=""
for w in 1 2 3 4; do
	psql -X -q -c "CALL t_worker('ms$w')" >"$tmp/w$w.log" 2>&1 &
	pids="$pids $!"
done
for wave in 1 2 3 4; do
	psql -X -q -c "INSERT INTO inbox (wamid, phone_number_id, sender_key, wa_id,
	    msg_type, wa_timestamp, raw)
	    SELECT 'ms.$wave.' || g, 'PNMS', '55119700' || lpad(g::text, 4, '0'),
		'55119700' || lpad(g::text, 4, '0'), 'text', now(),
		jsonb_build_object('text', jsonb_build_object('body', 'msg $wave'))
	    FROM generate_series(1, 40) g"
	sleep 0.2
done
psql -X -q -c "UPDATE t_ms SET done = true"
for p in $pids; do
	wait "$p"
done

check "160 messages from 40 doctors in 4 waves, 4 sessions: every message done" \
    "SELECT count(*) = 160 FROM inbox WHERE phone_number_id = 'PNMS' AND state = 'done'"
check "no commit lost its lease (never two workers on one conversation)" \
    "SELECT count(*) = 0 FROM t_ms_fail"
check "each message answered exactly once" \
    "SELECT count(*) = 160 AND count(DISTINCT id) = 160 FROM (
	SELECT jsonb_array_elements_text(split_part(payload->'text'->>'body', '|', 2)::jsonb)::bigint AS id
	FROM outbox o JOIN conversations c ON c.id = o.conversation_id
	WHERE c.phone_number_id = 'PNMS') x"
check "per conversation, replies follow the messages' order" \
    "SELECT bool_and(ok) FROM (SELECT id > coalesce(lag(id) OVER (PARTITION BY conversation_id ORDER BY oid, pos), 0) AS ok
	FROM (SELECT o.conversation_id, o.id AS oid, e.pos, e.id::bigint AS id
	    FROM outbox o JOIN conversations c ON c.id = o.conversation_id,
	    jsonb_array_elements_text(split_part(o.payload->'text'->>'body', '|', 2)::jsonb)
		WITH ORDINALITY e(id, pos)
	    WHERE c.phone_number_id = 'PNMS') x) y"
check "the work was shared by several sessions" \
    "SELECT count(DISTINCT split_part(payload->'text'->>'body', '|', 1)) > 1
	FROM outbox o JOIN conversations c ON c.id = o.conversation_id
	WHERE c.phone_number_id = 'PNMS'"
check "no lease left behind" \
    "SELECT count(*) = 0 FROM conversations WHERE phone_number_id = 'PNMS' AND lease_owner IS NOT NULL"
for w in 1 2 3 4; do
	if [ -s "$tmp/w$w.log" ]; then
		sed "s/^/# w$w: /" "$tmp/w$w.log"
	fi
done

# mg_commit_turn locks the conversation FOR NO KEY UPDATE: while a commit
# is open, another session can still insert a row referencing the
# conversation (its foreign-key check takes FOR KEY SHARE, which FOR
# UPDATE would block).
psql -X -q -v ON_ERROR_STOP=1 -c "INSERT INTO conversations (phone_number_id, wa_id, lease_owner, lease_until) VALUES ('PNLK', '5511900000777', 'wlk', now() + interval '5 min')" >/dev/null
psql -X -q -c "BEGIN" \
    -c "SELECT mg_commit_turn('wlk', (SELECT id FROM conversations WHERE phone_number_id = 'PNLK'), '{}')" \
    -c "SELECT pg_sleep(3)" -c "ROLLBACK" >"$tmp/lk.log" 2>&1 &
lkpid=$!
sleep 1
PGOPTIONS='-c lock_timeout=1s' check "a commit in progress does not block an insert referencing its conversation" \
    "WITH i AS (INSERT INTO doctor_memory (conversation_id, fact) SELECT id, 'lock test' FROM conversations WHERE phone_number_id = 'PNLK' RETURNING 1) SELECT count(*) = 1 FROM i"
wait $lkpid

# A message another session is linking (its row locked, still unlinked)
# holds its doctor's conversation back from the claim: the later
# message, already linked, is not answered before it (sql/0021).
psql -X -q -v ON_ERROR_STOP=1 -c "INSERT INTO inbox (wamid, phone_number_id, sender_key, wa_id, msg_type, wa_timestamp, raw)
    VALUES ('ul.1', 'PNUL', '5511900000888', '5511900000888', 'text', now(), '{\"text\": {\"body\": \"um\"}}')" \
    -c "SELECT mg_link_inbox()" \
    -c "INSERT INTO inbox (wamid, phone_number_id, sender_key, wa_id, msg_type, wa_timestamp, raw)
    VALUES ('ul.2', 'PNUL', '5511900000888', '5511900000888', 'text', now(), '{\"text\": {\"body\": \"dois\"}}')" >/dev/null
psql -X -q -c "BEGIN" -c "SELECT 1 FROM inbox WHERE wamid = 'ul.2' FOR UPDATE" \
    -c "SELECT pg_sleep(2)" -c "COMMIT" >"$tmp/ul.log" 2>&1 &
ulpid=$!
sleep 0.7
check "a conversation whose doctor has a message still being linked is not claimed" \
    "SELECT count(*) = 0 FROM mg_claim('wul', 30, 0, 10) x
	WHERE x ->> 'conversation_id' = (SELECT id::text FROM conversations WHERE phone_number_id = 'PNUL')"
wait $ulpid
check "once linked, the claim takes both messages, in order" \
    "SELECT jsonb_agg(i.wamid ORDER BY e.n) = '[\"ul.1\", \"ul.2\"]'
	FROM mg_claim('wul', 30, 0, 10) x,
	    jsonb_array_elements_text(x -> 'inbox_ids') WITH ORDINALITY e(id, n)
	    JOIN inbox i ON i.id = e.id::bigint
	WHERE x ->> 'conversation_id' = (SELECT id::text FROM conversations WHERE phone_number_id = 'PNUL')"
