#!/bin/sh
# sql_turn.sh -- the turn's SQL (sql/NNNN_*.sql, then sql/functions/*.sql,
# then the seed) tested with pgTAP on a
# throwaway cluster: every tests/sql/test_*.sql through pg_prove, then the
# checks that need committed data or several sessions (NOTIFY, concurrent
# claims, tests/sql/multi_session.sh), and the C test of the queries'
# group commit (test_dbq from MG_TEST_BUILD, default build). TAP on stdout.
# SPDX-License-Identifier: MIT
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/pg.sh

if ! command -v pg_prove >/dev/null 2>&1 ||
    ! ls /usr/share/postgresql/*/extension/pgtap.control >/dev/null 2>&1; then
	echo "not ok 1 - pgTAP and pg_prove installed (deploy/install-deps.sh)"
	exit 1
fi

tmp=$(mktemp -d /tmp/mg-sqlturn.XXXXXX)
chmod 755 "$tmp"
trap 'pg_stop "$tmp"; rm -rf "$tmp"' EXIT INT TERM
PG_FSYNC=off pg_start "$tmp" || { echo "not ok 1 - cluster starts"; exit 1; }

psqlq() {
	psql -X -q -v ON_ERROR_STOP=1 "$@"
}

for f in sql/[0-9][0-9][0-9][0-9]_*.sql sql/functions/*.sql \
    sql/seed_demo.sql; do
	psqlq -1 -f "$f" >"$tmp/apply.log" 2>&1 ||
		{ echo "not ok 1 - apply $f"; sed 's/^/# /' "$tmp/apply.log"; exit 1; }
done
echo "ok - migrations and seed apply"
psqlq -c 'CREATE EXTENSION pgtap' >/dev/null 2>&1 ||
	{ echo "not ok 1 - CREATE EXTENSION pgtap"; exit 1; }

# Each assertion becomes one "ok - file: name" line for tests/run.sh.
for t in tests/sql/test_*.sql; do
	name=$(basename "$t" .sql)
	pg_prove --verbose "$t" >"$tmp/prove.log" 2>&1
	rc=$?
	grep -E '^(not )?ok [0-9]+' "$tmp/prove.log" | sed -E \
	    -e "s/^not ok [0-9]+ (- )?/not ok - $name: /" \
	    -e "s/^ok [0-9]+ (- )?/ok - $name: /"
	if [ "$rc" != 0 ]; then
		echo "not ok - $name: pg_prove exit $rc"
		grep -vE '^(not )?ok [0-9]+' "$tmp/prove.log" | sed 's/^/# /' | tail -40
	fi
done

# Checks with committed data and several sessions.
. tests/sql/multi_session.sh

# The queued queries' group commit (src/db/queue.c), on this cluster.
dbq=${MG_TEST_BUILD:-build}/tests/test_dbq
if [ -x "$dbq" ]; then
	CMOCKA_MESSAGE_OUTPUT=TAP "$dbq" 2>"$tmp/dbq.log" |
	    grep -E '^(not )?ok [0-9]' | sed -E 's/^(not )?ok [0-9]+ (- )?/\1ok - test_dbq: /'
else
	echo "not ok - test_dbq built ($dbq)"
fi
# Failures are the "not ok" lines above (tests/run.sh counts them).
exit 0
