#!/usr/bin/env python3
"""turn_bench.py -- helpers for the turn benchmark (tests/bench/run.sh).

  turn_bench.py payloads N SECRET OUT.tsv [FIRST]
                                            N signed webhooks, one doctor each
                                            (doctors FIRST.., default 0)
  turn_bench.py step SENT.log REPLIES.log FIRST RATE SECS [DRAIN]
                                            one step of the open-loop step
                                            test: sent (rateload -l) against
                                            the replies fakepeer logged
  turn_bench.py steps METRICS.txt           mean of each turn step (/metrics)

Doctor i has the number 5511900000000 + i; payload line i is doctor
FIRST + i, so a line of rateload's -l log matches the reply whose "to" is
that number in tests/bench/fakepeer's log.
Standard library only.
"""
import hashlib
import hmac
import json
import sys
import time

BASE = 5511900000000
TEXTS = ["oi, tudo bem?", "tem plantao de clinica geral na zona sul?",
         "sou pediatra, atendo no abc", "quero saber de vagas!",
         "qual o valor do plantao noturno?", "bom dia dra"]


def payloads(n, secret, out, first=0):
    now = int(time.time())
    with open(out, "w") as f:
        for i in range(first, first + n):
            doctor = str(BASE + i)
            body = json.dumps({
                "object": "whatsapp_business_account", "entry": [{
                    "id": "1", "changes": [{"field": "messages", "value": {
                        "messaging_product": "whatsapp",
                        "metadata": {"display_phone_number": "5511900000000",
                                     "phone_number_id": "100"},
                        "contacts": [{"profile": {"name": "Dr %d" % i},
                                      "wa_id": doctor}],
                        "messages": [{
                            "from": doctor, "id": "wamid.turn-%d-%d" % (now, i),
                            "timestamp": str(now), "type": "text",
                            "text": {"body": TEXTS[i % len(TEXTS)]}}]}}]}]},
                separators=(",", ":"))
            sig = hmac.new(secret.encode(), body.encode(),
                           hashlib.sha256).hexdigest()
            f.write("%s\t%s\n" % (sig, body))


def pct(xs, p):
    return xs[min(len(xs) - 1, int(len(xs) * p))] if xs else float("nan")


def step(sent_log, replies_log, first, rate, secs, drain=1.0):
    """One step: latency from each webhook's scheduled time to its reply's
    arrival; sustained when every reply came within the step + DRAIN s, the
    p99 is under 100 ms and the backlog did not grow. The backlog at t is
    the webhooks scheduled by t minus the replies arrived by t (sampled
    every 100 ms); it grew when its mean over the step's last quarter
    exceeds its mean over the first quarter by more than 50 ms of
    arrivals (rate / 20)."""
    sent = {}
    with open(sent_log) as f:
        for line in f:
            i, t = line.split("\t")
            sent.setdefault(first + int(i), float(t))
    if not sent:
        print("@@ rate=%d sent=0 pass=0" % rate)
        return
    t0 = min(sent.values())
    end = t0 + secs
    got, dup = {}, 0
    with open(replies_log) as f:
        for line in f:
            to, kind, t = line.rstrip("\n").split("\t")
            i = int(to.lstrip("+")) - BASE
            if kind != "text" or i not in sent:
                continue
            if i in got:
                dup += 1
            got[i] = min(got.get(i, float("inf")), float(t))
    inf = float("inf")
    lat = sorted((got[i] - sent[i]) * 1e3 if got.get(i, inf) <= end + drain
                 else inf for i in sent)
    late = sum(1 for x in lat if x == inf)
    sched = sorted(sent.values())
    arr = sorted(got.values())
    samples, a, b = [], 0, 0
    for k in range(int(secs * 10) + 1):
        t = t0 + k / 10.0
        while a < len(sched) and sched[a] <= t:
            a += 1
        while b < len(arr) and arr[b] <= t:
            b += 1
        samples.append(a - b)
    q = max(1, len(samples) // 4)
    first_q = sum(samples[:q]) / q
    last_q = sum(samples[-q:]) / q
    growing = last_q - first_q > rate / 20.0
    p50, p99 = pct(lat, 0.5), pct(lat, 0.99)
    ok = late == 0 and p99 < 100 and not growing
    print("@@ rate=%d sent=%d replied=%d late=%d duplicates=%d p50_ms=%.1f "
          "p99_ms=%.1f max_ms=%.1f backlog_first=%.0f backlog_last=%.0f "
          "growing=%d pass=%d" % (rate, len(sent), len(got), late, dup, p50,
                                  p99, lat[-1], first_q, last_q, growing,
                                  ok))


def steps(path):
    """modegate_turn_step_seconds_{sum,count}{step="..."} -> mean ms."""
    sums, counts = {}, {}
    with open(path) as f:
        for line in f:
            for kind, d in (("_sum{", sums), ("_count{", counts)):
                head = "modegate_turn_step_seconds" + kind
                if line.startswith(head):
                    step = line.split('"')[1]
                    d[step] = float(line.rsplit(" ", 1)[1])
    print(" ".join("%s=%.1f" % (k, 1e3 * sums[k] / counts[k])
                   for k in sums if counts.get(k)))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "payloads":
        payloads(int(sys.argv[2]), sys.argv[3], sys.argv[4],
                 int(sys.argv[5]) if len(sys.argv) > 5 else 0)
    elif cmd == "step":
        step(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]),
             float(sys.argv[6]),
             float(sys.argv[7]) if len(sys.argv) > 7 else 1.0)
    elif cmd == "steps":
        steps(sys.argv[2])
