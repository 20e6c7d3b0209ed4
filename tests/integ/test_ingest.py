# test_ingest.py -- the webhook front door against a real PostgreSQL:
# every answer checked on its status code AND on the rows stored.
# SPDX-License-Identifier: MIT
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile

from harness import ROOT, eq

COUNTS = ("SELECT (SELECT count(*) FROM inbox), "
          "(SELECT count(*) FROM message_statuses), "
          "(SELECT count(*) FROM webhook_events), "
          "(SELECT count(*) FROM webhook_failures)")


def ready(h):
    rc, out = h.migrate()
    eq(rc, 0, "migrate: " + out)
    h.start()


def counts(h):
    return tuple(int(v) for v in h.sql(COUNTS)[0])


def text_body(wamid, sender="5511988887777", text="oi"):
    return {"object": "whatsapp_business_account", "entry": [{
        "id": "1", "changes": [{"field": "messages", "value": {
            "messaging_product": "whatsapp",
            "metadata": {"display_phone_number": "5511900000000",
                         "phone_number_id": "100"},
            "contacts": [{"profile": {"name": "Ana"}, "wa_id": sender}],
            "messages": [{"from": sender, "id": wamid,
                          "timestamp": "1795334514", "type": "text",
                          "text": {"body": text}}]}}]}]}


def test_handshake(h):
    ready(h)
    st, body = h.get("/webhook?hub.mode=subscribe&hub.verify_token=%s"
                     "&hub.challenge=1158201444" % h.token)
    eq((st, body), (200, b"1158201444"), "right token")
    st, _ = h.get("/webhook?hub.mode=subscribe&hub.verify_token=nope"
                  "&hub.challenge=1")
    eq(st, 403, "wrong token")
    st, _ = h.get("/webhook?hub.mode=unsubscribe&hub.verify_token=%s"
                  "&hub.challenge=1" % h.token)
    eq(st, 403, "wrong mode")
    st, _ = h.get("/webhook")
    eq(st, 403, "no query")


def test_signature_refused_stores_nothing(h):
    ready(h)
    body = json.dumps(text_body("wamid.sig-1")).encode()
    eq(h.post_webhook(body, sign=False)[0], 401, "missing")
    eq(h.post_webhook(body, sign="sha256=" + "0" * 64)[0], 401, "wrong")
    eq(h.post_webhook(body, sign=h.sign(body)[7:])[0], 401, "no prefix")
    eq(h.post_webhook(body, sign=h.sign(body + b" "))[0], 401, "other body")
    eq(counts(h), (0, 0, 0, 0), "rows after 401s")
    eq(h.post_webhook(body, sign=h.sign(body).upper().replace(
        "SHA256=", "sha256="))[0], 200, "uppercase hex")
    eq(counts(h), (1, 0, 0, 0), "rows after the good one")


def test_too_large_413(h):
    ready(h)
    big = b'{"object":"whatsapp_business_account","entry":[],"pad":"' + \
        b"x" * (3 * 1024 * 1024) + b'"}'
    eq(h.post_webhook(big)[0], 413, "3 MiB + a bit")
    eq(counts(h), (0, 0, 0, 0), "rows")
    # Exactly 3 MiB is accepted and stored.
    b = text_body("wamid.big-1", text="")
    raw = json.dumps(b, separators=(",", ":")).encode()
    pad = 3 * 1024 * 1024 - len(raw)
    b["entry"][0]["changes"][0]["value"]["messages"][0]["text"]["body"] = \
        "y" * pad
    raw = json.dumps(b, separators=(",", ":")).encode()
    eq(len(raw), 3 * 1024 * 1024, "body size")
    eq(h.post_webhook(raw)[0], 200, "exactly 3 MiB")
    eq(h.sql1("SELECT length(raw->'text'->>'body') FROM inbox"), str(pad),
       "stored text")


def test_malformed_400_kept(h):
    ready(h)
    for body in (b'{"object":"whatsapp_business_account","entry":[',
                 b'{"object":"page","entry":[]}',
                 b"\xff\xfe not json"):
        eq(h.post_webhook(body)[0], 400, repr(body[:20]))
        got = h.sql("SELECT encode(body, 'escape'), reason "
                    "FROM webhook_failures ORDER BY id DESC LIMIT 1")
        eq(h.sql1("SELECT body = '\\x%s'::bytea FROM webhook_failures "
                  "ORDER BY id DESC LIMIT 1" % body.hex()), "t",
           "raw bytes kept: %r" % (got,))
    eq(counts(h), (0, 0, 0, 3), "rows")


