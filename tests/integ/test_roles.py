# test_roles.py -- sql/roles.sql: the application role modegate_app runs
# the service and the operators' commands, and cannot rewrite the audit
# trail (UPDATE, DELETE, TRUNCATE on audit_log, funnel_events and
# feature_flag_changes fail with "permission denied"), nor get around it
# by disabling the append-only triggers.
# SPDX-License-Identifier: MIT
import os
import subprocess

import harness
from harness import eq
from test_turn import replies, send, settled

AUDIT = ("audit_log", "funnel_events", "feature_flag_changes")


def roles(h):
    """Run sql/roles.sql as the owner (the cluster's superuser)."""
    p = subprocess.run(["psql", "-qX", "-v", "ON_ERROR_STOP=1", "-f",
                        os.path.join(harness.ROOT, "sql", "roles.sql"),
                        h.env["DATABASE_URL"]], capture_output=True,
                       text=True)
    return p.returncode, p.stderr


def as_app(h):
    return h.env["DATABASE_URL"].replace("//modegate@", "//modegate_app@")


def app_sql(h, query):
    """Run query as modegate_app; returns (ok, error text)."""
    try:
        harness.psql(as_app(h), query)
        return True, ""
    except RuntimeError as e:
        return False, str(e)


def cli(h, env, *args):
    p = subprocess.run([h.bin] + list(args), env=env, capture_output=True,
                       text=True, timeout=30)
    return p.returncode, p.stdout + p.stderr


def test_roles_before_migrate_refused(h):
    rc, err = roles(h)
    assert rc != 0 and "run modegate migrate first" in err, err


def test_app_role_runs_a_turn_and_cannot_rewrite_audit(h):
    rc, out = h.migrate()
    eq(rc, 0, "migrate: " + out)
    for i in (1, 2):    # idempotent: an operator re-runs it after migrate
        rc, err = roles(h)
        eq(rc, 0, "roles.sql run %d: %s" % (i, err))
    # A later migrate re-applies sql/functions/ (CREATE OR REPLACE): the
    # functions keep the grants roles.sql gave them.
    rc, out = h.migrate()
    eq((rc, "0 applied" in out), (0, True), "migrate again: " + out)
    eq(h.sql1("SELECT count(*) FROM pg_proc WHERE pronamespace = "
              "'public'::regnamespace AND NOT has_function_privilege("
              "'modegate_app', oid, 'EXECUTE')"), "0",
       "modegate_app may run every function after migrate")
    eq(h.sql1("SELECT count(*) FROM pg_proc WHERE pronamespace = "
              "'public'::regnamespace AND NOT coalesce(proacl::text[] && "
              "ARRAY(SELECT 'modegate_app=X/' || proowner::regrole::text), "
              "false)"), "0", "the grants of roles.sql survive migrate")
    owner = h.env["DATABASE_URL"]
    h.start(DATABASE_URL=as_app(h), MODEGATE_COALESCE_MS="0")
    h.wait_until(lambda: h.get("/readyz")[0] == 200, 10,
                 "ready as modegate_app (reads schema_migrations)")
    send(h, "wamid.r1", "Oi, boa tarde")
    eq(settled(h, "wamid.r1"), "done", "turn as modegate_app")
    eq(len(replies(h)), 1, "the reply is in the outbox")
    h.wait_until(lambda: h.sql1("SELECT state FROM outbox WHERE kind = "
                                "'text'") == "dry_run", 10,
                 "the sender records the reply")
    assert int(h.sql1("SELECT count(*) FROM audit_log")) > 3, "audited"
    eq(h.sql1("SELECT string_agg(DISTINCT tableowner, ',') FROM "
              "pg_tables WHERE schemaname = 'public'"),
       "modegate", "the app role owns nothing")

    # The operators' commands as modegate_app.
    env = dict(h.env)
    env["DATABASE_URL"] = as_app(h)
    for args in (("flag", "set", "conversation_mode_enabled", "shadow",
                  "--by", "ana"),
                 ("flag", "list"),
                 ("takeover", "5511988887777", "--by", "ana"),
                 ("release", "5511988887777", "--by", "ana"),
                 ("set-mode", "5511988887777", "oferta", "--by", "ana"),
                 ("funnel",)):
        rc, out = cli(h, env, *args)
        eq(rc, 0, "%s as modegate_app: %s" % (" ".join(args), out))
    eq(h.sql1("SELECT changed_by FROM feature_flag_changes ORDER BY id "
              "DESC LIMIT 1"), "ana", "flag history appended")
    # migrate is the owner's job.
    rc, out = cli(h, env, "migrate")
    assert rc != 0 and "permission denied" in out, out

    # The audit trail: append and read only, whatever the trigger state.
    for t in AUDIT:
        ok, _ = app_sql(h, "SELECT count(*) FROM %s" % t)
        assert ok, "SELECT %s" % t
        for q in ("UPDATE %s SET created_at = now()" if t != AUDIT[2] else
                  "UPDATE %s SET changed_at = now()",
                  "DELETE FROM %s", "TRUNCATE %s",
                  "ALTER TABLE %s DISABLE TRIGGER USER", "DROP TABLE %s"):
            ok, err = app_sql(h, q % t)
            assert not ok, "%s succeeded as modegate_app" % (q % t)
            assert ("permission denied" in err or
                    "must be owner" in err), err
    ok, err = app_sql(h, "INSERT INTO schema_migrations VALUES (99, 'x')")
    assert not ok and "permission denied" in err, err
    # The owner keeps the triggers: even it cannot rewrite the trail.
    n = h.sql1("SELECT count(*) FROM audit_log")
    try:
        harness.psql(owner, "DELETE FROM audit_log")
        raise AssertionError("owner DELETE succeeded")
    except RuntimeError as e:
        assert "append-only" in str(e), e
    eq(h.sql1("SELECT count(*) FROM audit_log"), n, "nothing removed")
