-- 70_funnel.sql -- the funnel's metrics and current state as views,
-- and the bridge an outcome without its shift belongs to.
-- Re-applied by `modegate migrate` on every run (CREATE OR REPLACE): edit
-- a function here, never in a numbered migration.
-- SPDX-License-Identifier: MIT

-- Funnel -----------------------------------------------------------------

-- The state name of DESIGN.md §3 for a funnel status.
CREATE OR REPLACE FUNCTION mg_funnel_stage(p_status text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE p_status
	WHEN 'interesse_confirmado' THEN 'qualificando'
	WHEN 'ponte_feita' THEN 'contatado'
	WHEN 'aguardando_desfecho' THEN 'aguardando'
	WHEN 'fechado_com_responsavel' THEN 'convertido'
	WHEN 'nao_fechou' THEN 'nao_convertido'
	WHEN 'sem_resposta' THEN 'sem_resposta' END
$$;

-- One row per bridge (conversation, shift): when it was made, the
-- interest it answered (the latest interesse_confirmado of the
-- conversation for that shift or for no shift, at or before the
-- bridge), and what came after it for that shift or for no shift: the
-- first aguardando_desfecho or outcome, and whether it closed.
CREATE OR REPLACE VIEW funnel_bridges AS
	SELECT b.conversation_id, b.vaga_id, b.created_at AS bridged_at,
	    (SELECT max(i.created_at) FROM funnel_events i
		WHERE i.conversation_id = b.conversation_id
		    AND i.status = 'interesse_confirmado'
		    AND (i.vaga_id = b.vaga_id OR i.vaga_id IS NULL)
		    AND i.created_at <= b.created_at) AS interest_at,
	    (SELECT min(f.created_at) FROM funnel_events f
		WHERE f.conversation_id = b.conversation_id
		    AND f.status IN ('aguardando_desfecho',
			'fechado_com_responsavel', 'nao_fechou', 'sem_resposta')
		    AND (f.vaga_id = b.vaga_id OR f.vaga_id IS NULL)
		    AND f.created_at >= b.created_at) AS followed_up_at,
	    EXISTS (SELECT 1 FROM funnel_events f
		WHERE f.conversation_id = b.conversation_id
		    AND f.status = 'fechado_com_responsavel'
		    AND (f.vaga_id = b.vaga_id OR f.vaga_id IS NULL)
		    AND f.created_at >= b.created_at) AS closed
	FROM (SELECT DISTINCT ON (conversation_id, vaga_id) conversation_id,
		vaga_id, created_at
	    FROM funnel_events WHERE status = 'ponte_feita'
	    ORDER BY conversation_id, vaga_id, created_at, id) b;

-- A day belongs to a period: the day itself, or (total) the range.
CREATE OR REPLACE FUNCTION mg_in_period(p_d date, p_day date, p_since date,
    p_until date) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN p_day IS NOT NULL THEN p_d = p_day
	    ELSE (p_since IS NULL OR p_d >= p_since)
		AND (p_until IS NULL OR p_d <= p_until) END
$$;

-- mg_funnel_metrics(since, until): the seed's four metrics for the days
-- since..until (NULL: unbounded), one 'total' period for the whole range
-- and one per day (YYYY-MM-DD), in long form: period, day (NULL for
-- total), ord, metric, numerator, denominator, value, unit, target, met
-- (NULL when there is nothing to measure). Definitions:
--  bridge_rate      conversations with a first interesse_confirmado in
--                   the period that have a ponte_feita at or after it ÷
--                   those conversations (%, target > 60)
--  conversion_rate  bridges (conversation, shift) made in the period
--                   later closed (fechado_com_responsavel for that shift
--                   or for no shift) ÷ those bridges (%, > 30)
--  time_to_bridge_median / _avg  minutes from the interest a bridge
--                   answered to the bridge, for bridges made in the
--                   period that have one (target < 10; "met" on each)
--  followup_rate    bridges made in the period and older than
--                   modegate.followup_hours (default 48) that have an
--                   aguardando_desfecho or an outcome after them ÷ those
--                   bridges (%, target 100)
CREATE OR REPLACE FUNCTION mg_funnel_metrics(p_since date, p_until date)
RETURNS TABLE (period text, day date, ord int, metric text,
    numerator bigint, denominator bigint, value numeric, unit text,
    target text, met boolean)
LANGUAGE sql STABLE AS $$
	WITH interest AS (
		SELECT f.conversation_id, min(f.created_at) AS at
		FROM funnel_events f WHERE f.status = 'interesse_confirmado'
		GROUP BY f.conversation_id
	), conv AS (
		SELECT i.at::date AS d, EXISTS (SELECT 1 FROM funnel_events b
			WHERE b.conversation_id = i.conversation_id
			    AND b.status = 'ponte_feita'
			    AND b.created_at >= i.at) AS bridged
		FROM interest i
	), br AS (
		SELECT b.bridged_at::date AS d, b.closed,
		    extract(epoch FROM b.bridged_at - b.interest_at) / 60.0 AS mins,
		    b.bridged_at <= now() - make_interval(hours =>
			mg_setting('followup_hours', 48)::int) AS due,
		    b.followed_up_at IS NOT NULL AS done
		FROM funnel_bridges b
	), periods AS (
		SELECT 'total'::text AS period, NULL::date AS day
		UNION ALL
		SELECT DISTINCT to_char(x.d, 'YYYY-MM-DD'), x.d
		FROM (SELECT d FROM conv UNION SELECT d FROM br) x
	), p AS (
		SELECT * FROM periods
		WHERE period = 'total' OR ((p_since IS NULL OR day >= p_since)
		    AND (p_until IS NULL OR day <= p_until))
	), m AS (
		SELECT p.period, p.day,
		    (SELECT count(*) FILTER (WHERE c.bridged) FROM conv c
			WHERE mg_in_period(c.d, p.day, p_since, p_until)) AS bn,
		    (SELECT count(*) FROM conv c
			WHERE mg_in_period(c.d, p.day, p_since, p_until)) AS bd,
		    (SELECT count(*) FILTER (WHERE b.closed) FROM br b
			WHERE mg_in_period(b.d, p.day, p_since, p_until)) AS cn,
		    (SELECT count(*) FROM br b
			WHERE mg_in_period(b.d, p.day, p_since, p_until)) AS cd,
		    (SELECT count(b.mins) FROM br b
			WHERE mg_in_period(b.d, p.day, p_since, p_until)) AS tn,
		    (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY b.mins)
			FROM br b
			WHERE mg_in_period(b.d, p.day, p_since, p_until)) AS tmed,
		    (SELECT avg(b.mins) FROM br b
			WHERE mg_in_period(b.d, p.day, p_since, p_until)) AS tavg,
		    (SELECT count(*) FILTER (WHERE b.due AND b.done) FROM br b
			WHERE mg_in_period(b.d, p.day, p_since, p_until)) AS fn,
		    (SELECT count(*) FILTER (WHERE b.due) FROM br b
			WHERE mg_in_period(b.d, p.day, p_since, p_until)) AS fd
		FROM p
	)
	SELECT m.period, m.day, x.ord, x.metric, x.num, x.den,
	    round(x.val::numeric, 1), x.unit, x.target,
	    CASE WHEN x.val IS NULL THEN NULL
		WHEN x.ord = 1 THEN x.val > 60 WHEN x.ord = 2 THEN x.val > 30
		WHEN x.ord IN (3, 4) THEN x.val < 10 ELSE x.val >= 100 END
	FROM m, LATERAL (VALUES
	    (1, 'bridge_rate', m.bn, m.bd,
		100.0 * m.bn / nullif(m.bd, 0), '%', '> 60 %'),
	    (2, 'conversion_rate', m.cn, m.cd,
		100.0 * m.cn / nullif(m.cd, 0), '%', '> 30 %'),
	    (3, 'time_to_bridge_median', NULL::bigint, m.tn,
		m.tmed::numeric, 'min', '< 10 min'),
	    (4, 'time_to_bridge_avg', NULL::bigint, m.tn,
		m.tavg::numeric, 'min', '< 10 min'),
	    (5, 'followup_rate', m.fn, m.fd,
		100.0 * m.fn / nullif(m.fd, 0), '%', '100 %'))
	    AS x (ord, metric, num, den, val, unit, target)
	ORDER BY m.day NULLS FIRST, x.ord
