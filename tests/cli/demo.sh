#!/bin/sh
# demo.sh -- `make demo` (deploy/demo.sh) against a local default laid out
# as `make run` leaves it (./var/local.env, the cluster in ./var/pg, here
# in a temporary folder): the scripted conversation runs, and each printed
# turn shows the mode, decision, tools and reply the pipeline must give.
# SPDX-License-Identifier: MIT
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/pg.sh
bin=${MODEGATE_BIN:-bin/modegate}

tmp=$(mktemp -d /tmp/mg-demo.XXXXXX)
chmod 755 "$tmp"
mkdir -p "$tmp/var"
pid=
trap '[ -n "$pid" ] && kill -INT $pid 2>/dev/null; sleep 0.5;
	pg_stop "$tmp/var/pg"; rm -rf "$tmp"' EXIT INT TERM
PG_FSYNC=off pg_start "$tmp/var/pg" >/dev/null ||
	{ echo "not ok 1 - cluster starts"; exit 1; }
secret=demo-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
printf 'WHATSAPP_APP_SECRET=%s\nWHATSAPP_VERIFY_TOKEN=v\n' "$secret" \
	>"$tmp/var/local.env"
port=$(pg_free_port)
"$bin" migrate >"$tmp/migrate.log" 2>&1 &&
	psql -q -X -v ON_ERROR_STOP=1 "$DATABASE_URL" -f sql/seed_demo.sql \
	>/dev/null 2>&1 ||
	{ echo "not ok 1 - migrate and seed"; sed 's/^/# /' "$tmp/migrate.log"; exit 1; }
WHATSAPP_APP_SECRET=$secret WHATSAPP_VERIFY_TOKEN=v LLM_PROVIDER=offline \
	WHATSAPP_TOKEN= MODEGATE_LISTEN=127.0.0.1:$port MODEGATE_COALESCE_MS=300 \
	MODEGATE_RULES_DIR=$(pwd) "$bin" serve >"$tmp/serve.log" 2>&1 &
pid=$!
i=0
until curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -gt 100 ] && { echo "not ok 1 - serve ready"; tail -5 "$tmp/serve.log" | sed 's/^/# /'; exit 1; }
	sleep 0.1
done

# Only what make run leaves in ./var tells the demo where to go.
env -u DATABASE_URL -u WHATSAPP_APP_SECRET MODEGATE_VAR="$tmp/var" \
	MODEGATE_LISTEN=127.0.0.1:$port deploy/demo.sh >"$tmp/out" 2>&1
rc=$?
n=1
[ $rc = 0 ] && echo "ok $n - the demo runs six turns against the local default" ||
	{ echo "not ok $n - the demo runs (exit $rc)"; sed 's/^/# /' "$tmp/out"; exit 1; }

block() {	# the printed lines of turn $1
	awk -v t="--- turn $1 " 'index($0, t) == 1 { f = 1; next }
	    /^--- turn / { f = 0 } f' "$tmp/out"
}

check() {	# check TURN NAME FIXED-STRING [! (must be absent)]
	n=$((n + 1))
	if [ "${4:-}" = "!" ]; then
		block "$1" | grep -qF -- "$3" && r=1 || r=0
	else
		block "$1" | grep -qF -- "$3" && r=0 || r=1
	fi
	[ $r = 0 ] && echo "ok $n - turn $1: $2" ||
		{ echo "not ok $n - turn $1: $2"; block "$1" | sed 's/^/# /'; }
}

check 1 "interest in discovery: PENDING, micro-confirmation" "mode     discovery (pending oferta"
check 1 "discovery offers only its tools" "tools    salvar_memoria, encaminhar_humano"
check 1 "no buscar_vagas in discovery" "buscar_vagas" !
check 1 "Julia asks the qualification question" "julia    Que legal!"
check 2 "the answer confirms: oferta" "decision CONFIRM"
check 2 "oferta offers buscar_vagas" "tools    buscar_vagas, criar_handoff_externo"
check 2 "Julia remembers the specialty and region asked for" "clínica médica na zona sul"
check 2 "and asks the one thing missing, the shift" "diurno ou noturno?"
check 3 "the search filters by the region of turn 1" '"regiao":"zona sul"'
check 3 "and by the shift asked for" '"turno":"noturno"'
check 3 "buscar_vagas is executed" "(executed)"
check 3 "Julia lists the matching shift" "Hospital Santa Lúcia — Clínica Médica, noturno"
check 3 "no shift of another region" "Zona Leste" !
check 3 "no contact leaked before asking" "90000-" !
check 4 "a booking request: the responsible person confirms" "julia    Quem confirma é o responsável"
check 4 "Julia asks before passing the contact" "Posso te passar o contato"
check 4 "Julia does not confirm a booking" "confirmad" !
check 4 "the reply passes the guard" "guard    pass"
check 4 "no contact before the yes" "90000-" !
check 5 "a yes: the bridge is made" 'criar_handoff_externo {"vaga_id":1} (executed)'
check 5 "the bridge moves the chat to followup" "mode     followup"
check 5 "Julia passes the contact" "Mariana Alves: +55 11 90000-0101"
check 6 "opt-out is blocked by policy" "policy   BLOCK by opt_out_request"
check 6 "no LLM call on opt-out" "tools    (no LLM call)"
check 6 "the opt-out is confirmed once" "julia    Tudo bem, não vou mais te mandar mensagens"
# Never the previous reply again (turn 5 of the old demo repeated turn 3).
n=$((n + 1))
dups=$(grep '^julia    ' "$tmp/out" | sort | uniq -d)
[ -z "$dups" ] && echo "ok $n - no reply repeats an earlier one" ||
	{ echo "not ok $n - no reply repeats an earlier one"; echo "$dups" | sed 's/^/# /'; }
n=$((n + 1))
want=$(psql -X -q -t -A "$DATABASE_URL" -c "SELECT count(*) FROM outbox WHERE kind = 'text'")
got=$(grep -c '^julia    [^(]' "$tmp/out")
[ "$got" = 6 ] && [ "$want" = 6 ] && echo "ok $n - six replies printed, six in the outbox" ||
	echo "not ok $n - six replies printed ($got), six in the outbox ($want)"
