# load.py -- a steady load of unique signed webhooks, and the accounting
# that follows it: every message answered 200 processed exactly once,
# answered once, in order, and every reply at the fake Graph API.
# Used by tests/crash/crash.py and the *_under_load integration cases.
# python3 standard library only.
# SPDX-License-Identifier: MIT
#
#   ld = Load([port, ...], secret, convs=100, rate=40)
#   ld.start(); ...; ld.stop()          stop() waits until every message
#                                       started is answered 200 (Meta
#                                       retries a non-200 the same way)
#   fig, bad = account(h, ld, graph=g, llm=l, kills=[t, ...])
#
# Conversation c is the doctor 5511970000000 + c; its k-th message says
# "bom dia, mensagem K<c>-<k>" (a greeting: no mode change, no block).
# Message k+1 of a conversation is sent only once k was answered 200, so
# the order the doctor wrote in is the order modegate must keep. With the
# fake LLM in --echo mode a reply reads "eco N: <the turn's messages>":
# N names the LLM request that produced it, and the tags name the
# messages it answers.
import collections
import hashlib
import hmac
import http.client
import json
import queue
import re
import threading
import time

import privacy

BASE = 5511970000000
TAG = re.compile(r"\bK(\d+)-(\d+)\b")
ECHO = re.compile(r"^eco (\d+): ")
PNID = "100"


def tags(text):
    """[(conversation, seq)] named in a text."""
    return [(int(c), int(k)) for c, k in TAG.findall(text or "")]


class Load:
    def __init__(self, ports, secret, convs=100, rate=40.0, threads=16,
                 run="r", retry_s=0.25):
        self.ports = list(ports)
        self.secret = secret.encode()
        self.convs = convs
        self.rate = float(rate)
        self.nthreads = threads
        self.run = run
        self.retry_s = retry_s
        self.lock = threading.Lock()
        self.next_k = [1] * convs
        self.busy = [False] * convs
        self.q = queue.Queue()
        self.acked = {}                 # wamid -> (conv, seq, t_ack)
        self.status = collections.Counter()
        self.events = []                # (t, status) of every attempt
        # the privacy case watches the logs for these numbers and bodies
        privacy.watch_numbers(*(str(BASE + c) for c in range(convs)))
        privacy.watch_pattern(r"mensagem K\d+-\d+")
        self.started = 0
        self.skipped = 0
        self.running = False
        self.abort = False
        self.inflight = 0
        self.rr = 0

    # -- messages ---------------------------------------------------------
    def wamid(self, c, k):
        return "wamid.LOAD.%s.%d.%d" % (self.run, c, k)

    def body(self, c, k):
        doctor = str(BASE + c)
        b = {"object": "whatsapp_business_account", "entry": [{
            "id": "1", "changes": [{"field": "messages", "value": {
                "messaging_product": "whatsapp",
                "metadata": {"display_phone_number": "5511900000000",
                             "phone_number_id": PNID},
                "contacts": [{"profile": {"name": "Dr %d" % c},
                              "wa_id": doctor}],
                "messages": [{"from": doctor, "id": self.wamid(c, k),
                              "timestamp": str(int(time.time())),
                              "type": "text", "text": {
                                  "body": "bom dia, mensagem K%d-%d" %
                                  (c, k)}}]}}]}]}
        return json.dumps(b, separators=(",", ":")).encode()

    # -- driving ----------------------------------------------------------
    def start(self):
        self.running = True
        self.t0 = time.time()
        self.threads = [threading.Thread(target=self._worker, daemon=True)
                        for _ in range(self.nthreads)]
        self.threads.append(threading.Thread(target=self._schedule,
                                             daemon=True))
        for t in self.threads:
            t.start()

    def _schedule(self):
        """One new message every 1/rate s, to the next idle doctor."""
        step = 1.0 / self.rate
        nxt = time.monotonic()
        cur = 0
        while self.running:
            nxt += step
            d = nxt - time.monotonic()
            if d > 0:
                time.sleep(d)
            with self.lock:
                for i in range(self.convs):
                    c = (cur + i) % self.convs
                    if not self.busy[c]:
                        break
                else:
                    self.skipped += 1
                    continue
                cur = c + 1
                self.busy[c] = True
                k = self.next_k[c]
                self.started += 1
                self.inflight += 1
            self.q.put((c, k, self.body(c, k)))

    def _post(self, body):
        with self.lock:
            port = self.ports[self.rr % len(self.ports)]
            self.rr += 1
        sig = "sha256=" + hmac.new(self.secret, body,
                                   hashlib.sha256).hexdigest()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
        try:
            conn.request("POST", "/webhook", body=body, headers={
                "Content-Type": "application/json",
                "X-Hub-Signature-256": sig})
            r = conn.getresponse()
            r.read()
            return r.status
        except (OSError, http.client.HTTPException):
            return "conn"
        finally:
            conn.close()

    def _worker(self):
        while True:
            try:
                c, k, body = self.q.get(timeout=0.2)
            except queue.Empty:
                if not self.running and self.inflight == 0:
                    return
                continue
            while True:
                st = self._post(body)
                t = time.time()
                with self.lock:
                    self.status[st] += 1
                    self.events.append((t, st))
                    if st == 200:
                        self.acked[self.wamid(c, k)] = (c, k, t)
                        self.next_k[c] = k + 1
                        self.busy[c] = False
                        self.inflight -= 1
                        break
                if self.abort:
                    with self.lock:
                        self.inflight -= 1
                    break
                time.sleep(self.retry_s)

    def stop(self, timeout=60):
        """Stop new messages; wait until those started are answered 200.
        Returns True when every one was."""
        self.running = False
        end = time.monotonic() + timeout
        while self.inflight > 0 and time.monotonic() < end:
            time.sleep(0.1)
        ok = self.inflight == 0
        self.abort = True
        for t in self.threads:
            t.join(5)
        self.duration = time.time() - self.t0
        return ok

    def statuses_between(self, t1, t2):
        with self.lock:
            return collections.Counter(s for t, s in self.events
                                       if t1 <= t <= t2)