def expected(body):
    """(messages {wamid: type}, statuses {(wamid, status)}, event fields)."""
    msgs, stats, fields = {}, set(), set()
    for e in json.loads(body)["entry"]:
        for c in e["changes"]:
            v = c["value"]
            if c["field"] != "messages":
                fields.add(c["field"])
                continue
            for m in v.get("messages", []):
                msgs.setdefault(m["id"], m["type"])
            for s in v.get("statuses", []):
                stats.add((s["id"], s["status"]))
            if "errors" in v:
                fields.add("messages.errors")
    return msgs, stats, fields


def test_every_fixture_stored_with_its_type(h):
    ready(h)
    files = h.fixtures() or [os.path.join(h_dir(), f) for f in
                             sorted(os.listdir(h_dir()))
                             if f.endswith(".json")]
    assert files, "no payloads"
    for path in files:
        h.sql("TRUNCATE inbox, message_statuses, webhook_events")
        with open(path, "rb") as f:
            body = f.read()     # signed as they are
        eq(h.post_webhook(body)[0], 200, path)
        msgs, stats, fields = expected(body)
        eq(dict(h.sql("SELECT wamid, msg_type FROM inbox")), msgs,
           path + " inbox")
        eq(set(h.sql("SELECT wamid, status FROM message_statuses")), stats,
           path + " statuses")
        eq({r[0] for r in h.sql("SELECT field FROM webhook_events")}, fields,
           path + " events")


def h_dir():
    from harness import PAYLOADS
    return PAYLOADS


def test_sender_key_and_columns(h):
    ready(h)
    eq(h.post_webhook(h.payload("bsuid_only.json"))[0], 200, "bsuid")
    eq(h.sql("SELECT sender_key, wa_id, user_id, phone_number_id, "
             "profile_name, msg_type, state, "
             "extract(epoch FROM wa_timestamp)::bigint FROM inbox"),
       [("BR.1234567890123456789", None, "BR.1234567890123456789",
         "100000000000001", "Dra. Ana", "text", "pending", "1795334514")],
       "row")
    eq(h.post_webhook(h.payload("nul_char.json"))[0], 200, "NUL in text")
    eq(h.sql1("SELECT raw->'text'->>'body' FROM inbox "
              "WHERE wamid = 'wamid.mg-nul-char'"),
       "a\ufffdb \\u0000 c/d", "NUL replaced")


def test_batch_of_three_and_mixed(h):
    ready(h)
    eq(h.post_webhook(h.payload("batch3.json"))[0], 200, "batch")
    eq(h.sql("SELECT wamid, msg_type FROM inbox ORDER BY id"),
       [("wamid.mg-batch-1", "text"), ("wamid.mg-batch-2", "image"),
        ("wamid.mg-batch-3", "reaction")], "rows")
    eq(h.post_webhook(h.payload("mixed_entries.json"))[0], 200, "mixed")
    eq(counts(h), (4, 1, 1, 0), "rows")
    eq(h.sql1("SELECT msg_type FROM inbox WHERE wamid = "
              "'wamid.mg-unknown-type'"), "hologram", "unknown type kept")


def test_non_message_fields_not_in_inbox(h):
    ready(h)
    names = ["echo_text.json", "template_status_approved.json",
             "account_update_restriction.json", "user_preferences_resume.json"]
    bodies = [h.fixture(n) for n in names if h.fixture(n)] or \
        [h.payload("value_errors.json")]
    for b in bodies:
        eq(h.post_webhook(b)[0], 200, "ack")
    eq(h.sql1("SELECT count(*) FROM inbox"), "0", "inbox")
    eq(h.sql1("SELECT count(*) FROM webhook_events"), str(len(bodies)),
       "events")


