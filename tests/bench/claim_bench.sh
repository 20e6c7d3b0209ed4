#!/bin/sh
# claim_bench.sh -- `make bench-claim`: the claim with a large open backlog.
#
# A throwaway cluster, the schema, BENCH_CLAIM_ROWS (300,000) unanswered
# inbound messages over BENCH_CLAIM_CONVS (100,000) doctors, linked to
# their conversations as mg_claim links them. Then BENCH_CLAIM_RUNS (50)
# claims of BENCH_CLAIM_LIMIT (100) turns, each in its own transaction
# rolled back (so each claims the same oldest conversations), timed by
# the server (clock_timestamp around the call). Two calls are timed:
#   mg_claim         picking and leasing the turns (the part that
#                    aggregated the whole backlog before sql/0016);
#   mg_claim_turns   what the worker calls: the same plus each turn's
#                    context (transcript, memory, flag) and the rate limit.
# Prints the median and the worst of each, and the plan of the pick.
#
#   tests/bench/claim_bench.sh bin/modegate
# SPDX-License-Identifier: MIT
set -eu
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
cd "$(dirname "$0")/../.."
rows=${BENCH_CLAIM_ROWS:-300000}
convs=${BENCH_CLAIM_CONVS:-100000}
runs=${BENCH_CLAIM_RUNS:-50}
limit=${BENCH_CLAIM_LIMIT:-100}
. tests/lib/pg.sh

tmp=$(mktemp -d /tmp/modegate-claim.XXXXXX)
chmod 755 "$tmp"
trap 'pg_stop "$tmp/pg"; rm -rf "$tmp"' EXIT INT TERM
pg_start "$tmp/pg" >/dev/null
createdb bench
export DATABASE_URL="postgresql://modegate@127.0.0.1:$PGPORT/bench"
"$bin" migrate >/dev/null

psql -X -q -v ON_ERROR_STOP=1 -d bench <<SQL
INSERT INTO inbox (wamid, phone_number_id, sender_key, wa_id, msg_type,
    wa_timestamp, received_at, raw)
SELECT 'wamid.B' || g, 'PNB', '55119' || lpad((g % $convs)::text, 8, '0'),
    '55119' || lpad((g % $convs)::text, 8, '0'), 'text',
    now() - interval '1 hour' + g * interval '1 ms',
    now() - interval '1 hour' + g * interval '1 ms',
    jsonb_build_object('text', jsonb_build_object('body', 'oi ' || g))
FROM generate_series(1, $rows) g;
SELECT mg_link_inbox($rows);
VACUUM ANALYZE;
SQL

timeit() {	# timeit NAME CALL
	psql -X -q -At -v ON_ERROR_STOP=1 -d bench >"$tmp/t.out" <<SQL
CREATE TEMP TABLE t (ms double precision);
DO \$\$
DECLARE
	t0	timestamptz;
	n	int;
BEGIN
	FOR i IN 1..$runs LOOP
		t0 := clock_timestamp();
		SELECT count(*) INTO n FROM $2;
		IF n <> $limit THEN
			RAISE EXCEPTION 'claimed % turns, not $limit', n;
		END IF;
		INSERT INTO t VALUES (extract(epoch FROM clock_timestamp() - t0) * 1000);
		-- undo the claim: every run claims the same oldest turns
		UPDATE inbox SET state = 'pending', claimed_by = NULL,
		    claimed_at = NULL WHERE state = 'claimed';
		UPDATE conversations SET lease_owner = NULL, lease_until = NULL,
		    turn_starts = '{}', next_turn_at = NULL, next_attempt_at = NULL
		WHERE lease_owner IS NOT NULL;
	END LOOP;
END \$\$;
SELECT format('%s: %s turns of %s open messages: median %s ms, worst %s ms (%s runs)',
    '$1', $limit, (SELECT count(*) FROM inbox WHERE state = 'pending'),
    round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 2),
    round(max(ms)::numeric, 2), count(*)) FROM t;
SQL
	cat "$tmp/t.out"
}

timeit mg_claim "mg_claim('bench', 60, 0, $limit)"
timeit mg_claim_turns "mg_claim_turns('bench', 60, 0, $limit, 6, 60, 20, 5)"
psql -X -q -At -d bench -c "EXPLAIN (COSTS OFF) SELECT cv.id FROM conversations cv
    WHERE cv.open_first_id IS NOT NULL AND (cv.lease_until IS NULL OR cv.lease_until < now())
    AND (cv.next_attempt_at IS NULL OR cv.next_attempt_at <= now())
    AND cv.open_newest <= now() ORDER BY cv.open_first_id LIMIT $limit
    FOR NO KEY UPDATE OF cv SKIP LOCKED" | sed 's/^/  plan: /'
