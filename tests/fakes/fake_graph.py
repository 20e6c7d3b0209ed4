#!/usr/bin/env python3
"""fake_graph.py -- a fake WhatsApp Cloud API (Graph API) for tests.

POST /<version>/<phone_number_id>/messages, validated like the real one
(bearer token, messaging_product, text body <= 4096 characters, template
name and language, mark-as-read message_id). Default answer: success with a
fresh wamid (or {"success":true} for mark-as-read). Scripted steps (see
fakelib.py) may also give {"status":400,"code":131047} to get a realistic
error body for that code, optionally with "subcode" and "message".
  python3 tests/fakes/fake_graph.py --port 0      (prints the port)
SPDX-License-Identifier: MIT
"""
import itertools
import os
import re
import secrets

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
    return 200, {"x-fb-trace-id": trace()}, {
        "messaging_product": "whatsapp",
        "contacts": [{"input": to, "wa_id": to.lstrip("+")}],
        "messages": [{"id": wamid}]}, None


if __name__ == "__main__":
    fakelib.serve(answer, "fake WhatsApp Graph API")
