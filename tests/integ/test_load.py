# test_load.py -- outages and scale-out under a steady load of signed
# webhooks (tests/integ/load.py): PostgreSQL stopped and started, the LLM
# and the Graph API failing in every way their real counterparts do
# (timeouts, 5xx, 429 without retry-after, 529, malformed JSON, a server
# that accepts and never answers), three processes on one database. Each
# case ends with the same accounting as the crash test (make test-crash):
# every message answered 200 is processed exactly once, its turn answered
# once (the LLM's reply or the fallback), in the doctor's order, and every
# reply reached the fake Graph API -- or, where the spec says a reply
# fails, it failed with its error recorded. Nothing is silently dropped.
# Loads are modest (the test machine has two shared cores); no latency is
# asserted, only outcomes and lower bounds on back-off.
# SPDX-License-Identifier: MIT
import collections
import json
import os
import random
import signal
import time

import load
from harness import ROOT, eq


def fallback_text(key="fallback"):
    """The canned reply when the LLM cannot answer (mode/messages.json;
    "guard_fallback": when the guard flagged three answers of a turn)."""
    with open(os.path.join(ROOT, "mode", "messages.json")) as f:
        return json.load(f)["replies"][key]


def ready(h, llm_args=("--echo",), graph_args=(), **env):
    rc, out = h.migrate()
    eq(rc, 0, "migrate: " + out)
    llm = h.fake("llm", *llm_args)
    graph = h.fake("graph", *graph_args)
    conf = {"LLM_PROVIDER": "anthropic", "LLM_BASE_URL": llm.url,
            "LLM_API_KEY": "test-key", "LLM_MODEL": "test-model",
            "WHATSAPP_TOKEN": "test-token",
            "WHATSAPP_API_BASE": graph.url + "/v25.0",
            # short leases: work cut by a kill or an outage is retaken
            # within seconds; the send lease leaves a slow machine seconds
            # to record an answer before the row could be posted again
            "MODEGATE_LEASE_S": "3", "MODEGATE_SEND_LEASE_S": "5",
            # no status webhooks here unless a case turns them on: a cut
            # post waits 3 s past its lease before it is posted again
            "MODEGATE_SEND_RECONCILE_S": "3",
            "MODEGATE_COALESCE_MS": "100",
            "MODEGATE_SEND_RETRY_BASE_MS": "100"}
    conf.update(env)
    h.start(**conf)
    return llm, graph


def run_load(h, ports, secs, convs, rate, during=None):
    """Load for secs seconds (during(t0) runs meanwhile); then wait until
    every message is answered 200 and the outbox is empty."""
    ld = load.Load(ports, h.secret, convs=convs, rate=rate, threads=8)
    ld.start()
    t0 = time.time()
    if during is not None:
        during(ld)
    left = secs - (time.time() - t0)
    if left > 0:
        time.sleep(left)
    assert ld.stop(timeout=60), "%d messages never answered 200 (%r)" % (
        ld.inflight, dict(ld.status))
    assert load.wait_settled(h, 60), "inbox/outbox did not settle: %r" % (
        h.sql("SELECT state, count(*) FROM inbox GROUP BY 1"),)
    return ld


def check(h, ld, title, **kw):
    fig, bad = load.account(h, ld, **kw)
    print("# " + load.summary(title, fig).replace("\n", "\n# "))
    assert not bad, "\n".join(bad[:20])
    assert fig["messages_acked"] > 0, "no load"
    return fig


# -- PostgreSQL down and up ---------------------------------------------------

