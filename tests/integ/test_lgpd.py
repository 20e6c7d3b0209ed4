# test_lgpd.py -- the doctor's rights end to end (README "Personal data
# (LGPD)"): a doctor talks to Julia through real signed webhooks and the
# worker (offline LLM), with a delivery status, a preferences event and a
# signed body that is not a webhook; `modegate export` prints it all;
# `modegate forget` is refused while a turn holds the chat (exit 75) and
# then erases it: a full pg_dump of the database holds neither the number
# (as digits, inside wamids as WhatsApp encodes it, as bytea) nor any of
# the doctor's texts, while another doctor's data and every count stay.
# SPDX-License-Identifier: MIT
import base64
import json
import os
import subprocess
import time

from harness import ROOT, eq
from test_turn import llm_calls, message, ready, settled

NUM = "5521987651234"
OTHER = "5531912345678"
TEXTS = ["Oi, boa tarde! Sou a Dra. Helena Prado, pediatra",
         "Vc tem plantão de clínica médica na zona sul? Moro no Jabaquara",
         "Sim, tenho CRM ativo em SP, CRM 778899",
         "Prefiro noturno na zona sul. Quais plantões vc tem?"]
OTHER_TEXT = "Bom dia, sou o Dr. Otavio Quaresma"


def wamid(num):
    """A message id shaped as WhatsApp makes them: base64 of a record
    that holds the sender's number (wamid.HBgN<number>...)."""
    rec = b"\x1c\x18" + bytes([len(num)]) + num.encode() + \
        b"\x15\x02\x00\x12\x18\x14" + os.urandom(10).hex().upper().encode()
    return "wamid." + base64.b64encode(rec).decode()


def encodings(num):
    """The number as digits, with '+', as bytea hex (how pg_dump writes
    bytea) and as base64 at each of the three alignments (inside wamids)."""
    out = [num, "+" + num, num.encode().hex()]
    for pad in range(3):
        b = base64.b64encode(b"\x00" * pad + num.encode()).decode()
        out.append(b[4 if pad else 0:-4])
    return out


def text_forms(t):
    return [t, json.dumps(t)[1:-1], json.dumps(t, ensure_ascii=False)[1:-1]]


def pg_dump(h):
    p = subprocess.run(["pg_dump", "--no-owner", h.env["DATABASE_URL"]],
                       capture_output=True, text=True, timeout=60)
    eq(p.returncode, 0, "pg_dump: " + p.stderr)
    return p.stdout


