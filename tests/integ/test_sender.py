# test_sender.py -- the outbox sender against a real PostgreSQL and the
# fake Graph API (tests/fakes/fake_graph.py): request shapes, stored
# wamids and states, error dispatch on error.code (131047 → template or
# drop, 130429 back-off, 190 pause, 131026 permanent, 5xx retry), order per
# conversation, delivery statuses from webhooks, crash safety, mark-as-read.
# Outbox rows are inserted in SQL as the worker would commit them.
# SPDX-License-Identifier: MIT
import json
import os
import signal
import subprocess
import time
import urllib.request

from harness import ROOT, eq

PNID = "106540352242922"


class FakeGraph:
    """tests/fakes/fake_graph.py on a free port, scriptable, recording."""

    def __init__(self):
        self.proc = subprocess.Popen(
            ["python3", os.path.join(ROOT, "tests", "fakes", "fake_graph.py"),
             "--port", "0"], stdout=subprocess.PIPE, text=True)
        self.port = int(self.proc.stdout.readline().strip())
        self.base = "http://127.0.0.1:%d" % self.port

    def _call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data,
                                     method=method)
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read() or b"null")

    def script(self, *steps):
        self._call("POST", "/__script", list(steps))

    def requests(self):
        return [r for r in self._call("GET", "/__requests")
                if r["path"].endswith("/messages")]

    def statuses(self, h, delay=0.0, loss=0.0, order="in"):
        """Post signed status webhooks back to h, as Meta does."""
        self._call("POST", "/__config", {"statuses": {
            "url": "http://127.0.0.1:%d/webhook" % h.port,
            "secret": h.secret, "delay": delay, "loss": loss,
            "order": order}})

    def status_log(self):
        return self._call("GET", "/__statuses")

    def close(self):
        self.proc.kill()
        self.proc.wait()


def with_graph(fn):
    """Run a case with a fresh fake Graph API, closed afterwards."""
    def run(h):
        g = FakeGraph()
        try:
            fn(h, g)
        finally:
            g.close()
    run.__name__ = fn.__name__
    run.__code__ = run.__code__.replace(co_firstlineno=fn.__code__.co_firstlineno)
    return run


def serve(h, g, token="test-token", **env):
    rc, out = h.migrate()
    eq(rc, 0, "migrate: " + out)
    env.setdefault("MODEGATE_SEND_RETRY_BASE_MS", "100")
    h.start(WHATSAPP_API_BASE=g.base + "/v25.0", WHATSAPP_TOKEN=token, **env)


def conv(h, wa_id, window_hours=1):
    """A conversation whose doctor last wrote window_hours ago."""
    return h.sql1("INSERT INTO conversations (phone_number_id, wa_id, "
                  "last_inbound_at) VALUES ('%s', '%s', now() - "
                  "interval '%d hours') RETURNING id" % (PNID, wa_id,
                                                         window_hours))


def queue(h, cid, payload, kind="text"):
    """One outbox row as mg_commit_turn writes it; returns its id."""
    return h.sql1(
        "INSERT INTO outbox (conversation_id, kind, payload, to_key, "
        "phone_number_id) SELECT id, '%s', mg_complete_payload('%s', wa_id), "
        "wa_id, phone_number_id FROM conversations WHERE id = %s "
        "RETURNING id" % (kind, json.dumps(payload).replace("'", "''"), cid))


def text(h, cid, body):
    return queue(h, cid, {"type": "text",
                          "text": {"preview_url": False, "body": body}})


def state(h, oid):
    return h.sql1("SELECT state FROM outbox WHERE id = %s" % oid)


def wait_state(h, oid, want, timeout=10):
    h.wait_until(lambda: state(h, oid) == want, timeout,
                 "outbox %s in state %s (is %s)" % (oid, want, state(h, oid)))


def metrics(h):
    st, body = h.get("/metrics")
    eq(st, 200, "/metrics")
    return body.decode()


