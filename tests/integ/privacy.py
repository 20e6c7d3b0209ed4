# privacy.py -- what the integration harness sent modegate that must never
# reach its logs at level info or above: secrets and tokens from the
# environment, the doctors' phone numbers (wa_id / from of every webhook
# posted) and the message bodies. run.py checks every server log of the
# run against them as its last case.
# SPDX-License-Identifier: MIT
import json
import re

SECRET_ENV = ("WHATSAPP_APP_SECRET", "WHATSAPP_VERIFY_TOKEN",
              "WHATSAPP_TOKEN", "LLM_API_KEY")
MIN_BODY = 10		# shorter texts ("Oi", "sim") occur in any prose

secrets = set()
numbers = set()
bodies = set()
patterns = set()	# regexes of bodies sent in bulk (load.py)
logs = {}		# path -> log level the server ran at


def watch_secret(*values):
    secrets.update(v for v in values if v and len(v) >= 6)


def watch_numbers(*values):
    numbers.update(values)


def watch_pattern(regex):
    """Bodies sent in bulk: one regex matching all of them."""
    patterns.add(regex)


def watch_log(path, level):
    logs[path] = level


def _walk(o):
    if isinstance(o, dict):
        for k, v in o.items():
            if k in ("from", "wa_id", "recipient_id") and \
                    isinstance(v, str) and re.fullmatch(r"\d{10,}", v):
                numbers.add(v)
            elif k == "body" and isinstance(v, str) and \
                    len(v.strip()) >= MIN_BODY:
                bodies.add(v.strip())
            else:
                _walk(v)
    elif isinstance(o, list):
        for v in o:
            _walk(v)


def watch_payload(body):
    """Record the numbers and texts of a webhook body (bytes)."""
    try:
        _walk(json.loads(body))
    except (ValueError, UnicodeDecodeError, RecursionError):
        pass


def leaks():
    """Every (log, what, line) where a watched value shows, in the logs of
    servers that ran at info or above; and how many logs were checked."""
    found, checked = [], 0
    bulk = re.compile("|".join(sorted(patterns))) if patterns else None
    for path, level in sorted(logs.items()):
        if level == "debug":
            continue
        try:
            with open(path, "rb") as f:
                text = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        checked += 1
        for line in text.splitlines():
            for kind, values in (("secret", secrets), ("phone", numbers),
                                 ("body", bodies)):
                for v in values:
                    if v in line:
                        found.append((path, kind, v, line))
            m = bulk.search(line) if bulk else None
            if m:
                found.append((path, "body", m.group(0), line))
    return found, checked
