#!/bin/sh
# The layering check of src/: every object file of the shell may call only
# files BELOW it in the order declared here (lowest first; a folder's files
# in their own order). A call upwards or sideways-back is a cycle in the
# making and fails, naming both files and the symbol. Callbacks (function
# pointers handed down) are how a lower file reports to a higher one.
#
#   tests/check-layers.sh BUILD_DIR
set -eu
build=${1:-build}
order='
base/log base/config base/curlev base/metrics
db/pool db/queue db/cliconn db/migrate
rules/flatfile rules/ruleset
llm/wire llm/offline llm/client
send/graph send/sender send/followup
turn/metrics_turn turn/tools_schema turn/commit turn/job turn/answer turn/turn turn/worker
http/conns http/wa http/reply http/ingest http/webhook http/server
cmd/campaign cmd/check_config cmd/explain cmd/flag cmd/funnel cmd/guard cmd/intent cmd/migrate cmd/ops cmd/review cmd/rules cmd/serve cmd/train
main
'
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rank=0
for f in $order; do
	rank=$((rank + 1))
	echo "$f $rank"
done >"$tmp/rank"
fail=0
# every source file of the shell must be declared
for o in $(find src -name '*.c' | sed 's#^src/##; s#\.c$##' | sort); do
	grep -q "^$o " "$tmp/rank" || {
		echo "check-layers: src/$o.c is not in the declared order" >&2
		fail=1
	}
done
# symbol -> defining file; file -> symbols it needs
for f in $order; do
	o=$build/src/$f.o
	[ -f "$o" ] || continue
	nm --defined-only "$o" | awk -v f="$f" 'NF == 3 && $2 ~ /[TDBR]/ { print $3, f }'
done | sort >"$tmp/defs"
for f in $order; do
	o=$build/src/$f.o
	[ -f "$o" ] || continue
	nm -u "$o" | awk -v f="$f" '{ print $2, f }'
done | sort >"$tmp/uses"
join "$tmp/uses" "$tmp/defs" | while read -r sym user def; do
	[ "$user" = "$def" ] && continue
	ru=$(awk -v f="$user" '$1 == f { print $2 }' "$tmp/rank")
	rd=$(awk -v f="$def" '$1 == f { print $2 }' "$tmp/rank")
	if [ "$rd" -ge "$ru" ]; then
		echo "check-layers: src/$user.c calls $sym of src/$def.c, which is not below it" >&2
		echo bad
	fi
done >"$tmp/bad"
[ -s "$tmp/bad" ] && fail=1
[ $fail = 0 ] && echo "check-layers: src/ calls only downwards ($(wc -l <"$tmp/rank") files, $(join "$tmp/uses" "$tmp/defs" | awk '$2 != $3' | wc -l) calls between them)"
exit $fail