def status_webhook(h, wamid, status, code=None, ts="1795334600"):
    s = {"id": wamid, "status": status, "timestamp": ts,
         "recipient_id": "5511988887777"}
    if code is not None:
        s["errors"] = [{"code": code, "title": "Re-engagement message",
                        "message": "Re-engagement message",
                        "error_data": {"details": "more than 24 hours"}}]
    body = {"object": "whatsapp_business_account", "entry": [{
        "id": "1", "changes": [{"field": "messages", "value": {
            "messaging_product": "whatsapp",
            "metadata": {"display_phone_number": "5511900000000",
                         "phone_number_id": PNID},
            "statuses": [s]}}]}]}
    eq(h.post_webhook(body)[0], 200, "status webhook " + status)


@with_graph
def test_text_posted_with_exact_shape_and_wamid_stored(h, g):
    serve(h, g)
    cid = conv(h, "5511988887777")
    oid = text(h, cid, "Oi, doutora! Tudo bem?")
    wait_state(h, oid, "sent")
    reqs = g.requests()
    eq(len(reqs), 1, "one request")
    r = reqs[0]
    eq(r["path"], "/v25.0/%s/messages" % PNID, "path")
    eq(r["headers"].get("authorization"), "Bearer test-token", "auth")
    eq(r["headers"].get("content-type"), "application/json", "type")
    eq(r["body"], {"messaging_product": "whatsapp",
                   "recipient_type": "individual", "to": "+5511988887777",
                   "type": "text", "text": {"preview_url": False,
                                            "body": "Oi, doutora! Tudo bem?"},
                   "biz_opaque_callback_data": "modegate:outbox:%s" % oid},
       "body, naming its outbox row for the status webhooks")
    wamid = h.sql1("SELECT wamid FROM outbox WHERE id = %s" % oid)
    assert wamid.startswith("wamid.FAKE"), wamid
    eq(h.sql1("SELECT count(*) FROM audit_log WHERE step = 'send' AND "
              "decision = 'sent' AND details ->> 'wamid' = '%s'" % wamid),
       "1", "audited with the wamid")
    eq(h.sql1("SELECT last_outbound_at IS NOT NULL FROM conversations "
              "WHERE id = %s" % cid), "t", "last_outbound_at")
    assert 'modegate_sends_total{outcome="sent"} 1' in metrics(h)
    assert "test-token" not in h.log(), "the token is never logged"


@with_graph
def test_dry_run_without_token_posts_nothing(h, g):
    serve(h, g, token="")
    cid = conv(h, "5511988887777")
    oid = text(h, cid, "Oi")
    wait_state(h, oid, "dry_run")
    time.sleep(0.5)
    eq(g.requests(), [], "nothing posted")
    eq(h.log().count("dry-run: replies are recorded, not sent"), 1,
       "logged once")
    assert "modegate_sender_dry_run 1" in metrics(h)


@with_graph
def test_131047_queues_the_configured_template(h, g):
    serve(h, g, WHATSAPP_TEMPLATE_WINDOW_CLOSED="retomar_contato:pt_BR")
    g.script({"status": 400, "code": 131047})
    cid = conv(h, "5511988887777")
    oid = text(h, cid, "Oi de novo")
    h.wait_until(lambda: h.sql1(
        "SELECT count(*) FROM outbox WHERE kind = 'template' AND "
        "state = 'sent'") == "1", 10, "template sent")
    eq(h.sql("SELECT state, error_code FROM outbox WHERE id = %s" % oid),
       [("failed", "131047")], "the text")
    reqs = g.requests()
    eq(len(reqs), 2, "text, then template")
    eq(reqs[1]["body"], {
        "messaging_product": "whatsapp", "recipient_type": "individual",
        "to": "+5511988887777", "type": "template",
        "template": {"name": "retomar_contato",
                     "language": {"code": "pt_BR",
                                  "policy": "deterministic"}},
        "biz_opaque_callback_data": "modegate:outbox:%s" % h.sql1(
            "SELECT id FROM outbox WHERE kind = 'template'")},
       "template body, naming its own outbox row")
    eq(h.sql1("SELECT decision FROM audit_log WHERE step = 'send' AND "
              "reason = 'window_closed'"), "template", "audited")
    assert ('modegate_sends_total{outcome="window_closed",code="131047"} 1'
            in metrics(h))


