#!/bin/sh
# Help and usage: every subcommand takes -h or --help anywhere in its
# arguments and explains its options; errors name the bad argument;
# --version prints the version.
set -u
bin=${MODEGATE_BIN:-bin/modegate}
cd "$(dirname "$0")/../.." || exit 1
n=0
t() {	# t OK|FAIL description
	n=$((n + 1))
	[ "$1" = OK ] && echo "ok $n - $2" || echo "not ok $n - $2"
}
# help ARGS...: exit 0, "usage: modegate CMD" and options on stdout
help() {
	out=$(env -u DATABASE_URL "$bin" "$@" 2>&1)
	rc=$?
	cmd=$1
	[ $rc = 0 ] && printf '%s\n' "$out" | grep -q "^usage: modegate $cmd" &&
	    [ "$(printf '%s\n' "$out" | wc -l)" -ge 4 ] && r=OK || r=FAIL
	t $r "modegate $* explains the command (rc=$rc)"
	[ $r = OK ] || printf '%s\n' "$out" | head -5 | sed 's/^/# /'
}
cmds=$("$bin" --help | sed -n 's/^  \([a-z][a-z-]*\).*/\1/p')
for c in $cmds; do
	help "$c" --help
	help "$c" -h
done
help flag set --help
help flag get --help
help flag set conversation_mode_enabled on --percent 10 --help
help explain --mode discovery "oi" --help
help takeover 5511988887777 -h
help funnel --since 2026-01-01 --help

# has WANT ARGS...: stderr (or stdout) of modegate ARGS holds WANT
has() {
	want=$1
	rcw=$2
	shift 2
	out=$(env -u DATABASE_URL "$bin" "$@" 2>&1)
	rc=$?
	[ "$rc" = "$rcw" ] && printf '%s\n' "$out" | grep -qF -- "$want" &&
	    r=OK || r=FAIL
	t $r "modegate $*: exit $rcw, says: $want"
	[ $r = OK ] || printf '%s\n' "$out" | head -5 | sed 's/^/# /'
}
has "YYYY-MM-DD, inclusive" 0 funnel --help
has "last day counted, YYYY-MM-DD, inclusive" 0 funnel --help
has "default 100 for on and shadow" 0 flag --help
has "the database user" 0 takeover --help
has 'explain: --mode "booking": unknown mode' 64 explain --mode booking "oi"
has 'explain: one MESSAGE expected, got 3 arguments ("Quero" "saber" "vagas"): quote the message' \
    64 explain --mode discovery Quero saber vagas
has 'explain: --pending-age "-5": must be a whole number of minutes' \
    64 explain --mode discovery --pending oferta --pending-age -5 "sim"
has 'explain: --inactive-days "x": must be a whole number of days' \
    64 explain --mode discovery --inactive-days x "oi"
has 'explain: --mode MODE is required' 64 explain "oi"
has 'explain: MESSAGE missing' 64 explain --mode discovery
has 'check-config: unknown argument "--lst"' 64 check-config --lst
# The operators' commands without a database exit as documented: 78 for
# a configuration problem (unset, unparseable), 1 for a database down.
has 'flag: DATABASE_URL: is required but not set' 78 flag list
out=$(DATABASE_URL="not a url" "$bin" flag list 2>&1)
rc=$?
[ $rc = 78 ] && printf '%s\n' "$out" | grep -q "libpq cannot parse it" &&
    r=OK || r=FAIL
t $r "flag list with an unparseable DATABASE_URL: exit 78 ($rc)"
out=$(DATABASE_URL=postgresql://modegate@127.0.0.1:1/x "$bin" flag list 2>&1)
rc=$?
[ $rc = 1 ] && printf '%s\n' "$out" | grep -q "cannot connect" &&
    r=OK || r=FAIL
t $r "flag list with the database down: exit 1 ($rc)"
out=$("$bin" --version)
printf '%s\n' "$out" | grep -Eqx 'modegate [0-9]+\.[0-9]+\.[0-9]+' &&
    r=OK || r=FAIL
t $r "modegate --version prints the version ($out)"
echo "1..$n"
