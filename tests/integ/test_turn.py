# test_turn.py -- the whole turn over HTTP: a signed webhook in, the
# worker with a real PostgreSQL and a fake LLM (tests/fakes/fake_llm.py),
# the reply in the outbox (dry-run: no WhatsApp token). Each case checks
# what the doctor would see (the outbox), what the LLM was offered (the
# fake's recorded requests) and what was recorded (audit, funnel, state).
# SPDX-License-Identifier: MIT
import json
import signal
import time

from harness import eq

DOCTOR = "5511988887777"


def ready(h, provider="anthropic", **env):
    """Migrate, start a fake LLM and modegate pointed at it."""
    rc, out = h.migrate()
    eq(rc, 0, "migrate: " + out)
    llm = h.fake("llm")
    base = llm.url + ("/v1" if provider == "openai" else "")
    conf = {"LLM_PROVIDER": provider, "LLM_BASE_URL": base,
            "LLM_API_KEY": "test-key", "MODEGATE_COALESCE_MS": "0",
            "LLM_MODEL": "test-model"}
    conf.update(env)
    h.start(**conf)
    return llm


def message(wamid, text=None, sender=DOCTOR, ts=None, mtype="text",
            extra=None):
    m = {"from": sender, "id": wamid,
         "timestamp": str(int(ts if ts is not None else time.time())),
         "type": mtype}
    if mtype == "text":
        m["text"] = {"body": text}
    if extra:
        m.update(extra)
    return {"object": "whatsapp_business_account", "entry": [{
        "id": "1", "changes": [{"field": "messages", "value": {
            "messaging_product": "whatsapp",
            "metadata": {"display_phone_number": "5511900000000",
                         "phone_number_id": "100"},
            "contacts": [{"profile": {"name": "Dra. Ana"},
                          "wa_id": sender}],
            "messages": [m]}}]}]}


def send(h, wamid, text=None, **kw):
    st, _ = h.post_webhook(message(wamid, text, **kw))
    eq(st, 200, "webhook " + wamid)


def settled(h, wamid, timeout=15):
    """Wait until the message's turn committed; returns its state."""
    q = "SELECT state FROM inbox WHERE wamid = '%s'" % wamid
    return h.wait_until(lambda: (h.sql(q) or [(None,)])[0][0]
                        in ("done", "skipped", "dead") and
                        h.sql(q)[0][0], timeout, wamid + " settled")


def replies(h, sender=DOCTOR):
    return [r[0] for r in h.sql(
        "SELECT o.payload -> 'text' ->> 'body' FROM outbox o "
        "JOIN conversations c ON c.id = o.conversation_id "
        "WHERE c.wa_id = '%s' AND o.kind = 'text' ORDER BY o.id" % sender)]


def conv(h, col, sender=DOCTOR):
    return h.sql1("SELECT %s FROM conversations WHERE wa_id = '%s'"
                  % (col, sender))


def audit(h, step, sender=DOCTOR):
    return h.sql("SELECT a.decision, a.reason, a.details::text "
                 "FROM audit_log a JOIN conversations c "
                 "ON c.id = a.conversation_id WHERE c.wa_id = '%s' "
                 "AND a.step = '%s' ORDER BY a.id" % (sender, step))


def tools_offered(req):
    return sorted(t["name"] if "name" in t else t["function"]["name"]
                  for t in req["body"].get("tools", []))


def llm_calls(llm):
    return [r for r in llm.requests() if r["path"].endswith(
        ("/v1/messages", "/chat/completions"))]


def test_discovery_offers_no_buscar_vagas(h):
    llm = ready(h)
    llm.script([{"text": "Oi! Tudo bem? Qual sua especialidade?"}])
    send(h, "wamid.d1", "Oi, boa tarde")
    eq(settled(h, "wamid.d1"), "done", "inbox")
    reqs = llm_calls(llm)
    eq(len(reqs), 1, "one LLM request")
    eq(tools_offered(reqs[0]), ["encaminhar_humano", "salvar_memoria"],
       "discovery tools")
    sysp = reqs[0]["body"]["system"]
    assert "Julia" in sysp and "MODO ATUAL: discovery" in sysp, sysp[:300]
    eq(reqs[0]["body"]["messages"][-1]["content"], "Oi, boa tarde",
       "the doctor's text")
    eq(replies(h), ["Oi! Tudo bem? Qual sua especialidade?"], "reply")
    eq(h.sql1("SELECT state FROM outbox WHERE kind = 'text'"), "pending",
       "reply waits for the sender")
    eq(h.sql1("SELECT count(*) FROM outbox WHERE kind = 'read'"), "1",
       "read receipt queued")
    llm_row = audit(h, "llm")
    eq(len(llm_row), 1, "llm audited")
    d = json.loads(llm_row[0][2])
    eq((d["model"], d["input_tokens"], d["output_tokens"]),
       ("test-model", 120, 30), "model and tokens")
    assert "Julia" in d["prompt"]["system"], "prompt recorded"
    gate = audit(h, "gate")
    eq(gate[0][0], "discovery", "gate mode")
    assert "buscar_vagas" in json.loads(gate[0][2])["tools_removed"]