def test_postgres_restart_under_load(h):
    llm, graph = ready(h)
    marks = {}

    def outage(ld):
        time.sleep(3)
        h.pg_stop()
        marks["down"] = time.time()
        h.wait_until(lambda: h.get("/readyz")[0] == 503, 10,
                     "/readyz 503 while the database is down")
        time.sleep(3)
        assert h.alive(), "serve died with the database"
        marks["up"] = time.time()
        h.pg_start()
        h.wait_until(lambda: h.get("/readyz")[0] == 200, 20,
                     "/readyz 200 again")
        marks["ready"] = time.time()

    ld = run_load(h, [h.port], 12, 40, 20, outage)
    assert h.alive(), "serve died"
    # (a 200 for a commit just before the shutdown may be read late by a
    # starved client thread: one second of margin)
    down = ld.statuses_between(marks["down"] + 1.0, marks["up"])
    eq(down.get(200, 0), 0, "no 200 while the database is down")
    assert down.get(503, 0) > 0, "webhooks answered 503 while down: %r" % (
        down,)
    eq(sorted(set(down) - {"conn", "timeout"}), [503],
       "every webhook answered while the database is down got 503")
    eq(ld.status.get("conn", 0), 0, "no connection refused: the process "
       "stayed up")
    after = ld.statuses_between(marks["ready"], time.time())
    assert after.get(200, 0) > 0, "200 again after recovery: %r" % (after,)
    print("# while down: %r; after: %r" % (dict(down), dict(after)))

    def db_down(a, b):
        # the Graph API accepted the first post while the database was
        # down: its answer could not be recorded, so it was posted again
        # (the exactly-once window of sql/functions/ and src/sender.c)
        t = a["t_end"] or a["t"]
        if marks["down"] - 1 <= t <= marks["ready"] + 1:
            return "answer not recordable while the database was down"
        return None
    check(h, ld, "postgres stopped %.1f s under load" %
          (marks["up"] - marks["down"]), graph=graph, llm=llm,
          explain=db_down)


# -- kill -9 (the crash test in short; make test-crash runs the long one) ---

def test_kill9_under_load(h):
    # The fake Graph API posts status webhooks back, as Meta does: a post
    # cut by a kill is settled by its status, never posted twice.
    llm, graph = ready(h, llm_args=("--echo", "--slim", "--delay", "0.05"),
                       graph_args=("--delay", "0.03"),
                       MODEGATE_SEND_RECONCILE_S="10")
    graph.config(statuses={"url": "http://127.0.0.1:%d/webhook" % h.port,
                           "secret": h.secret, "delay": 0.05,
                           "order": "shuffle", "seed": 9})
    rng = random.Random(9)
    kills = []

    def killer(ld):
        for _ in range(5):
            time.sleep(rng.uniform(1.0, 2.5))
            kills.append(time.time())
            h.stop(signal.SIGKILL)
            h.start()

    ld = run_load(h, [h.port], 12, 40, 25, killer)
    fig = check(h, ld, "kill -9 x%d under load" % len(kills), graph=graph,
                llm=llm, kills=kills)
    assert int(h.sql1("SELECT count(*) FROM inbox WHERE attempts > 0")) > 0 \
        or ld.status.get("conn"), "the kills hit nothing"
    eq(fig["duplicate_replies"], 0, "no reply posted twice")


# -- LLM faults ---------------------------------------------------------------

# 429 and 529 come bare (no retry-after, no x-should-retry): the client
# must retry them from the status and the error body alone.
LLM_FAULTS = [
    {"fault": "500", "status": 500},
    {"fault": "529", "status": 529},
    {"fault": "429", "status": 429},
    {"fault": "malformed", "status": 200,
     "raw": '{"id": "msg_01", "type": "message", "content": [{"ty'},
    {"fault": "timeout", "delay": 2.5},
    {"fault": "hang", "hang": True},
]


def llm_calls(llm):
    """The fake LLM's requests grouped by model call: identical bodies are
    the attempts of one call (no turn is redone in these cases)."""
    groups = collections.OrderedDict()
    for r in sorted(llm.requests(), key=lambda r: r["t"]):
        key = json.dumps([r["body"].get("system"), r["body"]["messages"]],
                         sort_keys=True)
        groups.setdefault(key, []).append(r)
    return list(groups.values())


def failed(r):
    return r.get("step") is not None


