# test_review.py -- the review loop of the intent detector end to end
# against a real database: `modegate review list` shows the messages the
# detector was unsure of (low confidence, or rules and model disagreeing)
# with the conversation's mode and the decision taken; `review label`
# appends one, anonymised, to the corpus and takes it off the list;
# `modegate train` then learns from that corpus.
# SPDX-License-Identifier: MIT
import json
import os
import shutil
import subprocess
import tempfile

from harness import eq

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def cli(h, *args, cwd=None):
    p = subprocess.run([h.bin] + list(args), env=h.env, cwd=cwd,
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def q(s):
    return "'" + s.replace("'", "''") + "'"


def message(h, conv, n, text, details, router=None, profile="Carlos Lima"):
    """An inbound message of conv with its policy audit row (and router
    row): what a turn leaves behind."""
    raw = {"from": "5511999990000", "id": "wamid.r%d" % n, "type": "text",
           "text": {"body": text}}
    iid = h.sql1(
        "INSERT INTO inbox (wamid, phone_number_id, sender_key, wa_id, "
        "profile_name, msg_type, raw, conversation_id, state) VALUES "
        "('wamid.r%d', '100', '5511999990000', '5511999990000', %s, "
        "'text', %s::jsonb, %s, 'done') RETURNING id"
        % (n, q(profile), q(json.dumps(raw)), conv))
    h.sql("INSERT INTO audit_log (conversation_id, inbox_id, step, decision, "
          "reason, details) VALUES (%s, %s, 'policy', 'ALLOW', 'allow', "
          "%s::jsonb)" % (conv, iid, q(json.dumps(details))))
    if router:
        h.sql("INSERT INTO audit_log (conversation_id, inbox_id, step, "
              "decision, reason, details) VALUES (%s, %s, 'router', %s, "
              "'x', %s::jsonb)" % (conv, iid, q(router[0]),
                                   q(json.dumps({"from": router[1]}))))
    return iid


def setup(h):
    rc, out = h.migrate()
    eq(rc, 0, "migrate: " + out)
    conv = h.sql1("INSERT INTO conversations (phone_number_id, wa_id, "
                  "conversation_mode) VALUES ('100', '5511999990000', "
                  "'oferta') RETURNING id")
    # Julia's message before the doctor's answers.
    h.sql("INSERT INTO outbox (conversation_id, kind, payload, to_key, "
          "phone_number_id, state, created_at) VALUES (%s, 'text', "
          "'{\"text\": {\"body\": \"Oi Dr. Carlos! Posso te mandar as vagas "
          "de sábado?\"}}', '5511999990000', '100', 'sent', "
          "now() - interval '1 hour')" % conv)
    unsure = message(h, conv, 1, "pode ser, me liga no 11 98765-4321 ou "
                     "carlos.lima@gmail.com, CPF 123.456.789-00",
                     {"intent": "CONFIRMACAO", "confidence": 0.41},
                     router=("CONFIRM", "discovery"))
    disagree = message(h, conv, 2, "sou o Dr. Carlos Lima, CRM 123456, "
                       "chega disso",
                       {"intent": "OPT_OUT", "confidence": 0.93,
                        "rule_intent": "NEUTRO", "model_intent": "OPT_OUT"})
    sure = message(h, conv, 3, "quero vagas de pediatria",
                   {"intent": "INTERESSE_VAGA", "confidence": 0.98,
                    "rule_intent": "INTERESSE_VAGA",
                    "model_intent": "INTERESSE_VAGA"})
    return conv, unsure, disagree, sure


def listed_ids(out):
    return [ln.split()[0] for ln in out.splitlines()[2:] if ln.strip()]


def test_review_list_shows_the_unsure_ones(h):
    _, unsure, disagree, sure = setup(h)
    rc, out, err = cli(h, "review", "list")
    eq(rc, 0, "review list: " + err)
    eq(listed_ids(out), [str(unsure), str(disagree)],
       "low confidence and disagreement, not the sure one:\n" + out)
    row = [ln for ln in out.splitlines() if ln.split()[0] == str(unsure)][0]
    assert "discovery" in row and "CONFIRM" in row and "0.41" in row, row
    row = [ln for ln in out.splitlines()
           if ln.split()[0] == str(disagree)][0]
    assert "oferta" in row and "ALLOW" in row and "NEUTRO" in row, row
    rc, out, _ = cli(h, "review", "list", "--max-confidence", "0.99")
    eq(listed_ids(out), [str(unsure), str(disagree), str(sure)],
       "a higher bar lists the 0.98 one too")
    rc, out, _ = cli(h, "review", "list", "--since", "2999-01-01")
    eq(listed_ids(out), [], "nothing since the future")
    for args in (["--since", "ontem"], ["--max-confidence", "2"], ["x"]):
        rc, _, err = cli(h, "review", "list", *args)
        eq(rc, 64, "usage error for %r" % args)


def test_review_label_appends_anonymised_and_trains(h):
    _, unsure, disagree, _ = setup(h)
    corpus = tempfile.mkdtemp(prefix="mg-review-")
    try:
        os.makedirs(os.path.join(corpus, "messages"))
        rc, out, err = cli(h, "review", "label", str(unsure), "CONFIRMACAO",
                           "--corpus", corpus, "--by", "ana")
        eq(rc, 0, "label: " + err)
        rc, out, err = cli(h, "review", "label", str(disagree), "OPT_OUT",
                           "--corpus", corpus)
        eq(rc, 0, "label 2: " + err)
        lines = open(os.path.join(corpus, "messages",
                                  "review.tsv")).read().splitlines()
        eq(lines[0], "# review inbox=%s detected=CONFIRMACAO by=ana" % unsure,
           "source line")
        lab, text, ctx = lines[1].split("\t")
        eq(lab, "CONFIRMACAO", "label")
        eq(text, "pode ser, me liga no 00 00000-0000 ou [email], "
           "CPF 000.000.000-00", "numbers and e-mail masked")
        eq(ctx, "Oi Dr. [nome]! Posso te mandar as vagas de sábado?",
           "Julia's message before it, the name masked")
        lab, text, ctx = lines[3].split("\t")
        eq((lab, text), ("OPT_OUT", "sou o Dr. [nome] [nome], CRM 000000, "
                         "chega disso"), "name and CRM masked")
        for secret in ("98765", "carlos.lima", "123456", "Lima"):
            assert secret not in "\n".join(lines), secret
        eq(h.sql("SELECT inbox_id, intent, detected, labelled_by FROM "
                 "review_labels ORDER BY inbox_id"),
           [(str(unsure), "CONFIRMACAO", "CONFIRMACAO", "ana"),
            (str(disagree), "OPT_OUT", "OPT_OUT", "operator")], "recorded")
        rc, out, _ = cli(h, "review", "list")
        eq(listed_ids(out), [], "labelled messages leave the list")
        rc, _, err = cli(h, "review", "label", str(unsure), "RECUSA",
                         "--corpus", corpus)
        eq(rc, 1, "labelling twice fails")
        assert "already labelled" in err, err
        eq(len(open(os.path.join(corpus, "messages",
                                 "review.tsv")).read().splitlines()), 4,
           "nothing appended the second time")
        rc, _, err = cli(h, "review", "label", "999999", "RECUSA",
                         "--corpus", corpus)
        eq(rc, 1, "unknown id")
        assert "no message with id 999999" in err, err
        rc, _, err = cli(h, "review", "label", str(unsure), "TALVEZ")
        eq(rc, 64, "unknown intent is a usage error")
        # The labelled corpus trains: train and review authors.
        with open(os.path.join(corpus, "SPLITS"), "w") as f:
            f.write("train a1\ntrain review\n")
        shutil.copy(os.path.join(ROOT, "tests", "corpus", "messages",
                                 "a1.tsv"),
                    os.path.join(corpus, "messages", "a1.tsv"))
        rules = os.path.join(corpus, "rules")
        shutil.copytree(os.path.join(ROOT, "mode"),
                        os.path.join(rules, "mode"))
        shutil.copytree(os.path.join(ROOT, "policy"),
                        os.path.join(rules, "policy"))
        env = dict(h.env, MODEGATE_RULES_DIR=rules)
        p = subprocess.run([h.bin, "train", "--corpus", corpus, "--out",
                            rules], env=env, capture_output=True, text=True,
                           timeout=120)
        eq(p.returncode, 0, "train: " + p.stderr)
        assert "intent: %d train" % (
            sum(1 for ln in open(os.path.join(corpus, "messages", "a1.tsv")))
            + 2) in p.stderr, p.stderr
    finally:
        shutil.rmtree(corpus, ignore_errors=True)
