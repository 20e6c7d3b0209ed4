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
# at a fixed 1,000 requests/s with tests/bench/rateload, and the same wrk
# run with the worker answering as in service ("ingest with worker").
#
# Turns (issue 15), with tests/bench/fakepeer as the LLM and the Graph API:
# an open-loop step test ("turns sustained", see steps()) and 10,000 LLM
# calls in flight against a 2 s LLM (see inflight()); then the issue's
# targets, PASS or FAIL, from the figures of this run.
#
#   tests/bench/run.sh bin/modegate
#   BENCH_SECS=15 (each wrk run and each step)
#   BENCH_ONLY=ingest|turn|steps|inflight|intent   (turn = steps + inflight)
#   BENCH_STEPS="100 200 400 800 1600"  BENCH_INFLIGHT=10000  BENCH_PROFILE=1
#   BENCH_WORKER_COALESCE_MS=0 (the double-texting window of the ingest
#   run with the worker answering; the service's default is 2000)
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
cc -O2 -o "$out/fakepeer" tests/bench/fakepeer.c \
	$(pkg-config --cflags --libs libevent json-c)
# 10,000 turns in flight hold 10,000 LLM connections in modegate and as
# many in the fake: every process started from here may open all the
# files the hard limit allows (an operator sets LimitNOFILE likewise).
ulimit -n "$(ulimit -Hn)"
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
	echo "$line" >"$tmp/fig.$1"
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

# BENCH_PROFILE=1: clusters started with pg_stat_statements (track all,
# planning too); profile_on [DB] creates it, profile_dump NAME [DB]
# writes the statements (nested ones too) by total time, with their
# calls, plannings, mean execution and planning times and JIT time, to
# build/bench/NAME_profile.txt.
[ "${BENCH_PROFILE:-0}" = 1 ] && export PG_OPTS="$PG_OPTS \
	-c shared_preload_libraries=pg_stat_statements \
	-c pg_stat_statements.track=all \
	-c pg_stat_statements.track_planning=on"
