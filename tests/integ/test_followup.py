# test_followup.py -- the scheduler end to end (src/followup.c, sql/functions/):
# a bridge's follow-up reaches the fake Graph API (the template when the
# 24-hour window is closed, the messages.json text when open), sem_resposta
# after the no-answer delay, a stale pending cleared without a message, one
# follow-up per bridge with two processes sweeping the same database, the
# doctor's answer recorded as the outcome and counted by funnel_metrics.
# Also: a feature-flag flip reaches the very next turn (no restart).
# SPDX-License-Identifier: MIT
import json
import time

from harness import eq
from test_ops import cli
from test_turn import (DOCTOR, conv, llm_calls, ready, replies, send,
                       settled, tools_offered)

FOLLOWUP_TEXT = json.load(open(__file__.rsplit("/tests/", 1)[0] +
                               "/mode/messages.json"))["replies"]["followup"]
FAST = {"MODEGATE_SWEEP_S": "1", "MODEGATE_FOLLOWUP_AFTER_S": "1"}


def add_vaga(h, vid=1):
    h.sql("INSERT INTO vagas (id, hospital, especialidade, regiao, turno, "
          "data, responsavel_nome, responsavel_contato) VALUES "
          "(%d, 'Hospital Santa Lúcia', 'Clínica Médica', 'Zona Sul', "
          "'noturno', current_date + 3, 'Mariana Alves', "
          "'+55 11 90000-0101')" % vid)


def bridged(h, wa_id, inbound_hours, vid=1):
    """A conversation whose doctor last wrote inbound_hours ago, bridged
    to shift vid a day ago (as mg_commit_turn records a bridge)."""
    cid = h.sql1("INSERT INTO conversations (phone_number_id, wa_id, "
                 "last_inbound_at, conversation_mode) VALUES ('100', '%s', "
                 "now() - interval '%d hours', 'followup') RETURNING id"
                 % (wa_id, inbound_hours))
    h.sql("INSERT INTO handoffs (conversation_id, vaga_id, created_at) "
          "VALUES (%s, %d, now() - interval '1 day'); "
          "INSERT INTO funnel_events (conversation_id, vaga_id, status, "
          "doctor_key, created_at) VALUES (%s, %d, 'ponte_feita', '%s', "
          "now() - interval '1 day')" % (cid, vid, cid, vid, wa_id))
    return cid


def funnel(h, cid):
    return h.sql1("SELECT string_agg(status, ',' ORDER BY created_at, id) "
                  "FROM funnel_events WHERE conversation_id = %s" % cid)


def posts(graph):
    return [r for r in graph.requests() if r["path"].endswith("/messages")
            and r["body"].get("status") != "read"]


def test_followup_template_text_sem_resposta_and_expiry(h):
    rc, out = h.migrate()
    eq(rc, 0, "migrate: " + out)
    graph = h.fake("graph")
    add_vaga(h)
    closed = bridged(h, "5511911110001", 30)
    opened = bridged(h, "5511911110002", 1)
    stale = h.sql1("INSERT INTO conversations (phone_number_id, wa_id, "
                   "pending_transition, pending_transition_at) VALUES "
                   "('100', '5511911110003', 'oferta', now() - interval "
                   "'31 minutes') RETURNING id")
    h.start(WHATSAPP_API_BASE=graph.url + "/v25.0",
            WHATSAPP_TOKEN="test-token",
            WHATSAPP_TEMPLATE_FOLLOWUP="acompanhamento_ponte:pt_BR",
            MODEGATE_NO_ANSWER_S="2", **FAST)
    h.wait_until(lambda: len(posts(graph)) == 2, 10, "two follow-ups posted")
    by_to = {r["body"]["to"]: r["body"] for r in posts(graph)}
    eq(by_to["+5511911110001"]["type"], "template", "window closed: template")
    eq(by_to["+5511911110001"]["template"]["name"], "acompanhamento_ponte",
       "the configured template")
    eq(by_to["+5511911110002"]["type"], "text", "window open: text")
    eq(by_to["+5511911110002"]["text"]["body"], FOLLOWUP_TEXT,
       "the text of mode/messages.json")
    for cid in (closed, opened):
        h.wait_until(lambda: funnel(h, cid) == "ponte_feita,"
                     "aguardando_desfecho,sem_resposta", 10,
                     "sent → aguardando_desfecho → sem_resposta (%s)" % cid)
        eq(h.sql1("SELECT state FROM followups WHERE conversation_id = %s"
                  % cid), "sem_resposta", "follow-up closed")
    eq(h.sql1("SELECT pending_transition IS NULL FROM conversations "
              "WHERE id = %s" % stale), "t",
       "a stale pending is cleared without waiting for a message")
    eq(h.sql("SELECT step, decision, reason FROM audit_log "
             "WHERE conversation_id = %s" % stale),
       [("router", "EXPIRED", "pending:expired")], "and audited EXPIRED")
    time.sleep(1.5)
    eq(len(posts(graph)), 2, "no follow-up sent twice by later passes")


