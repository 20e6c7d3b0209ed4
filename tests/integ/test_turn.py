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
    h.wait_until(lambda: h.sql1("SELECT state FROM outbox WHERE "
                                "kind = 'text'") == "dry_run", 5,
                 "the sender records the reply (dry-run: no token)")
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


def add_vaga(h):
    h.sql("INSERT INTO vagas (id, hospital, especialidade, regiao, turno, "
          "data, responsavel_nome, responsavel_contato, status) VALUES "
          "(1, 'Hospital Santa Lúcia', 'Clínica Médica', "
          "'São Paulo - Zona Sul', 'noturno', current_date + 3, "
          "'Mariana Alves', '+55 11 90000-0101', 'aberta')")


def test_seed_three_messages_end_to_end(h):
    llm = ready(h)
    add_vaga(h)
    # 1: interest in discovery -> pending oferta, micro-confirmation asked
    llm.script([{"text": "Que legal! Vc já tem CRM ativo em SP?"}])
    send(h, "wamid.s1", "Quero saber de vagas!")
    settled(h, "wamid.s1")
    eq((conv(h, "conversation_mode"), conv(h, "pending_transition")),
       ("discovery", "oferta"), "pending oferta")
    r1 = llm_calls(llm)[-1]
    assert "MICRO-CONFIRMAÇÃO" in r1["body"]["system"], "micro prompt"
    assert "buscar_vagas" not in tools_offered(r1), tools_offered(r1)
    eq(audit(h, "router")[-1][0], "PENDING", "router audited")
    # 2: confirmation -> oferta, buscar_vagas offered and executed
    llm.script([{"tool_calls": [{"name": "buscar_vagas", "arguments":
                                 {"especialidade": "clinica"}}]},
                {"text": "Achei uma vaga no Hospital Santa Lúcia, noturno. "
                         "Quer que eu te passe o contato da responsável?"}])
    send(h, "wamid.s2", "Sim, tenho CRM ativo")
    settled(h, "wamid.s2")
    eq((conv(h, "conversation_mode"), conv(h, "pending_transition")),
       ("oferta", None), "confirmed")
    reqs = llm_calls(llm)
    assert "buscar_vagas" in tools_offered(reqs[-2]), "offered in oferta"
    tr = reqs[-1]["body"]["messages"][-1]["content"][0]
    eq(tr["type"], "tool_result", "tool result sent back")
    assert "Santa Lúcia" in json.dumps(tr["content"], ensure_ascii=False)
    assert "90000" not in json.dumps(tr["content"]), "no contact leaked"
    eq(h.sql1("SELECT string_agg(status, ',' ORDER BY id) FROM "
              "funnel_events"), "interesse_confirmado", "funnel 1")
    # 3: the bridge -> handoff, ponte_feita, followup
    llm.script([{"tool_calls": [{"name": "criar_handoff_externo",
                                 "arguments": {"vaga_id": 1}}]},
                {"text": "Pronto! Te passei o contato da Mariana Alves, "
                         "responsável pela vaga. Ela combina tudo direto "
                         "com vc 😉"}])
    send(h, "wamid.s3", "Quero sim, pode passar o contato")
    settled(h, "wamid.s3")
    eq(h.sql1("SELECT count(*) FROM handoffs WHERE vaga_id = 1"), "1",
       "bridge recorded")
    eq(h.sql1("SELECT string_agg(status, ',' ORDER BY id) FROM "
              "funnel_events"), "interesse_confirmado,ponte_feita",
       "funnel 2")
    eq(conv(h, "conversation_mode"), "followup", "bridge made -> followup")
    eq(len(replies(h)), 3, "three replies")
    assert replies(h)[2].startswith("Pronto!"), replies(h)
    eq([a[0] for a in audit(h, "tool")], ["executed", "executed"],
       "tools audited")
    # 4: the outcome reported in followup
    llm.script([{"text": "Que ótimo! Fico feliz que deu certo 🙌"}])
    send(h, "wamid.s4", "Fechou sim, deu tudo certo")
    settled(h, "wamid.s4")
    eq(h.sql1("SELECT status FROM funnel_events ORDER BY id DESC LIMIT 1"),
       "fechado_com_responsavel", "outcome in the funnel")