$$;

-- The four metrics overall ('total') and by day, each beside its target.
CREATE OR REPLACE VIEW funnel_metrics AS
	SELECT * FROM mg_funnel_metrics(NULL, NULL);

-- The latest funnel status per conversation and shift. An event without
-- a shift (an outcome the doctor reported in chat) belongs to the
-- conversation's latest bridge made before it; a conversation's
-- shift-less row is shown only while it has no bridge.
CREATE OR REPLACE VIEW funnel_current AS
	WITH ev AS (
		SELECT f.*, coalesce(f.vaga_id, (SELECT b.vaga_id
			FROM funnel_events b
			WHERE b.conversation_id = f.conversation_id
			    AND b.status = 'ponte_feita'
			    AND b.created_at <= f.created_at
			ORDER BY b.created_at DESC, b.id DESC LIMIT 1)) AS vaga
		FROM funnel_events f
	), latest AS (
		SELECT DISTINCT ON (conversation_id, vaga) *
		FROM ev
		ORDER BY conversation_id, vaga, created_at DESC, id DESC
	)
	SELECT l.conversation_id, c.phone_number_id, c.wa_id,
	    l.vaga AS vaga_id, v.hospital, v.data AS vaga_data, l.status,
	    mg_funnel_stage(l.status) AS stage,
	    l.created_at AS status_at,
	    coalesce(l.responsavel, v.responsavel_nome) AS responsavel
	FROM latest l
	JOIN conversations c ON c.id = l.conversation_id
	LEFT JOIN vagas v ON v.id = l.vaga
	WHERE l.vaga IS NOT NULL OR NOT EXISTS (SELECT 1 FROM ev e
		WHERE e.conversation_id = l.conversation_id
		    AND e.vaga IS NOT NULL);

