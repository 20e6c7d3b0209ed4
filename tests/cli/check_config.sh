#!/bin/sh
# modegate check-config: a good environment passes; a broken copy of the
# rules directory reports every rule problem at once, exit 78.
set -u
bin=${MODEGATE_BIN:-bin/modegate}
cd "$(dirname "$0")/../.." || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
t() {	# t OK|FAIL description
	n=$((n + 1))
	[ "$1" = OK ] && echo "ok $n - $2" || echo "not ok $n - $2"
}
good() {
	env -i PATH="$PATH" DATABASE_URL=postgresql:///x \
	    WHATSAPP_APP_SECRET=s WHATSAPP_VERIFY_TOKEN=v "$@"
}
echo "1..10"

out=$(good MODEGATE_RULES_DIR="$(pwd)" "$bin" check-config 2>&1)
rc=$?
[ $rc = 0 ] && [ "$out" = "configuration OK" ] && r=OK || r=FAIL
t $r "the repository's rules pass (rc=$rc: $out)"

mkdir -p "$tmp/rules"
cp -R mode policy "$tmp/rules/"
python3 - "$tmp/rules" <<'PY'
import json, sys
d = sys.argv[1]
p = d + "/mode/transitions.json"
t = json.load(open(p))
t["transitions"][2]["from"] = "ofertaa"          # unknown mode
t["transitions"][6]["to"] = "oferta"             # oferta -> oferta
json.dump(t, open(p, "w"), ensure_ascii=False)
p = d + "/mode/capabilities.json"
c = json.load(open(p))
c["modes"]["discovery"]["tools"].append("buscar_vaga")   # unknown tool
del c["modes"]["followup"]["micro_confirmation"]        # missing prompt
c["modes"]["reativacao"]["forbidden_claims"].append("inventada")
json.dump(c, open(p, "w"), ensure_ascii=False)
PY
out=$(good MODEGATE_RULES_DIR="$tmp/rules" "$bin" check-config 2>&1)
rc=$?
[ $rc = 78 ] && r=OK || r=FAIL
t $r "broken rules exit 78 (rc=$rc)"
has() {
	printf '%s\n' "$out" | grep -qxF "$1" && r=OK || r=FAIL
	t $r "reports: $1"
}
has 'mode/transitions.json: transitions.2.from: unknown mode "ofertaa"'
has 'mode/transitions.json: transitions.6: transition from oferta to itself'
has 'mode/capabilities.json: modes.discovery.tools.2: unknown tool "buscar_vaga"'
has 'mode/capabilities.json: modes.followup.micro_confirmation.oferta: missing (the transition followup -> oferta needs confirmation)'
has 'mode/capabilities.json: modes.reativacao.forbidden_claims.4: unknown claim "inventada"'
[ $rc = 78 ] || printf '%s\n' "$out" | sed 's/^/# /'

# The learned models: a weights file that does not fit the rules (a label
# the rules do not have, a row out of order) is a config error, named by
# file and line; without the weights files the rules decide alone.
mkdir -p "$tmp/m"
cp -R mode policy "$tmp/m/"
sed -i 's/^label OPT_IN$/label OPT_ON/' "$tmp/m/mode/intent.model"
awk 'f == 0 && /^rows / { print; getline a; getline b; print b; print a; f = 1; next } { print }' \
    mode/guard.model > "$tmp/m/mode/guard.model"
out=$(good MODEGATE_RULES_DIR="$tmp/m" "$bin" check-config 2>&1)
rc=$?
printf '%s\n' "$out" | grep -q '^mode/intent.model: line [0-9]*: label [0-9]* is "OPT_ON", the rules say "OPT_IN" (retrain: make train)$' &&
    printf '%s\n' "$out" | grep -q '^mode/guard.model: line [0-9]*: bucket missing, out of range or not ascending$' &&
    [ $rc = 78 ] && r=OK || r=FAIL
t $r "weights that do not fit the rules: both reported, exit 78 (rc=$rc)"
[ $r = OK ] || printf '%s\n' "$out" | sed 's/^/# /'
head -c 1000 mode/intent.model > "$tmp/m/mode/intent.model"
cp mode/guard.model "$tmp/m/mode/guard.model"
out=$(good MODEGATE_RULES_DIR="$tmp/m" "$bin" check-config 2>&1)
rc=$?
[ $rc = 78 ] && printf '%s\n' "$out" | grep -q '^mode/intent.model: line [0-9]*: ' && r=OK || r=FAIL
t $r "a truncated weights file: exit 78 (rc=$rc)"
rm -f "$tmp/m/mode/intent.model" "$tmp/m/mode/guard.model"
out=$(good MODEGATE_RULES_DIR="$tmp/m" "$bin" check-config 2>&1)
rc=$?
[ $rc = 0 ] && r=OK || r=FAIL
t $r "no weights files: the rules alone, configuration OK (rc=$rc)"
