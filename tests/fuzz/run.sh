#!/bin/sh
# run.sh -- run each libFuzzer target for a bounded time on a scratch copy
# of its seed corpus; exit 1 when any target finds a crash.
#	tests/fuzz/run.sh BUILDDIR SECONDS TARGET...
# SPDX-License-Identifier: MIT
set -u
dir=$1 secs=$2
shift 2
fail=0
for t in "$@"; do
	work=$dir/work/$t
	rm -rf "$work" && mkdir -p "$work/corpus" "$work/crash"
	cp tests/fuzz/corpus/"$t"/* "$work/corpus/" 2>/dev/null
	echo "fuzz: $t for ${secs}s"
	if ! "$dir/fuzz_$t" -max_total_time="$secs" -max_len=65536 \
	    -timeout=10 -rss_limit_mb=1024 -print_final_stats=1 \
	    -artifact_prefix="$work/crash/" "$work/corpus" \
	    >"$work/log" 2>&1; then
		echo "fuzz: $t FAILED (see $work/log, inputs in $work/crash/)"
		tail -40 "$work/log"
		fail=1
	else
		grep -E '^stat::number_of_executed_units|^#[0-9]+.*DONE' \
		    "$work/log" | tail -2
	fi
done
exit $fail
