# test_rules.py -- Julia's rules end to end (issue 13): HTTP in, the worker
# with a real PostgreSQL and the fake LLM, what the doctor sees (outbox),
# what was recorded (conversation columns, audit). Each case is one rule:
# opt-out and back, cooling-off set by the rules and by an operator,
# consent before the bridge, alternatives after "não fechou", the date in
# the prompt, the audit rows' evidence.
# SPDX-License-Identifier: MIT
import json

from harness import eq
from test_ops import cli
from test_turn import (DOCTOR, add_vaga, audit, conv, llm_calls, ready,
                       replies, send, settled)


def in_mode(h, mode):
    send(h, "wamid.pre", "oi")
    settled(h, "wamid.pre")
    h.sql("UPDATE conversations SET conversation_mode = '%s' "
          "WHERE wa_id = '%s'" % (mode, DOCTOR))


def test_opt_out_and_back(h):
    """OPT_OUT is confirmed once and says how to come back; anything else
    is stored and audited as blocked, unanswered; "quero voltar a receber"
    clears the opt-out with a short canned confirmation (no LLM)."""
    llm = ready(h)
    send(h, "wamid.oo1", "para de me mandar mensagem")
    settled(h, "wamid.oo1")
    assert "quero voltar a receber" in replies(h)[-1], replies(h)
    assert conv(h, "opted_out_at") is not None, "opted out"
    send(h, "wamid.oo2", "tem vaga amanhã?")
    settled(h, "wamid.oo2")
    eq(len(replies(h)), 1, "no reply while opted out")
    eq(audit(h, "policy")[-1][:2], ("BLOCK", "opted_out"), "blocked, audited")
    send(h, "wamid.oo3", "quero voltar a receber vagas")
    settled(h, "wamid.oo3")
    eq(conv(h, "opted_out_at"), None, "opt-out cleared")
    eq(audit(h, "policy")[-1][:2], ("BLOCK", "opt_in"), "opt-in audited")
    assert "de volta" in replies(h)[-1], replies(h)
    eq(len(llm_calls(llm)), 0, "no LLM for any of it")
    llm.script([{"text": "Oi! Qual sua especialidade?"}])
    send(h, "wamid.oo4", "oi")
    settled(h, "wamid.oo4")
    eq(replies(h)[-1], "Oi! Qual sua especialidade?", "answered again")


def test_operator_opt_out_opt_in(h):
    ready(h)
    send(h, "wamid.op1", "oi")
    settled(h, "wamid.op1")
    rc, out, err = cli(h, "opt-out", DOCTOR, "--by", "ana")
    eq(rc, 0, err)
    assert conv(h, "opted_out_at") is not None, out
    eq(audit(h, "opt_out")[-1][:2], ("recorded", "operator"), "audited")
    rc, out, err = cli(h, "opt-in", DOCTOR, "--by", "ana")
    eq((rc, conv(h, "opted_out_at")), (0, None), err)
    eq(audit(h, "opt_in")[-1][:2], ("cleared", "operator"), "audited")
    rc, out, err = cli(h, "opt-in", "5500000000000")
    eq(rc, 1, "unknown doctor")


def test_refusal_in_oferta_cools_off_and_operator_clears(h):
    """RECUSA in oferta: cooling-off of 7 days (policy/policy.json), audited;
    the next message is still answered, with the constraint that Julia
    offers nothing unless asked; an operator ends it."""
    llm = ready(h)
    in_mode(h, "oferta")
    llm.script([{"text": "Tudo bem, obrigada por avisar!"}])
    send(h, "wamid.co1", "não tenho interesse, obrigado")
    settled(h, "wamid.co1")
    days = h.sql1("SELECT round(extract(epoch FROM cooling_off_until - "
                  "now()) / 86400) FROM conversations WHERE wa_id = '%s'"
                  % DOCTOR)
    eq(days, "7", "cooling-off of 7 days")
    eq(audit(h, "cooling_off")[-1][0], "started", "audited")
    llm.script([{"text": "Oi! Tudo bem por aí?"}])
    send(h, "wamid.co2", "oi julia")
    settled(h, "wamid.co2")
    eq(replies(h)[-1], "Oi! Tudo bem por aí?", "still answered")
    assert "NÃO ofereça plantões" in llm_calls(llm)[-1]["body"]["system"]
    rc, out, err = cli(h, "cooling-off", DOCTOR, "--clear", "--by", "ana")
    eq((rc, conv(h, "cooling_off_until")), (0, None), err)
    rc, out, err = cli(h, "cooling-off", DOCTOR, "--days", "3")
    eq(rc, 0, err)
    rc, out, err = cli(h, "cooling-off", DOCTOR)
    eq(rc, 64, "--days or --clear is required")