def test_followup_sent_once_across_two_processes(h):
    rc, out = h.migrate()
    eq(rc, 0, "migrate: " + out)
    graph = h.fake("graph")
    add_vaga(h)
    env = dict(FAST, WHATSAPP_API_BASE=graph.url + "/v25.0",
               WHATSAPP_TOKEN="test-token",
               WHATSAPP_TEMPLATE_FOLLOWUP="acompanhamento_ponte:pt_BR")
    h.start(**env)
    other = h.second()
    other.start()
    # Both sweep every second; the bridges appear while both run.
    n = 150
    h.sql("INSERT INTO conversations (phone_number_id, wa_id, "
          "last_inbound_at) SELECT '100', '55119222' || lpad(g::text, 5, "
          "'0'), now() - interval '30 hours' FROM generate_series(1, %d) g; "
          "INSERT INTO handoffs (conversation_id, vaga_id, created_at) "
          "SELECT id, 1, now() - interval '1 day' FROM conversations; "
          "INSERT INTO funnel_events (conversation_id, vaga_id, status, "
          "created_at) SELECT id, 1, 'ponte_feita', now() - interval "
          "'1 day' FROM conversations" % n)
    h.wait_until(lambda: h.sql1("SELECT count(*) FROM followups WHERE "
                                "state = 'sent'") == str(n), 30,
                 "every follow-up sent")
    time.sleep(2.5)     # more passes of both processes
    to = [r["body"]["to"] for r in posts(graph)]
    eq(len(to), n, "one post per bridge")
    eq(len(set(to)), n, "no doctor got two")
    eq(h.sql1("SELECT count(*) FROM outbox WHERE kind = 'template'"), str(n),
       "one outbox row per bridge")
    eq(h.sql1("SELECT count(*) FROM funnel_events WHERE "
              "status = 'aguardando_desfecho'"), str(n),
       "one aguardando_desfecho per bridge")
    owners = h.sql("SELECT owner, count(*) FROM followups GROUP BY owner "
                   "ORDER BY owner")
    eq(len(owners), 2, "both processes queued follow-ups: %r" % owners)
    assert "followup: queued=" in h.log() and \
        "followup: queued=" in other.log(), "both swept"


def bridged_and_followed_up(h):
    """A live bridge (criar_handoff_externo in oferta) whose follow-up
    the sweep has sent; returns (llm, conversation id)."""
    llm = ready(h, **FAST)
    add_vaga(h)
    llm.script([{"text": "Oi! Tudo bem?"}])
    send(h, "wamid.f1", "oi")
    settled(h, "wamid.f1")
    h.sql("UPDATE conversations SET conversation_mode = 'oferta'")
    llm.script([{"tool_calls": [{"name": "criar_handoff_externo",
                                 "arguments": {"vaga_id": 1}}]},
                {"text": "Pronto! Te passei o contato da Mariana Alves."}])
    send(h, "wamid.f2", "Pode passar o contato")
    settled(h, "wamid.f2")
    eq(conv(h, "conversation_mode"), "followup", "bridge made -> followup")
    cid = conv(h, "id")
    h.wait_until(lambda: funnel(h, cid) ==
                 "ponte_feita,aguardando_desfecho", 10, "follow-up sent")
    eq(replies(h)[-1], FOLLOWUP_TEXT, "the follow-up after the bridge reply")
    return llm, cid


