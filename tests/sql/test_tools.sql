-- test_tools.sql -- Julia's tools against the demo shifts (seed_demo.sql).
-- SPDX-License-Identifier: MIT
BEGIN;
SELECT plan(20);

CREATE FUNCTION pg_temp.ids(r jsonb) RETURNS bigint[] LANGUAGE sql AS $$
	SELECT coalesce(array_agg((v ->> 'id')::bigint ORDER BY (v ->> 'id')::bigint), '{}')
	FROM jsonb_array_elements(r -> 'vagas') v
$$;
CREATE FUNCTION pg_temp.expect(filter text) RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE r bigint[];
BEGIN
	EXECUTE 'SELECT coalesce(array_agg(id ORDER BY id), ''{}'') FROM
	    (SELECT id, data FROM vagas WHERE status = ''aberta''
	    AND data >= current_date AND ' || filter ||
	    ' ORDER BY data, id LIMIT 5) x' INTO r;
	RETURN r;
END $$;

INSERT INTO conversations (phone_number_id, wa_id) VALUES ('PN1', '5511933333333');
CREATE TEMP TABLE cv AS SELECT id FROM conversations WHERE wa_id = '5511933333333';

SELECT is(pg_temp.ids(mg_tool_buscar_vagas((SELECT id FROM cv), '{"regiao":"sao paulo"}')),
    pg_temp.expect($$regiao LIKE 'São Paulo%'$$),
    'buscar_vagas: "sao paulo" finds "São Paulo" (accents and case ignored), open only, at most 5');
SELECT ok(cardinality(pg_temp.expect($$regiao LIKE 'São Paulo%'$$)) = 5,
    'the seed has more than five open shifts in São Paulo (the limit is exercised)');
SELECT is(pg_temp.ids(mg_tool_buscar_vagas((SELECT id FROM cv),
    '{"especialidade":"CLINICA MEDICA","turno":"noturno"}')),
    pg_temp.expect($$especialidade = 'Clínica Médica' AND turno = 'noturno'$$),
    'buscar_vagas: specialty and shift combined');
SELECT is(pg_temp.ids(mg_tool_buscar_vagas((SELECT id FROM cv), '{"especialidade":"pedi"}')),
    pg_temp.expect($$especialidade = 'Pediatria'$$),
    'buscar_vagas: partial word');
SELECT ok(NOT (11 = ANY (pg_temp.ids(mg_tool_buscar_vagas((SELECT id FROM cv),
    '{"especialidade":"pediatria","regiao":"zona leste"}')))),
    'buscar_vagas: a closed shift (fechada) is never offered');
SELECT is(pg_temp.ids(mg_tool_buscar_vagas((SELECT id FROM cv),
    format('{"data":"%s"}', current_date + 3)::jsonb)),
    pg_temp.expect($$data = current_date + 3$$), 'buscar_vagas: by date');
SELECT is(pg_temp.ids(mg_tool_buscar_vagas((SELECT id FROM cv),
    format('{"data_de":"%s","data_ate":"%s"}', current_date + 2,
    current_date + 4)::jsonb)),
    pg_temp.expect($$data BETWEEN current_date + 2 AND current_date + 4$$),
    'buscar_vagas: a range, data_de to data_ate inclusive');
SELECT is(pg_temp.ids(mg_tool_buscar_vagas((SELECT id FROM cv),
    format('{"data_de":"%s"}', current_date + 3)::jsonb)),
    pg_temp.expect($$data = current_date + 3$$),
    'buscar_vagas: data_de alone is that day');
-- A shift this doctor did not close is not offered to him again.
INSERT INTO funnel_events (conversation_id, vaga_id, status, doctor_key)
SELECT (SELECT id FROM cv), min(id), 'nao_fechou', '5511933333333'
FROM vagas WHERE status = 'aberta' AND data = current_date + 3;
SELECT ok(NOT ((SELECT min(id) FROM vagas WHERE status = 'aberta' AND
    data = current_date + 3) = ANY (pg_temp.ids(mg_tool_buscar_vagas(
    (SELECT id FROM cv), format('{"data":"%s"}', current_date + 3)::jsonb)))),
    'buscar_vagas: the shift that did not close is not offered again');
SELECT is(pg_temp.ids(mg_tool_buscar_vagas((SELECT id FROM cv),
    '"{\"regiao\":\"guarulhos\"}"')), pg_temp.expect($$regiao = 'Guarulhos'$$),
    'buscar_vagas: arguments as a JSON string');
SELECT is(mg_tool_buscar_vagas((SELECT id FROM cv), '{"regiao":"Manaus"}') -> 'vagas',
    '[]', 'buscar_vagas: no match gives an empty list');
SELECT is(mg_tool_buscar_vagas((SELECT id FROM cv), '{"data":"amanha"}') ->> 'ok',
    'false', 'buscar_vagas: an invalid date is an error for the LLM');
SELECT ok(mg_tool_buscar_vagas((SELECT id FROM cv), '{}')::text !~ 'responsavel|contato|90000|valor',
    'buscar_vagas never reveals the responsible person, contact or pay');

SELECT is(mg_tool_criar_handoff_externo((SELECT id FROM cv), '{"vaga_id": 3}') -> 'responsavel',
    '{"nome":"Ricardo Nogueira","contato":"+55 11 90000-0202"}',
    'criar_handoff_externo: an open shift gives the responsible person');
SELECT is(mg_tool_criar_handoff_externo((SELECT id FROM cv), '{"vaga_id": "3"}') -> 'commit',
    '{"handoffs":[{"vaga_id":3}]}', 'criar_handoff_externo: the commit fragment records the bridge');
SELECT is(mg_tool_criar_handoff_externo((SELECT id FROM cv), '{"vaga_id": 11}'),
    '{"ok":false,"erro":"vaga já fechada"}', 'criar_handoff_externo: a closed shift is refused');
SELECT is(mg_tool_criar_handoff_externo((SELECT id FROM cv), '{"vaga_id": 99999}') ->> 'ok',
    'false', 'criar_handoff_externo: an unknown shift is refused');
SELECT is(mg_tool_criar_handoff_externo((SELECT id FROM cv), '{"vaga_id": "1; DROP TABLE vagas"}') ->> 'ok',
    'false', 'criar_handoff_externo: a malformed id is refused');

SELECT is(mg_tool_registrar_status_intermediacao((SELECT id FROM cv),
    '{"status":"fechado_com_responsavel","vaga_id":3}') -> 'commit' -> 'funnel' -> 0 ->> 'status',
    'fechado_com_responsavel', 'registrar_status_intermediacao: a funnel status to commit');
SELECT is(mg_tool_registrar_status_intermediacao((SELECT id FROM cv),
    '{"status":"reservado"}') ->> 'ok', 'false',
    'registrar_status_intermediacao: an unknown status is refused');

SELECT * FROM finish();
ROLLBACK;
