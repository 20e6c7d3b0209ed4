#!/bin/sh
# make bench: the benchmarks, with every figure taken in the same run.
#
# Ingest (issue 2): wrk, 2 threads x 64 connections, 15 s, with the fixed
# workload of ../shared/bench (unique signed bodies) against
#   1. modegate serve (PostgreSQL, group commit),
#   2. the reference libevent server with HMAC + json-c (no database):
#      the CPU ceiling,
#   3. the Node/Express + pg peer;
# then the inbox rows are checked against the 200s (200s <= rows <= bodies
# sent: requests in flight at the end commit uncounted), and latency is taken
# at a fixed 1,000 requests/s with tests/bench/rateload.
#
#   tests/bench/run.sh bin/modegate        (BENCH_SECS=15 BENCH_ONLY=ingest)
set -eu
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
cd "$(dirname "$0")/../.."
root=$(pwd)
kit=${BENCH_KIT:-$root/../shared/bench}
secs=${BENCH_SECS:-15}
out=$root/build/bench
mkdir -p "$out"
deploy/install-deps.sh bench
. tests/lib/pg.sh

tmp=$(mktemp -d /tmp/modegate-bench.XXXXXX)
chmod 755 "$tmp"	# the cluster runs as postgres when we are root
pids=""
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	pg_stop "$tmp/pg"
	pg_stop "$tmp/pgt"
	cp "$tmp/pgt/postgres.log" "$out/postgres.log" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

cc -O2 -o "$out/rateload" tests/bench/rateload.c \
	$(pkg-config --cflags --libs libevent)
results=$out/results.txt
: >"$results"
say() { echo "$*" | tee -a "$results"; }

# Parse one key of an "@@ k=v ..." line.
field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

# wait_http PORT: until something answers on 127.0.0.1:PORT.
wait_http() {
	i=0
	until curl -s -o /dev/null "http://127.0.0.1:$1/"; do
		i=$((i + 1))
		[ $i -gt 100 ] && { echo "bench: nothing on port $1" >&2; exit 1; }
		sleep 0.1
	done
}

# run_wrk NAME PORT PAYLOADS: prints the @@ line, records it.
run_wrk() {
	line=$(wrk -t2 -c64 -d"${secs}s" --latency -s "$kit/webhook.lua" \
		"http://127.0.0.1:$2/webhook" -- "$3" 2 | grep '^@@')
	rps=$(field "$line" rps)
	say "$(printf '%-22s %10s req/s  p50 %7s ms  p99 %7s ms  non-200 %s  wrapped %s' \
		"$1" "$rps" "$(field "$line" p50_ms)" "$(field "$line" p99_ms)" \
		"$(field "$line" non200)" "$(field "$line" wrapped)")"
	echo "$line" >"$out/$1.line"
}

# A database in service reuses its WAL segments; a new cluster creates
# each one, zero-filling 16 MB while every commit waits (a stall of
# 100-150 ms every 16 MB of WAL on this VM, which the latency figures
# would count). Write ~300 MB of WAL and checkpoint: with min_wal_size
# at 1 GB the segments are kept and recycled, as in steady state.
export PG_OPTS="${PG_OPTS:-} -c min_wal_size=1GB -c max_wal_size=2GB"
wal_warm() {
	psql -qX -c "CREATE TABLE bench_wal AS SELECT g, repeat('x', 1000) AS pad
		FROM generate_series(1, 250000) g" -c "DROP TABLE bench_wal" \
		-c "CHECKPOINT" >/dev/null
}

