#!/bin/sh
# The router's exhaustive golden file: regenerate the decision table with
# the default rules and diff it against tests/cases/router.golden.
# After a deliberate rule change:
#	build/tests/gen_router_golden > tests/cases/router.golden
set -u
cd "$(dirname "$0")/../.." || exit 1
# The generator sits next to the binary's build: build/tests for bin/,
# build/asan/tests for build/asan/bin/.
gen=build/tests/gen_router_golden
alt=$(dirname "${MODEGATE_BIN:-bin/modegate}")/../tests/gen_router_golden
case "${MODEGATE_BIN:-}" in */build/*) [ -x "$alt" ] && gen=$alt ;; esac
echo "1..2"
out=$(mktemp)
trap 'rm -f "$out" "$out.2"' EXIT
if "$gen" >"$out" && diff -u tests/cases/router.golden "$out"; then
	echo "ok 1 - router decisions match tests/cases/router.golden"
else
	echo "not ok 1 - router decisions differ from tests/cases/router.golden"
fi
if "$gen" >"$out.2" && cmp -s "$out" "$out.2"; then
	echo "ok 2 - the generator is deterministic"
else
	echo "not ok 2 - two runs of the generator differ"
fi
