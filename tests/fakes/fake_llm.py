#!/usr/bin/env python3
"""fake_llm.py -- a fake Anthropic Messages / OpenAI Chat Completions server.

POST /v1/messages           Anthropic (x-api-key, anthropic-version)
POST .../chat/completions   OpenAI and compatible (Authorization: Bearer)
Requests are validated like the real APIs (headers, required fields, tool
results paired with the previous calls) and refused with the real 400.
Scripted steps (see fakelib.py) add:
  {"text": "..."}                              a final reply
  {"tool_calls": [{"name": .., "arguments": {..} or "..", "id": ..}],
   "text": "..", "raw_arguments": true}       a tool-use reply (OpenAI
                                               arguments are JSON strings
                                               unless raw_arguments)
  {"stop": "max_tokens"}                       override the stop reason
  {"status": 429, "headers": {"retry-after": "1"}, "type": .., "code": ..}
Default (empty script): a plain end_turn / stop text reply; with --echo
(or POST /__config {"echo": true}) the reply is "eco N: <the last user
message>", N being the request's index in /__requests, so a test can tell
which request produced a reply and what that request saw.
  python3 tests/fakes/fake_llm.py --port 0      (prints the port)
SPDX-License-Identifier: MIT
"""
import itertools
import json
import os
import secrets
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fakelib  # noqa: E402

SEQ = itertools.count(1)
ANTHROPIC_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                   402: "billing_error", 403: "permission_error",
                   404: "not_found_error", 413: "request_too_large",
                   429: "rate_limit_error", 500: "api_error",
                   504: "timeout_error", 529: "overloaded_error"}
OPENAI_TYPES = {400: ("invalid_request_error", None),
                401: ("invalid_request_error", "invalid_api_key"),
                404: ("invalid_request_error", "model_not_found"),
                429: ("requests", "rate_limit_exceeded"),
                500: ("server_error", None), 503: ("server_error", None)}


def rid(prefix):
    return prefix + secrets.token_hex(12)


def is_openai(req):
    return req["path"].endswith("/chat/completions")


def err(req, status, message, etype=None, code=None, headers=None):
    h = dict(headers or {})
    if is_openai(req):
        t, c = OPENAI_TYPES.get(status, ("server_error" if status >= 500
                                         else "invalid_request_error", None))
        body = {"error": {"message": message, "type": etype or t,
                          "param": None, "code": code if code else c}}
        h.setdefault("x-request-id", rid("req_"))
    else:
        r = rid("req_011C")
        body = {"type": "error",
                "error": {"type": etype or ANTHROPIC_TYPES.get(
                    status, "api_error"), "message": message},
                "request_id": r}
        if code:
            body["error"]["details"] = {"error_code": code}
        h.setdefault("request-id", r)
    return status, h, body, None


def check_anthropic(req):
    h, b = req["headers"], req["body"]
    if not h.get("x-api-key"):
        return err(req, 401, "x-api-key header is required")
    if h.get("anthropic-version") != "2023-06-01":
        return err(req, 400, "anthropic-version: header is required")
    if not isinstance(b, dict):
        return err(req, 400, "There was an error parsing the body")
    for f in ("model", "max_tokens", "messages"):
        if f not in b:
            return err(req, 400, "%s: Field required" % f)
    msgs = b["messages"]
    if not msgs or msgs[0].get("role") != "user":
        return err(req, 400, "messages: first message must use the user role")
    for i, m in enumerate(msgs):
        c = m.get("content")
        uses = [x for x in c if x.get("type") == "tool_use"] \
            if isinstance(c, list) and m.get("role") == "assistant" else []
        for u in uses:
            if not isinstance(u.get("input"), dict):
                return err(req, 400, "messages.%d.content: tool_use.input: "
                           "Input should be a valid dictionary" % i)
        if not uses:
            continue
        nxt = msgs[i + 1]["content"] if i + 1 < len(msgs) else None
        ids = [u["id"] for u in uses]
        got = [x.get("tool_use_id") for x in (nxt or [])
               if isinstance(x, dict) and x.get("type") == "tool_result"]
        if not isinstance(nxt, list) or got[:len(ids)] != ids:
            return err(req, 400, "messages.%d: `tool_use` ids were found "
                       "without `tool_result` blocks immediately after: %s"
                       % (i, ", ".join(ids)))
    for t in b.get("tools", []):
        if not t.get("name") or not isinstance(t.get("input_schema"), dict):
            return err(req, 400, "tools: name and input_schema required")
    return None


