-- test_funnel.sql -- the funnel of the design on a scripted dataset: each
-- of funnel_metrics' figures against numbers computed by hand, and the
-- columns every funnel row carries (tempo_ate_ponte, origem_vaga,
-- responsavel_id).
--
-- Five doctors show interest on the same day, five days ago, at t0:
--   A  bridge (vaga 1) at t0 + 6 min, later fechado_com_responsavel
--   B  bridge (vaga 2) at t0 + 15 min, later aguardando_desfecho, nao_fechou
--   E  bridge (vaga 1) at t0 + 3 min, nothing after it
--   C, D  no bridge
-- By hand: bridge rate 3/5 = 60.0 %; conversion 1/3 = 33.3 %; time to
-- bridge (3, 6, 15 min) median 6.0, mean 8.0; follow-up rate (bridges
-- older than 48 h with a follow-up or outcome after them) 2/3 = 66.7 %.
-- SPDX-License-Identifier: MIT
BEGIN;
SELECT plan(13);

INSERT INTO vagas (id, hospital, especialidade, regiao, turno, data,
    responsavel_nome, responsavel_contato, origem_vaga, responsavel_id)
VALUES (9101, 'Hospital A', 'Clínica Médica', 'Zona Sul', 'noturno',
    current_date + 3, 'Mariana', '+55 11 90000-0001', 'parceiro_x', 'R-17'),
    (9102, 'Hospital B', 'Pediatria', 'Zona Norte', 'diurno',
    current_date + 4, 'Rui', '+55 11 90000-0002', 'manual', NULL);

CREATE FUNCTION pg_temp.conv(k text) RETURNS bigint LANGUAGE sql AS $$
	INSERT INTO conversations (phone_number_id, wa_id) VALUES ('PNF', k)
	RETURNING id
$$;
CREATE FUNCTION pg_temp.ev(k text, st text, vaga bigint, mins int)
RETURNS void LANGUAGE sql AS $$
	INSERT INTO funnel_events (conversation_id, vaga_id, status,
	    doctor_key, created_at)
	SELECT id, vaga, st, k, date_trunc('day', now()) - interval '5 days'
	    + interval '10 hours' + make_interval(mins => mins)
	FROM conversations WHERE wa_id = k
$$;
SELECT pg_temp.conv(k) FROM unnest(ARRAY['A', 'B', 'C', 'D', 'E']) k;
SELECT pg_temp.ev(k, 'interesse_confirmado', NULL, 0)
FROM unnest(ARRAY['A', 'B', 'C', 'D', 'E']) k;
SELECT pg_temp.ev('A', 'ponte_feita', 9101, 6);
SELECT pg_temp.ev('B', 'ponte_feita', 9102, 15);
SELECT pg_temp.ev('E', 'ponte_feita', 9101, 3);
SELECT pg_temp.ev('A', 'fechado_com_responsavel', 9101, 600);
SELECT pg_temp.ev('B', 'aguardando_desfecho', 9102, 1500);
SELECT pg_temp.ev('B', 'nao_fechou', 9102, 1600);

CREATE FUNCTION pg_temp.m(metric text) RETURNS numeric LANGUAGE sql AS $$
	SELECT value FROM funnel_metrics WHERE period = 'total'
	    AND funnel_metrics.metric = m.metric
$$;
SELECT is(pg_temp.m('bridge_rate'), 60.0, 'bridge rate 3/5');
SELECT is((SELECT (numerator, denominator)::text FROM funnel_metrics
    WHERE period = 'total' AND metric = 'bridge_rate'), '(3,5)',
    'bridge rate counts');
SELECT is(pg_temp.m('conversion_rate'), 33.3, 'conversion 1/3');
SELECT is(pg_temp.m('time_to_bridge_median'), 6.0, 'median 6 min');
SELECT is(pg_temp.m('time_to_bridge_avg'), 8.0, 'mean 8 min');
SELECT is(pg_temp.m('followup_rate'), 66.7, 'follow-up 2/3');
SELECT is((SELECT count(*) FROM funnel_metrics WHERE period <> 'total'),
    5::bigint, 'one day, five metrics');

SELECT is((SELECT array_agg(tempo_ate_ponte ORDER BY doctor_key)
    FROM funnel_events WHERE status = 'ponte_feita'),
    ARRAY[360, 900, 180], 'tempo_ate_ponte: seconds since the interest');
SELECT is((SELECT (origem_vaga, responsavel_id)::text FROM funnel_events
    WHERE doctor_key = 'A' AND status = 'ponte_feita'), '(parceiro_x,R-17)',
    'the bridge carries the shift''s origin and responsible id');
SELECT is((SELECT origem_vaga FROM funnel_events
    WHERE doctor_key = 'B' AND status = 'nao_fechou'), 'manual',
    'an outcome carries them too');
SELECT is((SELECT count(*) FROM funnel_events WHERE status =
    'interesse_confirmado' AND origem_vaga IS NOT NULL), 0::bigint,
    'interest without a shift has no origin');

-- An outcome written without its shift (the doctor said "fechei") is tied
-- to the latest bridge and then enriched.
SELECT pg_temp.conv('F');
INSERT INTO handoffs (conversation_id, vaga_id)
SELECT id, 9101 FROM conversations WHERE wa_id = 'F';
INSERT INTO funnel_events (conversation_id, status, doctor_key)
SELECT id, 'fechado_com_responsavel', 'F' FROM conversations
WHERE wa_id = 'F';
SELECT is((SELECT (vaga_id, origem_vaga, responsavel_id)::text
    FROM funnel_events WHERE doctor_key = 'F'), '(9101,parceiro_x,R-17)',
    'a shift-less outcome: its bridge''s shift, origin and responsible');
SELECT is((SELECT tempo_ate_ponte FROM funnel_events
    WHERE status <> 'ponte_feita' AND tempo_ate_ponte IS NOT NULL
    LIMIT 1), NULL, 'tempo_ate_ponte only on bridges');

SELECT * FROM finish();
ROLLBACK;
