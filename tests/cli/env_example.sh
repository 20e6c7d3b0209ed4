#!/bin/sh
# Every variable of the configuration table is documented in
# deploy/modegate.env.example, and the example passes check-config.
cd "$(dirname "$0")/../.." || exit 1
n=0
fail=0
for v in $("$MODEGATE_BIN" check-config --list | sed -n 's/^| `\([A-Z_]*\)`.*/\1/p'); do
	grep -q "^#\{0,1\}$v=" deploy/modegate.env.example && continue
	echo "# $v is not in deploy/modegate.env.example"
	fail=1
done
n=$((n + 1))
[ $fail = 0 ] && echo "ok $n - every variable is in the env example" ||
	echo "not ok $n - every variable is in the env example"

n=$((n + 1))
out=$(env -i PATH="$PATH" sh -c "set -a; . deploy/modegate.env.example;
	WHATSAPP_APP_SECRET=s WHATSAPP_VERIFY_TOKEN=v; MODEGATE_RULES_DIR=$(pwd);
	exec '$MODEGATE_BIN' check-config" 2>&1)
[ "$out" = "configuration OK" ] && echo "ok $n - the example passes check-config" ||
	{ echo "not ok $n - the example passes check-config"; echo "$out" | sed 's/^/# /'; }
