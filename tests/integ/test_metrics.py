# test_metrics.py -- GET /metrics after real turns: each figure is checked
# against what happened, as recorded in the database (audit_log, outbox,
# inbox) and by the fake peers: webhook requests, turn steps, LLM requests,
# latency and tokens, mode decisions, policy blocks, guard violations,
# sends by outcome and WhatsApp error code, the breaker, the
# conversation_mode_enabled flag, inbox depth and the oldest pending age.
# SPDX-License-Identifier: MIT
import json
import re
import subprocess

from harness import eq
from test_sender import FakeGraph
from test_turn import llm_calls, ready, send, settled

LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def scrape(h):
    """/metrics as {(name, ((label, value), ...)): float}; checks the
    text format line by line on the way."""
    st, body = h.get("/metrics")
    eq(st, 200, "/metrics")
    out, typed = {}, set()
    for ln in body.decode().splitlines():
        if ln.startswith("# TYPE "):
            name = ln.split()[2]
            assert name not in typed, "TYPE twice: " + name
            typed.add(name)
            continue
        if ln.startswith("#") or not ln:
            continue
        m = LINE.match(ln)
        assert m, "not a sample line: %r" % ln
        labels = tuple(sorted(LABEL.findall(m.group(3) or "")))
        key = (m.group(1), labels)
        assert key not in out, "sample twice: " + ln
        out[key] = float(m.group(4))
    return out


def val(m, metric, **labels):
    return m.get((metric, tuple(sorted(labels.items()))), 0.0)


def up(h):
    """Ingest answers 503 until a database connection is up."""
    h.wait_until(lambda: h.get("/readyz")[0] == 200, 15, "ready")


def series(m, name, label):
    """{label value: sample} of one labelled counter."""
    return {dict(k[1])[label]: v for k, v in m.items()
            if k[0] == name and label in dict(k[1])}


def step_count(m, step):
    return val(m, "modegate_turn_step_seconds_count", step=step)


def audit_rows(h, step):
    return h.sql("SELECT decision, reason, details::text FROM audit_log "
                 "WHERE step = '%s' ORDER BY id" % step)


def test_metrics_count_what_the_turns_did(h):
    g = FakeGraph()
    try:
        run_turns(h, g)
    finally:
        g.close()


def run_turns(h, g):
    # The first post to the Graph API fails for good (131026).
    g.script({"status": 400, "code": 131026})
    llm = ready(h, WHATSAPP_API_BASE=g.base + "/v25.0",
                WHATSAPP_TOKEN="test-token", MODEGATE_SEND_RETRY_BASE_MS="100")
    up(h)
    m0 = scrape(h)
    eq(val(m0, "modegate_llm_breaker_state"), 0.0, "breaker closed")
    eq(step_count(m0, "total"), 0.0, "no turn yet")
    # 1: interest -> PENDING (micro-confirmation)
    llm.script([{"text": "Que legal! Vc já tem CRM ativo em SP?"}])
    send(h, "wamid.m1", "Quero saber de vagas!")
    settled(h, "wamid.m1")
    # 2: confirmation -> CONFIRM; the first reply breaks a claim of oferta
    # and is regenerated.
    llm.script([{"text": "Pronto, sua reserva está confirmada para sábado!"},
                {"text": "Vou te mostrar as vagas. Qual região prefere?"}])
    send(h, "wamid.m2", "Sim, tenho CRM ativo")
    settled(h, "wamid.m2")
    # 3: opt-out -> policy block, no LLM
    send(h, "wamid.m3", "nao quero mais receber mensagens, me tira da lista")
    settled(h, "wamid.m3")
    h.wait_until(lambda: h.sql1("SELECT count(*) FROM outbox WHERE state "
                                "IN ('pending', 'sending')") == "0", 15,
                 "the sender handled every row")
    h.wait_until(lambda: val(scrape(h), "modegate_inbox_rows",
                             state="done") == 3, 12, "inbox rows refreshed")
    m = scrape(h)

    # Webhooks: three signed posts answered 200.
    eq(val(m, "modegate_webhook_requests_total", code="200"), 3.0,
       "webhooks 200")
    # Turns and their steps.
    eq(val(m, "modegate_turns_total", result="committed"), 3.0, "turns")
    for step in ("pipeline", "commit", "total"):
        eq(step_count(m, step), 3.0, "step %s count" % step)
    calls = llm_calls(llm)
    eq(len(calls), 3, "LLM calls the fake saw")
    eq(step_count(m, "llm"), 3.0, "llm step: one per LLM call here")
    eq(step_count(m, "guard"), 3.0, "guard: every LLM reply checked")
    assert step_count(m, "claim") >= 3, "claims timed"
    assert val(m, "modegate_turn_step_seconds_bucket", step="total",
               le="+Inf") == 3.0
    assert 0 < val(m, "modegate_turn_step_seconds_sum", step="total") < 30
    # LLM requests, latency, tokens: what the audit recorded.
    eq(series(m, "modegate_llm_requests_total", "outcome"), {"ok": 3.0},
       "LLM requests by outcome")
    eq(val(m, "modegate_llm_requests_total", provider="anthropic",
           outcome="ok"), 3.0, "LLM requests by provider")
    eq(val(m, "modegate_llm_request_seconds_count", provider="anthropic"),
       3.0, "LLM latency observations")
    llm_audit = [json.loads(r[2]) for r in audit_rows(h, "llm")]
    eq(val(m, "modegate_llm_tokens_total", provider="anthropic",
           direction="input"),
       float(sum(d["input_tokens"] for d in llm_audit)), "input tokens")
    eq(val(m, "modegate_llm_tokens_total", provider="anthropic",
           direction="output"),
       float(sum(d["output_tokens"] for d in llm_audit)), "output tokens")
    assert val(m, "modegate_llm_tokens_total", provider="anthropic",
               direction="input") > 0
    # Mode decisions: the router's audit rows.
    want = {}
    for d, _, _ in audit_rows(h, "router"):
        want[d] = want.get(d, 0) + 1.0
    got = {k: v for k, v in series(m, "modegate_mode_decisions_total",
                                   "decision").items() if v}
    eq(got, want, "decisions")
    assert want.get("PENDING") == 1 and want.get("CONFIRM") == 1, want
    # Policy blocks by rule: the policy's BLOCK rows.
    blocks = [r[1] for r in audit_rows(h, "policy") if r[0] == "BLOCK"]
    eq(len(blocks), 1, "one message blocked")
    eq(series(m, "modegate_policy_blocks_total", "rule"), {blocks[0]: 1.0},
       "policy blocks by rule")
    # Guard violations by claim: the claims of the regenerate rows.
    claims = {}
    for d, _, det in audit_rows(h, "guard"):
        for c in json.loads(det)["forbidden_claims"]:
            claims[c] = claims.get(c, 0) + 1.0
    assert claims, "the scripted reply broke a claim"
    eq(series(m, "modegate_guard_violations_total", "claim"), claims,
       "guard violations by claim")
    # Sends by outcome and code: the outbox.
    eq(val(m, "modegate_sends_total", outcome="failed", code="131026"), 1.0,
       "the scripted 131026")
    eq(h.sql1("SELECT count(*) FROM outbox WHERE error_code = '131026'"),
       "1", "outbox agrees")
    eq(val(m, "modegate_sends_total", outcome="sent"),
       float(h.sql1("SELECT count(*) FROM outbox WHERE state IN "
                    "('sent', 'delivered', 'read')")), "sent")
    eq(len(g.requests()), int(h.sql1("SELECT count(*) FROM outbox")),
       "one post per outbox row")
    # Breaker and inbox gauges.
    eq(val(m, "modegate_llm_breaker_state"), 0.0, "breaker closed")
    eq(val(m, "modegate_inbox_oldest_pending_seconds"), 0.0, "none pending")
    eq(val(m, "modegate_flag", name="conversation_mode_enabled", value="on"),
       1.0, "flag on")
    eq(val(m, "modegate_flag_percent", name="conversation_mode_enabled"),
       100.0, "percent")

    # The flag gauge follows `modegate flag set` (status refresh: 5 s).
    p = subprocess.run([h.bin, "flag", "set", "conversation_mode_enabled",
                        "shadow", "--percent", "40", "--by", "test"],
                       env=h.env, capture_output=True, text=True)
    eq(p.returncode, 0, "flag set: " + p.stderr)
    h.wait_until(lambda: val(scrape(h), "modegate_flag",
                             name="conversation_mode_enabled",
                             value="shadow") == 1.0, 12, "flag gauge flips")
    m = scrape(h)
    eq([val(m, "modegate_flag", name="conversation_mode_enabled", value=v)
        for v in ("on", "off", "shadow")], [0.0, 0.0, 1.0], "one value")
    eq(val(m, "modegate_flag_percent", name="conversation_mode_enabled"),
       40.0, "percent follows")


