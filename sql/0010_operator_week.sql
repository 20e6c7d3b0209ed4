-- 0010_operator_week.sql -- what an operator's first week asked for.
-- The table of rule files' values SQL reads (rule_settings, below).
-- The functions of this change (sql/functions/): mg_takeover and
-- mg_release change nothing on a chat already in the state asked for;
-- mg_setting reads rule_settings first; mg_rule_setting_set writes it.
-- SPDX-License-Identifier: MIT

-- The router's pending timeout has one source, mode/transitions.json
-- (pending_timeout_minutes): `modegate migrate` and every `modegate
-- serve` write it here, and mg_setting reads this table before any
-- modegate.* setting, so the SQL of the sweep, funnel_metrics and
-- sql/queries/ cannot disagree with the router.
CREATE TABLE rule_settings (
	name		text PRIMARY KEY,
	value		numeric NOT NULL,
	source		text NOT NULL,
	updated_at	timestamptz NOT NULL DEFAULT now()
);
INSERT INTO rule_settings (name, value, source)
VALUES ('pending_timeout_minutes', 30, 'mode/transitions.json (default)');
