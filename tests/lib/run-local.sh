#!/bin/sh
# make run: the local default. A PostgreSQL cluster under ./var/pg (made
# once, reused), a generated app secret and verify token kept in
# ./var/local.env, migrations, then `modegate serve` on 127.0.0.1:8080 in
# the foreground. Ctrl-C stops modegate cleanly, then the cluster.
#
#   tests/lib/run-local.sh bin/modegate
set -eu
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
cd "$(dirname "$0")/../.."
root=$(pwd)
var=$root/var
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
export MODEGATE_LISTEN=${MODEGATE_LISTEN:-127.0.0.1:8080}
export MODEGATE_RULES_DIR=${MODEGATE_RULES_DIR:-$root}

pg_stop "$var/pg"	# a cluster left running by a killed run
pg_start "$var/pg"
stopped=0
stop_pg() {
	[ "$stopped" = 1 ] && return
	stopped=1
	echo "run: stopping PostgreSQL" >&2
	pg_stop "$var/pg"
}
trap stop_pg EXIT
trap 'exit 130' INT TERM

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

Try it from another terminal:
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

# modegate handles SIGINT itself (drains, exits 0); the shell waits.
"$bin" serve &
pid=$!
trap 'kill -INT $pid 2>/dev/null || true' INT TERM
rc=0
wait $pid || rc=$?
# wait returns early when a trapped signal arrives: wait again.
while kill -0 $pid 2>/dev/null; do wait $pid || rc=$?; done
exit $rc