def test_flag_shadow_routes_without_changing(h):
    llm = ready(h)
    h.sql("UPDATE feature_flags SET value = 'shadow' "
          "WHERE name = 'conversation_mode_enabled'")
    send(h, "wamid.sh1", "Quero saber de vagas!")
    settled(h, "wamid.sh1")
    eq((conv(h, "conversation_mode"), conv(h, "pending_transition")),
       ("discovery", None), "mode not changed")
    req = llm_calls(llm)[0]
    eq(len(tools_offered(req)), 5, "all tools offered")
    r = audit(h, "router")[0]
    eq(r[0], "PENDING", "decision audited")
    eq(json.loads(r[2])["applied"], False, "not applied")
    assert "buscar_vagas" in json.loads(audit(h, "gate")[0][2])[
        "tools_would_remove"], "would-remove audited"


def test_shadow_keeps_its_own_state_and_would_be_guard(h):
    """Shadow measures the whole path: its own pending (shadow_pending) is
    kept and confirmed by the next message, the real mode never moves, and
    a reply with a forbidden claim is sent but audited with what
    enforcement would have done (decision regenerate, not pass)."""
    llm = ready(h)
    h.sql("UPDATE feature_flags SET value = 'shadow' "
          "WHERE name = 'conversation_mode_enabled'")
    llm.script([{"text": "Seu plantão está confirmado!"}])
    send(h, "wamid.ss1", "Quero saber de vagas!")
    settled(h, "wamid.ss1")
    eq((conv(h, "shadow_mode"), conv(h, "shadow_pending")),
       ("discovery", "oferta"), "shadow's pending kept")
    eq(conv(h, "pending_transition"), None, "the real one untouched")
    g = audit(h, "guard")[-1]
    eq(g[:2], ("regenerate", "shadow: not enforced"), "would-be verdict")
    eq(json.loads(g[2])["enforced"], False, "not enforced")
    eq(replies(h)[-1], "Seu plantão está confirmado!", "sent unchanged")
    send(h, "wamid.ss2", "sim, tenho CRM ativo")
    settled(h, "wamid.ss2")
    eq(audit(h, "router")[-1][0], "CONFIRM", "CONFIRM measured")
    eq((conv(h, "shadow_mode"), conv(h, "conversation_mode")),
       ("oferta", "discovery"), "shadow in oferta, real in discovery")
    eq(h.sql1("SELECT count(*) FROM funnel_events"), "0",
       "shadow records no funnel")


def test_forbidden_tool_refused_not_executed(h):
    llm = ready(h)
    add_vaga(h)
    llm.script([{"tool_calls": [{"name": "buscar_vagas",
                                 "arguments": {}}]},
                {"text": "Me conta: qual sua especialidade?"}])
    send(h, "wamid.f1", "Oi, boa tarde")
    settled(h, "wamid.f1")
    reqs = llm_calls(llm)
    eq(len(reqs), 2, "tool round + final")
    tr = reqs[1]["body"]["messages"][-1]["content"][0]
    eq((tr["type"], tr.get("is_error")), ("tool_result", True),
       "error tool result")
    assert "indisponível" in json.dumps(tr["content"], ensure_ascii=False)
    eq(audit(h, "tool")[0][:2], ("refused", "buscar_vagas"), "audited")
    eq(replies(h), ["Me conta: qual sua especialidade?"], "reply")


def test_guard_regenerates_then_sends_clean(h):
    llm = ready(h)
    llm.script([{"text": "Ótimo, seu plantão está confirmado para sábado!"},
                {"text": "Que bom falar com vc! Qual sua especialidade?"}])
    send(h, "wamid.g1", "Oi, boa tarde")
    settled(h, "wamid.g1")
    reqs = llm_calls(llm)
    eq(len(reqs), 2, "regenerated once")
    assert "vaga_especifica" in reqs[1]["body"]["system"], "claim named"
    eq(replies(h), ["Que bom falar com vc! Qual sua especialidade?"],
       "the clean reply only")
    eq([a[0] for a in audit(h, "guard")], ["regenerate", "pass"], "guard")


def test_guard_fallback_after_three_violations(h):
    llm = ready(h)
    bad = {"text": "Ótimo, seu plantão está confirmado para sábado!"}
    llm.script([bad, bad, bad])
    send(h, "wamid.g2", "Oi, boa tarde")
    settled(h, "wamid.g2")
    eq(len(llm_calls(llm)), 3, "two regenerations")
    r = replies(h)
    eq(len(r), 1, "one reply")
    assert "confirmado" not in r[0], r
    eq([a[0] for a in audit(h, "guard")],
       ["regenerate", "regenerate", "fallback"], "guard")


