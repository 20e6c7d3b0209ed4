#!/bin/sh
# alerts.sh -- deploy/prometheus/alerts.yml: promtool checks the rules and
# runs their unit tests (alerts_test.yml: each alert fires on its series
# and stays quiet on a near miss), and every metric the rules read is one
# a running `modegate serve` really exports (scraped from /metrics of a
# fresh instance on a throwaway cluster). TAP on stdout.
# SPDX-License-Identifier: MIT
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/pg.sh
bin=${MODEGATE_BIN:-bin/modegate}
rules=deploy/prometheus/alerts.yml
n=0

ok() {	# ok TEST-RESULT NAME
	n=$((n + 1))
	[ "$1" = 0 ] && echo "ok $n - $2" || echo "not ok $n - $2"
}

if ! command -v promtool >/dev/null 2>&1; then
	echo "not ok 1 - promtool installed (deploy/install-deps.sh test)"
	exit 1
fi
tmp=$(mktemp -d /tmp/mg-alerts.XXXXXX)
chmod 755 "$tmp"
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; wait 2>/dev/null;
	pg_stop "$tmp/pg"; rm -rf "$tmp"' EXIT INT TERM

promtool check rules "$rules" >"$tmp/check" 2>&1
ok $? "promtool check rules $rules"
grep -q SUCCESS "$tmp/check" || sed 's/^/# /' "$tmp/check"
promtool test rules deploy/prometheus/alerts_test.yml >"$tmp/test" 2>&1
rc=$?
ok $rc "promtool test rules: every alert's unit tests pass"
[ $rc = 0 ] || sed 's/^/# /' "$tmp/test" | head -60

# Every alert has a firing test.
fail=0
for a in $(sed -n 's/^ *- alert: *//p' "$rules"); do
	awk -v a="$a" '$1 == "alertname:" && $2 == a { f = 1; next }
	    f && /exp_labels/ { found = 1 } /eval_time/ { f = 0 }
	    END { exit !found }' deploy/prometheus/alerts_test.yml && continue
	echo "# alert $a has no test where it fires"
	fail=1
done
ok $fail "every alert has a unit test where it fires"

# The metrics the rules read, against a live /metrics.
PG_FSYNC=off pg_start "$tmp/pg" >/dev/null || { ok 1 "cluster starts"; exit 1; }
"$bin" migrate >"$tmp/migrate.log" 2>&1 || { ok 1 "migrate"; exit 1; }
port=$(pg_free_port)
WHATSAPP_APP_SECRET=s WHATSAPP_VERIFY_TOKEN=v LLM_PROVIDER=offline \
	WHATSAPP_TOKEN= MODEGATE_LISTEN=127.0.0.1:$port \
	MODEGATE_RULES_DIR=$(pwd) "$bin" serve >"$tmp/serve.log" 2>&1 &
pid=$!
i=0
# The database gauges appear with the first status query (every 5 s).
until curl -fsS "http://127.0.0.1:$port/metrics" 2>/dev/null |
    grep -q '^modegate_outbox_oldest_unsent_seconds '; do
	i=$((i + 1))
	[ $i -gt 150 ] && break
	sleep 0.1
done
curl -fsS "http://127.0.0.1:$port/metrics" >"$tmp/metrics" 2>&1
ok $? "a fresh modegate serves /metrics"
fail=0
# Names in the expressions must have samples; names the annotations
# mention (runbook lines) must at least be families (# HELP).
used=$(grep -vE '^ *(summary|description|runbook):' "$rules" |
	grep -o 'modegate_[a-z_]*' | sort -u)
for m in $used; do
	grep -q "^$m[{ ]" "$tmp/metrics" && continue
	echo "# $rules reads $m, which /metrics does not export"
	fail=1
done
[ "$(echo "$used" | wc -w)" -ge 9 ] || fail=1
ok $fail "every metric the rules read is exported ($(echo "$used" | wc -w) names)"
fail=0
for m in $(grep -E '^ *(summary|description|runbook):' "$rules" |
    grep -o 'modegate_[a-z_]*' | sort -u); do
	grep -q "^# HELP $m " "$tmp/metrics" && continue
	echo "# $rules mentions $m, which /metrics does not export"
	fail=1
done
ok $fail "every metric the runbooks mention is exported"
