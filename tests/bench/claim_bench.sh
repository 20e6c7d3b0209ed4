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

timeit() {	# timeit NAME CALL: each run its own transaction, rolled
		# back (every run claims the same oldest turns), timed by psql
	{
		echo '\\timing on'
		i=0
		while [ $i -lt "$runs" ]; do
			echo "BEGIN;"
			echo "SELECT count(*) FROM $2;"
			echo "ROLLBACK;"
			i=$((i + 1))
		done
	} >"$tmp/t.sql"
	psql -X -q -At -v ON_ERROR_STOP=1 -d bench -f "$tmp/t.sql" >"$tmp/t.out"
	# the lines: count, then "Time:" for BEGIN, the claim, ROLLBACK
	python3 - "$tmp/t.out" "$1" "$limit" "$runs" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
t = [float(m.group(1)) for m in
     (re.match(r"Time: ([0-9.]+) ms", l) for l in lines) if m]
counts = [l for l in lines if re.fullmatch(r"[0-9]+", l)]
claims = sorted(t[1::3])
assert all(c == sys.argv[3] for c in counts), counts[:3]
print("%s: %s turns of each claim: median %.2f ms, p90 %.2f ms, worst %.2f ms "
      "(%d runs)" % (sys.argv[2], sys.argv[3], claims[len(claims) // 2],
                     claims[int(len(claims) * 0.9)], claims[-1], len(claims)))
PY
}

echo "open messages: $(psql -X -At -d bench -c "SELECT count(*) FROM inbox WHERE state = 'pending'") over $convs doctors"
timeit mg_claim "mg_claim('bench', 60, 0, $limit)"
timeit mg_claim_turns "mg_claim_turns('bench', 60, 0, $limit, 6, 60, 20, 5)"
psql -X -q -At -d bench -c "EXPLAIN (COSTS OFF) SELECT cv.id FROM conversations cv
    WHERE cv.open_first_id IS NOT NULL AND (cv.lease_until IS NULL OR cv.lease_until < now())
    AND (cv.next_attempt_at IS NULL OR cv.next_attempt_at <= now())
    AND cv.open_newest <= now() ORDER BY cv.open_first_id LIMIT $limit
    FOR NO KEY UPDATE OF cv SKIP LOCKED" | sed 's/^/  plan: /'