def test_bridge_needs_the_doctors_consent(h):
    """criar_handoff_externo is refused in code (an is_error result the LLM
    reads) unless the doctor agreed in this turn; with consent it runs."""
    llm = ready(h)
    add_vaga(h)
    in_mode(h, "oferta")
    llm.script([{"tool_calls": [{"name": "criar_handoff_externo",
                                 "arguments": {"vaga_id": 1}}]},
                {"text": "Quer que eu te passe o contato da responsável?"}])
    # Not consent: a question about the shift is INTERESSE_VAGA for the
    # learned detector (the corpus's definition), which counts as consent.
    send(h, "wamid.cs1", "deixa eu ver minha agenda primeiro")
    settled(h, "wamid.cs1")
    tr = llm_calls(llm)[-1]["body"]["messages"][-1]["content"][0]
    eq(tr.get("is_error"), True, "refused")
    assert "pergunte ao médico" in json.dumps(tr, ensure_ascii=False)
    eq(h.sql1("SELECT count(*) FROM handoffs"), "0", "no bridge")
    llm.script([{"tool_calls": [{"name": "criar_handoff_externo",
                                 "arguments": {"vaga_id": 1}}]},
                {"text": "Pronto, passei o contato!"}])
    send(h, "wamid.cs2", "sim, pode passar")
    settled(h, "wamid.cs2")
    eq(h.sql1("SELECT count(*) FROM handoffs"), "1", "bridge made")


def test_nao_fechou_offers_alternatives(h):
    """followup + "não fechou": a micro-confirmation asks whether to look
    for other shifts; the doctor's yes enters oferta, where buscar_vagas
    no longer returns the shift that did not close."""
    llm = ready(h)
    add_vaga(h)
    h.sql("INSERT INTO vagas (id, hospital, especialidade, regiao, turno, "
          "data, responsavel_nome, responsavel_contato, status) VALUES "
          "(2, 'Hospital Bela Vista', 'Clínica Médica', 'São Paulo', "
          "'noturno', current_date + 4, 'Rui', '+55 11 90000-0202', "
          "'aberta')")
    in_mode(h, "followup")
    cid = conv(h, "id")
    h.sql("INSERT INTO funnel_events (conversation_id, vaga_id, status, "
          "doctor_key) VALUES (%s, 1, 'nao_fechou', '%s')" % (cid, DOCTOR))
    send(h, "wamid.nf1", "não rolou, o coordenador não respondeu")
    settled(h, "wamid.nf1")
    eq((conv(h, "conversation_mode"), conv(h, "pending_transition")),
       ("followup", "oferta"), "alternatives asked first")
    llm.script([{"tool_calls": [{"name": "buscar_vagas", "arguments":
                                 {"especialidade": "clinica"}}]},
                {"text": "Achei outra!"}])
    send(h, "wamid.nf2", "sim, quero ver outras")
    settled(h, "wamid.nf2")
    eq(conv(h, "conversation_mode"), "oferta", "oferta")
    tr = json.dumps(llm_calls(llm)[-1]["body"]["messages"][-1]["content"],
                    ensure_ascii=False)
    assert "Bela Vista" in tr and "Santa Lúcia" not in tr, tr