def test_outcome_from_the_doctors_answer_and_followup_rate(h):
    llm, cid = bridged_and_followed_up(h)
    llm.script([{"text": "Que ótimo! Fico feliz que deu certo 🙌"}])
    send(h, "wamid.f3", "Fechou sim, deu tudo certo")
    settled(h, "wamid.f3")
    eq(funnel(h, cid), "ponte_feita,aguardando_desfecho,"
       "fechado_com_responsavel", "the answer is the outcome")
    hist = json.dumps(llm_calls(llm)[-1]["body"]["messages"],
                      ensure_ascii=False)
    assert FOLLOWUP_TEXT in hist, "the LLM sees the follow-up it answers"
    h.wait_until(lambda: h.sql1("SELECT state || '/' || reason FROM "
                                "followups") ==
                 "answered/fechado_com_responsavel", 10, "follow-up answered")
    # Bridges older than modegate.followup_hours are due in the metric.
    h.sql("ALTER DATABASE %s SET modegate.followup_hours = 0" % h.db)
    rows = {r[0]: r[1:] for r in h.sql(
        "SELECT metric, numerator, denominator, value FROM funnel_metrics "
        "WHERE period = 'total'")}
    eq(rows["followup_rate"], ("1", "1", "100.0"), "followup_rate")
    eq(rows["conversion_rate"], ("1", "1", "100.0"), "conversion_rate")


def test_nao_fechou_from_the_doctors_answer(h):
    """The DESFECHO_NAO_FECHOU counterpart: the doctor's answer in
    followup mode is the outcome nao_fechou, the bridge's current stage
    is nao_convertido, and the conversion rate counts it as not closed
    (the follow-up still counts as done)."""
    llm, cid = bridged_and_followed_up(h)
    llm.script([{"text": "Poxa, que pena! Obrigada por me contar."}])
    send(h, "wamid.f3", "nao deu certo, nao fechei")
    settled(h, "wamid.f3")
    eq(funnel(h, cid), "ponte_feita,aguardando_desfecho,nao_fechou",
       "the answer is the outcome")
    eq(h.sql1("SELECT metadata ->> 'origem' FROM funnel_events WHERE "
              "status = 'nao_fechou'"), "desfecho_relatado",
       "recorded from the doctor's report, not by a tool")
    eq(h.sql("SELECT vaga_id, status, stage FROM funnel_current "
             "WHERE conversation_id = %s" % cid),
       [("1", "nao_fechou", "nao_convertido")], "funnel_current")
    h.wait_until(lambda: h.sql1("SELECT state || '/' || reason FROM "
                                "followups") == "answered/nao_fechou", 10,
                 "follow-up answered")
    h.sql("ALTER DATABASE %s SET modegate.followup_hours = 0" % h.db)
    rows = {r[0]: r[1:] for r in h.sql(
        "SELECT metric, numerator, denominator, value FROM funnel_metrics "
        "WHERE period = 'total'")}
    eq(rows["conversion_rate"], ("0", "1", "0.0"),
       "conversion_rate: the bridge did not close")
    eq(rows["followup_rate"], ("1", "1", "100.0"), "followup_rate")


def test_flag_flip_reaches_the_next_turn(h):
    """The worker reads the effective flag in each turn's context
    (mg_context), so a change made by `modegate flag set` or by a plain
    UPDATE while the server runs decides the very next turn's tools."""
    llm = ready(h)
    discovery = ["encaminhar_humano", "salvar_memoria"]
    send(h, "wamid.ff1", "Oi, boa tarde")
    settled(h, "wamid.ff1")
    eq(tools_offered(llm_calls(llm)[-1]), discovery, "on: discovery tools")
    rc, _, err = cli(h, "flag", "set", "conversation_mode_enabled", "off",
                     "--by", "teste", "--reason", "flip")
    eq(rc, 0, "flag set off: " + err)
    t0 = time.monotonic()
    send(h, "wamid.ff2", "Sou pediatra")
    assert time.monotonic() - t0 < 1, "sent within a second of the flip"
    settled(h, "wamid.ff2")
    off = tools_offered(llm_calls(llm)[-1])
    eq(len(off), 5, "off: every tool (%r)" % off)
    assert "buscar_vagas" in off, off
    h.sql("UPDATE feature_flags SET value = 'on' "
          "WHERE name = 'conversation_mode_enabled'")
    t0 = time.monotonic()
    send(h, "wamid.ff3", "Moro em Campinas")
    assert time.monotonic() - t0 < 1, "sent within a second of the flip"
    settled(h, "wamid.ff3")
    eq(tools_offered(llm_calls(llm)[-1]), discovery,
       "on again: the mode's tools")
    eq(h.alive(), True, "no restart")