def test_metrics_oldest_pending_age(h):
    """An ingest-only process: the message waits; its age shows."""
    rc, out = h.migrate()
    eq(rc, 0, "migrate: " + out)
    h.start(MODEGATE_MAX_TURNS="0")
    up(h)
    send(h, "wamid.p1", "Oi")
    h.wait_until(lambda: val(scrape(h), "modegate_inbox_rows",
                             state="pending") == 1, 12, "depth 1")
    h.wait_until(lambda: val(scrape(h),
                             "modegate_inbox_oldest_pending_seconds") >= 1.0,
                 12, "oldest pending age grows")
    age = val(scrape(h), "modegate_inbox_oldest_pending_seconds")
    real = float(h.sql1("SELECT extract(epoch FROM now() - received_at) "
                        "FROM inbox"))
    assert 1.0 <= age <= real + 0.5, (age, real)
    eq(step_count(scrape(h), "total"), 0.0, "no turn in this process")


def test_metrics_llm_errors_open_the_breaker(h):
    llm = ready(h, LLM_BREAKER_THRESHOLD="1", LLM_TIMEOUT="5")
    up(h)
    llm.script([{"status": 500}] * 3)
    send(h, "wamid.b1", "Oi, boa tarde")
    eq(settled(h, "wamid.b1", 30), "done", "fallback reply")
    m = scrape(h)
    eq(len(llm_calls(llm)), 3, "three attempts reached the fake")
    eq(series(m, "modegate_llm_requests_total", "outcome"),
       {"server": 3.0}, "each attempt counted with its class")
    eq(val(m, "modegate_llm_breaker_state"), 1.0, "breaker open")
    # A message the AI answers ("Alguém aí?" is PEDIDO_HUMANO at 0.50 for
    # the learned detector: a hand-off, no LLM request to refuse).
    send(h, "wamid.b2", "Oi, tudo certo?")
    eq(settled(h, "wamid.b2", 30), "done", "fallback again")
    m = scrape(h)
    eq(len(llm_calls(llm)), 3, "no request while open")
    eq(series(m, "modegate_llm_requests_total", "outcome"),
       {"server": 3.0, "breaker_open": 1.0}, "refused by the breaker")
    eq(val(m, "modegate_llm_request_seconds_count", provider="anthropic"),
       3.0, "only real attempts timed")
    eq(val(m, "modegate_turns_total", result="committed"), 2.0, "turns")
