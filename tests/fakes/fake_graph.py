#!/usr/bin/env python3
"""fake_graph.py -- a fake WhatsApp Cloud API (Graph API) for tests.

POST /<version>/<phone_number_id>/messages, validated like the real one
(bearer token, messaging_product, text body <= 4096 characters, template
name and language, mark-as-read message_id). Default answer: success with a
fresh wamid (or {"success":true} for mark-as-read). Scripted steps (see
fakelib.py) may also give {"status":400,"code":131047} to get a realistic
error body for that code, optionally with "subcode" and "message".
  python3 tests/fakes/fake_graph.py --port 0      (prints the port)

Status webhooks, like Meta: POST /__config {"statuses": {"url": WEBHOOK,
"secret": APP_SECRET, "delay": S, "loss": P, "order": "in"|"shuffle"|
"reverse", "kinds": ["sent", "delivered", "read"], "seed": N}} makes every
accepted message (not a mark-as-read) produce signed status webhooks
(X-Hub-Signature-256) posted back to WEBHOOK, the first "delay" seconds
after the answer and the next ones 10 ms apart, in the given order, each
dropped with probability "loss", echoing the send's
biz_opaque_callback_data. A status that does not get 200 is posted again
every 0.2 s for 10 minutes, as Meta retries. {"statuses": null} stops
them. GET /__statuses lists them: [{wamid, status, callback, due,
posted, tries, answered, lost}].
SPDX-License-Identifier: MIT
"""
import hashlib
import heapq
import hmac
import http.client
import itertools
import json
import os
import random
import re
import secrets
import threading
import time
import urllib.parse

sys_path = os.path.dirname(os.path.abspath(__file__))
import sys  # noqa: E402
sys.path.insert(0, sys_path)
import fakelib  # noqa: E402

COUNTER = itertools.count(1)
MESSAGES = {
    100: "Invalid parameter",
    190: "Error validating access token: Session has expired",
    368: "Temporarily blocked for policies violations",
    4: "Application request limit reached",
    131026: "Message undeliverable",
    131047: "Re-engagement message",
    131056: "(Business Account, Consumer Account) pair rate limit hit",
    130429: "Rate limit hit",
    131000: "Something went wrong",
}


def trace():
    return "A" + secrets.token_hex(5)


def error(status, code, message=None, subcode=None):
    msg = message or MESSAGES.get(code, "Error")
    e = {"message": "(#%d) %s" % (code, msg),
         "type": "OAuthException", "code": code,
         "error_data": {"messaging_product": "whatsapp", "details": msg},
         "fbtrace_id": trace()}
    if subcode is not None:
        e["error_subcode"] = subcode
    return status, {"x-fb-trace-id": e["fbtrace_id"]}, {"error": e}, None


def validate(req):
    auth = req["headers"].get("authorization", "")
    if not auth.startswith("Bearer ") or len(auth) <= 7:
        return error(401, 190, "Invalid OAuth access token", 460)
    if not re.fullmatch(r"/[^/]+/[0-9A-Za-z_]+/messages", req["path"]):
        return error(400, 100, "Unknown path components")
    b = req["body"]
    if not isinstance(b, dict) or b.get("messaging_product") != "whatsapp":
        return error(400, 100, "The parameter messaging_product is required.")
    if b.get("status") == "read":
        if not b.get("message_id"):
            return error(400, 100, "The parameter message_id is required.")
        return None
    if not b.get("to"):
        return error(400, 100, "The parameter to is required.")
    t = b.get("type")
    if t == "text":
        body = (b.get("text") or {}).get("body")
        if not isinstance(body, str) or not body:
            return error(400, 100, "The parameter text['body'] is required.")
        if len(body) > 4096:
            return error(400, 100, "Param text['body'] must be at most "
                         "4096 characters long.")
    elif t == "template":
        tp = b.get("template") or {}
        if not tp.get("name") or not (tp.get("language") or {}).get("code"):
            return error(400, 100, "template name and language required")
    else:
        return error(400, 131051, "Unsupported message type")
    return None


def answer(req, step):
    step = step or {}
    if "raw" in step:
        return step.get("status", 200), step.get("headers"), None, step["raw"]
    if "code" in step:
        st, h, body, _ = error(step.get("status", 400), step["code"],
                               step.get("message"), step.get("subcode"))
        h.update(step.get("headers") or {})
        return st, h, body, None
    if "body" in step:
        return step.get("status", 200), step.get("headers"), step["body"], None
    bad = validate(req)
    if bad:
        return bad
    if "status" in step and step["status"] >= 300:
        return error(step["status"], 1 if step["status"] >= 500 else 100)
    if req["body"].get("status") == "read":
        return 200, {}, {"success": True}, None
    to = req["body"]["to"]
    wamid = "wamid.FAKE%06d%s" % (next(COUNTER), secrets.token_hex(4))
    STATUSES.schedule(req, wamid, to)
    return 200, {"x-fb-trace-id": trace()}, {
        "messaging_product": "whatsapp",
        "contacts": [{"input": to, "wa_id": to.lstrip("+")}],
        "messages": [{"id": wamid}]}, None


