# test_abuse.py -- abuse limits: a flood from one number does not become a
# flood of LLM calls (per-sender turn limit, sql/0008), and the HTTP front
# door bounds idle and slow connections, header sizes and the number of
# connections while normal webhooks keep getting 200.
# SPDX-License-Identifier: MIT
import json
import time

from harness import eq
from test_turn import DOCTOR, audit, llm_calls, message, ready, send

OTHER = "5511977776666"


def llm_turns(h, sender):
    return len(audit(h, "llm", sender))


def test_flood_from_one_number_is_rate_limited(h):
    turns, window = 3, 4
    llm = ready(h, MODEGATE_COALESCE_MS="50",
                MODEGATE_SENDER_TURNS=str(turns),
                MODEGATE_SENDER_WINDOW_S=str(window))
    h.wait_until(lambda: h.get("/readyz")[0] == 200, 10, "ready")
    t0 = time.time()
    for i in range(60):
        send(h, "wamid.flood%02d" % i, "msg %02d" % i)
        if i % 20 == 10:
            send(h, "wamid.other%d" % i, "oi, sou outro medico",
                 sender=OTHER)
        time.sleep(0.08)
    flood_s = time.time() - t0
    q = ("SELECT count(*) FROM inbox WHERE state IN ('done', 'skipped', "
         "'dead')")
    h.wait_until(lambda: h.sql1(q) == "63", 60, "every message settled")
    elapsed = time.time() - t0
    eq(h.sql1("SELECT count(*) FROM inbox i JOIN conversations c ON "
              "c.id = i.conversation_id WHERE c.wa_id = '%s' AND "
              "i.state = 'done'" % DOCTOR), "60",
       "all 60 flood messages stored and answered (none lost)")
    n = llm_turns(h, DOCTOR)
    bound = turns * (int(elapsed // window) + 1)
    assert 1 <= n <= bound, "flood: %d LLM turns in %.1f s (limit %d per " \
        "%d s: at most %d)" % (n, elapsed, turns, window, bound)
    eq(len(llm_calls(llm)), n + llm_turns(h, OTHER),
       "every LLM request is one audited turn")
    rl = audit(h, "worker", DOCTOR)
    held = sum(json.loads(d)["held"] for dec, _, d in rl
               if dec == "rate_limited")
    assert held > 0, "rate_limited audited: %r" % (rl,)
    eq(llm_turns(h, OTHER), 3, "the other sender: one turn per message")
    eq([r for r in audit(h, "worker", OTHER) if r[0] == "rate_limited"], [],
       "the other sender is never rate limited")
    print("# flood: 60 messages in %.1f s -> %d LLM turns (bound %d), "
          "%d held, settled after %.1f s" % (flood_s, n, bound, held,
                                              elapsed))
