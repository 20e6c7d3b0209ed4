-- 10_common.sql -- helpers the other function files use: accent and
-- case folding, and the modegate.* database settings.
--
-- Settings (ALTER DATABASE modegate SET ...; defaults in brackets):
-- modegate.followup_hours [48] -- a bridge older than this is due for its
-- follow-up; modegate.pending_timeout_minutes [30] -- must match
-- mode/transitions.json pending_timeout_minutes. Days are calendar days
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

-- A numeric setting (modegate.NAME) or its default.
CREATE OR REPLACE FUNCTION mg_setting(p_name text,
    p_default numeric) RETURNS numeric
LANGUAGE sql STABLE AS $$
	SELECT coalesce(nullif(current_setting('modegate.' || p_name, true),
	    '')::numeric, p_default)
$$;
