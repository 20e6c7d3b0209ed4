# harness.py -- integration harness: a throwaway PostgreSQL cluster for the
# whole run, a fresh database and a real `modegate serve` per case.
# python3 standard library only.
# SPDX-License-Identifier: MIT
#
# A case is a function test_NAME(h) in tests/integ/test_*.py; h is a Harness:
#
#   h.migrate()                      -> (exit code, output); `modegate migrate`
#   h.start(**env) / h.stop() / h.restart()
#                                    serve on a free port (started on first use)
#   h.get(path) / h.request(method, path, body, headers)
#                                    -> (status, body bytes)
#   h.post_webhook(body, sign=True)  body: bytes, str or dict; sign=False sends
#                                    no signature, a str is sent as the header
#   h.sql("select ...")              -> list of tuples of str (None for NULL)
#   h.sql1("select ...")             -> the single value
#   h.pg_stop() / h.pg_start()       stop / start the cluster (this case only)
#   h.wait_until(fn, timeout=10)     poll fn() until truthy, else fail
#   h.fixture(name), h.fixtures()    ../shared/fixtures/whatsapp (None/[] when
#                                    absent); h.payload(name): tests/cases/webhooks
#   h.log()                          the server's stderr so far
#   h.env                            the environment serve and migrate get
#   h.fake("llm"|"graph", *args)     start tests/fakes/fake_NAME.py (stopped
#                                    with the case; args e.g. "--echo",
#                                    "--slim"): .url, .script(steps),
#                                    .requests(), .reset(), .chaos(p, steps),
#                                    .config(**kw)
#   h.second()                       another Harness on the same database
#                                    (a second modegate process)
import hashlib
import hmac
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import privacy

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = os.path.join(ROOT, "..", "shared", "fixtures", "whatsapp")
PAYLOADS = os.path.join(ROOT, "tests", "cases", "webhooks")


