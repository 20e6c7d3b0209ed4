#!/bin/sh
# sql_baseline.sh -- SQL as code (sql/NNNN_*.sql + sql/functions/*.sql):
# `modegate migrate` on a fresh database and on a database that ran the
# previous baseline (tests/sql/baseline_0009.sql: functions in numbered
# migrations) give the same schema -- every function (pg_get_functiondef),
# view (pg_get_viewdef), trigger (pg_get_triggerdef), table column,
# constraint, index and sequence, and the seeded flag rows; a second
# migrate changes nothing; every function, view and trigger is created in
# exactly one file of sql/. TAP on stdout.
# SPDX-License-Identifier: MIT
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/pg.sh
bin=${MODEGATE_BIN:-bin/modegate}

tmp=$(mktemp -d /tmp/mg-sqlbase.XXXXXX)
chmod 755 "$tmp"
trap 'pg_stop "$tmp"; [ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT INT TERM
PG_FSYNC=off pg_start "$tmp" || { echo "not ok 1 - cluster starts"; exit 1; }
base_url=${DATABASE_URL%/*}
n=0

tap() {	# tap OK DESCRIPTION [DETAIL-FILE]
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		[ -n "${3:-}" ] && sed 's/^/# /' "$3" | head -40
	fi
}

migrate() {	# migrate DB OUTFILE
	DATABASE_URL="$base_url/$1" MODEGATE_RULES_DIR="$PWD" "$bin" migrate \
	    >"$2" 2>&1
}

# Every definition the schema holds, one sorted section per kind.
defs() {	# defs DB OUTFILE
	psql -X -q -At -v ON_ERROR_STOP=1 -d "$1" >"$2" 2>&1 <<'EOF'
SELECT '== function ' || p.oid::regprocedure::text || E'\n' ||
    pg_get_functiondef(p.oid)
FROM pg_proc p JOIN pg_namespace s ON s.oid = p.pronamespace
WHERE s.nspname = 'public' ORDER BY 1;
SELECT '== view ' || c.relname || E'\n' || pg_get_viewdef(c.oid)
FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
WHERE s.nspname = 'public' AND c.relkind IN ('v', 'm') ORDER BY 1;
SELECT '== trigger ' || t.tgname || ' ' || t.tgenabled::text || ' ' ||
    pg_get_triggerdef(t.oid)
FROM pg_trigger t WHERE NOT t.tgisinternal ORDER BY 1;
SELECT '== column ' || c.relname || '.' || a.attnum || ' ' || a.attname ||
    ' ' || format_type(a.atttypid, a.atttypmod) ||
    CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END ||
    coalesce(' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid), '')
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace s ON s.oid = c.relnamespace
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE s.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm')
    AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY c.relname, a.attnum;
SELECT '== constraint ' || conrelid::regclass || ' ' || conname || ' ' ||
    pg_get_constraintdef(oid)
FROM pg_constraint WHERE connamespace = 'public'::regnamespace ORDER BY 1;
SELECT '== index ' || indexdef FROM pg_indexes
WHERE schemaname = 'public' ORDER BY 1;
SELECT '== sequence ' || sequencename || ' ' || data_type || ' ' ||
    increment_by FROM pg_sequences WHERE schemaname = 'public' ORDER BY 1;
SELECT '== flag ' || name || ' ' || value || ' ' || percent || ' ' ||
    coalesce(updated_by, '-') || ' ' || coalesce(reason, '-')
FROM feature_flags ORDER BY 1;
SELECT '== flag change ' || id || ' ' || name || ' ' ||
    coalesce(old_value, '-') || ' ' || coalesce(new_value, '-') || ' ' ||
    coalesce(old_percent::text, '-') || ' ' ||
    coalesce(new_percent::text, '-') || ' ' || coalesce(changed_by, '-') ||
    ' ' || coalesce(reason, '-')
FROM feature_flag_changes ORDER BY id;
EOF
}

count() {	# count KIND FILE
	grep -c "^== $1 " "$2"
}

nver=$(ls sql/[0-9][0-9][0-9][0-9]_*.sql | wc -l)
nfn=$(ls sql/functions/*.sql | wc -l)
psql -X -q -d postgres -c 'CREATE DATABASE fresh' -c 'CREATE DATABASE prev' \
    >/dev/null

# A fresh database.
migrate fresh "$tmp/m1"
rc=$?
grep -q "^migrate: $nver applied, .*functions: $nfn files re-applied" \
    "$tmp/m1"
tap $((rc + $?)) "fresh: migrate applies $nver migrations and $nfn function files" "$tmp/m1"
defs fresh "$tmp/fresh"
tap $? "fresh: definitions read" "$tmp/fresh"
nf=$(count function "$tmp/fresh")
nv=$(count view "$tmp/fresh")
nt=$(count trigger "$tmp/fresh")
[ "$nf" -gt 0 ] && [ "$nv" -gt 0 ] && [ "$nt" -gt 0 ]
tap $? "fresh: $nf functions, $nv views, $nt triggers"

# Again: nothing to apply, the functions re-applied, nothing changes.
migrate fresh "$tmp/m2"
rc=$?
grep -q "^migrate: 0 applied, .*functions: $nfn files re-applied" "$tmp/m2"
tap $((rc + $?)) "fresh: a second migrate applies 0 and re-applies $nfn files" "$tmp/m2"
defs fresh "$tmp/fresh2"
diff "$tmp/fresh" "$tmp/fresh2" >"$tmp/d" 2>&1
tap $? "fresh: a second migrate changes no definition" "$tmp/d"

# The previous baseline (0001-0009 with the functions in them), migrated.
psql -X -q -v ON_ERROR_STOP=1 -d prev -f tests/sql/baseline_0009.sql \
    >"$tmp/r" 2>&1
tap $? "previous baseline restores" "$tmp/r"
migrate prev "$tmp/m3"
rc=$?
# the versioned migrations added since that baseline (0010 on)
nnew=$(ls sql | grep -cE '^(00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})_.*\.sql$')
grep -q "^migrate: $nnew applied, .*functions: $nfn files re-applied" "$tmp/m3"
tap $((rc + $?)) "previous baseline: migrate applies the $nnew newer and re-applies $nfn files" "$tmp/m3"
defs prev "$tmp/prev"
for kind in function view trigger column constraint index sequence flag; do
	# One kind's lines (a definition runs until the next "== ").
	awk -v k="== $kind " 'index($0, "== ") == 1 { on = index($0, k) == 1 }
	    on' "$tmp/fresh" >"$tmp/a"
	awk -v k="== $kind " 'index($0, "== ") == 1 { on = index($0, k) == 1 }
	    on' "$tmp/prev" >"$tmp/b"
	diff "$tmp/a" "$tmp/b" >"$tmp/d" 2>&1
	tap $? "previous baseline: every $kind as after a fresh migrate ($(count "$kind" "$tmp/fresh"))" "$tmp/d"
done
diff "$tmp/fresh" "$tmp/prev" >"$tmp/d" 2>&1
tap $? "previous baseline: the whole schema as after a fresh migrate" "$tmp/d"
migrate prev "$tmp/m4"
defs prev "$tmp/prev2"
diff "$tmp/prev" "$tmp/prev2" >"$tmp/d" 2>&1
tap $? "previous baseline: a second migrate changes no definition" "$tmp/d"

# Every function, view and trigger is created in exactly one file of sql/.
grep -rhoiE --include='*.sql' \
    'CREATE[[:space:]]+(OR[[:space:]]+REPLACE[[:space:]]+)?(FUNCTION|VIEW|TRIGGER)[[:space:]]+[a-z_0-9.]+' \
    sql | awk '{ print tolower($NF) }' | sed 's/^public\.//' | sort \
    >"$tmp/created"
uniq -d "$tmp/created" >"$tmp/d"
[ ! -s "$tmp/d" ]
tap $? "sql/: no function, view or trigger is created twice" "$tmp/d"
grep -rliE --include='*.sql' \
    'CREATE[[:space:]]+(OR[[:space:]]+REPLACE[[:space:]]+)?(FUNCTION|VIEW|TRIGGER)' \
    sql | grep -v '^sql/functions/' >"$tmp/d"
[ ! -s "$tmp/d" ]
tap $? "sql/: functions, views and triggers only in sql/functions/" "$tmp/d"
psql -X -q -At -d fresh >"$tmp/live" <<'EOF'
SELECT p.proname FROM pg_proc p
WHERE p.pronamespace = 'public'::regnamespace
UNION SELECT c.relname FROM pg_class c
WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('v', 'm')
UNION SELECT tgname FROM pg_trigger WHERE NOT tgisinternal
ORDER BY 1;
EOF
sort -u "$tmp/created" | diff - "$tmp/live" >"$tmp/d" 2>&1
tap $? "sql/: every function, view and trigger of the schema has its file ($(wc -l <"$tmp/live"))" "$tmp/d"
exit 0
