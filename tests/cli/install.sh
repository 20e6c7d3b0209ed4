#!/bin/sh
# make install into a temporary DESTDIR: the files land under PREFIX, and
# the installed binary finds its rules and migrations there by itself.
cd "$(dirname "$0")/../.." || exit 1
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
make --no-print-directory install DESTDIR="$d" PREFIX=/opt/mg >"$d.log" 2>&1
rc=$?
rm -f "$d.log"
[ $rc = 0 ] && echo "ok 1 - make install succeeds" || echo "not ok 1 - make install succeeds"
n=2
for f in bin/modegate share/modegate/mode/transitions.json \
	share/modegate/policy/policy.json share/modegate/sql/0001_init.sql \
	share/modegate/sql/roles.sql share/man/man1/modegate.1 \
	share/modegate/sql/queries share/modegate/sql/functions/60_turn.sql \
	share/modegate/mode/intent.model share/modegate/mode/guard.model; do
	[ -e "$d/opt/mg/$f" ] && echo "ok $n - installs $f" ||
		echo "not ok $n - installs $f"
	n=$((n + 1))
done
# The compiled-in rules dir is /opt/mg/share/modegate; point it into the
# DESTDIR only through the variable an operator would use.
out=$(strings -a "$d/opt/mg/bin/modegate" | grep -c '^/opt/mg/share/modegate$')
[ "$out" -ge 1 ] && echo "ok $n - the installed binary defaults to its share folder" ||
	echo "not ok $n - the installed binary defaults to its share folder"
n=$((n + 1))
out=$(env -i PATH="$PATH" DATABASE_URL=x WHATSAPP_APP_SECRET=s \
	WHATSAPP_VERIFY_TOKEN=v MODEGATE_RULES_DIR="$d/opt/mg/share/modegate" \
	"$d/opt/mg/bin/modegate" check-config 2>&1)
[ "$out" = "configuration OK" ] && echo "ok $n - installed rules pass check-config" ||
	{ echo "not ok $n - installed rules pass check-config"; echo "$out" | sed 's/^/# /'; }
n=$((n + 1))
# Another PREFIX, same build tree: the compiled-in path follows it (the
# objects that hold it are rebuilt), and each install keeps its own.
make --no-print-directory install DESTDIR="$d/2" PREFIX=/opt/mg2 >"$d.log" 2>&1
rc=$?
rm -f "$d.log"
[ $rc = 0 ] && echo "ok $n - make install with another PREFIX succeeds" ||
	echo "not ok $n - make install with another PREFIX succeeds"
n=$((n + 1))
dirs() {
	strings -a "$1" | grep -o '^/opt/mg[^ ]*/share/modegate$' | sort -u |
		tr '\n' ' '
}
out=$(dirs "$d/2/opt/mg2/bin/modegate")
[ "$out" = "/opt/mg2/share/modegate " ] &&
	echo "ok $n - the second install defaults to /opt/mg2/share/modegate" ||
	{ echo "not ok $n - the second install defaults to /opt/mg2/share/modegate"; echo "# got: $out"; }
n=$((n + 1))
out=$(dirs "$d/opt/mg/bin/modegate")
[ "$out" = "/opt/mg/share/modegate " ] &&
	echo "ok $n - the first install still defaults to /opt/mg/share/modegate" ||
	{ echo "not ok $n - the first install still defaults to /opt/mg/share/modegate"; echo "# got: $out"; }