profile_on() {
	[ "${BENCH_PROFILE:-0}" = 1 ] || return 0
	psql -qX ${1:+-d "$1"} -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
}
profile_dump() {
	[ "${BENCH_PROFILE:-0}" = 1 ] || return 0
	psql -qX ${2:+-d "$2"} -c "SELECT calls, plans, round(total_exec_time::numeric, 1) AS total_ms,
		round(mean_exec_time::numeric, 3) AS mean_ms,
		round(mean_plan_time::numeric, 3) AS plan_ms,
		round((jit_generation_time + jit_emission_time)::numeric, 1) AS jit_ms,
		left(regexp_replace(query, '\s+', ' ', 'g'), 110) AS query
		FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		ORDER BY total_exec_time + total_plan_time DESC LIMIT 40" >"$out/$1_profile.txt"
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
	profile_on
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
	echo "$line" >"$tmp/fig.rate1000"
	say "$(printf '%-22s %10s req/s  p50 %7s ms  p99 %7s ms  non-200 %s' \
		"modegate @1000/s" "$(field "$line" rps)" "$(field "$line" p50_ms)" \
		"$(field "$line" p99_ms)" "$(($(field "$line" non200) + $(field "$line" errors)))")"
	profile_dump ingest
	kill "$mgpid"; wait "$mgpid" 2>/dev/null || true

	# 1b. the same with the worker answering, as in service: a fresh
	# database, the offline LLM, dry-run sending (each turn claims,
	# commits and records its reply while wrk posts).
	psql -qX -d postgres -c "CREATE DATABASE benchw" >/dev/null
	python3 "$kit/gen_payloads.py" -n "$n" -s "$secret" -o "$tmp/mgw.tsv" \
		--tag-file "$tmp/mgw.tag" 2>/dev/null
	DATABASE_URL=${DATABASE_URL%/*}/benchw "$bin" migrate >/dev/null
	profile_on benchw
	DATABASE_URL=${DATABASE_URL%/*}/benchw MODEGATE_COALESCE_MS=${BENCH_WORKER_COALESCE_MS:-0} \
		"$bin" serve 2>"$tmp/servew.log" &
	mgpid=$!
	pids="$pids $mgpid"
	wait_http "$port"
	run_wrk modegate-worker "$port" "$tmp/mgw.tsv"
	done_n=$(psql -qtAX -d benchw -c "SELECT count(*) FROM inbox WHERE state <> 'pending'")
	profile_dump ingest_worker benchw
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
	say "$(python3 -c "print('  modegate = %.1fx the Node peer (target >= 6x), %.0f%% of the verify ceiling (target >= 50%%)' % ($mg/$nd, 100*$mg/$ce))")"
}

# start_peer NAME [ARGS]: tests/bench/fakepeer (the fake LLM and Graph API,
# C on libevent) on a free port; sets FAKE_URL.
start_peer() {
	name=$1
	shift
	pf=$(mktemp "$tmp/$name.port.XXXXXX")
	"$out/fakepeer" -p 0 "$@" >"$pf" 2>"$out/fake_$name.err" &
	pids="$pids $!"
	i=0
	until [ -s "$pf" ]; do
		i=$((i + 1)); [ $i -gt 50 ] && { echo "bench: fakepeer $name did not start" >&2; exit 1; }
		sleep 0.1
	done
	FAKE_URL=http://127.0.0.1:$(head -1 "$pf")
}

# stat URL KEY: one counter of a fakepeer's /__stats (which also flushes
# its replies log).
stat() {
	curl -s "$1/__stats" | python3 -c "import json,sys; print(json.load(sys.stdin)['$2'])"
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

# The turn runs' database: a cluster of its own (the ingest run leaves
# 300k unanswered rows and a vacuum to do), its WAL warmed, the demo seed.
turn_db_ready=0
turn_db() {
	[ $turn_db_ready = 1 ] && return 0
	turn_db_ready=1
	secret=bench-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
	pg_stop "$tmp/pg"
	pg_start "$tmp/pgt"
	wal_warm
	"$bin" migrate >/dev/null 2>&1
	profile_on
	psql -qX -f sql/seed_demo.sql >/dev/null
}

# Turn capacity (issue 15): an open-loop step test. Each step posts signed
# webhooks, one new doctor per message, at a fixed rate for BENCH_SECS
# (arrivals scheduled, never waiting for answers: rateload), with
# zero-latency fakes; a turn's latency runs from its webhook's scheduled
# time to its reply reaching the fake Graph API. A step is sustained when
# every reply arrived within the step + 1 s, the p99 is under 100 ms and
# the backlog (webhooks scheduled minus replies arrived, every 100 ms) did
# not grow: its mean over the step's last quarter is at most 50 ms of
# arrivals (rate / 20) above its mean over the first quarter
# (turn_bench.py step). "turns sustained" is the highest step sustained.
# Between steps the backlog drains; a step whose backlog does not drain
# within 60 s ends the test (the higher steps are not run).
steps() {
	turn_db
	start_peer llm; llm=$FAKE_URL
	start_peer graph -o "$tmp/replies.log"; graph=$FAKE_URL
	serve_turns steps "$llm" "$graph"
	# Warm-up, not measured: 100 other doctors at 50/s open the
	# connections to the database and the fakes and fill PostgreSQL's
	# plan caches (cold, the first turns take 20-50 ms).
	python3 tests/bench/turn_bench.py payloads 100 "$secret" "$tmp/warm.tsv" 900000
	"$out/rateload" -r 50 -d 2 -c 8 -f "$tmp/warm.tsv" \
		"http://127.0.0.1:$MG_PORT/webhook" >/dev/null
	sleep 1
	say "turns, open-loop steps of ${secs}s, zero-latency fakes (fakepeer): webhook's scheduled time -> reply at the Graph API"
	first=0 best="" failed=0
	for r in ${BENCH_STEPS:-100 200 400 800 1600}; do
		if [ $failed = 1 ]; then
			say "  step $(printf '%5s' "$r")/s: not run (the backlog of a lower step did not drain in 60 s)"
			continue
		fi
		n=$((r * secs))
		python3 tests/bench/turn_bench.py payloads "$n" "$secret" "$tmp/step.tsv" "$first"
		"$out/rateload" -r "$r" -d "$secs" -c 64 -f "$tmp/step.tsv" \
			-l "$tmp/sent-$r.log" "http://127.0.0.1:$MG_PORT/webhook" >"$tmp/rate-$r.out"
		sleep 1.2	# the drain: replies up to 1 s after the step count
		stat "$graph" graph_sends >/dev/null
		line=$(python3 tests/bench/turn_bench.py step "$tmp/sent-$r.log" \
			"$tmp/replies.log" "$first" "$r" "$secs")
		say "$(printf '  step %5s/s: replies %s/%s (%s late)  p50 %7s ms  p99 %8s ms  max %8s ms  backlog %s -> %s  %s' \
			"$r" "$(field "$line" replied)" "$(field "$line" sent)" \
			"$(field "$line" late)" "$(field "$line" p50_ms)" \
			"$(field "$line" p99_ms)" "$(field "$line" max_ms)" \
			"$(field "$line" backlog_first)" "$(field "$line" backlog_last)" \
			"$([ "$(field "$line" pass)" = 1 ] && echo sustained || echo 'NOT sustained')")"
		[ "$(field "$line" pass)" = 1 ] &&
			best="$r $(field "$line" p50_ms) $(field "$line" p99_ms)"
		# Let what is left drain (at most 60 s) before the next step.
		first=$((first + n))
		i=0
		while [ "$(stat "$graph" graph_sends)" -lt $((100 + first)) ] && [ $i -lt 600 ]; do
			i=$((i + 1)); sleep 0.1
		done
		[ $i -ge 600 ] && failed=1
	done
	if [ -n "$best" ]; then
		set -- $best
		say "turns sustained: $1/s (p50 $2 ms, p99 $3 ms)"
		echo "$1" >"$tmp/fig.sustained"
	else
		say "turns sustained: 0/s (no step sustained)"
		echo 0 >"$tmp/fig.sustained"
	fi
	curl -s "http://127.0.0.1:$MG_PORT/metrics" >"$out/turn.metrics"
	# Each turn's stages (epoch seconds), to see where a slow one waited.
	psql -qAtX -F '	' -c "SELECT i.sender_key, extract(epoch FROM i.received_at),
		extract(epoch FROM i.claimed_at), extract(epoch FROM o.created_at),
		extract(epoch FROM o.sent_at) FROM inbox i JOIN outbox o
		ON o.inbox_id = i.id AND o.kind = 'text'" >"$out/turn_stages.tsv"
	# BENCH_PROFILE=1: the statements (nested ones too) by total time.
	profile_dump turn
	say "  per step, mean ms: $(python3 tests/bench/turn_bench.py steps "$out/turn.metrics")"
	kill "$MG_PID"; wait "$MG_PID" 2>/dev/null || true
}

# LLM calls in flight (issue 15): BENCH_INFLIGHT (10,000) new doctors in
# one second against a fake LLM answering after 2 s, room for as many
# turns (MODEGATE_MAX_TURNS): the peak of LLM requests open at once (the
# fake's own count), the process's peak RSS (VmHWM), and how long the
# load generator took to deliver the arrivals (first send due -> last 200).
inflight() {
	turn_db
	n=${BENCH_INFLIGHT:-10000}
	python3 tests/bench/turn_bench.py payloads "$n" "$secret" "$tmp/slow.tsv" 700000
	start_peer slowllm -d "${BENCH_INFLIGHT_DELAY_MS:-2000}"; slow=$FAKE_URL
	start_peer slowgraph; sgraph=$FAKE_URL
	serve_turns inflight "$slow" "$sgraph" MODEGATE_MAX_TURNS="$n" LLM_TIMEOUT=60 \
		${BENCH_INFLIGHT_ENV:-}
	line=$("$out/rateload" -r "$n" -d 1 -c 256 -f "$tmp/slow.tsv" \
		"http://127.0.0.1:$MG_PORT/webhook" | grep '^@@')
	# Until every turn called the LLM and the last answer came (2 s on).
	i=0
	while [ "$(stat "$slow" llm_requests)" -lt "$n" ] && [ $i -lt 300 ]; do
		i=$((i + 1)); sleep 0.1
	done
	sleep "$(python3 -c "print(${BENCH_INFLIGHT_DELAY_MS:-2000} / 1000 + 0.5)")"
	rss=$(awk '/VmHWM/ {print $2}' "/proc/$MG_PID/status")
	curl -s "$slow/__stats" >"$out/inflight.stats"
	peak=$(stat "$slow" llm_peak_in_flight)
	calls=$(stat "$slow" llm_requests)
	spread=$(python3 -c "import json; s=json.load(open('$out/inflight.stats')); print('%.2f' % (s['llm_last_t'] - s['llm_first_t']))")
	say "llm in flight: $peak peak, RSS $((rss / 1024)) MB, arrivals delivered in $(field "$line" last_s) s"
	say "  ($n webhooks, $(field "$line" ok200) answered 200; $calls LLM calls started over $spread s; $(stat "$sgraph" graph_sends) replies so far; targets: $n in flight, RSS < 200 MB, delivered within 1 s)"
	echo "$peak $((rss / 1024)) $(field "$line" last_s)" >"$tmp/fig.inflight"
	curl -s "http://127.0.0.1:$MG_PORT/metrics" >"$out/inflight.metrics"
	grep -E '^Vm|^Rss|^Threads' "/proc/$MG_PID/status" >"$out/inflight.status"
	# Where the resident memory is, by mapping (the heap, mmap'd arenas).
	awk '/^[0-9a-f]+-/ {m = $6 " " $1} /^Rss:/ {print $2, m}' \
		"/proc/$MG_PID/smaps" | sort -rn | head -8 >>"$out/inflight.status"
	profile_dump inflight
	kill "$MG_PID"; wait "$MG_PID" 2>/dev/null || true
}

# pf VALUE: PASS or FAIL from a python truth expression.
pf() { python3 -c "print('PASS' if ($1) else 'FAIL')"; }

# The issue 15 targets, from the figures this run took.
targets() {
	mg=$(field "$(cat "$tmp/fig.modegate" 2>/dev/null)" rps)
	mgw=$(field "$(cat "$tmp/fig.modegate-worker" 2>/dev/null)" rps)
	ce=$(field "$(cat "$tmp/fig.verify-ceiling" 2>/dev/null)" rps)
	nd=$(field "$(cat "$tmp/fig.node-peer" 2>/dev/null)" rps)
	p99=$(field "$(cat "$tmp/fig.rate1000" 2>/dev/null)" p99_ms)
	st=$(cat "$tmp/fig.sustained" 2>/dev/null || true)
	say "targets (issue 15), this run:"
	if [ -n "$st" ] && [ -n "$mg" ]; then
		say "  $(pf "$st >= 0.25 * $mg")  sustained turns $st/s >= 25 % of ingest alone ($(python3 -c "print('%.0f' % (0.25 * $mg))")/s)"
	else
		say "  not measured: sustained turns >= 25 % of ingest alone (needs BENCH_ONLY=all)"
	fi
	if [ -n "$mg" ]; then
		say "  $(pf "$mgw >= 0.7 * $mg")  ingest with worker $mgw req/s >= 70 % of ingest alone ($(python3 -c "print('%.0f %%' % (100 * $mgw / $mg))"))"
		say "  $(pf "$mg >= 0.5 * $ce")  ingest alone $mg req/s >= 50 % of the verify ceiling ($(python3 -c "print('%.0f %%' % (100 * $mg / $ce))"))"
		say "  $(pf "$mg >= 6 * $nd")  ingest alone >= 6x the Node peer ($(python3 -c "print('%.1fx' % ($mg / $nd))"))"
		say "  $(pf "$p99 < 5")  p99 at a fixed 1,000 webhooks/s $p99 ms < 5 ms"
	fi
	if [ -s "$tmp/fig.inflight" ]; then
		set -- $(cat "$tmp/fig.inflight")
		say "  $(pf "$1 >= ${BENCH_INFLIGHT:-10000}")  llm in flight $1 >= ${BENCH_INFLIGHT:-10000}"
		say "  $(pf "$2 < 200")  peak RSS $2 MB < 200 MB"
		say "  $(pf "$3 <= 1.0")  arrivals delivered in $3 s <= 1 s"
	fi
}

case "${BENCH_ONLY:-all}" in
all | ingest) ingest ;;
esac
case "${BENCH_ONLY:-all}" in
all | turn | steps) steps ;;
esac
case "${BENCH_ONLY:-all}" in
all | turn | inflight) inflight ;;
esac
case "${BENCH_ONLY:-all}" in
all | ingest | turn | steps | inflight) targets ;;
esac
if [ "${BENCH_ONLY:-all}" = all ] || [ "${BENCH_ONLY:-all}" = intent ]; then
	[ -f tests/bench/intent_bench.c ] && make --no-print-directory bench-intent | tee -a "$results"
fi
echo "bench: results in $results" >&2