def cli(h, *args):
    p = subprocess.run([h.bin] + list(args), env=h.env,
                       capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout, p.stderr


def seed_doctor(h):
    """Four turns of NUM and one of OTHER through signed webhooks; a
    delivery status naming NUM; a preferences event with NUM; a signed
    body that is not a webhook, holding NUM."""
    subprocess.run(["psql", "-q", "-X", "-v", "ON_ERROR_STOP=1",
                    h.env["DATABASE_URL"], "-f",
                    os.path.join(ROOT, "sql", "seed_demo.sql")],
                   check=True, capture_output=True)
    for t in TEXTS:
        w = wamid(NUM)
        body = message(w, t, sender=NUM)
        body["entry"][0]["changes"][0]["value"]["contacts"][0]["profile"][
            "name"] = "Dra. Helena Prado"
        st, _ = h.post_webhook(body)
        eq(st, 200, "webhook")
        eq(settled(h, w), "done", "turn of " + t)
    w = wamid(OTHER)
    st, _ = h.post_webhook(message(w, OTHER_TEXT, sender=OTHER))
    eq(st, 200, "webhook of the other doctor")
    settled(h, w)
    meta = {"display_phone_number": "5511900000000",
            "phone_number_id": "100"}
    status = {"object": "whatsapp_business_account", "entry": [{
        "id": "1", "changes": [{"field": "messages", "value": {
            "messaging_product": "whatsapp", "metadata": meta,
            "statuses": [{"id": wamid(NUM), "status": "delivered",
                          "timestamp": str(int(time.time())),
                          "recipient_id": NUM}]}}]}]}
    prefs = {"object": "whatsapp_business_account", "entry": [{
        "id": "1", "changes": [{"field": "user_preferences", "value": {
            "messaging_product": "whatsapp", "metadata": meta,
            "contacts": [{"wa_id": NUM,
                          "profile": {"name": "Dra. Helena Prado"}}],
            "user_preferences": [{"wa_id": NUM, "category":
                                  "marketing_messages", "value": "stop",
                                  "detail": "User requested to stop",
                                  "timestamp": int(time.time())}]}}]}]}
    for b in (status, prefs):
        st, _ = h.post_webhook(b)
        eq(st, 200, "status / preferences webhook")
    st, _ = h.post_webhook('{"not": "a webhook", "from": "%s"' % NUM)
    eq(st, 400, "a signed body that is not JSON")
    h.wait_until(lambda: h.sql1(
        "SELECT count(*) FROM webhook_failures") == "1" and h.sql1(
        "SELECT count(*) FROM message_statuses") == "1" and h.sql1(
        "SELECT count(*) FROM outbox WHERE state = 'pending'") == "0",
        10, "status, event and failure stored; replies recorded")


def test_forget_leaves_nothing_in_pg_dump(h):
    rc, out = h.migrate()
    eq(rc, 0, "migrate: " + out)
    h.start(MODEGATE_COALESCE_MS="0")
    seed_doctor(h)

    before = pg_dump(h)
    enc = encodings(NUM)
    for e in enc[:3]:
        assert e in before, "the dump holds %r before forget" % e
    assert any(e in before for e in enc[3:]), "and a wamid holds it"
    for t in TEXTS:
        assert t in before, "the dump holds %r before forget" % t
    counts = ("SELECT (SELECT count(DISTINCT wa_id) FROM conversations), "
              "(SELECT count(*) FROM inbox), (SELECT count(*) FROM outbox), "
              "(SELECT count(*) FROM funnel_events), "
              "(SELECT count(*) FROM audit_log WHERE step <> 'lgpd')")
    n0 = h.sql(counts)

    # Access: everything stored, as JSON.
    rc, out, err = cli(h, "export", NUM, "--by", "dpo")
    eq(rc, 0, "export: " + err)
    doc = json.loads(out)
    eq(doc["wa_id"], NUM, "export names the doctor")
    msgs = doc["conversations"][0]["messages"]
    eq([m["text"] for m in msgs], TEXTS, "export has every message's text")
    assert doc["conversations"][0]["replies"], "and Julia's replies"
    assert doc["conversations"][0]["audit"], "and the audit"
    eq(doc["conversations"][0]["conversation"]["profile_name"],
       "Dra. Helena Prado", "and the name")
    eq(len(doc["delivery_statuses"]), 1, "and the delivery status")
    eq(h.sql1("SELECT count(*) FROM audit_log WHERE step = 'lgpd' AND "
              "decision = 'export' AND details ->> 'by' = 'dpo'"), "1",
       "export is audited")

    rc, out, err = cli(h, "forget", NUM, "--by", "dpo", "--reason",
                       "pedido do titular")
    eq(rc, 0, "forget: " + err)
    assert "1 conversation(s), 4 message(s)" in out and "anon:" in out, out
    pseud = out.split()[-1]

    after = pg_dump(h)
    for e in encodings(NUM):
        assert e not in after, "the dump still holds %r after forget" % e
    for t in TEXTS:
        for f in text_forms(t):
            assert f not in after, "the dump still holds %r" % f
    for word in ("Helena Prado", "Jabaquara", "778899"):
        assert word not in after, "the dump still holds %r" % word
    # Not vacuous: the other doctor is all there.
    assert OTHER in after and OTHER_TEXT in after, "the other doctor stays"
    eq(h.sql(counts), n0, "distinct doctors, messages, replies, funnel "
       "and audit rows: the same counts")
    eq(h.sql1("SELECT wa_id FROM conversations WHERE wa_id LIKE 'anon:%'"),
       pseud, "the conversation carries the pseudonym")
    eq(h.sql("SELECT decision, reason, details ->> 'by' FROM audit_log "
             "WHERE step = 'lgpd' AND decision = 'forget'"),
       [("forget", "pedido do titular", "dpo")], "forget is audited")

    rc, _, err = cli(h, "forget", NUM)
    eq(rc, 1, "a second forget finds nothing")
    assert "nothing is stored" in err, err
    rc, _, err = cli(h, "export", NUM)
    eq(rc, 1, "nor does export")
    rc, _, err = cli(h, "forget", "")
    eq(rc, 64, "an empty WA_ID is bad input")

    # The doctor writes again: a new conversation, answered as usual.
    w = wamid(NUM)
    st, _ = h.post_webhook(message(w, "Oi de novo", sender=NUM))
    eq(st, 200, "webhook after forget")
    eq(settled(h, w), "done", "answered")


def test_forget_refused_while_a_turn_holds_the_chat(h):
    llm = ready(h)
    llm.script([{"text": "Oi!"}, {"text": "Oi de novo!", "delay": 3}])
    w1 = wamid(NUM)
    st, _ = h.post_webhook(message(w1, TEXTS[0], sender=NUM))
    eq(st, 200, "webhook")
    settled(h, w1)
    w2 = wamid(NUM)
    st, _ = h.post_webhook(message(w2, TEXTS[1], sender=NUM))
    eq(st, 200, "webhook")
    h.wait_until(lambda: len(llm_calls(llm)) == 2, 10, "the LLM is asked")
    rc, out, err = cli(h, "forget", NUM)
    eq(rc, 75, "forget during the turn: exit 75")
    assert "in flight" in err and "nothing was changed" in err, err
    eq(h.sql1("SELECT count(*) FROM conversations WHERE wa_id = '%s'" % NUM),
       "1", "nothing changed")
    eq(settled(h, w2), "done", "the turn ends as usual")
    rc, out, err = cli(h, "forget", NUM)
    eq(rc, 0, "forget once the turn ended: " + err)
    eq(h.sql1("SELECT count(*) FROM inbox WHERE wa_id = '%s' OR "
              "raw::text LIKE '%%Helena%%'" % NUM), "0", "erased")


def test_sweep_redacts_what_is_older_than_retain_days(h):
    """MODEGATE_RETAIN_DAYS end to end: the serve's own sweep redacts a
    year-old conversation (rows as the turn writes them, dated back) and
    leaves today's turn alone."""
    rc, out = h.migrate()
    eq(rc, 0, "migrate: " + out)
    cid = h.sql1("INSERT INTO conversations (phone_number_id, wa_id, "
                 "profile_name, last_inbound_at) VALUES ('100', '%s', "
                 "'Dr. Otavio Quaresma', now() - interval '400 days') "
                 "RETURNING id" % OTHER)
    h.sql("INSERT INTO inbox (wamid, phone_number_id, sender_key, wa_id, "
          "profile_name, msg_type, raw, state, conversation_id, received_at)"
          " VALUES ('wamid.velha', '100', '%s', '%s', 'Dr. Otavio Quaresma',"
          " 'text', '{\"id\": \"wamid.velha\", \"type\": \"text\", \"text\":"
          " {\"body\": \"%s\"}}', 'done', %s, now() - interval '400 days')"
          % (OTHER, OTHER, OTHER_TEXT, cid))
    h.sql("INSERT INTO audit_log (conversation_id, step, decision, reason, "
          "details, created_at) VALUES (%s, 'llm', 'ok', 'end_turn', "
          "'{\"input_tokens\": 9, \"prompt\": {\"tools\": [], \"messages\": "
          "[{\"role\": \"user\", \"text\": \"%s\"}]}}', now() - interval "
          "'400 days')" % (cid, OTHER_TEXT))
    h.start(MODEGATE_COALESCE_MS="0", MODEGATE_RETAIN_DAYS="365",
            MODEGATE_SWEEP_S="1")
    w = wamid(NUM)
    st, _ = h.post_webhook(message(w, TEXTS[0], sender=NUM))
    eq(st, 200, "webhook")
    eq(settled(h, w), "done", "today's turn")
    row = h.wait_until(lambda: h.sql(
        "SELECT reason, details ->> 'inbox', details ->> 'audit_log', "
        "details ->> 'conversations' FROM audit_log "
        "WHERE step = 'retention'"), 10, "the sweep's retention pass")
    eq(row, [("MODEGATE_RETAIN_DAYS=365", "1", "1", "1")],
       "one pass, audited with what it redacted and why")
    eq(h.sql("SELECT mg_inbound_text(msg_type, raw), profile_name, state "
             "FROM inbox WHERE wamid = 'wamid.velha'"),
       [("[apagado]", None, "done")], "the old message's text and name are gone")
    eq(h.sql("SELECT details ->> 'input_tokens', details -> 'prompt' ? "
             "'messages', decision FROM audit_log WHERE step = 'llm' AND "
             "conversation_id = %s" % cid), [("9", "f", "ok")],
       "the old prompt's transcript is gone, its figures stay")
    eq(h.sql1("SELECT profile_name IS NULL FROM conversations "
              "WHERE id = %s" % cid), "t", "the silent doctor's name is gone")
    eq(h.sql("SELECT mg_inbound_text(msg_type, raw), profile_name FROM inbox "
             "WHERE wamid = '%s'" % w), [(TEXTS[0], "Dra. Ana")],
       "today's message is untouched")
    assert h.sql1("SELECT count(*) FROM audit_log WHERE step = 'llm' AND "
                  "details -> 'prompt' ? 'messages'") == "1", \
        "today's prompt is untouched"
    h.wait_until(lambda: "retention redacted inbox=1" in h.log(), 5,
                 "the pass is logged")
    time.sleep(1.5)
    eq(h.sql1("SELECT count(*) FROM audit_log WHERE step = 'retention'"),
       "1", "later passes find nothing more and audit nothing")