@with_graph
def test_131047_without_template_drops_the_text(h, g):
    serve(h, g)
    g.script({"status": 400, "code": 131047})
    cid = conv(h, "5511988887777")
    oid = text(h, cid, "Oi de novo")
    wait_state(h, oid, "dropped")
    eq(h.sql1("SELECT decision FROM audit_log WHERE step = 'send' AND "
              "reason = 'window_closed'"), "dropped", "audited")
    time.sleep(0.5)
    eq(len(g.requests()), 1, "nothing else posted")


@with_graph
def test_closed_window_sends_the_template_without_posting_the_text(h, g):
    serve(h, g, WHATSAPP_TEMPLATE_WINDOW_CLOSED="retomar_contato:pt_BR")
    cid = conv(h, "5511988887777", window_hours=25)
    oid = text(h, cid, "Oi depois de um dia")
    h.wait_until(lambda: len(g.requests()) == 1, 10, "one post")
    time.sleep(0.3)
    reqs = g.requests()
    eq([r["body"]["type"] for r in reqs], ["template"], "only the template")
    eq(state(h, oid), "failed", "the text is not sent")


@with_graph
def test_130429_backs_off_then_sends(h, g):
    serve(h, g)
    g.script({"status": 400, "code": 130429})
    cid = conv(h, "5511988887777")
    oid = text(h, cid, "Oi")
    h.wait_until(lambda: h.sql1("SELECT state || '/' || attempts FROM "
                                "outbox WHERE id = %s" % oid) ==
                 "pending/1", 5, "back to pending")
    eq(h.sql1("SELECT next_attempt_at > now() FROM outbox WHERE id = %s"
              % oid), "t", "not before the back-off")
    wait_state(h, oid, "sent")
    eq(len(g.requests()), 2, "posted twice")
    eq(h.sql1("SELECT attempts FROM outbox WHERE id = %s" % oid), "2",
       "attempts")
    assert ('modegate_sends_total{outcome="retry",code="130429"} 1'
            in metrics(h))


def paused_by(h, g, status, code):
    """A stop error fails its row and pauses the sender: readiness and
    metrics say why, the next row waits. Returns that row's id."""
    serve(h, g)
    g.script({"status": status, "code": code})
    a = text(h, conv(h, "5511988887777"), "Oi A")
    wait_state(h, a, "failed")
    b = text(h, conv(h, "5511977776666"), "Oi B")
    h.wait_until(lambda: h.get("/readyz")[0] == 503, 5, "not ready")
    st, body = h.get("/readyz")
    assert str(code).encode() in body and b"paused" in body, body
    m = metrics(h)
    assert 'modegate_sender_paused{reason="%d"} 1' % code in m, m
    assert 'modegate_sends_total{outcome="failed",code="%d"} 1' % code in m
    assert "modegate_ready 0" in m
    time.sleep(1)
    eq(len(g.requests()), 1, "nothing more posted")
    eq(state(h, b), "pending", "the other row waits")
    return b


@with_graph
def test_190_fails_the_row_and_pauses_the_sender(h, g):
    b = paused_by(h, g, 401, 190)
    # A restart (with a new token) resumes sending.
    h.restart()
    wait_state(h, b, "sent")
    eq(h.get("/readyz")[0], 200, "ready again")


@with_graph
def test_131026_fails_permanently(h, g):
    serve(h, g)
    g.script({"status": 400, "code": 131026})
    oid = text(h, conv(h, "5511988887777"), "Oi")
    wait_state(h, oid, "failed")
    time.sleep(1)
    eq(len(g.requests()), 1, "not retried")
    eq(h.sql1("SELECT error_code FROM outbox WHERE id = %s" % oid), "131026",
       "code")
    assert ('modegate_sends_total{outcome="failed",code="131026"} 1'
            in metrics(h))
    eq(h.get("/readyz")[0], 200, "still ready")


@with_graph
def test_5xx_then_success_sends_once(h, g):
    serve(h, g)
    g.script({"status": 500})
    oid = text(h, conv(h, "5511988887777"), "Oi")
    wait_state(h, oid, "sent")
    reqs = g.requests()
    eq(len(reqs), 2, "one failure, one success")
    eq(reqs[0]["body"], reqs[1]["body"], "the same body twice")
    eq(h.sql1("SELECT count(*) FROM audit_log WHERE step = 'send' AND "
              "decision = 'sent'"), "1", "sent once")


