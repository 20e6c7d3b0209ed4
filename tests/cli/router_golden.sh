#!/bin/sh
# The golden files of the core: the router's exhaustive decision table
# (tests/cases/router.golden) and whole turns, state + messages -> plan
# (tests/cases/turn.golden). Each is regenerated with the default rules and
# diffed. After a deliberate rule change:
#	build/tests/gen_router_golden > tests/cases/router.golden
#	build/tests/gen_turn_golden > tests/cases/turn.golden
set -u
cd "$(dirname "$0")/../.." || exit 1
# The generators sit next to the binary's build: build/tests for bin/,
# build/asan/tests for build/asan/bin/.
dir=build/tests
alt=$(dirname "${MODEGATE_BIN:-bin/modegate}")/../tests
case "${MODEGATE_BIN:-}" in */build/*) [ -x "$alt/gen_turn_golden" ] && dir=$alt ;; esac
echo "1..4"
out=$(mktemp)
trap 'rm -f "$out" "$out.2"' EXIT
n=0
for g in router turn; do
	gen=$dir/gen_${g}_golden
	n=$((n + 1))
	if "$gen" >"$out" && diff -u "tests/cases/$g.golden" "$out"; then
		echo "ok $n - $g decisions match tests/cases/$g.golden"
	else
		echo "not ok $n - $g decisions differ from tests/cases/$g.golden"
	fi
	n=$((n + 1))
	if "$gen" >"$out.2" && cmp -s "$out" "$out.2"; then
		echo "ok $n - the $g generator is deterministic"
	else
		echo "not ok $n - two runs of the $g generator differ"
	fi
done
