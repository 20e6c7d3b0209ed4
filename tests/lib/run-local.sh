#!/bin/sh
# make run: the local default. A PostgreSQL cluster under ./var/pg (made
# once, reused), a generated app secret and verify token kept in
# ./var/local.env, migrations, then `modegate serve` on 127.0.0.1:8080 in
# the foreground. Ctrl-C stops modegate cleanly, then the cluster, and
# ends with modegate's exit status (0).
#
# A second `make run` while one runs (its pid in ./var/run.pid, or
# anything on the listen address) refuses and touches nothing.
# ./var/modegate.env holds the local default's environment, for the
# README's commands in another terminal: set -a; . var/modegate.env; set +a
#
#   tests/lib/run-local.sh bin/modegate
#   MODEGATE_VAR=DIR (default ./var) and MODEGATE_LISTEN move it.
set -eu
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
cd "$(dirname "$0")/../.."
root=$(pwd)
var=${MODEGATE_VAR:-$root/var}
case "$var" in /*) ;; *) var=$root/$var ;; esac
listen=${MODEGATE_LISTEN:-127.0.0.1:8080}

# Another make run: refuse before touching anything (its cluster, its
# files, its port).
if [ -f "$var/run.pid" ] && other=$(cat "$var/run.pid") &&
    [ -n "$other" ] && kill -0 "$other" 2>/dev/null; then
	echo "run: modegate is already running from $var (make run, pid" \
	    "$other); stop it with Ctrl-C in its terminal first." \
	    "Nothing was changed." >&2
	exit 1
fi
if python3 - "$listen" <<'PY'
import socket, sys
host, _, port = sys.argv[1].rpartition(":")
host = host.strip("[]")
try:
    socket.create_connection((host, int(port)), 1).close()
except (OSError, ValueError):
    sys.exit(1)
PY
then
	echo "run: something already listens on $listen (another modegate?);" \
	    "stop it or set MODEGATE_LISTEN. Nothing was changed." >&2
	exit 1
fi

mkdir -p "$var"
. tests/lib/pg.sh

if [ ! -f "$var/local.env" ]; then
	umask 077
	{
		echo "WHATSAPP_APP_SECRET=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
		echo "WHATSAPP_VERIFY_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
	} >"$var/local.env"
	umask 022
fi
. "$var/local.env"
export WHATSAPP_APP_SECRET WHATSAPP_VERIFY_TOKEN
export LLM_PROVIDER=offline WHATSAPP_TOKEN=
export MODEGATE_LISTEN=$listen
export MODEGATE_RULES_DIR=${MODEGATE_RULES_DIR:-$root}

echo $$ >"$var/run.pid"
if [ -f "$var/pg/data/postmaster.pid" ]; then
	# No run owns it (checked above): a run that was killed left it.
	echo "run: stopping a PostgreSQL cluster a killed run left in $var/pg" >&2
	pg_stop "$var/pg"
fi
pg_start "$var/pg"
stopped=0
stop_pg() {
	[ "$stopped" = 1 ] && return
	stopped=1
	echo "run: stopping PostgreSQL" >&2
	pg_stop "$var/pg"
	rm -f "$var/run.pid" "$var/modegate.env"
}
trap stop_pg EXIT
trap 'exit 130' INT TERM

# The environment of the local default, for the README's commands in
# another terminal (set -a; . var/modegate.env; set +a). Removed on exit.
(
	umask 077
	q() { printf "%s='%s'\n" "$1" "$2"; }
	echo "# modegate local default (make run); removed when it stops"
	q DATABASE_URL "$DATABASE_URL"
	q PGHOST "$PGHOST"
	q PGPORT "$PGPORT"
	q PGUSER "$PGUSER"
	q PGDATABASE "$PGDATABASE"
	q WHATSAPP_APP_SECRET "$WHATSAPP_APP_SECRET"
	q WHATSAPP_VERIFY_TOKEN "$WHATSAPP_VERIFY_TOKEN"
	q WHATSAPP_TOKEN ""
	q LLM_PROVIDER offline
	q MODEGATE_LISTEN "$MODEGATE_LISTEN"
	q MODEGATE_RULES_DIR "$MODEGATE_RULES_DIR"
	echo "PATH='$root/bin':\"\$PATH\""
) >"$var/modegate.env"

"$bin" migrate
# The demo shifts Julia's buscar_vagas finds locally (idempotent).
psql -q -X -v ON_ERROR_STOP=1 "$DATABASE_URL" -f sql/seed_demo.sql >/dev/null

url=http://$MODEGATE_LISTEN/webhook
cat <<INFO

modegate local default
  database        $DATABASE_URL (cluster in ./var/pg)
  app secret      $WHATSAPP_APP_SECRET
  verify token    $WHATSAPP_VERIFY_TOKEN
  (both kept in ./var/local.env; LLM offline; WhatsApp sending is dry-run)

Try it from another terminal (the README's commands work after the first line):
  set -a; . $var/modegate.env; set +a
  curl '$url?hub.mode=subscribe&hub.verify_token=$WHATSAPP_VERIFY_TOKEN&hub.challenge=42'
  body='{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"messages","value":{"messaging_product":"whatsapp","metadata":{"display_phone_number":"5511900000000","phone_number_id":"100"},"contacts":[{"profile":{"name":"Ana"},"wa_id":"5511988887777"}],"messages":[{"from":"5511988887777","id":"wamid.local-'\$(date +%s%N)'","timestamp":"'\$(date +%s)'","type":"text","text":{"body":"oi, tem plantao?"}}]}}]}]}'
  sig=\$(printf '%s' "\$body" | openssl dgst -sha256 -hmac '$WHATSAPP_APP_SECRET' -r | cut -d' ' -f1)
  curl -i -H "X-Hub-Signature-256: sha256=\$sig" -H 'Content-Type: application/json' --data-binary "\$body" $url
  sleep 3    # the worker first waits MODEGATE_COALESCE_MS (2 s) for double texting
  psql '$DATABASE_URL' -c 'SELECT id, wamid, msg_type, state FROM inbox'
  psql '$DATABASE_URL' -c "SELECT id, kind, state, payload->'text'->>'body' AS reply FROM outbox"
  psql '$DATABASE_URL' -c "SELECT step, decision, reason FROM audit_log ORDER BY id"


Ctrl-C stops it.
INFO

# modegate handles SIGINT itself (drains, exits 0); this script ends with
# modegate's status. On a terminal, job control gives modegate the
# terminal alone (a process group of its own in the foreground): Ctrl-C
# reaches modegate only, not make nor this script, so `make run` ends 0
# after a clean stop.
if [ -t 0 ] && [ -t 2 ] && set -m 2>/dev/null; then
	rc=0
	"$bin" serve || rc=$?
	exit $rc
fi
# No terminal (scripts, tests): the whole group gets the signal; wait.
"$bin" serve &
pid=$!
sig=0
trap 'sig=1; kill -INT $pid 2>/dev/null || true' INT TERM
rc=0
while :; do
	sig=0
	if wait $pid; then r=0; else r=$?; fi
	# wait returns early (128 + signal) when a trapped signal arrives:
	# then wait again for modegate's own status.
	[ "$sig" = 1 ] && [ "$r" -gt 128 ] && continue
	[ "$r" = 127 ] || rc=$r
	break
done
trap - INT TERM
exit $rc