@with_graph
def test_order_per_conversation_other_not_blocked(h, g):
    serve(h, g)
    g.script({"delay": 1.5})
    ca, cb = conv(h, "5511988887777"), conv(h, "5511977776666")
    h.sql("BEGIN; " + " ".join(
        "INSERT INTO outbox (conversation_id, kind, payload, to_key, "
        "phone_number_id) SELECT id, 'text', mg_complete_payload("
        "jsonb_build_object('type', 'text', 'text', jsonb_build_object("
        "'body', '%s')), wa_id), wa_id, phone_number_id FROM conversations "
        "WHERE id = %s;" % (b, c) for b, c in
        (("A1", ca), ("A2", ca), ("B1", cb))) + " COMMIT")
    h.wait_until(lambda: h.sql1("SELECT count(*) FROM outbox WHERE "
                                "state = 'sent'") == "3", 10, "all sent")
    bodies = [r["body"]["text"]["body"] for r in g.requests()]
    eq(sorted(bodies), ["A1", "A2", "B1"], "each once")
    assert bodies.index("A1") < bodies.index("A2"), bodies
    assert bodies.index("B1") < bodies.index("A2"), \
        "B is not held up by A's slow answer: %r" % bodies


@with_graph
def test_delivery_statuses_move_forward_only(h, g):
    serve(h, g)
    oid = text(h, conv(h, "5511988887777"), "Oi")
    wait_state(h, oid, "sent")
    wamid = h.sql1("SELECT wamid FROM outbox WHERE id = %s" % oid)
    ds = "SELECT delivery_status FROM outbox WHERE id = %s" % oid
    status_webhook(h, wamid, "sent", ts="1795334600")
    h.wait_until(lambda: h.sql1(ds) == "sent", 5, "sent")
    status_webhook(h, wamid, "read", ts="1795334700")
    h.wait_until(lambda: h.sql1(ds) == "read", 5, "read")
    status_webhook(h, wamid, "delivered", ts="1795334650")  # late
    h.wait_until(lambda: h.sql1("SELECT count(*) FROM message_statuses "
                                "WHERE status = 'delivered'") == "1", 5,
                 "late delivered stored")
    eq(h.sql1(ds), "read", "a late delivered never overwrites read")
    eq(state(h, oid), "sent", "state")


@with_graph
def test_async_failed_131047_takes_the_template_path(h, g):
    serve(h, g, WHATSAPP_TEMPLATE_WINDOW_CLOSED="retomar_contato:pt_BR")
    oid = text(h, conv(h, "5511988887777"), "Oi")
    wait_state(h, oid, "sent")
    wamid = h.sql1("SELECT wamid FROM outbox WHERE id = %s" % oid)
    status_webhook(h, wamid, "failed", code=131047)
    h.wait_until(lambda: h.sql1(
        "SELECT count(*) FROM outbox WHERE kind = 'template' AND "
        "state = 'sent'") == "1", 10, "template sent")
    eq(h.sql("SELECT state, delivery_status, error_code FROM outbox "
             "WHERE id = %s" % oid), [("failed", "failed", "131047")],
       "the text")
    eq(g.requests()[-1]["body"]["template"]["name"], "retomar_contato",
       "template posted")


def reconcile_counts(h):
    return dict(h.sql("SELECT outcome, n FROM send_reconcile_counts"))


def kill_mid_post(h, g, oid):
    """The Graph API holds the post 2 s; the process dies meanwhile."""
    h.wait_until(lambda: len(g.requests()) == 1, 5, "first post")
    h.stop(sig=signal.SIGKILL)
    eq(state(h, oid), "sending", "leased when the process died")


