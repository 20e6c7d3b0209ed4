#!/bin/sh
# Leave-one-author-out over the train authors of tests/corpus/SPLITS: for
# each, train on the others and measure on it. The way to compare
# features and hyper-parameters without touching the dev or blind authors
# (the dev authors only calibrate, as in `make train`). The last line
# pools every held-out author's items.
#
#	[CV_ARGS="--set intent.epochs=30"] tests/corpus/crossval.sh [intent|guard]
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
bin=${MODEGATE_BIN:-bin/modegate}
kind=${1:-intent}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
authors=$(awk '$1 == "train" { print $2 }' tests/corpus/SPLITS)
dev=$(awk '$1 == "dev" { print $2 }' tests/corpus/SPLITS)
dir=messages
[ "$kind" = guard ] && dir=replies

# take SPLIT AUTHOR: the author's files into the fold's corpus.
take() {
	echo "$1 $2" >> "$tmp/c/SPLITS"
	for d in messages replies; do
		[ -f tests/corpus/$d/$2.tsv ] && cp tests/corpus/$d/$2.tsv "$tmp/c/$d/"
	done
}

for held in $authors; do
	[ -s tests/corpus/$dir/$held.tsv ] || continue
	[ "$held" = cases ] && continue
	rm -rf "$tmp/c" "$tmp/r"
	mkdir -p "$tmp/c/messages" "$tmp/c/replies"
	rules_copy "$tmp/r"
	for a in $authors; do
		[ "$a" = "$held" ] || take train $a
	done
	# The dev authors calibrate each fold's model as they calibrate
	# the shipped one (the temperature moves the thresholds).
	for a in $dev; do
		take dev $a
	done
	MODEGATE_RULES_DIR=$tmp/r "$bin" train --corpus "$tmp/c" \
	    --out "$tmp/r" ${CV_ARGS:-} 2>/dev/null || { echo "train failed"; exit 1; }
	printf '%s: ' "$held"
	MODEGATE_RULES_DIR=$tmp/r MODEGATE_BIN=$bin \
	    tests/corpus/measure.sh $kind tests/corpus/$dir/$held.tsv \
	    > "$tmp/m"
	grep -E '^summary|^# ' "$tmp/m"
	grep -E "^(replies|messages) " "$tmp/m" >> "$tmp/first"
done
# Pooled over the held-out authors (every held-out item counts once).
if [ "$kind" = guard ]; then
	sed 's/[(),\/%]/ /g' "$tmp/first" | awk '{ c += $5; v += $6; f += $10
	    o += $11 } END { printf "pooled: recall=%.1f (%d/%d) " \
	    "false_alarms=%.1f (%d/%d)\n", 100 * c / v, c, v, 100 * f / o, f, o }'
else
	sed 's/[(),%]/ /g' "$tmp/first" | awk '{ n += $2; ok += $5 }
	    END { printf "pooled: accuracy=%.1f (%d/%d)\n", 100 * ok / n, ok, n }'
fi
