#!/bin/sh
# modegate guard over the labelled replies: tests/cases/guard.tsv (tuned on)
# and tests/cases/guard_holdout.tsv (written before tuning, never tuned on),
# then guard_fresh_tune.tsv / guard_fresh_holdout.tsv, written later without
# reading the patterns (the first tuned on, the second never).
# Each line is MODE<TAB>EXPECTED<TAB>reply, EXPECTED being OK or a claim id.
# A violation is caught when the guard prints VIOLATION with that id among
# the ids; a false positive is any VIOLATION on a line labelled OK. Misses
# are printed as "# ..." comments. Also the CLI's contract: the mode ->
# claims mapping of capabilities.json, usage and rule errors.
set -u
cd "$(dirname "$0")/../.." || exit 1
bin=${MODEGATE_BIN:-bin/modegate}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/lib/tap.sh


rules=$(pwd)

# score FILE: print "caught violations fp oks" and the misses as comments.
score() {
	: >"$tmp/scored"
	for m in discovery oferta followup reativacao; do
		awk -F'\t' -v m=$m '$1 == m' "$1" >"$tmp/in"
		cut -f3 "$tmp/in" | MODEGATE_RULES_DIR=$rules "$bin" guard \
		    --mode $m >"$tmp/out" 2>"$tmp/err" || cat "$tmp/err" >&2
		paste "$tmp/in" "$tmp/out" >>"$tmp/scored"
	done
	awk -F'\t' '
	$2 == "OK" { oks++; if ($4 != "OK") { fp++;
		printf "# false positive (%s, %s): %s\n", $1, $5, $3 } }
	$2 != "OK" { v++; hit = 0; k = split($5, ids, ",")
		for (i = 1; i <= k; i++) if (ids[i] == $2) hit = 1
		if (hit) c++; else printf "# missed %s (%s): %s\n", $2, $1, $3 }
	END { printf "%d %d %d %d\n", c, v, fp, oks }' "$tmp/scored"
}

# check FILE LABEL MIN_CATCH_PCT MAX_FP_PCT
check() {
	score "$1" >"$tmp/score"
	grep '^#' "$tmp/score"
	set -- "$@" $(grep -v '^#' "$tmp/score")
	# $5 caught, $6 violations, $7 false positives, $8 legitimate
	echo "# $2: caught $5/$6 violations, $7/$8 false positives"
	[ "$6" -gt 0 ] && [ $(($5 * 100)) -ge $(($3 * $6)) ]
	ok $? "$2: violations caught >= $3% ($5/$6)"
	[ "$8" -gt 0 ] && [ $(($7 * 100)) -le $(($4 * $8)) ]
	ok $? "$2: false positives <= $4% ($7/$8)"
}

check tests/cases/guard.tsv corpus 95 5
check tests/cases/guard_holdout.tsv holdout 85 10
# Written blind (before the patterns were read): fresh_tune was tuned on
# afterwards, fresh_holdout never; its bar is the measured 83% / 2% less a
# margin, so it tracks generalisation rather than memorisation.
check tests/cases/guard_fresh_tune.tsv fresh_tune 90 5
check tests/cases/guard_fresh_holdout.tsv fresh_holdout 80 5

# Every mode has at least 80 labelled replies across all the guard sets.
few=$(cat tests/cases/guard*.tsv | awk -F'\t' '{ n[$1]++ }
END { split("discovery oferta followup reativacao", m, " ")
	for (i = 1; i <= 4; i++) printf "%s=%d%s", m[i], n[m[i]],
	    n[m[i]] < 80 ? "(<80)" : "", i < 4 ? " " : "" }')
case $few in *"(<80)"*) false ;; *) true ;; esac
ok $? "every mode has >= 80 labelled replies ($few)"

# The mapping is honoured: with only negocia_valor forbidden in oferta, a
# booking confirmation passes there and a pay promise does not.
mkdir -p "$tmp/map/mode"
cp mode/claims.json "$tmp/map/mode/"
# caps OUT ID...: the repository's capabilities.json with oferta's
# forbidden claims replaced by the ids given.
caps() {
	python3 - mode/capabilities.json "$@" <<-'EOF'
	import json, sys
	c = json.load(open(sys.argv[1]))
	c["modes"]["oferta"]["forbidden_claims"] = sys.argv[3:]
	json.dump(c, open(sys.argv[2], "w"))
	EOF
}
caps "$tmp/map/mode/capabilities.json" negocia_valor
out=$(printf 'seu plantão está confirmado\nconsigo aumentar pra 2 mil\n' |
    MODEGATE_RULES_DIR=$tmp/map "$bin" guard --mode oferta | tr '\n\t' '| ')
[ "$out" = "OK|VIOLATION negocia_valor|" ]
ok $? "capabilities.json decides which claims a mode forbids ($out)"

printf 'x\n' | MODEGATE_RULES_DIR=$rules "$bin" guard --mode vendas \
    >/dev/null 2>"$tmp/err"
[ $? = 64 ] && grep -q 'unknown mode "vendas"' "$tmp/err"
ok $? "unknown mode is a usage error (exit 64)"

caps "$tmp/map/mode/capabilities.json" negocia_valor nao_existe
printf 'x\n' | MODEGATE_RULES_DIR=$tmp/map "$bin" guard --mode oferta \
    >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 78 ] && grep -q '^mode/capabilities.json: .*nao_existe' "$tmp/err"
ok $? "a claim id unknown to claims.json: exit 78 (got $rc)"
sed 's/^/# /' "$tmp/err"

cat >"$tmp/map/mode/claims.json" <<-'EOF'
{"claims": [
  {"id": "a", "prompt": "x", "patterns": ["nao .."]},
  {"id": "a", "prompt": "", "patterns": []}]}
EOF
printf 'x\n' | MODEGATE_RULES_DIR=$tmp/map "$bin" guard --mode oferta \
    >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 78 ] &&
    grep -q '^mode/claims.json: claims.0.patterns.0: ' "$tmp/err" &&
    grep -q '^mode/claims.json: claims.1.id: duplicate id "a"' "$tmp/err" &&
    grep -q '^mode/claims.json: claims.1.prompt: ' "$tmp/err" &&
    grep -q '^mode/claims.json: claims.1.patterns: no patterns' "$tmp/err"
ok $? "bad claims.json: every problem reported, exit 78 (got $rc)"
sed 's/^/# /' "$tmp/err"

# Without capabilities.json the mode's claims are unknown: a configuration
# error naming the file, like every other command (no silent fallback).
mkdir -p "$tmp/nocaps/mode"
cp mode/claims.json "$tmp/nocaps/mode/"
printf 'vc sumiu!\n' | MODEGATE_RULES_DIR=$tmp/nocaps "$bin" guard \
    --mode oferta >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc = 78 ] && [ ! -s "$tmp/out" ] &&
    grep -q '^mode/capabilities.json: ' "$tmp/err"
ok $? "no capabilities.json: exit 78 naming it (got $rc: $(cat "$tmp/err"))"