def test_llm_outage_fallback_reply(h):
    llm = ready(h, LLM_TIMEOUT="5")
    llm.script([{"status": 500}] * 3)
    send(h, "wamid.o1", "Oi, boa tarde")
    eq(settled(h, "wamid.o1", 30), "done", "message kept and done")
    eq(len(llm_calls(llm)), 3, "three attempts")
    eq(len(replies(h)), 1, "fallback reply")
    eq(audit(h, "llm")[0][:2], ("error", "server"), "audited")


def silent_under_human(h, llm, wamid, text):
    """A message while a human has the chat: stored and audited, no LLM
    call, no reply."""
    before = len(replies(h))
    llm.reset()
    send(h, wamid, text)
    eq(settled(h, wamid), "done", "stored under human control")
    eq(llm_calls(llm), [], "no LLM call while a human has the chat")
    eq(len(replies(h)), before, "no AI reply")
    eq(audit(h, "control")[-1][:2], ("human", "store_only"), "audited")


def test_human_control_no_llm_no_reply(h):
    llm = ready(h)
    send(h, "wamid.h0", "Oi")
    settled(h, "wamid.h0")
    h.sql("UPDATE conversations SET control = 'human'")
    silent_under_human(h, llm, "wamid.h1", "Quero saber de vagas!")
    eq(len(replies(h)), 1, "only the first reply")


def test_opt_out_confirmed_once_then_silence(h):
    llm = ready(h)
    send(h, "wamid.x1", "PARA DE ME MANDAR MENSAGEM")
    settled(h, "wamid.x1")
    send(h, "wamid.x2", "Oi?")
    settled(h, "wamid.x2")
    eq(llm_calls(llm), [], "no LLM call")
    r = replies(h)
    eq(len(r), 1, "one confirmation")
    assert "não vou mais" in r[0], r
    assert conv(h, "opted_out_at") is not None, "opt-out recorded"
    eq([a[:2] for a in audit(h, "policy")],
       [("BLOCK", "opt_out_request"), ("BLOCK", "opted_out")], "audited")


def test_serious_objection_hands_off(h):
    llm = ready(h)
    send(h, "wamid.sg", "vcs são uns golpistas, vou denunciar")
    settled(h, "wamid.sg")
    eq(llm_calls(llm), [], "no LLM call")
    eq(replies(h), [], "no AI reply")
    eq(conv(h, "control"), "human", "human control")
    assert conv(h, "serious_objection_at") is not None


def test_double_texting_one_turn(h):
    llm = ready(h, MODEGATE_COALESCE_MS="1000")
    send(h, "wamid.dt1", "Oi, tudo bem?")
    time.sleep(0.1)
    send(h, "wamid.dt2", "Sou pediatra em Campinas")
    settled(h, "wamid.dt1")
    settled(h, "wamid.dt2")
    reqs = llm_calls(llm)
    eq(len(reqs), 1, "one LLM call")
    last = reqs[0]["body"]["messages"][-1]["content"]
    assert "Oi, tudo bem?" in last and "pediatra" in last, last
    eq(len(replies(h)), 1, "one reply")


def test_old_message_skipped(h):
    llm = ready(h)
    send(h, "wamid.old", "Oi", ts=time.time() - 2 * 86400)
    eq(settled(h, "wamid.old"), "skipped", "skipped")
    eq(llm_calls(llm), [], "no LLM call")
    eq(replies(h), [], "no reply")
    eq(audit(h, "age")[0][0], "skipped", "audited")


def test_media_asks_for_text(h):
    llm = ready(h)
    send(h, "wamid.img", mtype="image",
         extra={"image": {"id": "m1", "mime_type": "image/jpeg"}})
    settled(h, "wamid.img")
    eq(llm_calls(llm), [], "no LLM call")
    r = replies(h)
    eq(len(r), 1, "one reply")
    assert "texto" in r[0], r
    eq(h.sql("SELECT kind, payload ->> 'message_id' FROM outbox ORDER BY id"),
       [("read", "wamid.img"), ("text", None)],
       "the image is marked read, then answered")
    send(h, "wamid.rx", mtype="reaction",
         extra={"reaction": {"message_id": "wamid.img", "emoji": "👍"}})
    settled(h, "wamid.rx")
    eq(len(replies(h)), 1, "no reply to a reaction")
    eq(audit(h, "message")[-1][:2], ("ignore", "reaction"), "audited")