def test_replay_stores_nothing_new(h):
    ready(h)
    body = h.payload("mixed_entries.json")
    eq(h.post_webhook(body)[0], 200, "first")
    first = h.sql("SELECT id, received_at FROM inbox")
    before = counts(h)
    for _ in range(3):
        eq(h.post_webhook(body)[0], 200, "replay")
    eq(counts(h), before, "rows")
    eq(h.sql("SELECT id, received_at FROM inbox"), first, "row untouched")
    bad = b"{not json"
    eq(h.post_webhook(bad)[0], 400, "bad")
    eq(h.post_webhook(bad)[0], 400, "bad again")
    eq(h.sql1("SELECT count(*) FROM webhook_failures"), "1", "failures")


def test_migrate_idempotent_and_concurrent(h):
    procs = [subprocess.Popen([h.bin, "migrate"], env=h.env,
                              stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
             for _ in range(3)]
    outs = [(p.wait(30), p.stdout.read()) for p in procs]
    for rc, out in outs:
        eq(rc, 0, out)
    sqldir = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          "..", "..", "sql")
    n = len([f for f in os.listdir(sqldir) if re.match(r"\d{4}_.*\.sql$", f)])
    eq(sum("%d applied" % n in out for _, out in outs), 1, "applied once")
    k = len([f for f in os.listdir(os.path.join(sqldir, "functions"))
             if f.endswith(".sql")])
    for _, out in outs:     # every run re-applies the functions
        assert "functions: %d files re-applied" % k in out, out
    rc, out = h.migrate()
    eq((rc, "0 applied" in out), (0, True), out)
    assert "functions: %d files re-applied" % k in out, out
    eq(h.sql1("SELECT count(*) FROM schema_migrations"), str(n), "versions")


def test_readyz(h):
    h.start()               # not migrated yet
    st, body = h.get("/readyz")
    eq(st, 503, body)
    eq(h.get("/healthz"), (200, b"ok\n"), "healthz")
    rc, out = h.migrate()
    eq(rc, 0, out)
    h.wait_until(lambda: h.get("/readyz")[0] == 200, 10, "ready")


def test_metrics(h):
    h.env["MODEGATE_COALESCE_MS"] = "60000"   # the worker leaves it pending
    ready(h)
    h.post_webhook(json.dumps(text_body("wamid.m-1")))
    h.post_webhook(b"{}", sign=False)
    h.get("/webhook?hub.mode=subscribe")
    st, body = h.get("/metrics")
    eq(st, 200, "metrics")
    text = body.decode()
    for line in ('modegate_webhook_requests_total{code="200"} 1',
                 'modegate_webhook_requests_total{code="401"} 1',
                 'modegate_webhook_requests_total{code="403"} 1',
                 "modegate_http_request_duration_seconds_count 3",
                 'modegate_http_request_duration_seconds_bucket{le="+Inf"} 3',
                 "modegate_db_up 1"):
        assert line + "\n" in text, line + " not in:\n" + text
    h.wait_until(lambda: 'modegate_inbox_rows{state="pending"} 1\n' in
                 h.get("/metrics")[1].decode(), 10, "inbox gauge")


def test_routes(h):
    ready(h)
    eq(h.get("/nope")[0], 404, "unknown path")
    eq(h.request("DELETE", "/webhook")[0], 405, "wrong method")
    eq(h.request("POST", "/healthz", b"")[0], 405, "wrong method")


def test_database_down_503_then_recovers(h):
    ready(h)
    body = json.dumps(text_body("wamid.outage-1")).encode()
    h.pg_stop()
    h.wait_until(lambda: h.get("/readyz")[0] == 503, 10, "not ready")
    eq(h.post_webhook(body)[0], 503, "while down")
    eq(h.post_webhook(body)[0], 503, "still down")
    assert h.alive(), "serve died"
    h.pg_start()
    h.wait_until(lambda: h.get("/readyz")[0] == 200, 15, "ready again")
    eq(h.post_webhook(body)[0], 200, "Meta's retry")
    eq(h.sql("SELECT wamid FROM inbox"), [("wamid.outage-1",)], "stored")


def test_concurrent_requests_group_commit(h):
    ready(h)
    import threading
    results = []

    def worker(k):
        for i in range(25):
            st, _ = h.post_webhook(json.dumps(text_body(
                "wamid.c-%d-%d" % (k, i), sender="55119%08d" % k)))
            results.append(st)
    ts = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    eq(results.count(200), 200, "all 200")
    eq(h.sql1("SELECT count(*) FROM inbox"), "200", "rows")