@with_graph
def test_crash_mid_post_settled_by_its_status_is_not_posted_again(h, g):
    # The Graph API accepts the post but the process dies before the
    # answer is recorded. The row's lease (3 s) expires with no answer:
    # ambiguous, visible in SQL and /metrics. Meta's status webhook
    # (posted 4 s after the answer, retried while the process is down)
    # names the row in biz_opaque_callback_data: it settles the row with
    # Meta's wamid, and the message is never posted again.
    serve(h, g, MODEGATE_SEND_LEASE_S="3", MODEGATE_SEND_RECONCILE_S="30")
    g.statuses(h, delay=4)
    g.script({"delay": 2})
    oid = text(h, conv(h, "5511988887777"), "Oi")
    kill_mid_post(h, g, oid)
    h.start()
    h.wait_until(lambda: h.sql1("SELECT count(*) FROM outbox_ambiguous "
                                "WHERE id = %s" % oid) == "1", 10,
                 "ambiguous once the lease expired")
    h.wait_until(lambda: "modegate_outbox_ambiguous 1\n" in metrics(h), 10,
                 "ambiguous in /metrics")
    wait_state(h, oid, "sent", timeout=15)
    sent = [s for s in g.status_log() if s["status"] == "sent"]
    eq(h.sql1("SELECT wamid FROM outbox WHERE id = %s" % oid),
       sent[0]["wamid"], "settled with Meta's wamid")
    eq(h.sql("SELECT decision, reason, details->>'lease_expired' FROM "
             "audit_log WHERE step = 'send'"), [("sent", "status", "true")],
       "audited once, settled by the status")
    eq(reconcile_counts(h), {"settled": "1", "reposted": "0",
                             "duplicate": "0"}, "counted")
    h.wait_until(lambda: 'modegate_send_reconcile_total{outcome="settled"} '
                 '1\n' in metrics(h), 10, "settled in /metrics")
    time.sleep(2)       # a claim would have re-posted it by now at 0 s
    eq(len(g.requests()), 1, "posted once")
    h.wait_until(lambda: h.sql1("SELECT delivery_status FROM outbox WHERE "
                                "id = %s" % oid) == "read", 10,
                 "later statuses still move it forward")


@with_graph
def test_crash_mid_post_with_no_status_is_posted_again_after_the_wait(h, g):
    # No status webhook ever names the row: after its lease (3 s) and
    # MODEGATE_SEND_RECONCILE_S (2 s) of silence it is posted again, with
    # the same body, audited and counted as a repost.
    serve(h, g, MODEGATE_SEND_LEASE_S="3", MODEGATE_SEND_RECONCILE_S="2")
    g.script({"delay": 2})
    oid = text(h, conv(h, "5511988887777"), "Oi")
    kill_mid_post(h, g, oid)
    h.start()
    wait_state(h, oid, "sent", timeout=20)
    reqs = g.requests()
    eq(len(reqs), 2, "posted twice: only silence leads to a second post")
    eq(reqs[0]["body"], reqs[1]["body"], "the same body")
    assert reqs[1]["t"] - reqs[0]["t"] >= 5, "not before lease + wait"
    eq(h.sql1("SELECT count(*) FROM outbox"), "1", "one row")
    eq(h.sql("SELECT decision, reason FROM audit_log WHERE step = 'send' "
             "ORDER BY id"), [("repost", "no_status"), ("sent", "sent")],
       "the repost audited")
    eq(h.sql1("SELECT reposts FROM outbox WHERE id = %s" % oid), "1",
       "outbox.reposts")
    eq(reconcile_counts(h)["reposted"], "1", "counted")
    m = metrics(h)
    assert 'modegate_sends_total{outcome="reposted"} 1\n' in m, m


@with_graph
def test_status_of_a_second_post_is_a_counted_duplicate(h, g):
    # With MODEGATE_SEND_RECONCILE_S=0 (the old behaviour) the row is
    # posted again as soon as its lease expires; the first post's late
    # status then names a row recorded with another wamid: a duplicate
    # that reached WhatsApp, recorded and counted.
    serve(h, g, MODEGATE_SEND_LEASE_S="3", MODEGATE_SEND_RECONCILE_S="0")
    g.statuses(h, delay=5)
    g.script({"delay": 2})
    oid = text(h, conv(h, "5511988887777"), "Oi")
    kill_mid_post(h, g, oid)
    h.start()
    wait_state(h, oid, "sent", timeout=15)
    h.wait_until(lambda: reconcile_counts(h)["duplicate"] == "1", 15,
                 "duplicate counted")
    first = [s for s in g.status_log() if s["status"] == "sent"][0]
    eq(h.sql("SELECT wamid, outbox_id::text FROM outbox_duplicates"),
       [(first["wamid"], str(oid))], "the first post's wamid")
    eq(h.sql1("SELECT count(*) FROM audit_log WHERE decision = "
              "'duplicate'"), "1", "audited once for its three statuses")