class Statuses:
    """Signed status webhooks posted back to the service, as Meta does."""

    def __init__(self):
        self.lock = threading.Condition()
        self.heap = []          # (due, seq, record)
        self.all = []           # every record, for GET /__statuses
        self.seq = itertools.count()
        self.rng = random.Random()
        self.seeded = None
        for _ in range(4):      # Meta delivers concurrently
            threading.Thread(target=self.run, daemon=True).start()

    def schedule(self, req, wamid, to):
        cfg = (fakelib.Handler.state.config or {}).get("statuses")
        if not cfg or not cfg.get("url"):
            return
        with self.lock:
            if cfg.get("seed") is not None and self.seeded != cfg["seed"]:
                self.rng = random.Random(cfg["seed"])
                self.seeded = cfg["seed"]
            kinds = list(cfg.get("kinds") or ["sent", "delivered", "read"])
            order = cfg.get("order", "in")
            if order == "shuffle":
                self.rng.shuffle(kinds)
            elif order == "reverse":
                kinds.reverse()
            pnid = req["path"].split("/")[-2]
            cb = req["body"].get("biz_opaque_callback_data")
            t = time.time() + float(cfg.get("delay", 0))
            for i, k in enumerate(kinds):
                rec = {"wamid": wamid, "status": k, "callback": cb,
                       "to": to, "pnid": pnid, "url": cfg["url"],
                       "secret": cfg.get("secret", ""),
                       "due": t + 0.01 * i, "posted": None, "tries": 0,
                       "answered": None,
                       "lost": self.rng.random() < float(cfg.get("loss", 0))}
                self.all.append(rec)
                if not rec["lost"]:
                    heapq.heappush(self.heap, (rec["due"], next(self.seq),
                                               rec))
            self.lock.notify_all()

    def body(self, rec):
        st = {"id": rec["wamid"], "status": rec["status"],
              "timestamp": str(int(time.time())),
              "recipient_id": rec["to"].lstrip("+"),
              "pricing": {"billable": True, "pricing_model": "PMP",
                          "type": "regular", "category": "service"}}
        if rec["callback"] is not None:
            st["biz_opaque_callback_data"] = rec["callback"]
        return json.dumps({"object": "whatsapp_business_account", "entry": [{
            "id": "0", "changes": [{"field": "messages", "value": {
                "messaging_product": "whatsapp",
                "metadata": {"display_phone_number": "5511000000000",
                             "phone_number_id": rec["pnid"]},
                "statuses": [st]}}]}]}).encode()

    def post(self, rec):
        data = self.body(rec)
        sig = "sha256=" + hmac.new(rec["secret"].encode(), data,
                                   hashlib.sha256).hexdigest()
        u = urllib.parse.urlsplit(rec["url"])
        try:
            c = http.client.HTTPConnection(u.hostname, u.port, timeout=5)
            c.request("POST", u.path or "/", data, {
                "Content-Type": "application/json",
                "X-Hub-Signature-256": sig})
            r = c.getresponse()
            r.read()
            c.close()
            return r.status
        except OSError:
            return None

    def run(self):
        while True:
            with self.lock:
                while not self.heap or self.heap[0][0] > time.time():
                    self.lock.wait(0.05 if self.heap else 1)
                _, _, rec = heapq.heappop(self.heap)
            rec["tries"] += 1
            if rec["posted"] is None:
                rec["posted"] = time.time()
            code = self.post(rec)
            if code == 200:
                rec["answered"] = time.time()
            elif time.time() - rec["due"] < 600:
                with self.lock:
                    heapq.heappush(self.heap, (time.time() + 0.2,
                                               next(self.seq), rec))
                    self.lock.notify_all()

    def listing(self):
        with self.lock:
            return [{k: r[k] for k in ("wamid", "status", "callback", "due",
                                       "posted", "tries", "answered", "lost")}
                    for r in self.all]


STATUSES = None


def control(handler, method):
    """GET /__statuses; None for the control paths fakelib handles."""
    if handler.path == "/__statuses" and method == "GET":
        handler.send_json(200, STATUSES.listing())
        return True
    return None


if __name__ == "__main__":
    STATUSES = Statuses()
    fakelib.serve(answer, "fake WhatsApp Graph API", control)
