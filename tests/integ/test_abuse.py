# test_abuse.py -- abuse limits: a flood from one number does not become a
# flood of LLM calls (per-sender turn limit, sql/functions/), and the HTTP front
# door bounds idle and slow connections, header sizes and the number of
# connections while normal webhooks keep getting 200.
# SPDX-License-Identifier: MIT
import json
import socket
import time

from harness import eq
from test_turn import DOCTOR, audit, llm_calls, message, ready, send

OTHER = "5511977776666"


def llm_turns(h, sender):
    return len(audit(h, "llm", sender))


def test_flood_from_one_number_is_rate_limited(h):
    turns, window = 3, 4
    llm = ready(h, MODEGATE_COALESCE_MS="50",
                MODEGATE_SENDER_TURNS=str(turns),
                MODEGATE_SENDER_WINDOW_S=str(window))
    h.wait_until(lambda: h.get("/readyz")[0] == 200, 10, "ready")
    t0 = time.time()
    for i in range(60):
        send(h, "wamid.flood%02d" % i, "msg %02d" % i)
        if i % 20 == 10:
            send(h, "wamid.other%d" % i, "oi, sou outro medico",
                 sender=OTHER)
        time.sleep(0.08)
    flood_s = time.time() - t0
    q = ("SELECT count(*) FROM inbox WHERE state IN ('done', 'skipped', "
         "'dead')")
    h.wait_until(lambda: h.sql1(q) == "63", 60, "every message settled")
    elapsed = time.time() - t0
    eq(h.sql1("SELECT count(*) FROM inbox i JOIN conversations c ON "
              "c.id = i.conversation_id WHERE c.wa_id = '%s' AND "
              "i.state = 'done'" % DOCTOR), "60",
       "all 60 flood messages stored and answered (none lost)")
    n = llm_turns(h, DOCTOR)
    bound = turns * (int(elapsed // window) + 1)
    assert 1 <= n <= bound, "flood: %d LLM turns in %.1f s (limit %d per " \
        "%d s: at most %d)" % (n, elapsed, turns, window, bound)
    eq(len(llm_calls(llm)), n + llm_turns(h, OTHER),
       "every LLM request is one audited turn")
    rl = audit(h, "worker", DOCTOR)
    held = sum(json.loads(d)["held"] for dec, _, d in rl
               if dec == "rate_limited")
    assert held > 0, "rate_limited audited: %r" % (rl,)
    eq(llm_turns(h, OTHER), 3, "the other sender: one turn per message")
    eq([r for r in audit(h, "worker", OTHER) if r[0] == "rate_limited"], [],
       "the other sender is never rate limited")
    # The README's query: who was rate limited, how many messages held.
    rows = h.sql("""
SELECT c.wa_id, count(*) AS turns, sum((a.details ->> 'held')::int) AS held
FROM audit_log a JOIN conversations c ON c.id = a.conversation_id
WHERE a.step = 'worker' AND a.decision = 'rate_limited'
    AND a.created_at > now() - interval '1 day'
GROUP BY c.wa_id ORDER BY held DESC""")
    eq([(r[0], int(r[2])) for r in rows], [(DOCTOR, held)],
       "the README query lists the flooding number only")
    print("# flood: 60 messages in %.1f s -> %d LLM turns (bound %d), "
          "%d held, settled after %.1f s" % (flood_s, n, bound, held,
                                              elapsed))


def metric(h, name):
    st, body = h.get("/metrics")
    eq(st, 200, "/metrics")
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError("%s not in /metrics" % name)


def connect(h):
    s = socket.create_connection(("127.0.0.1", h.port), timeout=10)
    return s


def gone(s):
    """True when the server closed s (checked without sending)."""
    s.settimeout(0.2)
    try:
        return s.recv(1) == b""
    except socket.timeout:
        return False
    except OSError:
        return True


def closed_by_server(s, deadline):
    """Wait until the server closes s (EOF or reset); seconds it took, or
    None if still open at deadline. Keeps trickling one byte per 0.3 s, as
    a slowloris client does, so a per-read timeout alone never fires."""
    t0 = time.time()
    s.settimeout(0.3)
    while time.time() - t0 < deadline:
        try:
            if s.recv(4096) == b"":
                return time.time() - t0
        except socket.timeout:
            pass
        except OSError:
            return time.time() - t0
        try:
            s.send(b"X")
        except OSError:
            return time.time() - t0
    return None


def answered(s, req=b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
             timeout=5):
    """Send req on s; the status code of the answer, None if none came."""
    s.settimeout(timeout)
    try:
        s.sendall(req)
        line = s.recv(4096).split(b"\r\n", 1)[0]
    except OSError:
        return None
    parts = line.split()
    return int(parts[1]) if len(parts) > 1 else None


def test_slow_and_idle_connections_closed(h):
    timeout = 2
    ready(h, MODEGATE_HTTP_TIMEOUT_S=str(timeout))
    h.wait_until(lambda: h.get("/readyz")[0] == 200, 10, "ready")
    slow = connect(h)
    slow.sendall(b"POST /webhook HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    idle = connect(h)
    # A normal webhook meanwhile is answered.
    send(h, "wamid.norm1", "Oi")
    took = closed_by_server(slow, timeout + 6)
    assert took is not None, "a byte-by-byte client is never closed"
    # It was closed near the deadline, though it sent a byte every 0.3 s.
    assert took < timeout + 3, "slow client closed after %.1f s" % took
    idle.settimeout(timeout + 6)
    try:
        eq(idle.recv(1), b"", "an idle connection is closed")
    except ConnectionResetError:
        pass
    # Keep-alive: a client that got its answer and then goes quiet.
    ka = connect(h)
    eq(answered(ka), 200, "keep-alive request")
    ka.settimeout(timeout + 6)
    try:
        eq(ka.recv(1), b"", "an idle keep-alive connection is closed")
    except ConnectionResetError:
        pass
    eq(h.get("/healthz")[0], 200, "the server is up")
    send(h, "wamid.norm2", "Tudo bem?")
    # At least the slow one (evhttp's own idle timeout may win the race
    # for the quiet ones).
    m = metric(h, "modegate_http_deadline_closed_total")
    assert m >= 1, "deadline closes counted: %r" % m
    for s in (slow, idle, ka):
        s.close()


def test_connection_cap(h):
    cap = 8
    # no minimum rate here: the slow request stays until evicted
    ready(h, MODEGATE_MAX_CONNECTIONS=str(cap), MODEGATE_HTTP_TIMEOUT_S="30",
          MODEGATE_HTTP_MIN_RATE="0")
    h.wait_until(lambda: h.get("/readyz")[0] == 200, 10, "ready")
    held = [connect(h) for _ in range(cap - 1)]
    eq(answered(held[0]), 200, "an open connection works")
    # The cap is full of idle connections and one slow request.
    slow = connect(h)
    slow.sendall(b"POST /webhook HTTP/1.1\r\nHost: x\r\n")
    time.sleep(1)       # older than the half second that protects them
    # A new connection at the cap evicts an idle one (the oldest: not
    # held[0], which has just been answered) rather than wait.
    extra = connect(h)
    eq(answered(extra, timeout=2), 200, "a connection at the cap is served")
    eq(answered(held[0]), 200, "the connection just answered is kept")
    evicted = metric(h, "modegate_http_evicted_total")
    assert evicted >= 1, "eviction counted: %r" % evicted
    # At the cap each new connection (this test's own included) evicts
    # one: the oldest idle connections go first.
    ev = [gone(s) for s in held[1:]]
    assert ev[0] and not ev[-1] and ev == sorted(ev, reverse=True), \
        "idle connections evicted oldest first: %r" % ev
    eq(gone(slow), False, "the slow request (a few bytes) outranks idle ones")
    eq(h.get("/healthz")[0], 200, "new connections accepted")
    send(h, "wamid.cap1", "Oi")
    for s in held + [slow, extra]:
        s.close()


def test_oversized_headers_refused(h):
    ready(h, MODEGATE_MAX_HEADER_BYTES="4096")
    h.wait_until(lambda: h.get("/readyz")[0] == 200, 10, "ready")
    s = connect(h)
    code = answered(s, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " +
                    b"a" * 8000 + b"\r\n\r\n")
    assert code is None or 400 <= code < 500, "oversized headers: %r" % code
    s.settimeout(5)
    try:
        while s.recv(4096):
            pass
    except ConnectionResetError:
        pass
    s.close()
    st, _ = h.request("GET", "/healthz", headers={"X-Ok": "a" * 2000})
    eq(st, 200, "headers under the limit are fine")
    send(h, "wamid.hdr1", "Oi")
    print("# oversized headers: answered %r, then closed" % code)
