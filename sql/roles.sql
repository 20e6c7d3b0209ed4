-- roles.sql -- the application role modegate_app (not a migration).
--
-- Run it as the owner of the schema (the role that runs `modegate migrate`)
-- or as a superuser, connected to modegate's database, AFTER `modegate
-- migrate`; run it again after every migrate (it is idempotent):
--
--   modegate migrate                          # as the owner
--   psql -v ON_ERROR_STOP=1 -d modegate -f sql/roles.sql
--   psql -d modegate -c "ALTER ROLE modegate_app PASSWORD '...'"  # once
--
-- Then `modegate serve` and the operators' commands (flag, takeover,
-- release, set-mode, funnel) connect as modegate_app. The role can do
-- everything they need -- read and write the working tables, call the mg_*
-- functions, LISTEN/NOTIFY -- but it owns nothing, so it cannot run DDL,
-- drop or disable the append-only triggers, and it has no UPDATE, DELETE
-- or TRUNCATE privilege on the audit trail (audit_log, funnel_events,
-- feature_flag_changes): those fail with "permission denied" before any
-- trigger runs. Migrations stay with the owner. Personal data in the audit
-- trail is blanked only by the owner's SECURITY DEFINER functions
-- mg_retain and mg_forget (sql/functions/95_lgpd.sql), which the role may
-- call.
-- SPDX-License-Identifier: MIT

DO $$
DECLARE
	owner	name;
	audit	text[] := ARRAY['audit_log', 'funnel_events',
		    'feature_flag_changes'];
	t	text;
BEGIN
	SELECT tableowner INTO owner FROM pg_tables
	 WHERE schemaname = 'public' AND tablename = 'audit_log';
	IF owner IS NULL THEN
		RAISE EXCEPTION 'roles.sql: no audit_log in %: run modegate '
		    'migrate first', current_database();
	END IF;
	IF owner = 'modegate_app' THEN
		RAISE EXCEPTION 'roles.sql: modegate_app owns the schema; run '
		    'the migrations as another role';
	END IF;
	IF NOT EXISTS (SELECT 1 FROM pg_roles
	    WHERE rolname = 'modegate_app') THEN
		CREATE ROLE modegate_app LOGIN NOSUPERUSER NOCREATEDB
		    NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS;
	END IF;

	EXECUTE format('GRANT CONNECT ON DATABASE %I TO modegate_app',
	    current_database());
	GRANT USAGE ON SCHEMA public TO modegate_app;

	-- The working tables: everything a turn, the sender and the
	-- operators' commands do (rows only, never DDL).
	GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public
	    TO modegate_app;
	GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public
	    TO modegate_app;
	GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO modegate_app;

	-- The audit trail: append and read only.
	FOREACH t IN ARRAY audit LOOP
		EXECUTE format('REVOKE UPDATE, DELETE, TRUNCATE ON %I '
		    'FROM modegate_app, PUBLIC', t);
	END LOOP;

	-- The pseudonyms' key and the retention passes' progress belong to
	-- the owner: mg_forget and mg_retain (SECURITY DEFINER) use them, the
	-- application role cannot read the key nor move the passes.
	FOREACH t IN ARRAY ARRAY['lgpd_key', 'lgpd_retention'] LOOP
		IF to_regclass('public.' || t) IS NOT NULL THEN
			EXECUTE format('REVOKE ALL ON %I FROM modegate_app, '
			    'PUBLIC', t);
		END IF;
	END LOOP;

	-- serve reads the schema version; only migrate writes it.
	IF to_regclass('public.schema_migrations') IS NOT NULL THEN
		REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON schema_migrations
		    FROM modegate_app;
	END IF;

	-- Tables a later migration creates (as the same owner) are usable
	-- at once; running this file again re-applies the revokes above.
	EXECUTE format('ALTER DEFAULT PRIVILEGES FOR ROLE %I IN SCHEMA public '
	    'GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO modegate_app',
	    owner);
	EXECUTE format('ALTER DEFAULT PRIVILEGES FOR ROLE %I IN SCHEMA public '
	    'GRANT USAGE, SELECT ON SEQUENCES TO modegate_app', owner);
END $$;
