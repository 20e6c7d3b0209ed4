-- 20_audit.sql -- the audit trail: feature flag changes stamped and
-- recorded in feature_flag_changes (with NOTIFY modegate_flags), and the
-- append-only triggers of feature_flag_changes, audit_log and
-- funnel_events.
-- Re-applied by `modegate migrate` on every run (CREATE OR REPLACE): edit
-- a function here, never in a numbered migration.
-- SPDX-License-Identifier: MIT

-- A plain UPDATE that sets neither updated_by nor reason is attributed
-- to the database user, with no reason (never the previous change's).
CREATE OR REPLACE FUNCTION mg_flag_stamp() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	NEW.updated_at := now();
	IF TG_OP = 'UPDATE' THEN
		IF NEW.updated_by IS NOT DISTINCT FROM OLD.updated_by AND
		    NEW.reason IS NOT DISTINCT FROM OLD.reason THEN
			NEW.updated_by := session_user;
			NEW.reason := NULL;
		END IF;
	END IF;
	NEW.updated_by := coalesce(NEW.updated_by, session_user);
	RETURN NEW;
END $$;

-- History row and NOTIFY for every insert, update or delete of a flag.
CREATE OR REPLACE FUNCTION mg_flag_history() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
	o feature_flags;
	n feature_flags;
BEGIN
	IF TG_OP <> 'INSERT' THEN o := OLD; END IF;
	IF TG_OP <> 'DELETE' THEN n := NEW; END IF;
	INSERT INTO feature_flag_changes (name, old_value, new_value,
	    old_percent, new_percent, changed_by, reason)
	VALUES (coalesce(n.name, o.name), o.value, n.value, o.percent,
	    n.percent, coalesce(n.updated_by, session_user), n.reason);
	PERFORM pg_notify('modegate_flags', json_build_object(
	    'name', coalesce(n.name, o.name), 'value', n.value,
	    'percent', n.percent)::text);
	RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER feature_flags_stamp
	BEFORE INSERT OR UPDATE ON feature_flags
	FOR EACH ROW EXECUTE FUNCTION mg_flag_stamp();
CREATE OR REPLACE TRIGGER feature_flags_history
	AFTER INSERT OR UPDATE OR DELETE ON feature_flags
	FOR EACH ROW EXECUTE FUNCTION mg_flag_history();

-- Append-only tables ---------------------------------------------------

-- Refuses UPDATE and DELETE (row trigger) and TRUNCATE (statement trigger).
CREATE OR REPLACE FUNCTION mg_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION '%: append-only table, % refused', TG_TABLE_NAME, TG_OP
	    USING ERRCODE = 'insufficient_privilege';
END $$;

CREATE OR REPLACE TRIGGER feature_flag_changes_append_only
	BEFORE UPDATE OR DELETE ON feature_flag_changes
	FOR EACH ROW EXECUTE FUNCTION mg_append_only();
CREATE OR REPLACE TRIGGER feature_flag_changes_no_truncate
	BEFORE TRUNCATE ON feature_flag_changes
	FOR EACH STATEMENT EXECUTE FUNCTION mg_append_only();

CREATE OR REPLACE TRIGGER audit_log_append_only
	BEFORE UPDATE OR DELETE ON audit_log
	FOR EACH ROW EXECUTE FUNCTION mg_append_only();
CREATE OR REPLACE TRIGGER audit_log_no_truncate
	BEFORE TRUNCATE ON audit_log
	FOR EACH STATEMENT EXECUTE FUNCTION mg_append_only();
CREATE OR REPLACE TRIGGER funnel_events_append_only
	BEFORE UPDATE OR DELETE ON funnel_events
	FOR EACH ROW EXECUTE FUNCTION mg_append_only();
CREATE OR REPLACE TRIGGER funnel_events_no_truncate
	BEFORE TRUNCATE ON funnel_events
	FOR EACH STATEMENT EXECUTE FUNCTION mg_append_only();