@with_graph
def test_post_with_no_answer_waits_for_its_status(h, g):
    # The Graph API takes the post but answers after the client's timeout
    # (2 s with a 3 s lease): the message may have gone out, so it is not
    # posted again after the usual retry delay but after
    # MODEGATE_SEND_RECONCILE_S; its status webhook comes first and
    # settles it.
    serve(h, g, MODEGATE_SEND_LEASE_S="3", MODEGATE_SEND_RECONCILE_S="10")
    g.statuses(h, delay=0.5)
    g.script({"delay": 3})
    oid = text(h, conv(h, "5511988887777"), "Oi")
    wait_state(h, oid, "sent", timeout=10)
    time.sleep(1)
    eq(len(g.requests()), 1, "posted once")
    eq(h.sql1("SELECT reason FROM audit_log WHERE step = 'send' AND "
              "decision = 'sent'"), "status", "settled by its status")


@with_graph
def test_status_webhooks_settle_rows_in_any_order(h, g):
    # Statuses arrive in reverse (read first), with no delay: often
    # before the sender recorded the answer. Every row ends sent with its
    # own wamid, status read, one audit row each, nothing counted.
    serve(h, g)
    g.statuses(h, delay=0, order="reverse")
    cid = conv(h, "5511988887777")
    oids = [text(h, cid, "Mensagem %d" % i) for i in range(5)]
    for oid in oids:
        wait_state(h, oid, "sent")
    h.wait_until(lambda: h.sql1("SELECT count(*) FROM outbox WHERE "
                                "delivery_status = 'read'") == "5", 10,
                 "all read")
    eq(len(g.requests()), 5, "five posts")
    eq(h.sql1("SELECT count(DISTINCT wamid) FROM outbox"), "5", "wamids")
    eq(h.sql1("SELECT count(*) FROM audit_log WHERE step = 'send'"), "5",
       "one send audit per row")
    eq(reconcile_counts(h), {"settled": "0", "reposted": "0",
                             "duplicate": "0"}, "nothing to reconcile")
    eq(h.sql1("SELECT count(*) FROM message_statuses WHERE callback_data "
              "LIKE 'modegate:outbox:%'"), "15", "callback recorded")


@with_graph
def test_mark_as_read_posts_read_and_typing(h, g):
    serve(h, g)
    cid = conv(h, "5511988887777")
    oid = queue(h, cid, {"status": "read", "message_id": "wamid.IN1",
                         "typing_indicator": {"type": "text"}}, kind="read")
    wait_state(h, oid, "sent")
    eq(g.requests()[0]["body"], {"messaging_product": "whatsapp",
                                 "status": "read", "message_id": "wamid.IN1",
                                 "typing_indicator": {"type": "text"}},
       "mark-as-read body")
    eq(h.sql1("SELECT wamid IS NULL FROM outbox WHERE id = %s" % oid), "t",
       "no wamid for a read receipt")


def inbound(wamid, text, sender="5511988887777", ts=None):
    return {"object": "whatsapp_business_account", "entry": [{
        "id": "1", "changes": [{"field": "messages", "value": {
            "messaging_product": "whatsapp",
            "metadata": {"display_phone_number": "5511900000000",
                         "phone_number_id": PNID},
            "contacts": [{"profile": {"name": "Ana"}, "wa_id": sender}],
            "messages": [{"from": sender, "id": wamid,
                          "timestamp": str(int(ts or time.time())),
                          "type": "text", "text": {"body": text}}]}}]}]}