def test_llm_faults_under_load(h):
    # (a 10 s lease: no turn is cut and redone, so identical requests are
    # the attempts of one call)
    llm, graph = ready(h, LLM_TIMEOUT="1", LLM_BREAKER_THRESHOLD="1000",
                       MODEGATE_LEASE_S="10")
    llm.chaos(0.35, LLM_FAULTS, seed=6)
    ld = run_load(h, [h.port], 10, 30, 10)
    calls = llm_calls(llm)
    kinds = collections.Counter(r["step"]["fault"] for g in calls for r in g
                                if failed(r))
    for f in LLM_FAULTS:
        assert kinds[f["fault"]] > 0, "fault %s never injected: %r" % (
            f["fault"], kinds)
    gave_up = 0
    for g in calls:
        # 2 retries (3 attempts) per model call, no request after success
        assert len(g) <= 3, "more than 3 attempts: %r" % (
            [r["step"] for r in g],)
        assert all(failed(r) for r in g[:-1]), "attempt after a success"
        if failed(g[-1]):
            eq(len(g), 3, "gave up before the third attempt")
            gave_up += 1
        for a, b in zip(g, g[1:]):
            # back-off without retry-after: >= 0.5 s x jitter 0.75 after
            # the answer; when none came, the retry follows LLM_TIMEOUT
            # (1 s) and a back-off -- counted here from the fake's
            # arrival time, which a loaded machine (ASan) may record a few
            # hundred ms after the client sent, so only the timeout is
            # held to
            if a["step"].get("delay") or a["step"].get("hang"):
                gap, least = b["t"] - a["t"], 1.0
            else:
                gap, least = b["t"] - a["t_end"], 0.3
            assert gap >= least, "retry after %.2f s (%s)" % (
                gap, a["step"]["fault"])
    fig = check(h, ld, "LLM faults under load", graph=graph, llm=llm)
    fb = fallback_text()
    replies = [r[0] for r in h.sql("SELECT payload -> 'text' ->> 'body' "
                                   "FROM outbox WHERE kind = 'text'")]
    eq(sum(1 for r in replies if r == fb), gave_up,
       "one fallback reply per model call that failed 3 times")
    # (the guard may read an echo's numbers as a shift's date in
    # discovery: three flagged answers give its canned reply)
    guarded = sum(1 for r in replies if r == fallback_text("guard_fallback"))
    eq(fig["echo_replies"] + gave_up + guarded, fig["replies"],
       "every other turn answered by the LLM or by the guard's reply")
    errs = collections.Counter(r[0] for r in h.sql(
        "SELECT reason FROM audit_log WHERE step = 'llm' AND "
        "decision = 'error'"))
    eq(sum(errs.values()), gave_up, "each failed call audited")
    assert set(errs) <= {"server", "overloaded", "rate_limit", "malformed",
                         "timeout"}, errs
    print("# LLM faults injected %r; %d model calls, %d gave up after 3 "
          "attempts (fallback reply)" % (dict(kinds), len(calls), gave_up))


def test_llm_breaker_opens_under_load(h):
    llm, graph = ready(h, LLM_TIMEOUT="2", LLM_BREAKER_THRESHOLD="3",
                       MODEGATE_LEASE_S="10")
    llm.chaos(1, [{"fault": "529", "status": 529}])
    ld = run_load(h, [h.port], 8, 20, 8)
    fig = check(h, ld, "LLM down, breaker", graph=graph)
    calls = llm_calls(llm)
    eq(fig["echo_replies"], 0, "no LLM reply")
    fb = fallback_text()
    eq(h.sql1("SELECT count(*) FROM outbox WHERE kind = 'text' AND "
              "payload -> 'text' ->> 'body' <> '%s'" % fb.replace("'", "''")),
       "0", "every turn got the fallback reply")
    # the first calls fail after 3 attempts; once the breaker is open a
    # pending retry is refused too, and no turn calls the LLM any more
    full = [g for g in calls if len(g) == 3]
    assert len(full) >= 3, "3 calls failed 3 times before it opened"
    assert all(len(g) <= 3 for g in calls), "at most 3 attempts per call"
    assert len(calls) < fig["turns"] / 2, \
        "the breaker stopped the calls: %d calls for %d turns" % (
            len(calls), fig["turns"])
    reasons = collections.Counter(r[0] for r in h.sql(
        "SELECT reason FROM audit_log WHERE step = 'llm' AND "
        "decision = 'error'"))
    eq(reasons["overloaded"], len(full), "failed calls audited")
    eq(reasons["breaker_open"], fig["turns"] - len(full),
       "the other turns: breaker open, audited")
    assert "circuit open" in h.log()
    m = h.get("/metrics")[1].decode()
    print("# %d turns, %d LLM calls before the breaker opened" %
          (fig["turns"], len(calls)))
    assert m, "metrics"


# -- Graph API faults ---------------------------------------------------------

GRAPH_FAULTS = [
    {"fault": "500", "status": 500},
    {"fault": "503-html", "status": 503,
     "raw": "<html><body>Service Unavailable</body></html>"},
    {"fault": "529", "status": 529},
    {"fault": "429", "status": 429, "code": 130429},
    {"fault": "malformed", "status": 200, "raw": '{"messaging_product":'},
    {"fault": "timeout", "delay": 6},
    {"fault": "hang", "hang": True},
]


