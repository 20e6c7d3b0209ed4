#!/bin/sh
# deploy/modegate.1 keeps up with the binary: every subcommand of
# `modegate --help` and every variable of `modegate check-config --list`
# (both read from the binary under test, so a new command or variable
# fails here until the page documents it), no variable the binary does not
# know, and the page renders without a warning. The README's configuration
# table and command list are held to the same lists.
cd "$(dirname "$0")/../.." || exit 1
page=deploy/modegate.1
bin=${MODEGATE_BIN:-bin/modegate}
n=0

ok() {	# ok TEST-RESULT NAME
	n=$((n + 1))
	[ "$1" = 0 ] && echo "ok $n - $2" || echo "not ok $n - $2"
}

cmds=$("$bin" --help | sed -n 's/^  \([a-z][a-z-]*\).*/\1/p')
vars=$("$bin" check-config --list | sed -n 's/^| `\([A-Z_][A-Z0-9_]*\)`.*/\1/p')
[ "$(echo "$cmds" | wc -w)" -ge 10 ] && [ "$(echo "$vars" | wc -w)" -ge 20 ]
ok $? "the binary lists its commands and variables"

fail=0
for c in $cmds; do
	grep -Eq "^\.(It )?Cm $c( |\$)" "$page" && continue
	echo "# subcommand $c is not in $page"
	fail=1
done
ok $fail "every subcommand has an entry in the man page"

fail=0
for v in $vars; do
	grep -q "^\.It Ev $v\$" "$page" && continue
	echo "# variable $v is not in $page"
	fail=1
done
ok $fail "every environment variable has an entry in the man page"

fail=0
for v in $(sed -n 's/^\.It Ev \([A-Z_0-9]*\)$/\1/p' "$page"); do
	echo "$vars" | grep -qx "$v" && continue
	echo "# $page documents $v, which the binary does not know"
	fail=1
done
ok $fail "the man page documents no variable the binary does not know"

missing=$("$MODEGATE_BIN" check-config --list | while IFS= read -r line; do
	grep -qxF -- "$line" README.md || echo "$line"
done)
fail=0
[ -z "$missing" ] || { fail=1; echo "$missing" | sed 's/^/# not in README.md: /'; }
ok $fail "the README's configuration table is check-config --list, line for line"

fail=0
for c in $cmds; do
	grep -Eq "^  $c( |\$)" README.md && continue
	echo "# subcommand $c is not in README.md's command list"
	fail=1
done
ok $fail "every subcommand is in the README command list"

fail=0
for h in $(sed -n 's/^## \(.*\)$/\1/p' README.md | grep -vx Contents |
    tr ' ' '_'); do
	h=$(echo "$h" | tr '_' ' ')
	grep -qF -- "- [$h](#" README.md && continue
	echo "# README section \"$h\" is not in its Contents"
	fail=1
done
ok $fail "every README section is in its table of contents"

if command -v groff >/dev/null 2>&1; then
	out=$(groff -mandoc -Tutf8 -ww -z "$page" 2>&1)
	[ -z "$out" ]
	ok $? "groff renders the man page without warnings"
	[ -n "$out" ] && echo "$out" | sed 's/^/# /'
	LC_ALL=C.UTF-8 groff -mandoc -Tutf8 "$page" 2>/dev/null |
		grep -q "modegate_app"
	ok $? "the rendered page has the text (ENVIRONMENT: modegate_app)"
else
	n=$((n + 1))
	echo "ok $n - groff renders the man page # SKIP groff not installed"
fi
