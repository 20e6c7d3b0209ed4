# test_ops.py -- the operators' commands end to end against a real
# database: flag list|get|set, takeover, release, set-mode, funnel. Each
# case checks the exit status, what the operator reads, and the rows
# (state, history, audit); one case runs the server to show that a
# takeover silences the AI and a release brings it back without the old
# history.
# SPDX-License-Identifier: MIT
import json
import subprocess

from harness import eq
from test_turn import (DOCTOR, llm_calls, ready, replies, send, settled,
                       silent_under_human)

FLAG = "conversation_mode_enabled"


def cli(h, *args):
    p = subprocess.run([h.bin] + list(args), env=h.env,
                       capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout, p.stderr


def migrated(h):
    rc, out = h.migrate()
    eq(rc, 0, "migrate: " + out)


def add_conv(h, wa_id, pnid="100"):
    return h.sql1("INSERT INTO conversations (phone_number_id, wa_id) "
                  "VALUES ('%s', '%s') RETURNING id" % (pnid, wa_id))


def test_flag_set_recorded_and_shown(h):
    migrated(h)
    rc, out, err = cli(h, "flag", "set", FLAG, "shadow", "--percent", "40",
                       "--by", "ana", "--reason", "comparar antes")
    eq(rc, 0, "flag set: " + err)
    assert "shadow" in out and "40" in out, out
    eq(h.sql("SELECT value, percent, updated_by, reason FROM feature_flags "
             "WHERE name = '%s'" % FLAG),
       [("shadow", "40", "ana", "comparar antes")], "row")
    eq(h.sql("SELECT old_value, new_value, old_percent, new_percent, "
             "changed_by, reason FROM feature_flag_changes "
             "ORDER BY id DESC LIMIT 1"),
       [("on", "shadow", "100", "40", "ana", "comparar antes")], "history")
    rc, out, _ = cli(h, "flag", "get", FLAG)
    eq(rc, 0, "flag get")
    line = [ln for ln in out.splitlines() if ln.startswith(FLAG)]
    eq(len(line), 1, "one row: " + out)
    eq(line[0].split()[:3], [FLAG, "shadow", "40"], "flag get shows it")
    rc, out, _ = cli(h, "flag", "set", FLAG, "off", "--by", "rui")
    eq(rc, 0, "flag set off")
    eq(h.sql1("SELECT value || '/' || percent FROM feature_flags"),
       "off/40", "off keeps the percent (no effect while off)")
    # After a 40 % rollout and an off, "on" means every conversation.
    rc, out, _ = cli(h, "flag", "set", FLAG, "on", "--by", "rui")
    eq(rc, 0, "flag set on")
    eq(h.sql1("SELECT value || '/' || percent FROM feature_flags"),
       "on/100", "on without --percent: 100 %")
    rc, out, _ = cli(h, "flag", "set", FLAG, "shadow", "--percent", "10")
    rc, out, _ = cli(h, "flag", "set", FLAG, "shadow")
    eq(h.sql1("SELECT value || '/' || percent FROM feature_flags"),
       "shadow/100", "shadow without --percent: 100 %")
    rc, out, _ = cli(h, "flag", "set", FLAG, "on", "--percent", "10")
    eq(h.sql1("SELECT value || '/' || percent FROM feature_flags"),
       "on/10", "--percent given: that percent")
    rc, out, _ = cli(h, "flag", "list")
    eq(rc, 0, "flag list")
    assert out.splitlines()[0].split()[:3] == ["name", "value", "percent"], out
    assert any(ln.split()[:2] == [FLAG, "on"] for ln in out.splitlines()), out


def test_flag_bad_input_exit_64(h):
    migrated(h)
    before = h.sql1("SELECT count(*) FROM feature_flag_changes")
    for args, msg in ((["set", FLAG, "maybe"], "use on, off or shadow"),
                      (["set", FLAG, "on", "--percent", "150"], "0 to 100"),
                      (["set", FLAG, "on", "--percent", "x"], "0 to 100"),
                      (["set", "no_such_flag", "on"], 'unknown flag'),
                      (["set", FLAG], "usage:"),
                      (["frobnicate"], "usage:"),
                      ([], "usage:")):
        rc, out, err = cli(h, "flag", *args)
        eq(rc, 64, "exit 64 for %r" % args)
        assert msg in err, (args, err)
    eq(h.sql1("SELECT count(*) FROM feature_flag_changes"), before,
       "nothing recorded")
    rc, _, err = cli(h, "flag", "get", "no_such_flag")
    eq(rc, 1, "get of an unknown flag fails")
    assert 'unknown flag "no_such_flag"' in err, err


def test_takeover_release_set_mode_rows(h):
    migrated(h)
    cid = add_conv(h, "5511977776666")
    h.sql("UPDATE conversations SET pending_transition = 'oferta', "
          "pending_transition_at = now() WHERE id = %s" % cid)
    rc, out, err = cli(h, "takeover", "+5511977776666", "--by", "ana",
                       "--reason", "pediu uma pessoa")
    eq(rc, 0, "takeover: " + err)
    assert "1 conversation (id %s)" % cid in out, out
    eq(h.sql("SELECT control, control_updated_by FROM conversations"),
       [("human", "ana")], "human control")
    eq(h.sql("SELECT step, decision, reason, details ->> 'by' FROM audit_log"),
       [("control", "takeover", "pediu uma pessoa", "ana")], "audited")
    rc, out, err = cli(h, "release", "5511977776666", "--by", "ana")
    eq(rc, 0, "release: " + err)
    eq(h.sql("SELECT control, pending_transition, context_since IS NOT NULL "
             "FROM conversations"), [("ai", None, "t")],
       "AI control, pending cleared, history restarts")
    eq(h.sql1("SELECT decision || '/' || (details ->> 'cleared_pending') "
              "FROM audit_log ORDER BY id DESC LIMIT 1"), "release/oferta",
       "release audited")
    rc, out, err = cli(h, "set-mode", "5511977776666", "followup",
                       "--reason", "ponte feita por telefone", "--by", "rui")
    eq(rc, 0, "set-mode: " + err)
    eq(h.sql("SELECT conversation_mode, mode_source, mode_updated_reason "
             "FROM conversations"),
       [("followup", "manual", "ponte feita por telefone")], "mode by hand")
    eq(h.sql("SELECT step, decision, details ->> 'from', details ->> 'by' "
             "FROM audit_log ORDER BY id DESC LIMIT 1"),
       [("mode", "followup", "discovery", "rui")], "set-mode audited")


def test_takeover_twice_release_twice_change_nothing(h):
    """A command that would change nothing says "already" and changes
    nothing: no audit row, no reset of the history or the pending."""
    migrated(h)
    cid = add_conv(h, "5511977776666")
    h.sql("UPDATE conversations SET pending_transition = 'oferta', "
          "pending_transition_at = now(), context_since = now() - "
          "interval '1 hour' WHERE id = %s" % cid)
    before = h.sql("SELECT control, pending_transition, "
                   "pending_transition_at, context_since FROM conversations")
    rc, out, err = cli(h, "release", "5511977776666", "--by", "ana")
    eq(rc, 0, "release of a chat the AI holds: " + err)
    assert "1 conversation (id %s) already under AI control" % cid in out, out
    assert "back under AI control" not in out, out
    eq(h.sql("SELECT control, pending_transition, pending_transition_at, "
             "context_since FROM conversations"), before, "nothing reset")
    eq(h.sql1("SELECT count(*) FROM audit_log"), "0", "no audit row")
    rc, out, err = cli(h, "takeover", "5511977776666", "--by", "ana")
    eq(rc, 0, "takeover: " + err)
    assert "now under human control" in out, out
    h.sql("INSERT INTO outbox (conversation_id, kind, payload, to_key, "
          "phone_number_id) VALUES (%s, 'text', '{}', '5511977776666', "
          "'100')" % cid)
    at = h.sql1("SELECT control_updated_at FROM conversations")
    rc, out, err = cli(h, "takeover", "5511977776666", "--by", "rui")
    eq(rc, 0, "second takeover: " + err)
    assert "1 conversation (id %s) already under human control" % cid in out, \
        out
    assert "now under human control" not in out, out
    eq(h.sql("SELECT control, control_updated_by, control_updated_at::text "
             "FROM conversations"), [("human", "ana", at)], "unchanged")
    eq(h.sql1("SELECT count(*) FROM audit_log"), "1", "one takeover audited")
    eq(h.sql1("SELECT state FROM outbox"), "pending", "no outbox row dropped")
    # The same doctor on a second number: one changes, one already.
    b = add_conv(h, "5511977776666", "200")
    rc, out, err = cli(h, "takeover", "5511977776666")
    assert "1 conversation (id %s) now under human control" % b in out, out
    assert "1 conversation (id %s) already under human control" % cid in out, \
        out


def test_pending_timeout_has_one_source(h):
    """The router's pending timeout of mode/transitions.json is what SQL
    reads (migrate and serve record it); a modegate.* setting cannot
    make them disagree."""
    import os
    import shutil
    import tempfile
    from harness import ROOT
    rules = tempfile.mkdtemp()
    try:
        for d in ("mode", "policy", "sql"):
            shutil.copytree(os.path.join(ROOT, d), os.path.join(rules, d))
        p = os.path.join(rules, "mode", "transitions.json")
        t = json.load(open(p))
        t["pending_timeout_minutes"] = 45
        json.dump(t, open(p, "w"), ensure_ascii=False)
        h.env["MODEGATE_RULES_DIR"] = rules
        migrated(h)
        h.sql("ALTER DATABASE %s SET modegate.pending_timeout_minutes = 10"
              % h.db)
        eq(h.sql1("SELECT mg_setting('pending_timeout_minutes', 30)"), "45",
           "SQL reads transitions.json's value")
        t["pending_timeout_minutes"] = 20
        json.dump(t, open(p, "w"), ensure_ascii=False)
        h.start()      # serve records it too (the sweep, at start)
        h.wait_until(lambda: h.sql1("SELECT mg_setting("
                                    "'pending_timeout_minutes', 30)") ==
                     "20", 10, "serve records the rules' value")
    finally:
        shutil.rmtree(rules)


def test_by_defaults_to_the_database_user_without_USER(h):
    migrated(h)
    env = dict(h.env)
    env.pop("USER", None)
    p = subprocess.run([h.bin, "flag", "set", FLAG, "off"], env=env,
                       capture_output=True, text=True, timeout=30)
    eq(p.returncode, 0, p.stderr)
    eq(h.sql1("SELECT updated_by FROM feature_flags"), "modegate",
       "the database user")
    env["USER"] = "ana"
    p = subprocess.run([h.bin, "flag", "set", FLAG, "on"], env=env,
                       capture_output=True, text=True, timeout=30)
    eq(h.sql1("SELECT updated_by FROM feature_flags"), "ana", "$USER")


def test_operator_bad_input(h):
    migrated(h)
    add_conv(h, "5511977776666")
    for args, rc_want, msg in (
            (["set-mode", "5511977776666", "booking"], 64, 'unknown mode'),
            (["set-mode", "5511977776666"], 64, "usage:"),
            (["takeover"], 64, "usage:"),
            (["takeover", "a", "b"], 64, "usage:"),
            (["release", "5511977776666", "--reason", "x"], 64, "usage:"),
            (["takeover", "5511900000000"], 1, "no conversation"),
            (["funnel", "--since", "ontem"], 64, "not a date"),
            (["funnel", "--until", "2025-02-30"], 64, "out of range")):
        rc, out, err = cli(h, *args)
        eq(rc, rc_want, "exit for %r" % args)
        assert msg in err, (args, err)
    eq(h.sql1("SELECT count(*) FROM audit_log"), "0", "nothing audited")
    eq(h.sql1("SELECT conversation_mode FROM conversations"), "discovery",
       "mode untouched")


def test_same_doctor_on_two_numbers(h):
    migrated(h)
    a = add_conv(h, "5511977776666", "100")
    b = add_conv(h, "5511977776666", "200")
    rc, out, _ = cli(h, "takeover", "5511977776666")
    eq(rc, 0, "takeover")
    assert "2 conversations (id %s, %s)" % (a, b) in out, out
    rc, out, _ = cli(h, "release", "5511977776666",
                     "--phone-number-id", "200")
    eq(rc, 0, "release one number")
    eq(h.sql("SELECT phone_number_id, control FROM conversations ORDER BY id"),
       [("100", "human"), ("200", "ai")], "only that number released")


def test_funnel_prints_the_table(h):
    migrated(h)
    c = add_conv(h, "5511977776666")
    h.sql("INSERT INTO vagas (id, hospital, especialidade, regiao, turno, "
          "data, responsavel_nome, responsavel_contato) VALUES (50, 'H', "
          "'Pediatria', 'Sul', 'noturno', '2025-03-20', 'Mariana', 'x')")
    h.sql("INSERT INTO funnel_events (conversation_id, vaga_id, status, "
          "created_at) VALUES (%s, NULL, 'interesse_confirmado', "
          "'2025-03-10 10:00+00'), (%s, 50, 'ponte_feita', "
          "'2025-03-10 10:06+00')" % (c, c))
    rc, out, err = cli(h, "funnel", "--since", "2025-03-01",
                       "--until", "2025-03-31")
    eq(rc, 0, "funnel: " + err)
    lines = out.splitlines()
    eq(lines[0].split(), ["period", "metric", "value", "target", "met", "n"],
       "header")
    rows = [ln.split() for ln in lines[2:]]
    eq(len(rows), 10, "total + one day, five metrics each")
    eq(rows[0], ["total", "bridge_rate", "100.0", "%", ">", "60", "%",
                 "yes", "1/1"], "bridge rate beside its target")
    eq(rows[2][:5], ["total", "time_to_bridge_median", "6.0", "min", "<"],
       "time to bridge in minutes")
    assert all(r[0] in ("total", "2025-03-10") for r in rows), out
    starts = {ln.index("metric") for ln in lines[:1]}
    assert all(len(ln) > max(starts) and ln[max(starts) - 1] == " "
               for ln in lines[2:]), "aligned columns:\n" + out
    rc, out, _ = cli(h, "funnel", "--since", "2025-04-01")
    eq(rc, 0, "funnel later")
    eq([ln.split()[0] for ln in out.splitlines()[2:]], ["total"] * 5,
       "no day after the range")


def test_takeover_silences_release_restores(h):
    llm = ready(h)
    llm.script([{"text": "Oi! Qual sua especialidade?"}])
    send(h, "wamid.op1", "Oi, boa tarde")
    eq(settled(h, "wamid.op1"), "done", "first turn")
    eq(len(replies(h)), 1, "the AI answered")
    rc, out, err = cli(h, "takeover", DOCTOR, "--by", "ana")
    eq(rc, 0, "takeover: " + err)
    silent_under_human(h, llm, "wamid.op2", "Segredo: só falo com a Ana")
    eq(len(replies(h)), 1, "no AI reply")
    rc, out, err = cli(h, "release", DOCTOR, "--by", "ana")
    eq(rc, 0, "release: " + err)
    llm.script([{"text": "Oi de novo! Posso ajudar?"}])
    send(h, "wamid.op3", "Voltei, tem vaga de pediatria?")
    eq(settled(h, "wamid.op3"), "done", "turn after release")
    calls = llm_calls(llm)
    eq(len(calls), 1, "the AI answers again")
    msgs = json.dumps(calls[0]["body"].get("messages"), ensure_ascii=False)
    assert "Voltei" in msgs, msgs
    assert "Segredo" not in msgs and "Qual sua especialidade" not in msgs, \
        "stale context in the prompt: " + msgs
    eq(len(replies(h)), 2, "a second reply")


def test_takeover_during_a_turn_withholds_its_reply(h):
    """A human takes the chat while the LLM is still answering: the turn
    commits (the message is done, audited) but its AI reply is never
    queued nor posted."""
    llm = ready(h)
    llm.script([{"text": "Temos plantões, quer ver?", "delay": 2}])
    send(h, "wamid.opr1", "Tem plantao de clinica geral?")
    h.wait_until(lambda: len(llm_calls(llm)) == 1, 10, "the LLM is called")
    rc, out, err = cli(h, "takeover", DOCTOR, "--by", "ana")
    eq(rc, 0, "takeover: " + err)
    eq(settled(h, "wamid.opr1"), "done", "the turn commits")
    eq(replies(h), [], "no AI reply after the takeover")
    eq(h.sql1("SELECT count(*) FROM audit_log WHERE step = 'control' AND "
              "decision = 'human' AND reason = 'reply_withheld'"), "1",
       "the withheld reply is audited")
    eq(h.sql1("SELECT count(*) FROM outbox WHERE kind = 'text'"), "0",
       "nothing in the outbox for the doctor")