def test_prompt_dates_and_audit_evidence(h):
    """The system prompt states today's date in Brasília; the router's
    audit row carries the intent's confidence and evidence, the gate's the
    forbidden claims."""
    llm = ready(h)
    llm.script([{"text": "Oi!"}])
    send(h, "wamid.dt1", "quero saber de vagas")
    settled(h, "wamid.dt1")
    body = llm_calls(llm)[-1]["body"]
    eq(body.get("temperature"), 0.3, "LLM_TEMPERATURE's default is sent")
    sysp = body["system"]
    assert "Hoje é " in sysp and "horário de Brasília" in sysp, sysp[-600:]
    r = json.loads(audit(h, "router")[-1][2])
    eq(r["intent"], "INTERESSE_VAGA", "intent on the router row")
    assert r["evidence"] and float(r["confidence"]) > 0, r
    g = json.loads(audit(h, "gate")[-1][2])
    assert "vaga_especifica" in g["forbidden_claims"], g
    p = json.loads(audit(h, "policy")[-1][2])
    assert {"source", "runner_up", "rule_intent", "model_intent"} <= set(p) \
        and p["source"] in ("rules", "model", "both"), p


def test_campaign_reaches_once_and_the_reply_routes(h):
    """`campaign start`: the template once to each listed doctor (a new one
    gets a conversation on the given number), opted-out and cooling-off
    doctors skipped with their reason; reached conversations move to
    reativacao (mode_source campaign:ID); running it again sends nothing
    new; the doctor's reply routes reativacao -> discovery; `campaign
    status` counts it all."""
    llm = ready(h)
    send(h, "wamid.cp0", "oi")
    settled(h, "wamid.cp0")
    send(h, "wamid.cpx", "oi", sender="5511900000002")
    settled(h, "wamid.cpx", 15)
    rc, out, err = cli(h, "opt-out", "5511900000002")
    eq(rc, 0, err)
    args = ["campaign", "start", "volta-2026", "--template",
            "retomar_contato:pt_BR", "--phone-number-id", "100",
            "--rate", "600", DOCTOR, "5511900000002", "5511900000003"]
    rc, out, err = cli(h, *args)
    eq(rc, 0, err)
    assert '"queued": 2' in out and '"skipped": 1' in out, out
    rc, out, err = cli(h, *args)
    assert '"already": 3' in out and '"queued": 0' in out, out
    eq(h.sql1("SELECT count(*) FROM outbox WHERE kind = 'template'"), "2",
       "two templates, once each")
    eq((conv(h, "conversation_mode"), conv(h, "mode_source")),
       ("reativacao", "campaign:volta-2026"), "reativacao by campaign")
    eq(conv(h, "conversation_mode", sender="5511900000003"), "reativacao",
       "a new doctor got a conversation")
    h.wait_until(lambda: h.sql1("SELECT count(*) FROM outbox WHERE kind = "
                                "'template' AND state = 'dry_run'") == "2",
                 10, "the sender takes them (dry-run)")
    llm.script([{"text": "Que bom falar com vc de novo!"}])
    send(h, "wamid.cp1", "oi julia, ainda pego plantão sim")
    settled(h, "wamid.cp1")
    eq(conv(h, "conversation_mode"), "discovery", "the reply: discovery")
    rc, out, err = cli(h, "campaign", "status", "volta-2026")
    eq(rc, 0, err)
    lines = dict(l.split() for l in out.strip().splitlines())
    eq((lines["queued"], lines["sent"], lines["replied"],
        lines["skipped:opted_out"]), ("2", "2", "1", "1"), out)


def test_reativacao_after_a_month_of_silence(h):
    llm = ready(h)
    send(h, "wamid.ra0", "oi")
    settled(h, "wamid.ra0")
    h.sql("UPDATE conversations SET conversation_mode = 'oferta', "
          "last_inbound_at = now() - interval '31 days' WHERE wa_id = '%s'"
          % DOCTOR)
    llm.script([{"text": "Oi! Quanto tempo! Ainda tá pegando plantões?"}])
    send(h, "wamid.ra1", "oi, sumi né")
    settled(h, "wamid.ra1")
    eq(conv(h, "conversation_mode"), "reativacao", "inactivity")
    assert "MODO ATUAL: reativacao" in llm_calls(llm)[-1]["body"]["system"]


