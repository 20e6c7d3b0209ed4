#!/bin/sh
# modegate train: the same corpus always gives byte-identical weights, the
# committed mode/*.model are what the committed corpus gives (retraining
# is one command and the weights change only as a reviewable diff), the
# blind authors are never opened, and a bad SPLITS is a config error.
set -u
cd "$(dirname "$0")/../.." || exit 1
bin=${MODEGATE_BIN:-bin/modegate}
tmp=$(mktemp -d)
trap 'chmod -R u+rwX "$tmp"; rm -rf "$tmp"' EXIT
. tests/lib/tap.sh


echo "1..5"
rules_copy "$tmp/r1"
rules_copy "$tmp/r2"
MODEGATE_RULES_DIR=$tmp/r1 "$bin" train --corpus tests/corpus \
    --out "$tmp/r1" 2>"$tmp/err1"
rc1=$?
MODEGATE_RULES_DIR=$tmp/r2 "$bin" train --corpus tests/corpus \
    --out "$tmp/r2" 2>"$tmp/err2"
rc2=$?
[ $rc1 = 0 ] && [ $rc2 = 0 ] &&
    cmp -s "$tmp/r1/mode/intent.model" "$tmp/r2/mode/intent.model" &&
    cmp -s "$tmp/r1/mode/guard.model" "$tmp/r2/mode/guard.model"
ok $? "two trainings on the same corpus: byte-identical weights"
sed 's/^/# /' "$tmp/err1"

cmp -s "$tmp/r1/mode/intent.model" mode/intent.model &&
    cmp -s "$tmp/r1/mode/guard.model" mode/guard.model
ok $? "the committed weights are the committed corpus's (make train)"

# The blind authors' files are never opened: unreadable ones change
# nothing.
mkdir -p "$tmp/c/messages" "$tmp/c/replies"
cp tests/corpus/SPLITS "$tmp/c/"
for f in tests/corpus/messages/*.tsv tests/corpus/replies/*.tsv; do
	d=$(basename "$(dirname "$f")")
	a=$(basename "$f" .tsv)
	if awk -v a="$a" '$1 == "blind" && $2 == a { f = 1 } END { exit !f }' \
	    tests/corpus/SPLITS; then
		printf 'garbage\n' > "$tmp/c/$d/$a.tsv"
		chmod 000 "$tmp/c/$d/$a.tsv"
	else
		cp "$f" "$tmp/c/$d/"
	fi
done
rules_copy "$tmp/r3"
MODEGATE_RULES_DIR=$tmp/r3 "$bin" train --corpus "$tmp/c" --out "$tmp/r3" \
    2>/dev/null && cmp -s "$tmp/r3/mode/intent.model" mode/intent.model
ok $? "the blind authors are never read"

printf 'train a1\nholdout a2\n' > "$tmp/c/SPLITS"
MODEGATE_RULES_DIR=$tmp/r3 "$bin" train --corpus "$tmp/c" --out "$tmp/r3" \
    2>"$tmp/err"
rc=$?
[ $rc = 78 ] && grep -q 'SPLITS:2: unknown split "holdout"' "$tmp/err"
ok $? "an unknown split: exit 78 naming the line (got $rc)"

printf 'train a1\n' > "$tmp/c/SPLITS"
printf 'INTERESSE\tquero vaga\t\n' >> "$tmp/c/messages/a1.tsv"
MODEGATE_RULES_DIR=$tmp/r3 "$bin" train --corpus "$tmp/c" --out "$tmp/r3" \
    2>"$tmp/err"
rc=$?
[ $rc != 0 ] && grep -q 'a1.tsv:[0-9]*: expected INTENT' "$tmp/err"
ok $? "a bad label: an error naming file and line (got $rc)"