# -- waiting -----------------------------------------------------------------
def settled(h):
    """Every inbox row finished and no outbox row waiting or in flight."""
    r = h.sql("SELECT (SELECT count(*) FROM inbox WHERE state IN "
              "('pending', 'claimed')), (SELECT count(*) FROM outbox "
              "WHERE state IN ('pending', 'sending'))")[0]
    return r == ("0", "0")


def wait_settled(h, timeout=90):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if settled(h):
                return True
        except RuntimeError:
            pass
        time.sleep(0.5)
    return False


# -- accounting --------------------------------------------------------------
def _llm_text(req):
    """Everything an LLM request showed the model, as one string."""
    out = []
    for m in (req.get("body") or {}).get("messages") or []:
        c = m.get("content")
        if isinstance(c, str):
            out.append(c)
        elif isinstance(c, list):
            out.extend(b.get("text", "") for b in c if isinstance(b, dict))
    return "\n".join(out)


def account(h, ld, graph=None, llm=None, kills=(), explain=None,
            reply_states=("sent",)):
    """Check the run; returns (figures, problems). explain(first_post,
    second_post) may excuse a duplicate post (besides a kill between
    them)."""
    fig = collections.OrderedDict()
    bad = []
    acked = ld.acked
    fig["messages_acked"] = len(acked)
    rows = h.sql("SELECT wamid, id, state, conversation_id, "
                 "coalesce(done_at::text, '') FROM inbox")
    inbox = {r[0]: r for r in rows}
    fig["inbox_rows"] = len(rows)
    pol = dict(h.sql("SELECT inbox_id, count(*) FROM audit_log WHERE "
                     "step = 'policy' GROUP BY inbox_id"))
    states = collections.Counter()
    turns = collections.defaultdict(list)   # (conv, done_at) -> ids
    by_id = {}
    for w, (c, k, _) in acked.items():
        r = inbox.get(w)
        if r is None:
            bad.append("lost: %s answered 200, not in the inbox" % w)
            continue
        states[r[2]] += 1
        if r[2] != "done":
            bad.append("%s is %s, not done" % (w, r[2]))
        n = int(pol.get(r[1], 0))
        if n != 1:
            bad.append("%s processed %d times (policy audit rows)" % (w, n))
        turns[(r[3], r[4])].append(r[1])
        by_id[r[1]] = (c, k)
    extra = set(inbox) - set(acked)
    if extra:
        bad.append("%d inbox rows never answered 200: %s" %
                   (len(extra), sorted(extra)[:5]))
    fig["inbox_states"] = dict(states)
    fig["turns"] = len(turns)
    fig["turns_with_several_messages"] = sum(1 for v in turns.values()
                                             if len(v) > 1)

    # replies: one per turn, in the order the doctor wrote
    out = h.sql("SELECT o.id, o.inbox_id, o.state, o.to_key, "
                "o.payload -> 'text' ->> 'body', o.attempts, "
                "coalesce(o.error_detail, '') FROM outbox o "
                "WHERE o.kind = 'text' ORDER BY o.id")
    fig["replies"] = len(out)
    fig["reply_states"] = dict(collections.Counter(r[2] for r in out))
    turn_of = {}
    for key, ids in turns.items():
        for i in ids:
            turn_of[i] = key
    per_turn = collections.Counter()
    seqs = {}       # outbox id -> (first, last) seq of the turn answered
    last_seq = {}
    echo = 0
    for oid, iid, st, to, text, _, err in out:
        if st not in reply_states:
            bad.append("reply %s is %s (%s)" % (oid, st, err))
        key = turn_of.get(iid) if iid else None
        if key is None:
            bad.append("reply %s answers no acked message (inbox %s)" %
                       (oid, iid))
            continue
        per_turn[key] += 1
        want = sorted(by_id[i] for i in turns[key])
        seqs[str(oid)] = (want[0][1], want[-1][1])
        if ECHO.match(text or ""):
            echo += 1
            got = set(tags(text.split(":", 1)[1]))
            # the turn's messages, and before them only messages whose
            # reply never reached the doctor (failed replies are left out
            # of the transcript, so the LLM sees those messages again)
            if not set(want) <= got or any(
                    c != want[0][0] or k >= want[0][1]
                    for c, k in got - set(want)):
                bad.append("reply %s names %s, its turn was %s" %
                           (oid, sorted(got), want))
        c = want[0][0]
        if want[0][1] <= last_seq.get(c, 0):
            bad.append("conversation %d: reply to %s after the reply to "
                       "seq %d" % (c, want, last_seq[c]))
        last_seq[c] = want[-1][1]
    fig["echo_replies"] = echo
    for key in turns:
        if per_turn[key] != 1:
            bad.append("turn %s (%d messages) has %d replies" %
                       (key, len(turns[key]), per_turn[key]))

    if graph is not None:
        _graph(fig, bad, out, graph, kills, explain, seqs)
    if llm is not None:
        _history(fig, bad, out, llm)
    return fig, bad