def test_graph_faults_under_load(h):
    # a 6 s send lease: posts time out after 5 s (lease - 1), and a slow
    # machine has seconds to record an answer before the lease expires
    llm, graph = ready(h, MODEGATE_SEND_LEASE_S="6")
    graph.chaos(0.25, GRAPH_FAULTS, seed=7)
    ld = run_load(h, [h.port], 8, 30, 12)
    reqs = [r for r in graph.requests() if r["path"].endswith("/messages")]
    kinds = collections.Counter(r["step"]["fault"] for r in reqs
                                if r.get("step"))
    for f in GRAPH_FAULTS:
        assert kinds[f["fault"]] > 0, "fault %s never injected: %r" % (
            f["fault"], kinds)

    def unanswered(a, b):
        # the first post got no answer (timeout, hang): the Graph API may
        # have accepted it, so it is posted again (at-least-once)
        s = a.get("step") or {}
        if s.get("hang") or s.get("delay"):
            return "first post timed out (may have been delivered)"
        return None
    fig = check(h, ld, "Graph API faults under load", graph=graph, llm=llm,
                explain=unanswered, reply_states=("sent", "failed"))
    # a 200 without a message id may have been delivered: never re-posted,
    # failed with the reason recorded; every other reply was sent
    failed_rows = h.sql("SELECT payload -> 'text' ->> 'body', error_detail "
                        "FROM outbox WHERE kind = 'text' AND "
                        "state = 'failed'")
    for body, err in failed_rows:
        assert "without a message id" in err, err
        posts = [r for r in reqs if r["body"].get("text", {}).get("body")
                 == body]
        eq((posts[-1].get("step") or {}).get("fault"), "malformed",
           "failed by a malformed 200, and not posted again")
    eq(len(failed_rows), sum(1 for r in reqs if r.get("step") and
                             r["step"]["fault"] == "malformed" and
                             r["body"].get("type") == "text"),
       "one failed reply per malformed 200")
    eq(h.sql1("SELECT count(*) FROM outbox WHERE state = 'dead'"), "0",
       "no reply dead (fewer than 8 failures in a row)")
    # retries are spaced: a text re-posted after an error waited its
    # back-off (MODEGATE_SEND_RETRY_BASE_MS=100, doubling; 429: 1 s)
    # (one reply = one recipient and text: two doctors may get the same
    # text, e.g. a fallback, and their posts are not each other's retries)
    by_body = collections.defaultdict(list)
    for r in reqs:
        if r["body"].get("type") == "text":
            by_body[(r["body"].get("to"), r["body"]["text"]["body"])].append(r)
    retried = 0
    for ps in by_body.values():
        for a, b in zip(ps, ps[1:]):
            s = a.get("step") or {}
            if s.get("fault") in ("500", "503-html", "529"):
                retried += 1
                assert b["t"] - a["t_end"] >= 0.09, "5xx retry too soon"
            elif s.get("fault") == "429":
                retried += 1
                assert b["t"] - a["t_end"] >= 0.9, "429 back-off too short"
    assert retried > 0, "some replies were retried"
    print("# Graph faults injected %r; %d re-posts after an error; %d "
          "replies failed on a malformed 200" % (dict(kinds), retried,
                                                 len(failed_rows)))
    assert fig["replies"] > 0


# -- scale-out ----------------------------------------------------------------

def test_three_processes_under_load(h):
    # a 10 s lease (renewed every 4 s): even on a starved machine no turn
    # loses its lease, so two LLM calls of one conversation at once would
    # be two processes working on it
    llm, graph = ready(h, llm_args=("--echo", "--delay", "0.05"),
                       MODEGATE_LEASE_S="10")
    others = [h.second(), h.second()]
    for o in others:
        o.start()
    ld = run_load(h, [h.port] + [o.port for o in others], 12, 60, 30)
    fig = check(h, ld, "three processes, one database", graph=graph,
                llm=llm)
    eq(fig["duplicate_replies"], 0, "no duplicate post (no crash)")
    eq(fig["llm_overlaps"], 0, "never two LLM calls of one conversation "
       "at once")
    assert fig["history_checked"] > fig["replies"] / 2, fig
    per = h.sql("SELECT claimed_by, count(*) FROM inbox GROUP BY 1 "
                "ORDER BY 1")
    print("# messages per process: %r" % ([int(n) for _, n in per],))
    assert len(per) >= 2, "the work was shared: %r" % (per,)
    for o in [h] + others:
        assert o.alive(), "a process died"
