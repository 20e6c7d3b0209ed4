#!/usr/bin/env python3
# crash.py -- `make test-crash`: kill -9 modegate at random moments under a
# steady load of unique signed webhooks, restart it each time, then account
# for every message from SQL and the fake peers' recorded requests.
#
#   python3 tests/crash/crash.py [--kills 20] [--secs 60] [--rate 40]
#                                [--convs 150] [--seed N] [--no-statuses]
#
# One throwaway PostgreSQL cluster, one real `modegate serve` (restarted
# after each kill), the fake LLM in --echo mode (each reply names the
# messages it answers and the LLM request that wrote it) and the fake Graph
# API, both with a little latency so that kills land inside LLM calls and
# posts. The load (tests/integ/load.py) sends each doctor's messages in
# order and retries every non-200 like Meta does, so every message is
# answered 200 in the end. Then, for every message answered 200:
#   - its inbox row is 'done' and it was processed exactly once (one policy
#     audit row: a turn redone after a kill left nothing behind);
#   - its turn has exactly one reply, naming exactly the turn's messages,
#     and replies follow the doctor's order (outbox ids);
#   - every reply reached the fake Graph API, in order per doctor;
#   - the fake Graph API posts signed status webhooks back (sent,
#     delivered, read, in shuffled order, 50 ms after each answer, retried
#     while modegate is down), echoing biz_opaque_callback_data: a reply
#     whose post was cut by a kill is settled by its status and never
#     posted again (sql/functions/40_send.sql), so there must be no duplicate post at all;
#   - with --no-statuses (no status webhook ever) a cut post is posted
#     again after MODEGATE_SEND_LEASE_S + MODEGATE_SEND_RECONCILE_S: each
#     duplicate must be explained by a kill -9 between its two posts, and
#     the duplicates must not outnumber the reposts modegate counted
#     (send_reconcile_counts, modegate_send_reconcile_total);
#   - each reply's LLM request saw the previous reply in its transcript
#     (turns of one conversation never overlapped).
# Exits 1 on any loss, double processing, disorder or unexplained duplicate.
# SPDX-License-Identifier: MIT
import argparse
import os
import random
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integ"))
import harness  # noqa: E402
import load  # noqa: E402


def env_for(llm, graph, reconcile_s):
    return {"LLM_PROVIDER": "anthropic", "LLM_BASE_URL": llm.url,
            "LLM_API_KEY": "crash-key", "LLM_MODEL": "crash-model",
            "LLM_TIMEOUT": "10",
            "WHATSAPP_TOKEN": "crash-token",
            "WHATSAPP_API_BASE": graph.url + "/v25.0",
            # short leases: a killed process's turns and posts are retaken
            # within seconds (a turn renews its lease every 2 s; a post
            # times out after 4 s, the answer is recorded at once)
            "MODEGATE_LEASE_S": "3", "MODEGATE_SEND_LEASE_S": "5",
            # a cut post waits 10 s more for its status before a repost
            "MODEGATE_SEND_RECONCILE_S": str(reconcile_s),
            "MODEGATE_COALESCE_MS": "200",
            "MODEGATE_SEND_RETRY_BASE_MS": "200",
            "MODEGATE_LOG_LEVEL": "warn"}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--secs", type=float, default=60)
    ap.add_argument("--rate", type=float, default=40)
    ap.add_argument("--convs", type=int, default=150)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--no-statuses", action="store_true",
                    help="the fake Graph API posts no status webhooks")
    ap.add_argument("--reconcile", type=int, default=10,
                    help="MODEGATE_SEND_RECONCILE_S (default 10)")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else int(time.time())
    rng = random.Random(seed)
    t0 = time.time()
    cluster = harness.Cluster()
    h = harness.Harness(cluster, "crash")
    try:
        rc, out = h.migrate()
        if rc != 0:
            print("migrate failed: " + out)
            return 1
        llm = h.fake("llm", "--echo", "--slim", "--delay", "0.05")
        graph = h.fake("graph", "--delay", "0.03")
        if not a.no_statuses:
            graph.config(statuses={
                "url": "http://127.0.0.1:%d/webhook" % h.port,
                "secret": h.secret, "delay": 0.05, "order": "shuffle",
                "seed": seed})
        h.start(**env_for(llm, graph, a.reconcile))
        ld = load.Load([h.port], h.secret, convs=a.convs, rate=a.rate,
                       run="%x" % seed)
        ld.start()
        kills, downtime = [], 0.0
        end = time.time() + a.secs
        while time.time() < end or len(kills) < a.kills:
            time.sleep(rng.uniform(1.0, 4.0))
            kills.append(time.time())
            h.stop(signal.SIGKILL)
            h.start()
            downtime += time.time() - kills[-1]
        acked_all = ld.stop(timeout=90)
        ok = load.wait_settled(h, 120 + a.reconcile)
        alive = h.alive()
        fig, bad = load.account(h, ld, graph=graph, llm=llm, kills=kills)
        if not acked_all:
            bad.append("%d messages never answered 200" % ld.inflight)
        if not ok:
            bad.append("the inbox or outbox did not settle in time")
        rec = {k: int(v) for k, v in h.sql(
            "SELECT outcome, n FROM send_reconcile_counts")}
        dups = fig.get("duplicate_replies", 0)
        fig["status_webhooks"] = "off" if a.no_statuses else "on"
        fig["settled by a status"] = "%s (%s after their lease)" % (
            h.sql1("SELECT count(*) FROM audit_log WHERE step = 'send' "
                   "AND reason = 'status'"), rec.get("settled"))
        fig["reposted after silence"] = rec.get("reposted")
        fig["duplicates Meta reported"] = rec.get("duplicate")
        if not a.no_statuses and dups:
            bad.append("%d duplicate replies while status webhooks flow"
                       % dups)
        if a.no_statuses and dups > rec.get("reposted", 0):
            bad.append("%d duplicate replies, only %s reposts counted"
                       % (dups, rec.get("reposted")))
        if not alive:
            bad.append("modegate was not running at the end")
        redone = h.sql1("SELECT count(*) FROM inbox WHERE attempts > 0")
        head = [("seed", seed), ("kills (kill -9)", len(kills)),
                ("load", "%.0f msg/s over %d doctors for %.0f s" %
                 (a.rate, a.convs, ld.duration)),
                ("webhook answers", dict(ld.status)),
                ("restart time (mean)", "%.2f s" % (downtime / len(kills))),
                ("messages retaken after a kill", redone)]
        fig = dict(head + list(fig.items()))
        fig["wall time"] = "%.0f s" % (time.time() - t0)
        fig["verdict"] = "FAIL" if bad else "PASS"
        print(load.summary("crash test", fig))
        for b in bad[:40]:
            print("  problem: " + b)
        if len(bad) > 40:
            print("  ... %d problems in all" % len(bad))
        if bad:
            print("  server log: " + h.logpath)
            keep = os.environ.get("CRASH_KEEP") == "1"
            if keep:
                input("kept for inspection; press enter to clean up")
        return 1 if bad else 0
    finally:
        h.close()
        cluster.destroy()


if __name__ == "__main__":
    sys.exit(main())