def delivered(r):
    """May the fake Graph API have delivered this post? Yes unless it
    answered an error status (a post it never answered counts: modegate
    cannot know)."""
    s = r.get("step") or {}
    return s.get("hang") or s.get("status", 200) < 300


def _graph(fig, bad, out, graph, kills, explain, seqs):
    """Every reply reached the fake Graph API; duplicates counted and
    explained; per doctor, replies arrived in order."""
    reqs = [r for r in graph.requests() if r["path"].endswith("/messages")]
    fig["graph_error_answers"] = sum(1 for r in reqs if not delivered(r))
    reqs = [r for r in reqs if delivered(r)]
    texts = [r for r in reqs if (r.get("body") or {}).get("type") == "text"]
    reads = [r for r in reqs if (r.get("body") or {}).get("status") == "read"]
    posts = collections.defaultdict(list)
    for r in texts:
        b = r["body"]
        posts[(b.get("to", "").lstrip("+"), b["text"]["body"])].append(r)
    rows = collections.Counter((r[3].lstrip("+"), r[4]) for r in out)
    fig["graph_text_posts"] = len(texts)
    missing = [k for k in rows if k not in posts]
    for k in missing[:10]:
        bad.append("reply never reached the Graph API: %r" % (k,))
    if missing:
        fig["replies_missing_at_graph"] = len(missing)
    dups = 0
    gaps = []       # first post -> the kill that cut its recording
    why = collections.Counter()
    for k, ps in posts.items():
        if k not in rows:
            bad.append("the Graph API got a text no outbox row holds: %r"
                       % (k,))
            continue
        extra = len(ps) - rows[k]
        if extra <= 0:
            continue
        dups += extra
        reasons = []
        for a, b in zip(ps, ps[1:]):
            ks = [t for t in kills if a["t"] <= t <= b["t"]]
            if ks:
                reasons.append("kill -9 between the two posts")
                gaps.append(ks[0] - a["t"])
            elif explain is not None and explain(a, b):
                reasons.append(explain(a, b))
        for w in reasons[:extra]:
            why[w] += 1
        if len(reasons) < extra:
            bad.append("unexplained duplicate post of %r (%d posts)" %
                       (k, len(ps)))
    fig["duplicate_replies"] = dups
    fig["duplicates_explained"] = dict(why)
    if gaps:
        gaps.sort()
        fig["post_to_kill_s"] = "median %.3f, max %.3f" % (
            gaps[len(gaps) // 2], gaps[-1])
    seen = collections.Counter(r["body"].get("message_id") for r in reads)
    fig["read_receipts_posted"] = len(reads)
    fig["read_receipts_duplicate"] = sum(n - 1 for n in seen.values())
    # order at the Graph API, per doctor (consecutive re-posts collapsed);
    # a post names its outbox row (biz_opaque_callback_data), as two
    # replies of one doctor may have the same text (the fallback reply)
    per = collections.defaultdict(list)
    for r in sorted(texts, key=lambda r: r["t"]):
        b = r["body"]
        oid = b.get("biz_opaque_callback_data", "").rpartition(":")[2]
        if oid in seqs:
            per[b.get("to", "").lstrip("+")].append((oid, b["text"]["body"],
                                                     seqs[oid]))
    disorder = 0
    for to, seq in per.items():
        last, hi = None, 0
        for oid, body, (lo, top) in seq:
            if oid == last:
                continue
            if lo <= hi:
                disorder += 1
                bad.append("%s: reply %r reached the Graph API after a "
                           "later one" % (to, body[:40]))
            hi = max(hi, top)
            last = oid
    fig["graph_out_of_order"] = disorder


def _history(fig, bad, out, llm):
    """Turns of one conversation never ran at once: the LLM request that
    produced reply k saw reply k-1 in its transcript."""
    reqs = llm.requests()
    by_n = {r["n"]: r for r in reqs}
    prev = {}
    checked = 0
    for oid, iid, st, to, text, _, _ in out:
        m = ECHO.match(text or "")
        p = prev.get(to)
        if st not in ("failed", "dead", "dropped"):
            prev[to] = text     # the others are left out of transcripts
        if not m or p is None:
            continue
        r = by_n.get(int(m.group(1)))
        if r is None:
            bad.append("reply %s: LLM request %s not recorded" %
                       (oid, m.group(1)))
            continue
        checked += 1
        if p not in _llm_text(r):
            bad.append("reply %s was produced without the previous reply "
                       "%r in its context: two turns of %s overlapped" %
                       (oid, p[:40], to))
    fig["llm_requests"] = len(reqs)
    fig["history_checked"] = checked
    # LLM requests of one conversation open at the same time (answered
    # ones: a faulty answer's end is when the client gave up, unknown here)
    per = collections.defaultdict(list)
    for r in reqs:
        if r.get("step") is not None or r["t_end"] is None:
            continue
        ts = tags(_llm_text({"body": {"messages": (r.get("body") or {}).get(
            "messages", [])[-1:]}}))
        if ts:
            per[ts[0][0]].append((r["t"], r["t_end"]))
    over = 0
    for c, iv in per.items():
        iv.sort()
        for (a1, b1), (a2, b2) in zip(iv, iv[1:]):
            if a2 < b1:
                over += 1
    fig["llm_overlaps"] = over


def summary(title, fig):
    """The figures as a block of lines."""
    lines = ["== %s ==" % title]
    for k, v in fig.items():
        lines.append("  %-28s %s" % (k, v))
    return "\n".join(lines)