def test_campaign_pacing_and_cooling_off(h):
    ready(h)
    for k, w in enumerate(("5511900000011", "5511900000012",
                           "5511900000013")):
        send(h, "wamid.pc%d" % k, "oi", sender=w)
        settled(h, "wamid.pc%d" % k)
    rc, out, err = cli(h, "cooling-off", "5511900000013", "--days", "5")
    eq(rc, 0, err)
    rc, out, err = cli(h, "campaign", "start", "lenta", "--template",
                       "retomar_contato:pt_BR", "--rate", "1",
                       "5511900000011", "5511900000012", "5511900000013")
    eq(rc, 0, err)
    gap = h.sql1("SELECT round(extract(epoch FROM max(next_attempt_at) - "
                 "min(next_attempt_at))) FROM outbox WHERE kind = "
                 "'template'")
    eq(gap, "60", "one a minute")
    eq(h.sql1("SELECT skip_reason FROM campaign_sends WHERE wa_id = "
              "'5511900000013'"), "cooling_off", "cooling-off skipped")
    rc, out, err = cli(h, "campaign", "start", "x", "--template", "semlang")
    eq(rc, 64, "usage")


def test_reply_after_a_bridge_guarded_for_oferta(h):
    """A bridge moves oferta to followup mid-turn; the reply, written under
    oferta's prompt, is still checked against oferta's claims (negotiating
    pay is not a followup claim): it is regenerated, not sent."""
    llm = ready(h)
    add_vaga(h)
    in_mode(h, "oferta")
    bad = ("Passei seu contato pro Dr. Paulo! O plantão paga R$ 1.500 e "
           "consigo negociar um valor maior pra você.")
    llm.script([{"tool_calls": [{"name": "criar_handoff_externo",
                                 "arguments": {"vaga_id": 1}}]},
                {"text": bad},
                {"text": "Passei seu contato pro responsável pela vaga!"}])
    send(h, "wamid.bg1", "sim, pode passar meu contato")
    settled(h, "wamid.bg1")
    eq(conv(h, "conversation_mode"), "followup", "bridge made")
    g = audit(h, "guard")[-2:]	# this turn's: the reply, its regeneration
    eq(g[0][:2], ("regenerate", "negocia_valor"), "oferta's claim caught")
    eq(sorted(json.loads(g[0][2])["modes_checked"]), ["followup", "oferta"],
       "both modes checked")
    eq(g[1][0], "pass", "the regeneration passes")
    eq(replies(h)[-1], "Passei seu contato pro responsável pela vaga!",
       "the clean regeneration is sent")


def test_closed_outcome_confirms_the_booking(h):
    """DESFECHO_FECHOU in followup records fechado_com_responsavel and sets
    reserva_confirmada; a new offer cycle (CONFIRM into oferta) clears it.
    salvar_memoria offers especialidade and regiao, and fills them."""
    llm = ready(h)
    in_mode(h, "followup")
    llm.script([{"text": "Que ótimo, parabéns!"}])
    send(h, "wamid.rc1", "deu certo, fechei o plantão com ele!")
    settled(h, "wamid.rc1")
    eq(conv(h, "reserva_confirmada"), "t", "booking confirmed")
    llm.script([{"text": "Show! Quer que eu mande os detalhes?"}])
    send(h, "wamid.rc2", "tem mais vaga pra mim?")
    settled(h, "wamid.rc2")
    eq(conv(h, "pending_transition"), "oferta", "a new offer, pending")
    schema = [t for t in llm_calls(llm)[-1]["body"]["tools"]
              if t["name"] == "salvar_memoria"][0]["input_schema"]
    assert {"especialidade", "regiao"} <= set(schema["properties"]), schema
    llm.script([{"tool_calls": [{"name": "salvar_memoria", "arguments":
                                 {"fato": "pediatra em Campinas",
                                  "especialidade": "Pediatria",
                                  "regiao": "Campinas"}}]},
                {"text": "Anotado!"}])
    send(h, "wamid.rc3", "sim, sou pediatra em Campinas")
    settled(h, "wamid.rc3")
    eq((conv(h, "conversation_mode"), conv(h, "reserva_confirmada")),
       ("oferta", "f"), "a new cycle clears the booking")
    eq((conv(h, "especialidade"), conv(h, "regiao")),
       ("Pediatria", "Campinas"), "memory fills the columns")