def test_config_refused_and_clean_stop(h):
    env = dict(h.env)
    del env["WHATSAPP_APP_SECRET"]
    env["MODEGATE_DB_CONNECTIONS"] = "0"
    p = subprocess.run([h.bin, "serve"], env=env, capture_output=True,
                       text=True, timeout=10)
    eq(p.returncode, 78, p.stderr)
    assert "WHATSAPP_APP_SECRET" in p.stderr and \
        "MODEGATE_DB_CONNECTIONS" in p.stderr, p.stderr
    assert h.secret not in p.stderr
    ready(h)
    eq(h.post_webhook(json.dumps(text_body("wamid.stop-1")))[0], 200, "post")
    eq(h.stop(signal.SIGINT), 0, "exit status after SIGINT")
    assert h.secret not in h.log() and h.token not in h.log(), "secret logged"


def test_bad_rules_refuse_the_start(h):
    """A broken rule file stops serve before it listens (exit 78), with
    every problem named by file and key."""
    rules = tempfile.mkdtemp(prefix="modegate-rules.")
    try:
        for d in ("mode", "policy", "sql"):
            shutil.copytree(os.path.join(ROOT, d), os.path.join(rules, d))
        path = os.path.join(rules, "mode", "transitions.json")
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace('"oferta"', '"ofera"', 1))
        env = dict(h.env, MODEGATE_RULES_DIR=rules)
        p = subprocess.run([h.bin, "serve"], env=env, capture_output=True,
                           text=True, timeout=10)
        eq(p.returncode, 78, p.stderr)
        assert 'mode/transitions.json: transitions.' in p.stderr and \
            'unknown mode "ofera"' in p.stderr, p.stderr
        assert "listening" not in p.stderr, p.stderr
    finally:
        shutil.rmtree(rules)


def _down_from_start(h, url, why):
    """serve started against a database it cannot reach stays up: /healthz
    200, /readyz and signed webhooks 503, the reason in the log, retrying
    (it used to die with SIGSEGV before its first retry)."""
    h.start(wait=False, DATABASE_URL=url)
    h.wait_until(h._healthy, 10, "serve did not come up")
    h.wait_until(lambda: h.log().count("connection 0 down") >= 3, 10,
                 "retries")
    assert h.alive(), "serve died:\n" + h.log()[-2000:]
    eq(h.get("/healthz")[0], 200, "healthz")
    eq(h.get("/readyz")[0], 503, "readyz")
    body = json.dumps(text_body("wamid.start-down-1")).encode()
    eq(h.post_webhook(body)[0], 503, "webhook while down")
    assert why in h.log(), "%r not in the log:\n%s" % (why, h.log()[-1500:])
    eq(h.stop(), 0, "clean stop while down")


def test_start_database_refused(h):
    from harness import free_port
    _down_from_start(h, "postgresql://modegate@127.0.0.1:%d/x" % free_port(),
                     "Connection refused")


def test_start_database_no_socket(h):
    _down_from_start(h, "postgresql:///x?host=/nonexistent-modegate-dir",
                     "No such file or directory")


def test_start_database_dns(h):
    _down_from_start(h, "postgresql://modegate@no-such-host.invalid/x",
                     "could not translate host name")


def test_start_database_bad_port(h):
    _down_from_start(h, "postgresql://modegate@127.0.0.1:70000/x",
                     "port")


def test_start_database_auth(h):
    url = h.env["DATABASE_URL"].replace("modegate@", "nobody_here@")
    _down_from_start(h, url, 'role "nobody_here" does not exist')


def test_start_database_down_then_up(h):
    """The database comes up after serve (same host, booting): serve
    connects by itself and takes Meta's retry."""
    rc, out = h.migrate()
    eq(rc, 0, out)
    h.pg_stop()
    h.start(wait=False)
    h.wait_until(h._healthy, 10, "serve did not come up")
    body = json.dumps(text_body("wamid.boot-1")).encode()
    eq(h.post_webhook(body)[0], 503, "while the database boots")
    h.pg_start()
    h.wait_until(lambda: h.get("/readyz")[0] == 200, 20, "ready")
    eq(h.post_webhook(body)[0], 200, "Meta's retry")
    eq(h.sql("SELECT wamid FROM inbox"), [("wamid.boot-1",)], "stored")
