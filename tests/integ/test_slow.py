# test_slow.py -- slow clients must not starve Meta. Debian's slowhttptest
# holds 1,000 slow-header (slowloris) and 500 slow-body (R-U-Dead-Yet)
# connections against /webhook, more than MODEGATE_MAX_CONNECTIONS (512),
# while a well-behaved client posts 40 signed webhooks on fresh
# connections: every one must be answered 200 within 1 s and stored.
# modegate drops a request that arrives below MODEGATE_HTTP_MIN_RATE and,
# at the cap, evicts the slowest incomplete request instead of leaving
# new connections waiting in the kernel's queue.
# SPDX-License-Identifier: MIT
import os
import shutil
import subprocess
import time

from harness import eq
from test_turn import message, ready


def slowhttptest(h, mode, conns, logpath):
    """slowhttptest -H (slow headers) or -B (slow body) against /webhook:
    conns connections opened at 250/s, each sending a few bytes every
    5 s, for 90 s."""
    args = ["slowhttptest", mode, "-c", str(conns), "-r", "250", "-i", "5",
            "-x", "24", "-l", "90", "-t", "POST", "-p", "3",
            "-u", "http://127.0.0.1:%d/webhook" % h.port]
    if mode == "-B":
        args += ["-s", "65536"]
    f = open(logpath, "wb")
    return subprocess.Popen(args, stdout=f, stderr=subprocess.STDOUT), f


def metric(h, name):
    _, body = h.get("/metrics")
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def attack(h, **env):
    """1,000 slow-header and 500 slow-body connections opened at 250/s
    each while a well-behaved client posts 40 signed webhooks, one every
    0.1 s on a fresh connection. Returns the answer times."""
    assert shutil.which("slowhttptest"), \
        "slowhttptest missing (deploy/install-deps.sh)"
    ready(h, MODEGATE_MAX_TURNS="0", **env)     # the front door alone
    h.wait_until(lambda: h.get("/readyz")[0] == 200, 10, "ready")
    logs = [os.path.join(h.cluster.dir, "slow-%s.log" % m) for m in "HB"]
    procs = [slowhttptest(h, "-H", 1000, logs[0]),
             slowhttptest(h, "-B", 500, logs[1])]
    took, peak = [], 0
    try:
        time.sleep(0.5)
        for i in range(40):
            t0 = time.time()
            st, _ = h.post_webhook(message("wamid.slow%02d" % i, "oi %d" % i))
            took.append(time.time() - t0)
            eq(st, 200, "webhook %d" % i)
            if i % 4 == 0:
                peak = max(peak, metric(h, "modegate_http_connections"))
            time.sleep(0.1)
    finally:
        for p, f in procs:
            p.terminate()
            p.wait(10)
            f.close()
    dropped = (metric(h, "modegate_http_slow_closed_total"),
               metric(h, "modegate_http_evicted_total"),
               metric(h, "modegate_http_deadline_closed_total"))
    print("# slowhttptest: up to %d connections open; 40 signed webhooks "
          "answered in max %.3f s (median %.3f s); closed below the rate "
          "%d, evicted at the cap %d, past the deadline %d" % (
              peak, max(took), sorted(took)[20], *dropped))
    assert max(took) < 1.0, "a signed webhook waited %.2f s: %r" % (
        max(took), ["%.2f" % t for t in took])
    eq(h.sql1("SELECT count(*) FROM inbox WHERE wamid LIKE 'wamid.slow%'"),
       "40", "nothing lost")
    eq(h.get("/healthz")[0], 200, "the server is up")
    return peak, dropped


def test_slowhttptest_does_not_starve_signed_webhooks(h):
    # Defaults: MODEGATE_HTTP_MIN_RATE 500, MODEGATE_MAX_CONNECTIONS 512.
    peak, (slow, evicted, _) = attack(h)
    assert slow + evicted >= 1000, "slow clients dropped: %d + %d" % (
        slow, evicted)
    assert slow > 0, "requests below the minimum rate closed"


def test_at_the_cap_the_slowest_is_evicted(h):
    # No minimum rate: the slow connections stay until the 10 s deadline,
    # so the cap (512) fills; each new connection evicts the slowest.
    peak, (slow, evicted, _) = attack(h, MODEGATE_HTTP_MIN_RATE="0")
    eq(slow, 0, "no rate check")
    assert evicted >= 500, "evicted at the cap: %d" % evicted
    assert peak >= 400, "the cap was full: %d" % peak