-- Funnel rows of an outcome written without their shift (the router
-- reads "fechei" in the doctor's words, not which shift it was) belong
-- to the conversation's latest bridge: its vaga and, when not given, its
-- responsible person.
CREATE OR REPLACE FUNCTION mg_funnel_bridge() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
	b	record;
BEGIN
	SELECT h.vaga_id, v.responsavel_nome INTO b
	FROM handoffs h JOIN vagas v ON v.id = h.vaga_id
	WHERE h.conversation_id = NEW.conversation_id
	ORDER BY h.created_at DESC, h.id DESC LIMIT 1;
	IF FOUND THEN
		NEW.vaga_id := b.vaga_id;
		NEW.responsavel := coalesce(NEW.responsavel, b.responsavel_nome);
	END IF;
	RETURN NEW;
END $$;

CREATE OR REPLACE TRIGGER funnel_events_bridge
	BEFORE INSERT ON funnel_events
	FOR EACH ROW WHEN (NEW.vaga_id IS NULL AND NEW.status IN
	    ('aguardando_desfecho', 'fechado_com_responsavel', 'nao_fechou',
	    'sem_resposta'))
	EXECUTE FUNCTION mg_funnel_bridge();

-- Every funnel row about a shift carries the shift's origin and its
-- responsible person's id; a ponte_feita row carries the seconds since the
-- interest it answers (the latest interesse_confirmado of the conversation
-- for that shift or none, at or before it). Runs after funnel_events_bridge
-- (trigger names fire in order), so an outcome's shift is known.
CREATE OR REPLACE FUNCTION mg_funnel_enrich() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
	v	record;
BEGIN
	IF NEW.vaga_id IS NOT NULL THEN
		SELECT origem_vaga, responsavel_id INTO v FROM vagas
		WHERE id = NEW.vaga_id;
		IF FOUND THEN
			NEW.origem_vaga := coalesce(NEW.origem_vaga, v.origem_vaga);
			NEW.responsavel_id := coalesce(NEW.responsavel_id,
			    v.responsavel_id);
		END IF;
	END IF;
	IF NEW.status = 'ponte_feita' AND NEW.tempo_ate_ponte IS NULL THEN
		NEW.tempo_ate_ponte := (SELECT extract(epoch FROM
		    NEW.created_at - max(i.created_at))::int
		    FROM funnel_events i
		    WHERE i.conversation_id = NEW.conversation_id
			AND i.status = 'interesse_confirmado'
			AND (i.vaga_id = NEW.vaga_id OR i.vaga_id IS NULL)
			AND i.created_at <= NEW.created_at);
	END IF;
	RETURN NEW;
END $$;

CREATE OR REPLACE TRIGGER funnel_events_enrich
	BEFORE INSERT ON funnel_events
	FOR EACH ROW EXECUTE FUNCTION mg_funnel_enrich();