ingest() {
	[ -d "$kit" ] || { echo "bench: no $kit; skipping ingest" >&2; return 0; }
	secret=bench-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
	pg_start "$tmp/pg"
	wal_warm
	n=$((secs * 50000))
	echo "bench: generating $n bodies for modegate, $((secs * 15000)) for the Node peer" >&2
	python3 "$kit/gen_payloads.py" -n "$n" -s "$secret" -o "$tmp/mg.tsv" \
		--tag-file "$tmp/mg.tag" 2>/dev/null
	python3 "$kit/gen_payloads.py" -n $((secs * 15000)) -s "$secret" \
		-o "$tmp/node.tsv" --tag-file "$tmp/node.tag" 2>/dev/null

	# 1. modegate
	port=$(pg_free_port)
	export WHATSAPP_APP_SECRET=$secret WHATSAPP_VERIFY_TOKEN=bench \
		MODEGATE_LISTEN=127.0.0.1:$port MODEGATE_LOG_LEVEL=warn
	"$bin" migrate >/dev/null
	# Ingest alone, as the peers do: this process answers no turns
	# (MODEGATE_MAX_TURNS=0, the ingest-only role of a split deployment).
	MODEGATE_MAX_TURNS=0 "$bin" serve 2>"$tmp/serve.log" &
	mgpid=$!
	pids="$pids $mgpid"
	wait_http "$port"
	say "ingest, wrk -t2 -c64 -d${secs}s, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores"
	run_wrk modegate "$port" "$tmp/mg.tsv"
	tag=$(cat "$tmp/mg.tag")
	rows=$(psql -qtAX -c "SELECT count(*) FROM inbox WHERE wamid LIKE 'wamid.$tag%'")
	ok=$(field "$(cat "$out/modegate.line")" ok200)
	sent=$(field "$(cat "$out/modegate.line")" sent)
	# Requests in flight when wrk stops are committed without being
	# counted: every 200 must be a row, and no row may lack a body sent.
	wrapped=$(field "$(cat "$out/modegate.line")" wrapped)
	if [ "${wrapped:-0}" != 0 ]; then
		verdict="VOID (wrk reused message ids: generate more bodies)"
	elif [ -n "$ok" ] && [ -n "$sent" ] && [ "$rows" -ge "$ok" ] &&
	    [ "$rows" -le "$sent" ]; then
		verdict="zero loss"
	else
		verdict="LOSS OR MISMATCH"
	fi
	say "  inbox rows $rows for $ok answered 200 and $sent sent: $verdict"
	python3 "$kit/gen_payloads.py" -n 20000 -s "$secret" -o "$tmp/rate.tsv" 2>/dev/null
	line=$("$out/rateload" -r 1000 -d 10 -c 64 -f "$tmp/rate.tsv" \
		"http://127.0.0.1:$port/webhook" | grep '^@@')
	say "$(printf '%-22s %10s req/s  p50 %7s ms  p99 %7s ms  non-200 %s' \
		"modegate @1000/s" "$(field "$line" rps)" "$(field "$line" p50_ms)" \
		"$(field "$line" p99_ms)" "$(($(field "$line" non200) + $(field "$line" errors)))")"
	kill "$mgpid"; wait "$mgpid" 2>/dev/null || true

	# 1b. the same with the worker answering, as in service: a fresh
	# database, the offline LLM, dry-run sending (each turn claims,
	# commits and records its reply while wrk posts).
	psql -qX -d postgres -c "CREATE DATABASE benchw" >/dev/null
	python3 "$kit/gen_payloads.py" -n "$n" -s "$secret" -o "$tmp/mgw.tsv" \
		--tag-file "$tmp/mgw.tag" 2>/dev/null
	DATABASE_URL=${DATABASE_URL%/*}/benchw "$bin" migrate >/dev/null
	DATABASE_URL=${DATABASE_URL%/*}/benchw MODEGATE_COALESCE_MS=0 \
		"$bin" serve 2>"$tmp/servew.log" &
	mgpid=$!
	pids="$pids $mgpid"
	wait_http "$port"
	run_wrk modegate-worker "$port" "$tmp/mgw.tsv"
	done_n=$(psql -qtAX -d benchw -c "SELECT count(*) FROM inbox WHERE state <> 'pending'")
	kill "$mgpid"; wait "$mgpid" 2>/dev/null || true
	mgw=$(field "$(cat "$out/modegate-worker.line")" rps)
	say "$(python3 -c "print('ingest with worker: %d req/s (%.0f%% of ingest alone; %s messages taken by the worker meanwhile)' % ($mgw, 100*$mgw/$(field "$(cat "$out/modegate.line")" rps), '$done_n'))")"

	# 2. the CPU ceiling: libevent + HMAC + json-c, no database
	cc -O2 -DWITH_VERIFY "$kit/evhttp_ok.c" -o "$out/evhttp_verify" \
		$(pkg-config --cflags --libs libevent json-c libcrypto) -pthread
	port=$(pg_free_port)
	APP_SECRET=$secret "$out/evhttp_verify" -p "$port" -t 1 2>/dev/null &
	pids="$pids $!"
	wait_http "$port"
	run_wrk verify-ceiling "$port" "$tmp/mg.tsv"
	kill $!

	# 3. the Node/Express + pg peer
	rm -rf "$out/node-peer"
	cp -r "$kit/node-peer" "$out/node-peer"
	(cd "$out/node-peer" && npm ci --silent --no-audit --no-fund >/dev/null 2>&1 ||
		npm install --silent --no-audit --no-fund >/dev/null)
	port=$(pg_free_port)
	(cd "$out/node-peer" && APP_SECRET=$secret PORT=$port exec node server.js 2>/dev/null) &
	pids="$pids $!"
	wait_http "$port"
	run_wrk node-peer "$port" "$tmp/node.tsv"

	mg=$(field "$(cat "$out/modegate.line")" rps)
	ce=$(field "$(cat "$out/verify-ceiling.line")" rps)
	nd=$(field "$(cat "$out/node-peer.line")" rps)
	say "$(python3 -c "print('  modegate = %.1fx the Node peer (target >= 4x), %.0f%% of the verify ceiling (target >= 40%%)' % ($mg/$nd, 100*$mg/$ce))")"
}

# start_fake KIND [ARGS]: a fake peer on a free port; sets FAKE_URL.
start_fake() {
	kind=$1
	shift
	pf=$(mktemp "$tmp/$kind.port.XXXXXX")
	python3 "tests/fakes/fake_$kind.py" --port 0 "$@" >"$pf" 2>"$out/fake_$kind.err" &
	pids="$pids $!"
	i=0
	until [ -s "$pf" ]; do
		i=$((i + 1)); [ $i -gt 50 ] && { echo "bench: fake $kind did not start" >&2; exit 1; }
		sleep 0.1
	done
	FAKE_URL=http://127.0.0.1:$(head -1 "$pf")
}

# serve_turns NAME LLM_URL GRAPH_URL [VAR=VALUE...]: modegate answering
# turns with the fakes; sets MG_PID and MG_PORT.
serve_turns() {
	name=$1 llm=$2 graph=$3
	shift 3
	MG_PORT=$(pg_free_port)
	env WHATSAPP_APP_SECRET="$secret" WHATSAPP_VERIFY_TOKEN=bench \
		MODEGATE_LISTEN=127.0.0.1:$MG_PORT MODEGATE_LOG_LEVEL=warn \
		LLM_PROVIDER=anthropic LLM_API_KEY=bench LLM_BASE_URL="$llm" \
		WHATSAPP_TOKEN=bench WHATSAPP_API_BASE="$graph/v25.0" \
		MODEGATE_COALESCE_MS=0 "$@" "$bin" serve 2>"$tmp/$name.log" &
	MG_PID=$!
	pids="$pids $MG_PID"
	wait_http "$MG_PORT"
}

# Turn overhead (issue 4): webhook POST -> reply at the fake Graph API with
# zero-latency fakes at 200 turns/s; then 1,000 turns in flight against a
# fake LLM that takes 2 s, with the process's peak RSS.
turn() {
	secret=bench-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
	[ "${BENCH_PROFILE:-0}" = 1 ] && export PG_OPTS="${PG_OPTS:-} \
		-c shared_preload_libraries=pg_stat_statements \
		-c pg_stat_statements.track=all"
	# A cluster of its own: the ingest run leaves 300k unanswered rows
	# and a vacuum to do.
	pg_stop "$tmp/pg"
	pg_start "$tmp/pgt"
	wal_warm
	"$bin" migrate >/dev/null 2>&1
	[ "${BENCH_PROFILE:-0}" = 1 ] &&
		psql -qX -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
	psql -qX -f sql/seed_demo.sql >/dev/null
	n=$((200 * secs))
	python3 tests/bench/turn_bench.py payloads "$n" "$secret" "$tmp/turn.tsv"
	start_fake llm; llm=$FAKE_URL
	start_fake graph; graph=$FAKE_URL
	serve_turns turn "$llm" "$graph"
	# Warm-up, not measured: 100 other doctors at 50/s open the
	# connections to the database and the fakes and fill PostgreSQL's
	# plan caches (cold, the first turns take 20-50 ms).
	python3 tests/bench/turn_bench.py payloads 100 "$secret" "$tmp/warm.tsv" 900000
	"$out/rateload" -r 50 -d 2 -c 8 -f "$tmp/warm.tsv" \
		"http://127.0.0.1:$MG_PORT/webhook" >/dev/null
	sleep 1
	"$out/rateload" -r 200 -d "$secs" -c 32 -f "$tmp/turn.tsv" -l "$tmp/sent.log" \
		"http://127.0.0.1:$MG_PORT/webhook" >/dev/null
	i=0
	while [ "$(psql -qtAX -c "SELECT count(*) FROM outbox WHERE kind = 'text' AND state = 'sent'")" -lt "$((n + 100))" ] && [ $i -lt 300 ]; do
		i=$((i + 1)); sleep 0.1
	done
	line=$(python3 tests/bench/turn_bench.py latency "$tmp/sent.log" "$graph" "$out/turn_latency.tsv")
	say "turns @200/s, ${secs}s, zero-latency fakes: webhook POST -> reply at the Graph API"
	say "  $(echo "$line" | sed 's/^@@ //')   (target p99 < 20 ms)"
	curl -s "http://127.0.0.1:$MG_PORT/metrics" >"$out/turn.metrics"
	# Each turn's stages (epoch seconds), to see where a slow one waited.
	psql -qAtX -F '	' -c "SELECT i.sender_key, extract(epoch FROM i.received_at),
		extract(epoch FROM i.claimed_at), extract(epoch FROM o.created_at),
		extract(epoch FROM o.sent_at) FROM inbox i JOIN outbox o
		ON o.inbox_id = i.id AND o.kind = 'text'" >"$out/turn_stages.tsv"
	# BENCH_PROFILE=1: the statements (nested ones too) by total time.
	if [ "${BENCH_PROFILE:-0}" = 1 ]; then
		psql -qX -c "SELECT calls, round(total_exec_time::numeric, 1) AS total_ms,
			round(mean_exec_time::numeric, 3) AS mean_ms, left(regexp_replace(query, '\s+', ' ', 'g'), 110) AS query
			FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 25" >"$out/turn_profile.txt"
	fi
	say "  per step, mean ms: $(python3 tests/bench/turn_bench.py steps "$out/turn.metrics")"
	kill "$MG_PID"; wait "$MG_PID" 2>/dev/null || true

	# 1,200 doctors in one second, room for 1,200 turns: how many are in
	# flight at once is what the process keeps up with, not a cap.
	python3 tests/bench/turn_bench.py payloads 1200 "$secret" "$tmp/slow.tsv"
	start_fake llm --delay 2 --slim; slow=$FAKE_URL
	serve_turns slow "$slow" "$graph" MODEGATE_MAX_TURNS=1200 LLM_TIMEOUT=30
	"$out/rateload" -r 1200 -d 1 -c 64 -f "$tmp/slow.tsv" \
		"http://127.0.0.1:$MG_PORT/webhook" >/dev/null
	sleep 4
	rss=$(awk '/VmHWM/ {print $2}' "/proc/$MG_PID/status")
	line=$(python3 tests/bench/turn_bench.py inflight "$slow")
	say "turns with a 2 s LLM: $(echo "$line" | sed 's/^@@ //') peak_rss_mb=$((rss / 1024))   (targets >= 1000 in flight, RSS < 200 MB)"
	kill "$MG_PID"; wait "$MG_PID" 2>/dev/null || true
}

case "${BENCH_ONLY:-all}" in
all | ingest) ingest ;;
esac
case "${BENCH_ONLY:-all}" in
all | turn) turn ;;
esac
if [ "${BENCH_ONLY:-all}" = all ] || [ "${BENCH_ONLY:-all}" = intent ]; then
	[ -f tests/bench/intent_bench.c ] && make --no-print-directory bench-intent | tee -a "$results"
fi
echo "bench: results in $results" >&2