@with_graph
def test_full_turn_reply_131047_goes_out_as_the_template(h, g):
    # Webhook → worker (offline LLM) → outbox → sender → fake Graph API:
    # the read receipt goes out, the reply meets 131047 and the
    # configured template is posted instead.
    serve(h, g, WHATSAPP_TEMPLATE_WINDOW_CLOSED="retomar_contato:pt_BR",
          MODEGATE_COALESCE_MS="0")
    # The read receipt and the reply may be in flight together: the
    # 131047 is for the reply whichever reaches the fake first.
    g.script({"match": {"type": "text"}, "status": 400, "code": 131047})
    eq(h.post_webhook(inbound("wamid.T1", "Oi, boa tarde"))[0], 200,
       "webhook")
    h.wait_until(lambda: len(g.requests()) >= 3, 15, "three posts")
    bodies = [r["body"] for r in g.requests()]
    kinds = [b.get("type", b.get("status")) for b in bodies]
    eq(sorted(kinds[:2]), ["read", "text"], "the receipt and the reply")
    eq(bodies[kinds.index("read")], {
        "messaging_product": "whatsapp", "status": "read",
        "message_id": "wamid.T1", "typing_indicator": {"type": "text"}},
       "read receipt")
    assert bodies[kinds.index("text")]["text"]["body"], bodies
    eq((bodies[2]["type"], bodies[2]["template"]["name"], bodies[2]["to"]),
       ("template", "retomar_contato", "+5511988887777"), "then the template")
    h.wait_until(lambda: h.sql("SELECT kind, state FROM outbox ORDER BY id")
                 == [("read", "sent"), ("text", "failed"),
                     ("template", "sent")], 5, "outbox states")


@with_graph
def test_graceful_stop_waits_for_posts_in_flight(h, g):
    # SIGTERM while the Graph API is slow: the answer is still recorded
    # before exit, so nothing is posted twice after a clean restart.
    serve(h, g)
    g.script({"delay": 1})
    oid = text(h, conv(h, "5511988887777"), "Oi")
    h.wait_until(lambda: len(g.requests()) == 1, 5, "post in flight")
    eq(h.stop(), 0, "clean exit")
    eq(state(h, oid), "sent", "recorded before exit")
    h.start()
    time.sleep(0.6)
    eq(len(g.requests()), 1, "not posted again")


@with_graph
def test_concurrency_caps_posts_of_leased_rows(h, g):
    # Read receipts and replies leased to the sender by the turn itself
    # wait for a free slot: MODEGATE_SEND_CONCURRENCY posts at once at the
    # Graph API, and every one is sent.
    # (the double-texting window makes the six turns start together)
    serve(h, g, MODEGATE_COALESCE_MS="800", MODEGATE_SEND_CONCURRENCY="2")
    g._call("POST", "/__config", {"delay": 0.3})
    for i in range(6):
        eq(h.post_webhook(inbound("wamid.C%d" % i, "Oi, boa tarde",
                                  sender="55119888800%02d" % i))[0], 200,
           "webhook %d" % i)
    h.wait_until(lambda: h.sql1("SELECT count(*) FROM outbox WHERE state "
                                "= 'sent'") == "12", 20,
                 "six receipts and six replies sent")
    reqs = g.requests()
    eq(len(reqs), 12, "each posted once")
    cur = peak = 0
    for _, d in sorted([(r["t"], 1) for r in reqs] +
                       [(r["t_end"], -1) for r in reqs]):
        cur += d
        peak = max(peak, cur)
    eq(peak, 2, "at most two posts open at once, and both slots used")


@with_graph
def test_368_blocked_account_pauses_the_sender(h, g):
    paused_by(h, g, 403, 368)


@with_graph
def test_full_turn_to_a_closed_window_posts_the_template(h, g):
    # A message written 25 hours ago, answered (MODEGATE_MAX_AGE_HOURS=48)
    # after Meta's 24-hour window closed: the reply the commit leases to
    # the sender takes the template path before any post -- the free text
    # never reaches the Graph API.
    serve(h, g, WHATSAPP_TEMPLATE_WINDOW_CLOSED="retomar_contato:pt_BR",
          MODEGATE_COALESCE_MS="0", MODEGATE_MAX_AGE_HOURS="48")
    eq(h.post_webhook(inbound("wamid.W1", "Oi, ainda tem vaga?",
                              ts=time.time() - 25 * 3600))[0], 200,
       "webhook")
    h.wait_until(lambda: h.sql("SELECT kind, state, error_code FROM outbox "
                               "ORDER BY id")
                 == [("read", "sent", None), ("text", "failed", "131047"),
                     ("template", "sent", None)], 15, "outbox states")
    eq([r["body"].get("type", "read") for r in g.requests()],
       ["read", "template"], "the receipt and the template, no free text")
