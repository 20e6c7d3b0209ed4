#!/bin/sh
# make run's script (tests/lib/run-local.sh) as an operator meets it: a
# second run while one runs refuses and leaves the first working (its
# database up, serve answering); the README's operator commands, taken
# from its code blocks, run as written in another shell after
# `set -a; . var/modegate.env; set +a`; Ctrl-C (SIGINT to the process
# group, as the terminal sends it) stops it with status 0.
set -u
bin=${MODEGATE_BIN:-bin/modegate}
cd "$(dirname "$0")/../.." || exit 1
root=$(pwd)
case "$bin" in /*) ;; *) bin=$root/$bin ;; esac
tmp=$(mktemp -d)
chmod 755 "$tmp"		# the cluster's owner (postgres) walks into it
first=
cleanup() {
	[ -n "$first" ] && sigpg INT "$first" && sleep 2
	[ -n "$first" ] && sigpg KILL "$first"
	for v in var var3; do
		[ -f "$tmp/$v/pg/data/postmaster.pid" ] && (. tests/lib/pg.sh;
		    pg_stop "$tmp/$v/pg")
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
n=0
t() {	# t OK|FAIL description
	n=$((n + 1))
	[ "$1" = OK ] && echo "ok $n - $2" || echo "not ok $n - $2"
}
sigpg() {	# sigpg SIG PGID: to the whole process group, as a terminal does
	python3 -c 'import os, signal, sys
try:
    os.killpg(int(sys.argv[2]), getattr(signal, "SIG" + sys.argv[1]))
except OSError:
    sys.exit(1)' "$@"
}
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ready() { curl -fsS -m 2 "http://$MODEGATE_LISTEN/readyz" >/dev/null 2>&1; }

export MODEGATE_VAR=$tmp/var MODEGATE_LISTEN=127.0.0.1:$(port)
# In a session of its own, with SIGINT as a terminal's foreground job has
# it (a background job of this shell would ignore it).
python3 -c 'import os, signal, sys
os.setsid()
signal.signal(signal.SIGINT, signal.SIG_DFL)
signal.signal(signal.SIGQUIT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' tests/lib/run-local.sh "$bin" \
    >"$tmp/first.log" 2>&1 &
first=$!
i=0
until ready || [ $i -ge 120 ]; do sleep 0.5; i=$((i + 1)); done
ready && r=OK || r=FAIL
t $r "the first run serves on $MODEGATE_LISTEN"
[ $r = OK ] || { sed 's/^/# /' "$tmp/first.log"; exit 1; }

# A second run on the same ./var: refuses, touches nothing.
env_before=$(cat "$tmp/var/modegate.env")
timeout 30 tests/lib/run-local.sh "$bin" >"$tmp/second.log" 2>&1
rc=$?
[ $rc = 1 ] && grep -q "already running" "$tmp/second.log" && r=OK || r=FAIL
t $r "a second run refuses (rc=$rc: $(head -c 300 "$tmp/second.log"))"
# Another ./var but the same address: refuses too.
MODEGATE_VAR=$tmp/var2 timeout 30 tests/lib/run-local.sh "$bin" \
    >"$tmp/third.log" 2>&1
rc=$?
[ $rc = 1 ] && grep -q "already listens on" "$tmp/third.log" &&
    [ ! -e "$tmp/var2" ] && r=OK || r=FAIL
t $r "a run on a busy address refuses, creating nothing (rc=$rc)"
sleep 1
ready && kill -0 "$first" 2>/dev/null &&
    [ "$(cat "$tmp/var/modegate.env")" = "$env_before" ] &&
    ! grep -q "stopping PostgreSQL" "$tmp/first.log" && r=OK || r=FAIL
t $r "the first run still works: database up, serve ready, its files kept"

# The banner's commands, then the README's, as written.
awk '/^Try it from another terminal/ { on = 1; next }
    on && /^$/ { exit } on { sub(/^  /, ""); print }' "$tmp/first.log" \
    >"$tmp/banner.sh"
out=$(cd "$root" && sh -e "$tmp/banner.sh" 2>&1)
rc=$?
[ $rc = 0 ] && r=OK || r=FAIL
t $r "the banner's commands run (a doctor's message, answered)"
[ $r = OK ] || printf '%s\n' "$out" | tail -20 | sed 's/^/# /'
python3 - README.md "$tmp/cmds" <<'PY'
# Every ```sh block whose commands are the local operator's (modegate,
# psql -f, printf/echo into modegate): one command a line; and every
# ```sql block, run as written through psql.
import re, sys
text = open(sys.argv[1]).read()
ok = ("bin/modegate ", "modegate ", "psql -f ", "printf ", "echo ",
      "set -a; . var/modegate.env; set +a")
cmds = []
for lang, body in re.findall(r"^```(sh|sql)\n(.*?)^```", text, re.M | re.S):
    if lang == "sql":
        cmds.append("psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'\n"
                    + body + "SQL")
        continue
    lines = [ln for ln in body.replace("\\\n", " ").split("\n")
             if ln.strip() and not ln.lstrip().startswith("#")]
    if lines and all(ln.startswith(ok) for ln in lines):
        # the environment line is this test's own first step
        cmds.extend(ln for ln in lines if not ln.startswith("set -a;"))
for i, c in enumerate(cmds):
    open("%s.%03d" % (sys.argv[2], i), "w").write(c)
PY
count=$(ls "$tmp"/cmds.* | wc -l)
[ "$count" -ge 12 ] && r=OK || r=FAIL
t $r "the README holds the operator's commands ($count found)"
fail=0
for f in "$tmp"/cmds.*; do
	cmd=$(cat "$f")
	out=$(cd "$root" && env -i HOME="$HOME" PATH=/usr/bin:/bin \
	    USER=readme sh -c "set -a; . '$tmp/var/modegate.env'; set +a;
	    $cmd" 2>&1 </dev/null)
	rc=$?
	if [ $rc != 0 ]; then
		fail=1
		echo "# rc=$rc: $cmd" | head -3
		printf '%s\n' "$out" | tail -5 | sed 's/^/#   /'
	fi
done
t $([ $fail = 0 ] && echo OK || echo FAIL) \
    "every README command runs as written against the local default"

# Ctrl-C: SIGINT to the whole process group, as a terminal does.
sigpg INT "$first"
i=0
while kill -0 "$first" 2>/dev/null && [ $i -lt 60 ]; do
	sleep 0.5
	i=$((i + 1))
done
kill -0 "$first" 2>/dev/null && sigpg KILL "$first"
wait "$first"
rc=$?
first=
[ $rc = 0 ] && grep -q "serve: stopped" "$tmp/first.log" &&
    [ ! -f "$tmp/var/pg/data/postmaster.pid" ] &&
    [ ! -e "$tmp/var/run.pid" ] && [ ! -e "$tmp/var/modegate.env" ] &&
    r=OK || r=FAIL
t $r "Ctrl-C stops modegate, then PostgreSQL, and ends 0 (rc=$rc)"
[ $r = OK ] || tail -15 "$tmp/first.log" | sed 's/^/# /'
# The same through `make run` on a terminal (a pty): Ctrl-C typed there
# ends make with status 0, no "Error 130".
out=$(MODEGATE_VAR=$tmp/var3 MODEGATE_LISTEN=127.0.0.1:$(port) python3 - <<'PY'
import os, pty, select, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execvp("make", ["make", "--no-print-directory", "run"])
out, sent, end = b"", None, time.time() + 120
while time.time() < end:
    if select.select([fd], [], [], 0.2)[0]:
        try:
            out += os.read(fd, 65536)
        except OSError:
            break
    if sent is None and b"Ctrl-C stops it" in out and b"db: ingest" in out:
        os.write(fd, b"\x03")       # the terminal's Ctrl-C
        sent = time.time()
    if sent is not None and time.time() - sent > 30:
        break
_, st = os.waitpid(pid, 0)
print("status=%s %s" % (os.waitstatus_to_exitcode(st),
      b"Error" in out and "make error" or "clean"))
sys.stdout.write(out.decode(errors="replace")[-300:])
PY
)
printf '%s\n' "$out" | head -1 | grep -qx "status=0 clean" &&
    [ ! -f "$tmp/var3/pg/data/postmaster.pid" ] && r=OK || r=FAIL
t $r "make run on a terminal: Ctrl-C ends make with status 0"
[ $r = OK ] || printf '%s\n' "$out" | sed 's/^/# /'
echo "1..$n"
