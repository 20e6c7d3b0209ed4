# test_operator.py -- what an operator meets in the first week: requests
# the HTTP layer refuses are logged and counted, every route is timed,
# HEAD /healthz, the listen address as configured (IPv6, port 0), and log
# lines that say why (listen errors, verification refusals, JSON errors,
# LLM transport errors, database outages, the version at start).
# SPDX-License-Identifier: MIT
import json
import re
import socket
import time

from harness import eq, free_port
from test_ingest import text_body
from test_turn import message


def ready(h, **env):
    rc, out = h.migrate()
    eq(rc, 0, "migrate: " + out)
    h.start(**env)
    h.wait_until(lambda: h.get("/readyz")[0] == 200, 15, "ready")


def raw(host, port, data, family=socket.AF_INET):
    """Send bytes, return the answer's status code (None: closed)."""
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(10)
    try:
        s.connect((host, port))
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        buf = b""
        while b"\r\n" not in buf:
            try:
                b = s.recv(4096)
            except ConnectionResetError:
                break
            if not b:
                break
            buf += b
        m = re.match(rb"HTTP/1\.[01] (\d{3})", buf)
        return int(m.group(1)) if m else None
    finally:
        s.close()


def metric(h, line):
    return line + "\n" in h.get("/metrics")[1].decode()


def test_refused_requests_logged_and_counted(h):
    """A body over 3 MiB and 20 KB of headers: evhttp answers them itself;
    each leaves one log line (no body) and a count on /metrics."""
    ready(h)
    secret_words = "corpo-secreto-nao-logar"
    body = (secret_words * 200000).encode()[:3 * 1024 * 1024 + 10]
    code = raw("127.0.0.1", h.port, b"POST /webhook HTTP/1.1\r\nHost: x\r\n"
               b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
               % len(body) + body)
    eq(code, 413, "body over 3 MiB")
    code = raw("127.0.0.1", h.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
               b"X-Big: " + b"a" * 20000 + b"\r\n\r\n")
    eq(code, 400, "20 KB of headers")
    h.wait_until(lambda: metric(
        h, 'modegate_webhook_requests_total{code="413"} 1'), 5, "413 counted")
    assert metric(h, 'modegate_webhook_requests_total{code="400"} 1'), \
        h.get("/metrics")[1].decode()
    log = h.log()
    l413 = [ln for ln in log.splitlines() if "refused (413)" in ln]
    l400 = [ln for ln in log.splitlines() if "refused (400)" in ln]
    eq(len(l413), 1, "one line for the 413: %r" % l413)
    eq(len(l400), 1, "one line for the 400: %r" % l400)
    assert "body over 3145728 bytes" in l413[0], l413
    assert "MODEGATE_MAX_HEADER_BYTES" in l400[0], l400
    assert secret_words not in log, "the body was logged"
    # A request a route answers is not counted twice.
    eq(h.post_webhook(b"{}", sign=False)[0], 401, "bad signature")
    assert metric(h, 'modegate_webhook_requests_total{code="401"} 1')
    assert metric(h, 'modegate_webhook_requests_total{code="400"} 1')


def test_every_route_timed_head_healthz(h):
    ready(h)
    st, body = h.request("HEAD", "/healthz")
    eq((st, body), (200, b""), "HEAD /healthz")
    eq(h.request("HEAD", "/readyz")[0], 200, "HEAD /readyz")
    eq(h.request("HEAD", "/webhook")[0], 405, "HEAD /webhook")
    h.get("/nowhere")
    text = h.get("/metrics")[1].decode()
    for route in ("/healthz", "/readyz", "/metrics", "other"):
        m = re.search(r'^modegate_http_request_duration_seconds_count'
                      r'\{route="%s"\} (\d+)$' % re.escape(route), text, re.M)
        assert m and int(m.group(1)) >= 1, (route, text)
    m = re.search(r'^modegate_http_request_duration_seconds_count'
                  r'\{route="/webhook"\} (\d+)$', text, re.M)
    assert m and int(m.group(1)) >= 1, text    # the HEAD's 405
    # the pools connect in the background (seconds under ASan on a busy
    # machine): all of them up soon after the start
    for pool, n in (("ingest", 2), ("worker", 4)):
        line = 'modegate_db_connections_up{pool="%s"} %d\n' % (pool, n)
        h.wait_until(lambda: line in h.get("/metrics")[1].decode(), 10,
                     "%s connections up" % pool)
    assert 'modegate_db_connections_up{pool="sender"}' in text, text
    for pool in ("worker", "sender"):
        assert 'modegate_db_batches_total{pool="%s"} ' % pool in text, text
        assert 'modegate_db_batched_queries_total{pool="%s"} ' % pool \
            in text, text


