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
cp -R mode policy sql "$tmp/m/"	# the rules folder serve needs
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

# check-config and serve check the same things with the same words, and
# every configuration problem exits 78 in both (serve exits before it
# touches the database or the network).
both() {	# both WANT-LINE ENV...: check-config and serve say it, exit 78
	want=$1
	shift
	c=$(good "$@" "$bin" check-config 2>&1)
	crc=$?
	s=$(good "$@" timeout 10 "$bin" serve 2>&1)
	src=$?
	if [ $crc = 78 ] && [ $src = 78 ] &&
	    printf '%s\n' "$c" | grep -qxF "$want" &&
	    printf '%s\n' "$s" | grep -qxF "$want"; then
		t OK "check-config and serve: $want (78)"
	else
		t FAIL "check-config and serve: $want (78; got $crc, $src)"
		printf 'check-config: %s\nserve: %s\n' "$c" "$s" | sed 's/^/# /'
	fi
}
rules=MODEGATE_RULES_DIR=$(pwd)
both 'DATABASE_URL: libpq cannot parse it: missing "=" after "not" in connection info string' \
    DATABASE_URL="not a url" "$rules"
both 'MODEGATE_LISTEN: an IPv6 address goes in brackets: [::1]:8080, got "::1:8081"' \
    MODEGATE_LISTEN=::1:8081 "$rules"
both 'MODEGATE_LISTEN: the host is not an address of this machine or a name that resolves, got "no-such-host.invalid:8080"' \
    MODEGATE_LISTEN=no-such-host.invalid:8080 "$rules"
both 'LLM_BASE_URL: must be an http:// or https:// URL with a host, got "localhost:8000"' \
    LLM_BASE_URL=localhost:8000 "$rules"
both 'LLM_API_KEY: is required when LLM_PROVIDER is openai (only an openai-compatible server on this host, LLM_BASE_URL=http://127.0.0.1:PORT/v1, may need none)' \
    LLM_PROVIDER=openai LLM_BASE_URL=https://llm.example.com/v1 "$rules"
both 'LLM_TIMEOUT: must be a whole number from 1 to 600, got "6O"' \
    LLM_TIMEOUT=6O "$rules"

# The rules folder as the README describes it: mode/, policy/ and sql/.
mkdir -p "$tmp/r2"
cp -R mode policy "$tmp/r2/"
both 'sql/: missing (the migrations; serve compares the database'"'"'s schema with the newest)' \
    MODEGATE_RULES_DIR="$tmp/r2"
cp -R sql "$tmp/r2/"
rm "$tmp/r2/mode/messages.json" "$tmp/r2/mode/julia.md"
both 'mode/messages.json: missing' MODEGATE_RULES_DIR="$tmp/r2"
both 'mode/julia.md: missing' \
    MODEGATE_RULES_DIR="$tmp/r2"
cp mode/julia.md "$tmp/r2/mode/"
python3 -c 'import json, sys
m = json.load(open(sys.argv[1])); del m["replies"]["followup"]
json.dump(m, open(sys.argv[2], "w"), ensure_ascii=False)' mode/messages.json \
    "$tmp/r2/mode/messages.json"
both 'mode/messages.json: replies: followup: missing' \
    MODEGATE_RULES_DIR="$tmp/r2"
printf '{"replies": ' >"$tmp/r2/mode/messages.json"
both 'mode/messages.json: line 1: invalid JSON: unexpected end of data (truncated or empty)' \
    MODEGATE_RULES_DIR="$tmp/r2"

# Accepted by both alike: an IPv6 listen address in brackets, blanks
# around a number (before and after), a key-less local openai server.
accepts() {
	out=$(good "$rules" "$@" "$bin" check-config 2>&1)
	[ "$out" = "configuration OK" ] && r=OK || r=FAIL
	t $r "check-config accepts $* ($out)"
}
accepts "MODEGATE_LISTEN=[::1]:8081"
accepts "LLM_TIMEOUT= 60"
accepts "LLM_TIMEOUT=32 "
accepts LLM_PROVIDER=openai LLM_BASE_URL=http://127.0.0.1:11434/v1
echo "1..$n"
