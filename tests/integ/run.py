#!/usr/bin/env python3
# run.py -- run every integration case (test_* functions of
# tests/integ/test_*.py) against one throwaway PostgreSQL cluster, each
# case with its own database and modegate; prints TAP.
#
#   python3 tests/integ/run.py [SUBSTRING ...]   (only matching cases)
# SPDX-License-Identifier: MIT
import importlib.util
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import privacy  # noqa: E402


def discover(filters):
    here = os.path.dirname(os.path.abspath(__file__))
    cases = []
    for fn in sorted(os.listdir(here)):
        if not (fn.startswith("test_") and fn.endswith(".py")):
            continue
        spec = importlib.util.spec_from_file_location(fn[:-3],
                                                      os.path.join(here, fn))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for name in sorted(vars(mod), key=lambda n: getattr(
                getattr(mod, n), "__code__", None) and
                getattr(mod, n).__code__.co_firstlineno or 0):
            fn_ = getattr(mod, name)
            if name.startswith("test_") and callable(fn_):
                full = "%s.%s" % (fn[:-3], name)
                if not filters or any(f in full for f in filters):
                    cases.append((full, fn_))
    return cases


def privacy_case(n):
    """The last case: no secret, phone number or message body sent by the
    cases above shows in the logs of the servers that ran at info."""
    found, checked = privacy.leaks()
    name = ("privacy: %d logs at info: no secret, phone number or message "
            "body (%d secrets, %d numbers, %d bodies, %d body patterns "
            "watched)" % (checked, len(privacy.secrets), len(privacy.numbers),
                          len(privacy.bodies), len(privacy.patterns)))
    if checked == 0:
        print("ok %d - privacy # SKIP no server ran at level info" % n)
        return 0
    if not found:
        print("ok %d - %s" % (n, name))
        return 0
    print("not ok %d - %s" % (n, name))
    for path, kind, v, line in found[:30]:
        print("#   %s: %s %r in: %s" % (os.path.basename(path), kind, v,
                                         line[:200]))
    return 1


def main():
    cases = discover(sys.argv[1:])
    print("1..%d" % (len(cases) + 1))
    cluster = harness.Cluster()
    failed = 0
    try:
        for i, (name, fn) in enumerate(cases, 1):
            h = harness.Harness(cluster, name.replace(".", "_"))
            t0 = time.monotonic()
            try:
                fn(h)
                ok = True
            except Exception:
                ok = False
                err = traceback.format_exc()
            finally:
                h.close()
            dt = time.monotonic() - t0
            if ok:
                print("ok %d - %s (%.1fs)" % (i, name, dt))
            else:
                failed += 1
                print("not ok %d - %s" % (i, name))
                for line in err.rstrip().splitlines():
                    print("#   " + line)
                for line in h.log().rstrip().splitlines()[-15:]:
                    print("#   | " + line)
            sys.stdout.flush()
        failed += privacy_case(len(cases) + 1)
    finally:
        cluster.destroy()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
