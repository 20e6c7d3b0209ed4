#!/bin/sh
# Run every unit test binary under valgrind memcheck: any memory error or
# any definitely/indirectly lost block fails the program (exit status 1).
# No suppression file: the unit tests, libcore, libshell and the libraries
# they link (cmocka, json-c, libevent, libcurl, OpenSSL) report nothing on
# Debian 12, so anything valgrind prints is ours.
#
#   tests/valgrind.sh BUILD_DIR
set -u
build=${1:-build}
export CMOCKA_MESSAGE_OUTPUT=TAP
cd "$(dirname "$0")/.." || exit 1
passed=0
failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for t in "$build"/tests/test_*; do
	[ -x "$t" ] || continue
	name=$(basename "$t")
	if valgrind -q --leak-check=full \
	    --errors-for-leak-kinds=definite,indirect \
	    --error-exitcode=1 "$t" >"$log" 2>&1; then
		echo "ok - $name"
		passed=$((passed + 1))
	else
		echo "not ok - $name"
		sed 's/^/    | /' "$log" | tail -60
		failed=$((failed + 1))
	fi
done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
