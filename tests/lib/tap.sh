# tap.sh -- sourced by the shell tests: TAP lines and a rules directory.
# SPDX-License-Identifier: MIT

n=0

# ok STATUS DESCRIPTION: "ok N - ..." when STATUS is 0, else "not ok".
ok() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
	fi
}

# rules_copy DIR: a rules directory holding the repository's rule files
# (run from the repository root).
rules_copy() {
	mkdir -p "$1/mode" "$1/policy"
	cp mode/*.json mode/*.md "$1/mode/"
	cp policy/*.json "$1/policy/"
}