def free_port():
    """A port free now, below the kernel's ephemeral range: a port the
    kernel handed out (bind to 0) and released can be handed to the next
    fake that binds to 0 before serve listens on it (seen: serve "Address
    already in use" on the fake Graph API's port)."""
    lo = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    lo = max(lo, 2048)
    rng = random.Random(os.getpid() ^ time.monotonic_ns())
    for _ in range(200):
        port = rng.randrange(lo // 2, lo)
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue
        finally:
            s.close()
    raise RuntimeError("no free port below %d" % lo)


def sh(script, env=None, check=True):
    """Run a POSIX sh script from the repository root; returns stdout."""
    p = subprocess.run(["sh", "-c", script], cwd=ROOT, env=env,
                       capture_output=True, text=True)
    if check and p.returncode != 0:
        raise RuntimeError("sh failed (%d): %s\n%s" % (p.returncode, script,
                                                        p.stderr[-2000:]))
    return p.stdout


class Cluster:
    """One PostgreSQL cluster for the run (tests/lib/pg.sh)."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="modegate-integ.")
        os.chmod(self.dir, 0o755)
        self.pgdir = os.path.join(self.dir, "pg")
        self.start()
        self.ndb = 0

    def start(self):
        out = sh('. tests/lib/pg.sh && PG_FSYNC=${PG_FSYNC:-off} '
                 'pg_start "%s" >&2 && echo "$PGPORT"' % self.pgdir)
        self.port = int(out.strip().splitlines()[-1])

    def stop(self):
        sh('. tests/lib/pg.sh && pg_stop "%s"' % self.pgdir, check=False)

    def url(self, db):
        return "postgresql://modegate@127.0.0.1:%d/%s" % (self.port, db)

    def new_database(self):
        self.ndb += 1
        name = "t%d" % self.ndb
        psql(self.url("postgres"), "CREATE DATABASE %s" % name)
        return name

    def destroy(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def psql(url, query):
    p = subprocess.run(["psql", "-qtAX", "-v", "ON_ERROR_STOP=1", "-F",
                        "\x1f", "-R", "\x1e", "-P", "null=\x1d", url, "-c",
                        query], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("psql: %s: %s" % (query, p.stderr.strip()))
    rows = []
    for line in p.stdout.rstrip("\n").split("\x1e"):
        if line == "":
            continue
        rows.append(tuple(None if v == "\x1d" else v
                          for v in line.split("\x1f")))
    return rows


class Harness:
    def __init__(self, cluster, name):
        self.cluster = cluster
        self.name = name
        self.db = cluster.new_database()
        self.secret = "integ-secret-" + os.urandom(4).hex()
        self.token = "integ-token-" + os.urandom(4).hex()
        self.port = free_port()
        self.bin = os.environ.get("MODEGATE_BIN",
                                  os.path.join(ROOT, "bin", "modegate"))
        self.env = dict(os.environ)
        self.env.update({
            "DATABASE_URL": cluster.url(self.db),
            "WHATSAPP_APP_SECRET": self.secret,
            "WHATSAPP_VERIFY_TOKEN": self.token,
            "WHATSAPP_TOKEN": "",
            "LLM_PROVIDER": "offline",
            "MODEGATE_LISTEN": "127.0.0.1:%d" % self.port,
            "MODEGATE_RULES_DIR": ROOT,
            "MODEGATE_LOG_LEVEL": os.environ.get("MODEGATE_TEST_LOG_LEVEL",
                                                 "info"),
        })
        privacy.watch_secret(self.secret, self.token)
        self.proc = None
        self.logpath = os.path.join(cluster.dir, "%s.log" % name)
        self.pg_stopped = False
        self.fakes = []
        self.others = []

    # -- peers -----------------------------------------------------------
    def fake(self, name, *args):
        f = Fake(name, *args)
        self.fakes.append(f)
        return f

    def second(self):
        """Another Harness (its own port and log) on this database."""
        o = Harness.__new__(Harness)
        o.__dict__.update(self.__dict__)
        o.env = dict(self.env)
        o.port = free_port()
        o.env["MODEGATE_LISTEN"] = "127.0.0.1:%d" % o.port
        o.proc = None
        o.logpath = self.logpath + ".2"
        o.fakes, o.others = [], []
        self.others.append(o)
        return o

    # -- processes ---------------------------------------------------
    def migrate(self):
        p = subprocess.run([self.bin, "migrate"], env=self.env,
                           capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr

    def start(self, wait=True, **env):
        assert self.proc is None, "already started"
        self.env.update({k: str(v) for k, v in env.items()})
        privacy.watch_secret(*(self.env.get(k) for k in privacy.SECRET_ENV))
        privacy.watch_log(self.logpath,
                          self.env.get("MODEGATE_LOG_LEVEL"))
        self.logf = open(self.logpath, "ab")
        self.proc = subprocess.Popen([self.bin, "serve"], env=self.env,
                                     stdout=self.logf, stderr=self.logf)
        if wait:
            self.wait_until(self._healthy, 10, "serve did not come up")
            self._wait_db()

    def _wait_db(self, timeout=5):
        """/webhook answers 503 until an ingest connection is up: on a
        loaded machine that can take a moment after /healthz. Best effort
        (a case may start with the database unreachable on purpose)."""
        end = time.monotonic() + timeout
        while not self.pg_stopped and time.monotonic() < end:
            try:
                if b"modegate_db_up 1\n" in self._request("GET",
                                                           "/metrics")[1]:
                    return
            except OSError:
                pass
            time.sleep(0.05)

    def _healthy(self):
        if self.proc.poll() is not None:
            raise AssertionError("serve exited with %d:\n%s" %
                                 (self.proc.returncode, self.log()[-2000:]))
        try:
            return self._request("GET", "/healthz")[0] == 200
        except OSError:
            return False

    def stop(self, sig=signal.SIGTERM, timeout=15):
        """Stop serve; returns its exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.proc = None
        self.logf.close()
        return rc

    def restart(self, **env):
        self.stop()
        self.start(**env)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def log(self):
        try:
            with open(self.logpath, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def pg_stop(self):
        self.pg_stopped = True
        self.cluster.stop()

    def pg_start(self):
        self.cluster.start()
        self.pg_stopped = False

    def close(self):
        self.stop(signal.SIGKILL)
        for o in self.others:
            o.stop(signal.SIGKILL)
        for f in self.fakes:
            f.stop()
        if self.pg_stopped:
            self.pg_start()

    # -- HTTP ----------------------------------------------------------
    def _request(self, method, path, body=None, headers=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            try:
                c.request(method, path, body=body, headers=headers or {})
            except (BrokenPipeError, ConnectionResetError):
                pass    # the server answered before reading it all (413)
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def request(self, method, path, body=None, headers=None):
        if self.proc is None:
            self.start()
        return self._request(method, path, body, headers)

    def get(self, path):
        return self.request("GET", path)

    def sign(self, body):
        return "sha256=" + hmac.new(self.secret.encode(), body,
                                    hashlib.sha256).hexdigest()

    def post_webhook(self, body, sign=True, headers=None):
        if isinstance(body, dict):
            body = json.dumps(body, separators=(",", ":")).encode()
        elif isinstance(body, str):
            body = body.encode()
        privacy.watch_payload(body)
        hdrs = {"Content-Type": "application/json"}
        if sign is True:
            hdrs["X-Hub-Signature-256"] = self.sign(body)
        elif isinstance(sign, str):
            hdrs["X-Hub-Signature-256"] = sign
        hdrs.update(headers or {})
        return self.request("POST", "/webhook", body, hdrs)

    # -- database ------------------------------------------------------
    def sql(self, query):
        return psql(self.env["DATABASE_URL"], query)

    def sql1(self, query):
        rows = self.sql(query)
        assert len(rows) == 1 and len(rows[0]) == 1, \
            "%s: expected one value, got %r" % (query, rows)
        return rows[0][0]

    # -- data ----------------------------------------------------------
    def fixtures(self):
        if not os.path.isdir(FIXTURES):
            return []
        return sorted(os.path.join(FIXTURES, f) for f in os.listdir(FIXTURES)
                      if f.endswith(".json"))

    def fixture(self, name):
        path = os.path.join(FIXTURES, name)
        if not os.path.exists(path):
            return None
        with open(path, "rb") as f:
            return f.read()

    def payload(self, name):
        with open(os.path.join(PAYLOADS, name), "rb") as f:
            return f.read()

    # -- helpers -------------------------------------------------------
    def wait_until(self, fn, timeout=10, what="condition"):
        end = time.monotonic() + timeout
        while True:
            v = fn()
            if v:
                return v
            if time.monotonic() > end:
                raise AssertionError("timed out waiting for " + what)
            time.sleep(0.05)


class Fake:
    """A fake peer process (tests/fakes/fake_NAME.py) on a free port."""

    def __init__(self, name, *args):
        self.proc = subprocess.Popen(
            ["python3", os.path.join(ROOT, "tests", "fakes",
                                     "fake_%s.py" % name), "--port", "0"] +
            list(args),
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.port = int(self.proc.stdout.readline().strip())
        self.url = "http://127.0.0.1:%d" % self.port

    def _call(self, method, path, body=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            data = json.dumps(body).encode() if body is not None else None
            c.request(method, path, body=data,
                      headers={"Content-Type": "application/json"})
            r = c.getresponse()
            return json.loads(r.read() or b"null")
        finally:
            c.close()

    def script(self, steps):
        return self._call("POST", "/__script", steps)

    def requests(self):
        return self._call("GET", "/__requests")

    def reset(self):
        return self._call("POST", "/__reset", {})

    def chaos(self, p, steps, seed=None):
        """With probability p an unscripted request gets one of steps."""
        return self._call("POST", "/__chaos", {"p": p, "steps": steps,
                                               "seed": seed})

    def calm(self):
        return self._call("DELETE", "/__chaos")

    def config(self, **kw):
        return self._call("POST", "/__config", kw)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def eq(got, want, what=""):
    """assert got == want with both shown."""
    if got != want:
        raise AssertionError("%s: got %r, want %r" % (what, got, want))