def test_openai_provider(h):
    llm = ready(h, provider="openai")
    llm.script([{"tool_calls": [{"name": "salvar_memoria", "arguments":
                                 {"fato": "pediatra em Campinas"}}]},
                {"text": "Anotado! Vc prefere plantão de dia ou de noite?"}])
    send(h, "wamid.oa", "Sou pediatra em Campinas")
    settled(h, "wamid.oa")
    reqs = llm_calls(llm)
    eq(len(reqs), 2, "tool round + final")
    assert reqs[0]["path"].endswith("/chat/completions")
    eq(h.sql1("SELECT count(*) FROM doctor_memory"), "1", "memory saved")
    eq(replies(h), ["Anotado! Vc prefere plantão de dia ou de noite?"], "")


def test_two_processes_answer_each_once_in_order(h):
    llm = ready(h, MODEGATE_COALESCE_MS="0")
    other = h.second()
    other.start()
    doctors = ["55119000000%02d" % i for i in range(4)]
    n = 0
    for k in range(3):
        for d in doctors:
            n += 1
            body = message("wamid.m%d" % n, "msg %d" % k, sender=d)
            st, _ = (h if n % 2 else other).post_webhook(body)
            eq(st, 200, "webhook")
    h.wait_until(lambda: h.sql1("SELECT count(*) FROM inbox WHERE state "
                                "IN ('done','skipped','dead')") == str(n),
                 30, "all settled")
    eq(h.sql1("SELECT count(*) FROM inbox WHERE state = 'done'"), str(n),
       "all done")
    # each turn answered once; per conversation, replies in message order
    for d in doctors:
        ids = [r[0] for r in h.sql(
            "SELECT i.raw -> 'text' ->> 'body' FROM outbox o JOIN inbox i "
            "ON i.id = o.inbox_id JOIN conversations c ON "
            "c.id = o.conversation_id WHERE c.wa_id = '%s' AND "
            "o.kind = 'text' ORDER BY o.id" % d)]
        assert ids == sorted(ids) and len(ids) == len(set(ids)), (d, ids)
    eq(h.sql1("SELECT count(*) FROM (SELECT inbox_id FROM outbox WHERE "
              "kind = 'text' GROUP BY inbox_id HAVING count(*) > 1) x"),
       "0", "no message answered twice")


def test_crash_mid_turn_answered_once(h):
    llm = ready(h, MODEGATE_LEASE_S="2")
    llm.script([{"delay": 3, "text": "resposta perdida"},
                {"text": "Oi! Qual sua especialidade?"}])
    send(h, "wamid.k1", "Oi, boa tarde")
    h.wait_until(lambda: len(llm_calls(llm)) == 1, 10, "LLM called")
    h.stop(signal.SIGKILL)
    eq(h.sql1("SELECT state FROM inbox WHERE wamid = 'wamid.k1'"),
       "claimed", "still claimed")
    h.start()
    eq(settled(h, "wamid.k1", 20), "done", "redone after the lease")
    eq(replies(h), ["Oi! Qual sua especialidade?"], "answered once")


def test_objection_revisited_then_resolved(h):
    """oferta + a soft objection moves back to discovery and records the
    objection; later interest is not refused: a micro-confirmation revisits
    the objection (the prompt names it), and the doctor's confirmation
    resolves it (audited) and enters oferta. No lock-out."""
    llm = ready(h)
    send(h, "wamid.obj-0", "oi")
    settled(h, "wamid.obj-0")
    h.sql("UPDATE conversations SET conversation_mode = 'oferta' "
          "WHERE wa_id = '%s'" % DOCTOR)
    send(h, "wamid.obj-1", "ta muito longe pra mim, nao compensa")
    settled(h, "wamid.obj-1")
    eq(conv(h, "conversation_mode"), "discovery", "objection -> discovery")
    assert conv(h, "objecao_at") is not None, "objection recorded"
    motive = conv(h, "objecao_motivo")
    assert motive, "what was objected is kept"
    eq(audit(h, "objection")[-1][:2], ("opened", motive), "audited")
    llm.reset()
    send(h, "wamid.obj-2", "quero saber de vagas")
    settled(h, "wamid.obj-2")
    eq(audit(h, "router")[-1][0], "PENDING", "not refused")
    eq(conv(h, "pending_transition"), "oferta", "revisit pending")
    system = json.dumps(llm_calls(llm)[-1]["body"]["system"],
                        ensure_ascii=False)
    assert "O MÉDICO TINHA UMA OBJEÇÃO" in system and motive in system, \
        system[-800:]
    send(h, "wamid.obj-3", "sim, tranquilo, pode mandar")
    settled(h, "wamid.obj-3")
    eq(conv(h, "conversation_mode"), "oferta", "offer after the revisit")
    eq(conv(h, "objecao_resolvida"), "t", "resolved")
    eq(audit(h, "objection")[-1][0], "resolved", "resolution audited")


