#!/bin/sh
# check-config and serve need every file of the rules folder: the JSON rule
# files (mode/messages.json included) and Julia's prompt, mode/julia.md.
# A missing or empty one is a configuration error (78) naming the file.
set -u
bin=${MODEGATE_BIN:-bin/modegate}
cd "$(dirname "$0")/../.." || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export DATABASE_URL=postgresql:///x WHATSAPP_APP_SECRET=a \
    WHATSAPP_VERIFY_TOKEN=b MODEGATE_RULES_DIR="$tmp/r"
n=0
case_() {	# case_ NAME EXPECTED-LINE SETUP...
	name=$1 want=$2
	shift 2
	rm -rf "$tmp/r" && mkdir -p "$tmp/r" && cp -r mode policy "$tmp/r/"
	"$@"
	"$bin" check-config >"$tmp/out" 2>&1
	rc=$?
	n=$((n + 1))
	if [ $rc = 78 ] && grep -qF "$want" "$tmp/out"; then
		echo "ok $n - $name: exit 78, \"$want\""
	else
		echo "not ok $n - $name (exit $rc)"
		sed 's/^/# /' "$tmp/out"
	fi
}
echo "1..4"
case_ "empty julia.md" "mode/julia.md: empty" sh -c ": >'$tmp/r/mode/julia.md'"
case_ "no julia.md" "mode/julia.md: missing" rm "$tmp/r/mode/julia.md"
case_ "no messages.json" "mode/messages.json: cannot open" \
    rm "$tmp/r/mode/messages.json"
case_ "a canned reply missing" "replies: handoff_confirmation: missing" \
    python3 -c "import json; p='$tmp/r/mode/messages.json'; d=json.load(open(p)); del d['replies']['handoff_confirmation']; json.dump(d, open(p, 'w'))"