def check_openai(req):
    h, b = req["headers"], req["body"]
    if not h.get("authorization", "").startswith("Bearer "):
        return err(req, 401, "You didn't provide an API key.")
    if not isinstance(b, dict) or "model" not in b or "messages" not in b:
        return err(req, 400, "you must provide a model and messages")
    pending = []
    for m in b["messages"]:
        if m.get("role") == "tool":
            if m.get("tool_call_id") not in pending:
                return err(req, 400, "Invalid parameter: messages with role "
                           "'tool' must be a response to a preceeding "
                           "message with 'tool_calls'.")
            pending.remove(m["tool_call_id"])
            continue
        if pending:
            return err(req, 400, "An assistant message with 'tool_calls' "
                       "must be followed by tool messages responding to "
                       "each 'tool_call_id'.")
        for tc in m.get("tool_calls") or []:
            if not isinstance(tc["function"].get("arguments"), str):
                return err(req, 400, "tool_calls.function.arguments must "
                           "be a string")
            pending.append(tc["id"])
    for t in b.get("tools", []):
        if t.get("type") != "function" or "parameters" not in t.get(
                "function", {}):
            return err(req, 400, "tools: type function with parameters")
    return None


def reply_anthropic(req, step):
    content = []
    if step.get("text") is not None:
        content.append({"type": "text", "text": step["text"]})
    for tc in step.get("tool_calls", []):
        a = tc.get("arguments", {})
        content.append({"type": "tool_use",
                        "id": tc.get("id") or rid("toolu_01"),
                        "name": tc["name"],
                        "input": json.loads(a) if isinstance(a, str) else a,
                        "caller": {"type": "direct"}})
    stop = step.get("stop") or ("tool_use" if step.get("tool_calls")
                                else "end_turn")
    return 200, {"request-id": rid("req_011C")}, {
        "id": rid("msg_01"), "type": "message", "role": "assistant",
        "model": req["body"]["model"], "content": content,
        "stop_reason": stop, "stop_sequence": None,
        "usage": {"input_tokens": 120, "output_tokens": 30,
                  "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0,
                  "service_tier": "standard"}}, None


def reply_openai(req, step):
    msg = {"role": "assistant", "content": step.get("text"),
           "refusal": None, "annotations": []}
    calls = []
    for tc in step.get("tool_calls", []):
        a = tc.get("arguments", {})
        if not isinstance(a, str) and not step.get("raw_arguments"):
            a = json.dumps(a)
        calls.append({"id": tc.get("id") or "call_" + secrets.token_hex(8),
                      "type": "function",
                      "function": {"name": tc["name"], "arguments": a}})
    if calls:
        msg["tool_calls"] = calls
    stop = step.get("stop") or ("tool_calls" if calls else "stop")
    return 200, {"x-request-id": rid("req_")}, {
        "id": "chatcmpl-%d" % next(SEQ), "object": "chat.completion",
        "created": 1700000000, "model": req["body"]["model"],
        "choices": [{"index": 0, "message": msg, "logprobs": None,
                     "finish_reason": stop}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 30,
                  "total_tokens": 150}}, None


def last_user_text(req):
    """The text of the last user message (string or text blocks)."""
    for m in reversed(req["body"].get("messages") or []):
        if m.get("role") != "user":
            continue
        c = m.get("content")
        if isinstance(c, str):
            return c
        return "\n".join(b.get("text", "") for b in c or []
                         if isinstance(b, dict) and b.get("type") == "text")
    return ""


def answer(req, step):
    step = step or {}
    if "raw" in step:
        return step.get("status", 200), step.get("headers"), None, step["raw"]
    if "body" in step:
        return step.get("status", 200), step.get("headers"), step["body"], None
    if not (is_openai(req) or req["path"].endswith("/v1/messages")):
        return err(req, 404, "Not found: " + req["path"])
    bad = check_openai(req) if is_openai(req) else check_anthropic(req)
    if bad:
        return bad
    st = step.get("status", 200)
    if st >= 300:
        return err(req, st, step.get("message", "scripted error %d" % st),
                   step.get("type"), step.get("code"), step.get("headers"))
    if "text" not in step and "tool_calls" not in step:
        step = dict(step, text="Olá! Em que posso ajudar?")
        if fakelib.Handler.state.config.get("echo"):
            step["text"] = "eco %d: %s" % (req["n"], last_user_text(req))
    return reply_openai(req, step) if is_openai(req) \
        else reply_anthropic(req, step)


if __name__ == "__main__":
    fakelib.serve(answer, "fake Anthropic / OpenAI LLM API")
