"""fakelib.py -- shared scripting and recording for the fake peers.

A fake keeps a queue of scripted steps and a list of recorded requests.
Control endpoints (never used by real peers):
  POST   /__script    body: a JSON list of steps (appended to the queue)
  DELETE /__script    clear the queue
  GET    /__requests  every request so far: [{method,path,headers,body,t}]
                      (t: arrival, Unix seconds, for latency benchmarks)
  POST   /__reset     clear queue and recorded requests
Common step keys: "status", "headers", "body" (JSON, sent verbatim),
"raw" (text sent verbatim), "delay" (seconds to sleep before answering;
a client with a shorter timeout gives up first). --delay S makes every
unscripted answer wait S seconds (a slow peer for load benchmarks).
SPDX-License-Identifier: MIT
"""
import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.script = []
        self.requests = []

    def pop(self):
        with self.lock:
            return self.script.pop(0) if self.script else None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state = None        # set by serve()
    answer = None       # fn(handler, req, step) -> (status, headers, bytes)
    default_delay = 0   # --delay

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
            return self.send_json(200, {})
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
        with self.state.lock:
            self.state.requests.append(req)
        step = self.state.pop()
        delay = step.get("delay") if step else self.default_delay
        if delay:
            time.sleep(float(delay))
        status, headers, obj, rawtext = self.answer(req, step)
        self.send_json(status, obj, headers, rawtext)

    def do_POST(self):
        self.handle_any("POST")

    def do_GET(self):
        self.handle_any("GET")

    def do_DELETE(self):
        self.handle_any("DELETE")


def serve(answer, description):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--script", help="JSON file holding a list of steps")
    ap.add_argument("--delay", type=float, default=0,
                    help="seconds every unscripted answer waits")
    args = ap.parse_args()
    st = State()
    if args.script:
        with open(args.script) as f:
            st.script.extend(json.load(f))
    handler = type("H", (Handler,), {"state": st,
                                     "answer": staticmethod(answer),
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
