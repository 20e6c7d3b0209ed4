# test_logs.py -- MODEGATE_LOG_FORMAT: in json every line serve writes to
# stderr is one JSON object {"ts","level","msg"}; in text one event is one
# line, even when the message (libpq's, say) holds newlines.
# SPDX-License-Identifier: MIT
import json
import re

from harness import eq
from test_ingest import text_body

LEVELS = ("debug", "info", "warn", "error")
TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
TEXT = re.compile(r"^(\S+) level=(\S+) (.*)$")


def events(h):
    """Start-up (before the schema: a warning with libpq's multi-line
    message), then migrated: a signed webhook answered, a bad signature,
    a refused verification, the server's LOG messages sent to the client
    as notices; then stop. Returns serve's stderr."""
    h.start()
    h.wait_until(lambda: "cannot prepare" in h.log(), 10,
                 "the unmigrated warning")
    eq(h.stop(), 0, "exit status")
    rc, out = h.migrate()
    eq(rc, 0, "migrate: " + out)
    h.start(PGOPTIONS="-c client_min_messages=log -c log_statement=all")
    h.wait_until(lambda: h.get("/readyz")[0] == 200, 15, "ready")
    body = json.dumps(text_body("wamid.logs-1")).encode()
    eq(h.post_webhook(body)[0], 200, "signed webhook")
    eq(h.post_webhook(body, sign="sha256=" + "0" * 64)[0], 401,
       "bad signature")
    eq(h.get("/webhook?hub.mode=subscribe&hub.verify_token=nope"
             "&hub.challenge=1")[0], 403, "wrong verify token")
    h.wait_until(lambda: h.sql1("SELECT count(*) FROM inbox") == "1", 10,
                 "the message stored")
    eq(h.stop(), 0, "exit status")
    return h.log()


def test_json_lines(h):
    h.env.update({"MODEGATE_LOG_FORMAT": "json",
                  "MODEGATE_LOG_LEVEL": "debug"})
    log = events(h)
    assert log.endswith("\n"), "last line unterminated: %r" % log[-200:]
    msgs, levels = [], set()
    for ln in log[:-1].split("\n"):
        try:
            o = json.loads(ln)
        except ValueError:
            raise AssertionError("not one JSON object: %r" % ln)
        assert isinstance(o, dict), "not an object: %r" % ln
        eq(sorted(o), ["level", "msg", "ts"], "keys of %r" % ln)
        assert o["level"] in LEVELS, "level: %r" % ln
        assert TS.match(o["ts"]), "ts: %r" % ln
        assert isinstance(o["msg"], str) and o["msg"], "msg: %r" % ln
        msgs.append(o["msg"])
        levels.add(o["level"])
    eq(levels >= {"debug", "info", "warn"}, True, "levels seen %r" % levels)
    for want in ("serve: listening on", "webhook: signature mismatch (401)",
                 "webhook: verification refused (403)",
                 "ingest: committed 1 requests", "serve: stopped"):
        assert any(m.startswith(want) for m in msgs), "no %r in %r" % (
            want, msgs)
    # libpq's notices come through the log too, not raw.
    assert any(m.startswith("db: LOG: ") for m in msgs), \
        "no libpq notice in %r" % msgs
    # libpq's multi-line, tab-indented message is one line of words,
    # with the pool's name.
    warn = [m for m in msgs if "cannot prepare" in m]
    assert warn and all("\n" not in m and "\t" not in m and
                        m.startswith("db: ingest connection ")
                        for m in warn), "the prepare warning: %r" % warn


def test_text_one_event_per_line(h):
    h.env.update({"MODEGATE_LOG_FORMAT": "text",
                  "MODEGATE_LOG_LEVEL": "debug"})
    log = events(h)
    assert log.endswith("\n"), "last line unterminated: %r" % log[-200:]
    lines = log[:-1].split("\n")
    for ln in lines:
        m = TEXT.match(ln)
        assert m, "not one event: %r" % ln
        assert TS.match(m.group(1)), "ts: %r" % ln
        assert m.group(2) in LEVELS, "level: %r" % ln
        assert not re.search(r"[\x00-\x1f\x7f]", ln), "control: %r" % ln
    # libpq's text in words on the line: no escaped newline or tab.
    warn = [ln for ln in lines if "cannot prepare" in ln]
    assert warn and all("\\n" not in ln and "\\t" not in ln and
                        'relation "inbox" does not exist' in ln
                        for ln in warn), "the prepare warning: %r" % warn
    assert any("webhook: signature mismatch (401)" in ln for ln in lines)
    assert any(" level=debug db: LOG: " in ln for ln in lines), \
        "no libpq notice in the log"