def test_listen_ipv6(h):
    rc, out = h.migrate()
    eq(rc, 0, out)
    port = free_port()
    h.start(wait=False, MODEGATE_LISTEN="[::1]:%d" % port)
    h.wait_until(lambda: "serve: listening on" in h.log(), 10, "listening")
    assert "serve: listening on [::1]:%d," % port in h.log(), h.log()
    eq(raw("::1", port, b"GET /healthz HTTP/1.0\r\n\r\n", socket.AF_INET6),
       200, "healthz over IPv6")


def test_listen_port_zero_logs_the_port(h):
    h.start(wait=False, MODEGATE_LISTEN="127.0.0.1:0")
    h.wait_until(lambda: "serve: listening on" in h.log(), 10, "listening")
    m = re.search(r"serve: listening on 127\.0\.0\.1:(\d+),", h.log())
    assert m and m.group(1) != "0", h.log()
    eq(raw("127.0.0.1", int(m.group(1)), b"GET /healthz HTTP/1.0\r\n\r\n"),
       200, "the logged port answers")


def test_cannot_listen_says_why(h):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    port = s.getsockname()[1]
    try:
        h.start(wait=False, MODEGATE_LISTEN="127.0.0.1:%d" % port)
        rc = h.proc.wait(15)
        h.proc = None
        h.logf.close()
        eq(rc, 1, "exit status")
        assert ("cannot listen on 127.0.0.1:%d: Address already in use"
                % port) in h.log(), h.log()
    finally:
        s.close()


def test_verification_refusals_say_why(h):
    ready(h)
    tok = h.token
    for q, why in (
            ("", "no query string"),
            ("hub.verify_token=%s&hub.challenge=1" % tok, "hub.mode missing"),
            ("hub.mode=unsubscribe&hub.verify_token=%s&hub.challenge=1" % tok,
             "hub.mode is not subscribe"),
            ("hub.mode=subscribe&hub.challenge=1", "hub.verify_token missing"),
            ("hub.mode=subscribe&hub.verify_token=%s" % tok,
             "hub.challenge missing"),
            ("hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1",
             "hub.verify_token does not match WHATSAPP_VERIFY_TOKEN")):
        eq(h.get("/webhook" + ("?" + q if q else ""))[0], 403, q)
        h.wait_until(lambda: "verification refused (403): " + why in h.log(),
                     5, why)
    assert tok not in h.log(), "the verify token was logged"


def test_invalid_json_in_words(h):
    ready(h)
    eq(h.post_webhook(b'{"object": "whatsapp_business_account"')[0], 400,
       "truncated body")
    h.wait_until(lambda: "invalid JSON at byte" in h.log(), 5, "logged")
    line = [ln for ln in h.log().splitlines() if "invalid JSON" in ln][0]
    assert "unexpected end of data" in line, line
    assert ": continue" not in line, line


def test_version_in_the_first_line(h):
    ready(h)
    first = h.log().splitlines()[0]
    assert re.search(r"serve: modegate \d+\.\d+\.\d+ starting", first), first


def test_llm_connection_refused_says_so(h):
    port = free_port()
    ready(h, LLM_PROVIDER="anthropic", LLM_API_KEY="k",
          LLM_BASE_URL="http://127.0.0.1:%d" % port, MODEGATE_COALESCE_MS="0")
    eq(h.post_webhook(message("wamid.llm-down-1", "Quero saber de vagas"))[0],
       200, "webhook")
    h.wait_until(lambda: "llm: transport: " in h.log(), 15, "llm error")
    line = [ln for ln in h.log().splitlines() if "llm: transport:" in ln][0]
    assert "Connection refused" in line or "Couldn't connect" in line, line
    assert "http 0" not in line, line


def test_database_outage_logged_by_state(h):
    """7 s without the database under light traffic: a warning when each
    pool loses it, a line when each is whole again; libpq's text on one
    line, the pool named; not a warning per retry."""
    ready(h)
    mark = len(h.log())
    h.pg_stop()
    end = time.monotonic() + 7
    i = 0
    while time.monotonic() < end:
        h.post_webhook(json.dumps(text_body("wamid.outage-%d" % i)))
        i += 1
        time.sleep(0.2)
    h.pg_start()
    h.wait_until(lambda: h.get("/readyz")[0] == 200, 20, "ready again")
    h.wait_until(lambda: "ingest: all 2 connections up again" in h.log(), 20,
                 "ingest back")
    h.wait_until(lambda: "worker: all 4 connections up again" in h.log(), 20,
                 "worker back")
    lines = h.log()[mark:].splitlines()
    warns = [ln for ln in lines if " level=warn " in ln]
    assert 1 <= len(warns) <= 10, "%d warnings:\n%s" % (
        len(warns), "\n".join(warns))
    dbw = [ln for ln in warns if " db: " in ln]
    assert any(" db: ingest connection " in ln for ln in dbw), dbw
    assert any(" db: worker connection " in ln for ln in dbw), dbw
    for ln in lines:
        assert "\\t" not in ln and "\t" not in ln, ln
