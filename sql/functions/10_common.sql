-- 10_common.sql -- helpers the other function files use: accent and
-- case folding, and the modegate.* database settings.
--
-- Settings (ALTER DATABASE modegate SET ...; defaults in brackets):
-- modegate.followup_hours [48] -- a bridge older than this is due for its
-- follow-up. The pending timeout is not a setting: mode/transitions.json
-- pending_timeout_minutes, recorded in rule_settings (sql/0010) by
-- migrate and serve, is what mg_setting returns. Days are calendar days
-- in the session's TimeZone (set it to America/Sao_Paulo for the
-- operators' day).
-- Re-applied by `modegate migrate` on every run (CREATE OR REPLACE): edit
-- a function here, never in a numbered migration.
-- SPDX-License-Identifier: MIT

-- Accent- and case-folding for partial matches ("sao paulo" finds "São
-- Paulo") without the unaccent extension (no superuser needed).
CREATE OR REPLACE FUNCTION mg_fold(s text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE RETURNS NULL ON NULL INPUT AS $$
	SELECT lower(translate(s,
	    'ÁÀÂÃÄáàâãäÉÈÊËéèêëÍÌÎÏíìîïÓÒÔÕÖóòôõöÚÙÛÜúùûüÇçÑñ',
	    'AAAAAaaaaaEEEEeeeeIIIIiiiiOOOOOoooooUUUUuuuuCcNn'))
$$;

-- Settings ---------------------------------------------------------------

-- A numeric setting: a rule file's value recorded in rule_settings
-- (sql/0010: the router's pending timeout, whose one source is
-- mode/transitions.json), else modegate.NAME, else the default.
CREATE OR REPLACE FUNCTION mg_setting(p_name text, p_default numeric)
RETURNS numeric
LANGUAGE sql STABLE AS $$
	SELECT coalesce((SELECT value FROM rule_settings WHERE name = p_name),
	    nullif(current_setting('modegate.' || p_name, true), '')::numeric,
	    p_default)
$$;

-- mg_rule_setting_set(name, value, source): record a rule file's value
-- (only when it changed, so concurrent starts do not fight).
CREATE OR REPLACE FUNCTION mg_rule_setting_set(p_name text, p_value numeric,
    p_source text) RETURNS void
LANGUAGE sql AS $$
	INSERT INTO rule_settings (name, value, source)
	VALUES (p_name, p_value, p_source)
	ON CONFLICT (name) DO UPDATE SET value = excluded.value,
	    source = excluded.source, updated_at = now()
	WHERE rule_settings.value IS DISTINCT FROM excluded.value
$$;
