# test_handoff.py -- the encaminhar_humano tool end to end: the LLM asks
# for a human (a tool_use, then its final text), mg_tool_encaminhar_humano's
# commit fragment puts the chat under human control, the turn's own reply
# still reaches the doctor, the next message is stored without an LLM call
# or a reply, and `modegate release` gives the chat back to the AI.
# SPDX-License-Identifier: MIT
import json

from harness import eq
from test_ops import cli
from test_turn import (DOCTOR, audit, conv, llm_calls, ready, replies, send,
                       settled, silent_under_human, tools_offered)

HANDOFF_TEXT = "Claro! Vou te passar para um colega da equipe, ele já te " \
               "chama por aqui."


def test_encaminhar_humano_hands_off_until_release(h):
    llm = ready(h)
    llm.script([{"text": "Oi! Tudo bem? Qual sua especialidade?"}])
    send(h, "wamid.eh1", "Oi, boa tarde")
    eq(settled(h, "wamid.eh1"), "done", "first turn")
    eq(conv(h, "control"), "ai", "the AI has the chat")
    llm.reset()

    # Something only the team can solve; the LLM calls encaminhar_humano
    # (an explicit request for a person is a rule: test_human_request).
    llm.script([{"tool_calls": [{"name": "encaminhar_humano",
                                 "id": "toolu_01handoff",
                                 "arguments": {"motivo":
                                               "médico pediu uma pessoa"}}]},
                {"text": HANDOFF_TEXT}])
    send(h, "wamid.eh2", "Tenho uma dúvida sobre um pagamento atrasado do "
         "mês passado")
    eq(settled(h, "wamid.eh2"), "done", "handoff turn")
    reqs = llm_calls(llm)
    eq(len(reqs), 2, "tool round + final")
    assert "encaminhar_humano" in tools_offered(reqs[0]), \
        tools_offered(reqs[0])
    tr = reqs[1]["body"]["messages"][-1]["content"][0]
    eq((tr["type"], tr["tool_use_id"], tr.get("is_error", False)),
       ("tool_result", "toolu_01handoff", False), "tool result sent back")
    assert "commit" not in json.dumps(tr["content"]), \
        "the commit fragment stays out of the LLM: %r" % tr
    tool = audit(h, "tool")
    eq(sorted(a[:2] for a in tool),
       [("executed", "encaminhar_humano"),
        ("handoff_humano", "médico pediu uma pessoa")],
       "the call and the handoff audited")
    eq((conv(h, "control"), conv(h, "control_updated_by")),
       ("human", "encaminhar_humano"), "human control after the turn")
    eq(replies(h)[-1], HANDOFF_TEXT, "the turn's reply queued")
    h.wait_until(lambda: h.sql1(
        "SELECT state FROM outbox WHERE kind = 'text' AND "
        "payload -> 'text' ->> 'body' = '%s'" % HANDOFF_TEXT) == "dry_run",
        5, "the handoff reply is sent (dry-run: no token)")

    # Under human control: stored, audited, no LLM call, no reply.
    silent_under_human(h, llm, "wamid.eh3", "Oi? Alguém aí?")
    eq(len(replies(h)), 2, "still two replies")

    # The operator gives the chat back.
    rc, out, err = cli(h, "release", DOCTOR, "--by", "ana")
    eq(rc, 0, "release: " + err)
    eq(conv(h, "control"), "ai", "released")
    llm.script([{"text": "Oi de novo! Posso ajudar em algo mais?"}])
    send(h, "wamid.eh4", "Voltei, obrigado pela ajuda")
    eq(settled(h, "wamid.eh4"), "done", "turn after release")
    eq(len(llm_calls(llm)), 1, "the AI answers again")
    eq(replies(h)[-1], "Oi de novo! Posso ajudar em algo mais?",
       "a reply after release")
    eq(len(replies(h)), 3, "three replies in all")


def test_human_request_is_a_rule(h):
    """PEDIDO_HUMANO needs no LLM: control goes to a human (by the policy),
    the doctor gets the canned hand-off message, the AI stays silent until
    `release`, all audited."""
    llm = ready(h)
    send(h, "wamid.hr1", "quero falar com uma pessoa de verdade")
    eq(settled(h, "wamid.hr1"), "done", "the request")
    eq(len(llm_calls(llm)), 0, "no LLM call")
    eq((conv(h, "control"), conv(h, "control_updated_by")),
       ("human", "policy"), "human control")
    eq(audit(h, "policy")[-1][:2], ("BLOCK", "human_request"), "audited")
    assert "alguém da equipe" in replies(h)[-1], replies(h)
    silent_under_human(h, llm, "wamid.hr2", "alô?")
    rc, out, err = cli(h, "release", DOCTOR, "--by", "ana")
    eq(rc, 0, "release: " + err)
    llm.script([{"text": "Oi! Em que posso ajudar?"}])
    send(h, "wamid.hr3", "oi de novo")
    eq(settled(h, "wamid.hr3"), "done", "after release")
    eq(replies(h)[-1], "Oi! Em que posso ajudar?", "the AI answers again")
