"""fakelib.py -- shared scripting and recording for the fake peers.

A fake keeps a queue of scripted steps and a list of recorded requests.
Control endpoints (never used by real peers):
  POST   /__script    body: a JSON list of steps (appended to the queue)
  DELETE /__script    clear the queue
  GET    /__requests  every request so far: [{method,path,headers,body,t}]
                      (t: arrival, Unix seconds, for latency benchmarks)
  POST   /__reset     clear queue, chaos and recorded requests
  POST   /__chaos     body: {"p": 0.3, "steps": [step, ...], "seed": 1}:
                      fault injection under load -- an unscripted request
                      gets, with probability p, one of the steps (picked
                      at random) instead of the normal answer
  DELETE /__chaos     no more chaos
  POST   /__config    body: {"echo": true, "delay": S} (see below)
Common step keys: "status", "headers", "body" (JSON, sent verbatim),
"raw" (text sent verbatim), "delay" (seconds to sleep before answering;
a client with a shorter timeout gives up first), "hang": true (read the
request, then never answer: the connection stays open until the client
gives up), "fault" (a label, recorded), "match" (an object: the step
waits for the first request whose JSON body holds those top-level
keys and values; two posts in flight reach a fake in either order). Each recorded request carries
"step" (the step it was given, or null) and "t_end" (when the answer was
written; null for a hang). --delay S makes every unscripted answer wait S
seconds (a slow peer for load benchmarks); --slim records requests
without their raw text, system prompt and tool list (long load runs).
SPDX-License-Identifier: MIT
"""
import argparse
import gc
import json
import random
import select
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.script = []
        self.requests = []
        self.chaos = None       # {"p", "steps", "rng"}
        self.config = {}        # echo, delay, slim
        self.slim = False

    def pop(self, body):
        """The first scripted step matching body, else a chaos step, else
        None."""
        def fits(step):
            want = step.get("match")
            return not want or (isinstance(body, dict) and all(
                body.get(k) == v for k, v in want.items()))
        with self.lock:
            for i, step in enumerate(self.script):
                if fits(step):
                    return self.script.pop(i)
            c = self.chaos
            if c and c["steps"] and c["rng"].random() < c["p"]:
                return dict(c["rng"].choice(c["steps"]))
            return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body are two writes: without TCP_NODELAY the body waits
    # for the client's delayed ACK (40 ms on Linux), which no real peer
    # adds to every answer.
    disable_nagle_algorithm = True
    state = None        # set by serve()
    answer = None       # fn(handler, req, step) -> (status, headers, bytes)
    default_delay = 0   # --delay
    extra_control = None    # fn(handler, method) -> True when handled

    def log_message(self, fmt, *args):
        pass

    def send_json(self, status, obj, headers=None, raw=None):
        data = raw.encode() if raw is not None else json.dumps(obj).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, str(v))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def control(self, method):
        st = self.state
        if self.extra_control and self.extra_control(self, method):
            return None
        if self.path == "/__requests" and method == "GET":
            with st.lock:
                return self.send_json(200, st.requests)
        if self.path == "/__script" and method == "POST":
            steps = json.loads(self.read_body() or b"[]")
            with st.lock:
                st.script.extend(steps)
            return self.send_json(200, {"queued": len(st.script)})
        if self.path == "/__script" and method == "DELETE":
            with st.lock:
                st.script.clear()
            return self.send_json(200, {})
        if self.path == "/__reset" and method == "POST":
            self.read_body()
            with st.lock:
                st.script.clear()
                st.requests.clear()
                st.chaos = None
            return self.send_json(200, {})
        if self.path == "/__chaos" and method == "POST":
            c = json.loads(self.read_body() or b"{}")
            with st.lock:
                st.chaos = {"p": float(c.get("p", 1)),
                            "steps": list(c.get("steps", [])),
                            "rng": random.Random(c.get("seed"))}
            return self.send_json(200, {})
        if self.path == "/__chaos" and method == "DELETE":
            with st.lock:
                st.chaos = None
            return self.send_json(200, {})
        if self.path == "/__config" and method == "POST":
            c = json.loads(self.read_body() or b"{}")
            with st.lock:
                st.config.update(c)
            return self.send_json(200, st.config)
        return self.send_json(404, {"error": "unknown control path"})

    def handle_any(self, method):
        if self.path.startswith("/__"):
            return self.control(method)
        t = time.time()
        raw = self.read_body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        req = {"method": method, "path": self.path,
               "headers": {k.lower(): v for k, v in self.headers.items()},
               "body": body, "raw": raw.decode("utf-8", "replace"), "t": t}
        st = self.state
        step = st.pop(body)
        with st.lock:
            req["n"] = len(st.requests)
            req["step"] = step
            req["t_end"] = None
            st.requests.append(req)
            # The recording only grows: keep it out of the cyclic GC's
            # full collections, whose pauses (the GIL held for 100 ms
            # and more as it grows) would stall every answer at once.
            gc.freeze()
        if step and step.get("hang"):
            if st.slim:
                self.slim(req)
            return self.hang()
        delay = step.get("delay") if step else st.config.get(
            "delay", self.default_delay)
        if delay:
            time.sleep(float(delay))
        status, headers, obj, rawtext = self.answer(req, step)
        if st.slim:
            self.slim(req)
        self.send_json(status, obj, headers, rawtext)
        req["t_end"] = time.time()

    @staticmethod
    def slim(req):
        req.pop("raw", None)
        if isinstance(req.get("body"), dict):
            req["body"].pop("system", None)
            req["body"].pop("tools", None)

    def hang(self):
        """Accepted, never answered: wait until the client hangs up."""
        self.close_connection = True
        end = time.time() + 600
        while time.time() < end:
            r, _, _ = select.select([self.connection], [], [], 0.5)
            if r:
                try:
                    if not self.connection.recv(1024):
                        return
                except OSError:
                    return

    def do_POST(self):
        self.handle_any("POST")

    def do_GET(self):
        self.handle_any("GET")

    def do_DELETE(self):
        self.handle_any("DELETE")


def serve(answer, description, control=None):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--script", help="JSON file holding a list of steps")
    ap.add_argument("--delay", type=float, default=0,
                    help="seconds every unscripted answer waits")
    ap.add_argument("--slim", action="store_true",
                    help="record requests without raw text, system, tools")
    ap.add_argument("--echo", action="store_true",
                    help="fake_llm: unscripted replies echo the request")
    args = ap.parse_args()
    st = State()
    st.slim = args.slim
    if args.echo:
        st.config["echo"] = True
    if args.script:
        with open(args.script) as f:
            st.script.extend(json.load(f))
    Handler.state = st      # answer functions may read st.config
    handler = type("H", (Handler,), {"state": st,
                                     "answer": staticmethod(answer),
                                     "extra_control": staticmethod(control)
                                     if control else None,
                                     "default_delay": args.delay})
    ThreadingHTTPServer.request_queue_size = 1024
    srv = ThreadingHTTPServer((args.host, args.port), handler)
    srv.daemon_threads = True
    print(srv.server_address[1], flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    sys.exit(0)
