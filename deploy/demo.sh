#!/bin/sh
# demo.sh -- `make demo`: a scripted doctor's conversation replayed as
# signed webhooks against a running modegate (by default the local one of
# `make run`, started in another terminal), printing each turn as the
# database recorded it: the message, its intent, the policy and router
# decisions, the mode, the tools offered to the LLM and called (with their
# arguments), and Julia's reply.
#
#   deploy/demo.sh              # after `make run` in another terminal
#
# Settings (environment), defaults from make run's ./var:
#   MODEGATE_LISTEN       127.0.0.1:8080
#   WHATSAPP_APP_SECRET   from ./var/local.env
#   DATABASE_URL          the cluster in ./var/pg
#   DEMO_TIMEOUT          seconds to wait for each turn (30)
# SPDX-License-Identifier: MIT
set -eu
cd "$(dirname "$0")/.."
var=${MODEGATE_VAR:-var}

if [ -z "${WHATSAPP_APP_SECRET:-}" ] && [ -f "$var/local.env" ]; then
	. "$var/local.env"
fi
if [ -z "${DATABASE_URL:-}" ] && [ -f "$var/pg/port" ]; then
	DATABASE_URL=postgresql://modegate@127.0.0.1:$(cat "$var/pg/port")/modegate
fi
listen=${MODEGATE_LISTEN:-127.0.0.1:8080}
timeout=${DEMO_TIMEOUT:-30}
if [ -z "${WHATSAPP_APP_SECRET:-}" ] || [ -z "${DATABASE_URL:-}" ]; then
	echo "demo: no app secret or database: start \`make run\` in another" \
	    "terminal first (it writes ./var), or set WHATSAPP_APP_SECRET and" \
	    "DATABASE_URL" >&2
	exit 1
fi
if ! curl -fsS "http://$listen/readyz" >/dev/null 2>&1; then
	echo "demo: modegate is not ready on $listen (is \`make run\` running?)" >&2
	exit 1
fi

# A new doctor each run, so the conversation starts in discovery.
run=$(date +%s)
wamid=
doctor=55119$(printf '%08d' $((run % 100000000)))

q() {	# q SQL: one value, read with the variables w (wamid) and d (doctor)
	psql -X -q -t -A -v ON_ERROR_STOP=1 -v w="$wamid" -v d="$doctor" \
	    "$DATABASE_URL" 2>/dev/null
}

# POST one text message as Meta would: the body signed with the app secret.
post() {
	body='{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"messages","value":{"messaging_product":"whatsapp","metadata":{"display_phone_number":"5511900000000","phone_number_id":"100"},"contacts":[{"profile":{"name":"Dra. Ana"},"wa_id":"'$doctor'"}],"messages":[{"from":"'$doctor'","id":"'$wamid'","timestamp":"'$(date +%s)'","type":"text","text":{"body":"'$1'"}}]}}]}]}'
	sig=$(printf '%s' "$body" | openssl dgst -sha256 \
	    -hmac "$WHATSAPP_APP_SECRET" -r | cut -d' ' -f1)
	code=$(curl -s -o /dev/null -w '%{http_code}' \
	    -H "X-Hub-Signature-256: sha256=$sig" \
	    -H 'Content-Type: application/json' --data-binary "$body" \
	    "http://$listen/webhook")
	[ "$code" = 200 ] || { echo "demo: webhook answered $code" >&2; exit 1; }
}

# Wait until the message's turn is committed (and its reply queued).
settle() {
	i=0
	while :; do
		st=$(echo "SELECT state FROM inbox WHERE wamid = :'w'" | q)
		case $st in done | skipped | dead) return 0 ;; esac
		i=$((i + 1))
		[ $i -gt $((timeout * 5)) ] &&
			{ echo "demo: no answer to $wamid after ${timeout}s" >&2; exit 1; }
		sleep 0.2
	done
}

# Print one turn from audit_log, conversations and outbox.
show() {
	echo "SELECT format(E'intent   %s (%s)\npolicy   %s%s',
	    details->>'intent', details->>'confidence', decision,
	    CASE WHEN decision = 'BLOCK' THEN ' by ' || reason ELSE '' END)
	  FROM audit_log WHERE step = 'policy' AND inbox_id =
	    (SELECT id FROM inbox WHERE wamid = :'w') ORDER BY id LIMIT 1" | q
	echo "SELECT format('decision %s (%s)', coalesce(
	    (SELECT decision FROM audit_log WHERE step = 'router' AND
	      inbox_id = i.id ORDER BY id DESC LIMIT 1), '-'),
	    coalesce((SELECT reason FROM audit_log WHERE step = 'router' AND
	      inbox_id = i.id ORDER BY id DESC LIMIT 1), 'router not run'))
	  FROM inbox i WHERE wamid = :'w'" | q
	echo "SELECT format('mode     %s%s', conversation_mode, coalesce(
	    ' (pending ' || pending_transition || ', micro-confirmation asked)',
	    '')) FROM conversations WHERE wa_id = :'d'" | q
	echo "SELECT 'tools    ' || coalesce((SELECT string_agg(t, ', ')
	    FROM jsonb_array_elements_text(a.details->'tools_offered') t),
	    '(no LLM call)') FROM inbox i LEFT JOIN LATERAL (SELECT details
	    FROM audit_log WHERE step = 'gate' AND inbox_id = i.id
	    ORDER BY id DESC LIMIT 1) a ON true WHERE i.wamid = :'w'" | q
	echo "SELECT 'called   ' || string_agg(reason || coalesce(' ' ||
	    nullif(a.details->>'args', '{}'), '') || ' (' || decision || ')',
	    ', ' ORDER BY a.id) FROM audit_log a JOIN inbox i ON
	    i.id = a.inbox_id WHERE i.wamid = :'w' AND a.step = 'tool'
	  HAVING count(*) > 0" | q
	echo "SELECT 'guard    ' || string_agg(a.decision || coalesce(' (' ||
	    a.reason || ')', ''), ', ' ORDER BY a.id) FROM audit_log a
	    JOIN inbox i ON i.id = a.inbox_id WHERE i.wamid = :'w' AND
	    a.step = 'guard' HAVING count(*) > 0" | q
	echo "SELECT 'julia    ' || coalesce((SELECT string_agg(
	    payload->'text'->>'body', ' / ' ORDER BY o.id) FROM outbox o
	    WHERE o.inbox_id = i.id AND o.kind = 'text'), '(no reply)')
	  FROM inbox i WHERE wamid = :'w'" | q
}

n=0
turn() {
	n=$((n + 1))
	wamid=wamid.demo-$run-$n
	echo "--- turn $n ------------------------------------------------------"
	echo "doctor   $1"
	post "$1"
	settle
	show
	echo
}

echo "modegate demo: doctor $doctor on http://$listen (flag:" \
    "$(echo "SELECT value || ' ' || percent || '%' FROM feature_flags WHERE
    name = 'conversation_mode_enabled'" | q))"
echo
turn "Oi, boa tarde! Sou a Dra. Ana, clínica geral. Vc tem plantão de clínica médica na zona sul de SP?"
turn "Sim, tenho CRM ativo em SP"
turn "Prefiro noturno. Quais plantões vc tem?"
turn "Pode confirmar minha reserva no noturno do Santa Lúcia?"
turn "Pode sim, me passa o contato"
turn "Obrigada! Agora não quero mais receber mensagens"
