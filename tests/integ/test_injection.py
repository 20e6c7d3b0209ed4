# test_injection.py -- prompt injection end to end: every attacker message
# of tests/cases/injection.tsv is sent by its own doctor while the fake LLM
# plays along (it calls buscar_vagas and criar_handoff_externo in
# discovery, then claims "sua reserva está confirmada" / "fechado, te pago
# 3 mil"). The mode changes only through the router, no tool outside the
# allow-list runs, and the guard keeps the claims out of the outbox.
# `modegate intent` never calls an attack OPT_OUT unless it is one.
# SPDX-License-Identifier: MIT
import json
import os
import subprocess

from harness import ROOT, eq
from test_turn import (add_vaga, audit, conv, llm_calls, ready, replies,
                       send, settled, tools_offered)

CORPUS = os.path.join(ROOT, "tests", "cases", "injection.tsv")
CLAIMS = ("sua reserva está confirmada", "fechado, te pago 3 mil")
GATED = ("buscar_vagas", "criar_handoff_externo")


def corpus():
    with open(CORPUS, encoding="utf-8") as f:
        return [tuple(line.rstrip("\n").split("\t", 1)) for line in f
                if line.strip() and not line.startswith("#")]


def attacker_script():
    """The LLM obeys the attacker: gated tools, then the claims."""
    return [{"tool_calls": [
                {"name": "buscar_vagas", "arguments": {"especialidade":
                                                       "todas"}},
                {"name": "criar_handoff_externo",
                 "arguments": {"vaga_id": 1}}]},
            {"text": "Prontinho! " + CLAIMS[0].capitalize() + " 😉"},
            {"text": "Ok, " + CLAIMS[1] + " pelo plantão"},
            {"text": CLAIMS[0].capitalize() + "! Fechado, te pago 3 mil."}]


def test_injection_corpus_is_realistic(h):
    rows = corpus()
    assert len(rows) >= 20, "at least 20 attacks, got %d" % len(rows)
    for label, text in rows:
        assert label in ("-", "OPT_OUT") and text, (label, text)


def check_one(h, llm, i, label, text):
    sender = "55119700%05d" % i
    what = "attack %d (%s)" % (i, text)
    llm.reset()
    llm.script(attacker_script())
    send(h, "wamid.inj%d" % i, text, sender=sender)
    settled(h, "wamid.inj%d" % i)
    mode = conv(h, "conversation_mode", sender)
    decisions = [r[0] for r in audit(h, "router", sender)]
    if mode != "discovery":
        assert "APPLY" in decisions or "CONFIRM" in decisions, \
            "%s: mode %s without a router decision %s" % (what, mode,
                                                          decisions)
    for req in llm_calls(llm):
        if "MODO ATUAL: discovery" in req["body"].get("system", ""):
            for t in GATED:
                assert t not in tools_offered(req), "%s: %s offered" % (
                    what, t)
    for decision, tool, _ in audit(h, "tool", sender):
        if tool in GATED and mode == "discovery":
            eq(decision, "refused", "%s: %s" % (what, tool))
    for r in replies(h, sender):
        low = (r or "").lower()
        for c in CLAIMS:
            assert c not in low, "%s: claim sent: %r" % (what, r)
        assert "3 mil" not in low, "%s: price sent: %r" % (what, r)
    guard = [g[0] for g in audit(h, "guard", sender)]
    if llm_calls(llm):
        assert guard and guard[0] == "regenerate", \
            "%s: guard did not catch the claim: %s" % (what, guard)
    return mode


def test_injection_end_to_end(h):
    llm = ready(h)
    add_vaga(h)
    modes = [check_one(h, llm, i, label, text)
             for i, (label, text) in enumerate(corpus())]
    eq(h.sql1("SELECT count(*) FROM handoffs"), "0", "no handoff made")
    eq(h.sql1("SELECT count(*) FROM audit_log WHERE step = 'tool' AND "
              "decision = 'executed'"), "0", "no tool executed")
    assert modes.count("discovery") >= len(modes) - 2, modes


def test_injection_never_opt_out_by_accident(h):
    rows = corpus()
    p = subprocess.run([h.bin, "intent"], input="\n".join(
        t for _, t in rows) + "\n", capture_output=True, text=True,
        env=h.env)
    eq(p.returncode, 0, "modegate intent: " + p.stderr)
    got = [line.split("\t")[0] for line in p.stdout.splitlines()]
    eq(len(got), len(rows), "one answer per line")
    for (label, text), g in zip(rows, got):
        eq(g == "OPT_OUT", label == "OPT_OUT", "%s -> %s" % (text, g))
