#!/bin/sh
# Run every test program and print one total: "N passed, N failed".
# Each program writes TAP ("ok N - name" / "not ok N - name") to stdout;
# a program that exits non-zero without a "not ok" line counts as a failure.
#
#   tests/run.sh BUILD_DIR MODEGATE_BIN
set -u
build=${1:-build}
MODEGATE_BIN=${2:-bin/modegate}
case "$MODEGATE_BIN" in /*) ;; *) MODEGATE_BIN=$(pwd)/$MODEGATE_BIN ;; esac
export MODEGATE_BIN
export MG_TEST_BUILD=$build	# tests/cli/sql_turn.sh runs a C test too
export CMOCKA_MESSAGE_OUTPUT=TAP
cd "$(dirname "$0")/.." || exit 1
passed=0
failed=0
skipped=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

run() {
	name=$1
	shift
	"$@" >"$log" 2>&1
	rc=$?
	# "# SKIP" lines (cmocka writes "not ok N # SKIP") are skips, not
	# failures: e.g. the shared fixtures are absent on this machine.
	k=$(grep -cE '^(not )?ok .*# SKIP' "$log")
	p=$(grep -E '^ok ' "$log" | grep -cv '# SKIP')
	f=$(grep -E '^not ok ' "$log" | grep -cv '# SKIP')
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
		f=1
		echo "not ok - $name exited with status $rc"
	fi
	grep -E '^not ok ' "$log" | grep -v '# SKIP' | sed "s/^/  /"
	if [ "$f" != 0 ] || [ "${VERBOSE:-0}" = 1 ]; then
		# each failure with the diagnostics after it, then the tail
		awk '/^not ok / && !/# SKIP/ { n = 40; print; next }
		    n > 0 && /^#/ { n--; print; next } { n = 0 }' "$log" |
		    sed 's/^/    ! /'
		sed 's/^/    | /' "$log" | tail -60
	fi
	if [ "$k" -gt 0 ]; then echo "$name: $p passed, $f failed, $k skipped"; else echo "$name: $p passed, $f failed"; fi
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + k))
}

run check-core sh -c "tests/check-core.sh $build/libcore.a && echo ok 1 - core is pure"
run check-layers sh -c "tests/check-layers.sh $build && echo ok 1 - src/ calls only downwards"
for t in "$build"/tests/test_*; do
	[ -x "$t" ] && run "$(basename "$t")" "$t"
done
for t in tests/cli/*.sh; do
	[ -f "$t" ] && run "$(basename "$t")" sh "$t"
done
[ "${SKIP_INTEG:-0}" = 1 ] || run integ python3 tests/integ/run.py

if [ "$skipped" -gt 0 ]; then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
[ "$failed" = 0 ]