def test_message_that_keeps_killing_the_process_ends_dead(h):
    """A turn that dies with its process MODEGATE_MAX_ATTEMPTS times (here
    kill -9 while the LLM is answering) leaves its message dead, audited:
    a message that crashes modegate does not crash every restart, and the
    doctor's next message is answered."""
    llm = ready(h, MODEGATE_LEASE_S="1", MODEGATE_MAX_ATTEMPTS="2")
    llm.config(delay=30)
    # Any message the AI answers (the learned detector reads "processo"
    # as a lawsuit, a serious objection that never reaches the LLM).
    send(h, "wamid.px1", "oi julia, tudo bem?")
    for n in (1, 2):
        h.wait_until(lambda: len(llm_calls(llm)) >= n, 15,
                     "LLM call %d" % n)
        h.stop(sig=signal.SIGKILL)
        h.start()
    eq(settled(h, "wamid.px1"), "dead", "dead after dying with two turns")
    eq(h.sql("SELECT a.decision, a.details ->> 'retaken' FROM audit_log a "
             "JOIN inbox i ON i.id = a.inbox_id WHERE i.wamid = 'wamid.px1' "
             "AND a.step = 'worker'"), [("dead", "true")], "audited")
    eq(len(llm_calls(llm)), 2, "no third attempt")
    llm.config(delay=0)
    llm.script([{"text": "Oi! Como posso ajudar?"}])
    send(h, "wamid.px2", "oi, voltei")
    eq(settled(h, "wamid.px2"), "done", "the next message is answered")
    eq(replies(h), ["Oi! Como posso ajudar?"], "one reply, to that one")


def test_llm_outage_hands_off_when_configured(h):
    llm = ready(h, LLM_TIMEOUT="5", LLM_FALLBACK="handoff")
    llm.script([{"status": 500}] * 3)
    send(h, "wamid.oh1", "Oi, boa tarde")
    eq(settled(h, "wamid.oh1", 30), "done", "message kept and done")
    eq(len(llm_calls(llm)), 3, "three attempts")
    eq(replies(h), [], "no AI reply: a person answers")
    eq((conv(h, "control"), conv(h, "control_updated_by")),
       ("human", "llm_unavailable"), "handed to a human")
    eq(audit(h, "llm")[-1][:2], ("handoff", "llm_unavailable"), "audited")
    silent_under_human(h, llm, "wamid.oh2", "alguem ai?")


def test_long_reply_cut_to_whatsapps_limit(h):
    llm = ready(h)
    text = "Oi! " + "Que bom falar com você. " * 200     # 4,804 characters
    llm.script([{"text": text}])
    send(h, "wamid.lr1", "Oi")
    eq(settled(h, "wamid.lr1"), "done", "turn")
    r = replies(h)
    eq(len(r), 1, "one message")
    eq(len(r[0]), 4096, "cut at 4,096 characters (not bytes)")
    assert text.startswith(r[0]), r[0][:80]


def test_graceful_stop_finishes_the_turn_in_flight(h):
    """SIGTERM while the LLM answers: no new turn starts, the one in
    flight commits and its reply is recorded before exit (its lease
    would otherwise hold the conversation until it expires)."""
    llm = ready(h)
    llm.script([{"text": "Oi! Qual sua especialidade?", "delay": 1.5}])
    send(h, "wamid.gs1", "Oi, boa tarde")
    h.wait_until(lambda: len(llm_calls(llm)) == 1, 10, "the LLM is called")
    eq(h.stop(), 0, "clean exit")
    eq(h.sql1("SELECT state FROM inbox WHERE wamid = 'wamid.gs1'"), "done",
       "the turn committed before exit")
    eq(h.sql("SELECT kind, state FROM outbox ORDER BY id"),
       [("read", "dry_run"), ("text", "dry_run")],
       "the receipt and the reply recorded")
    eq(conv(h, "lease_owner"), None, "no lease left behind")
