-- 50_tools.sql -- Julia's tools (read-only during the turn).
--
-- Tool contract: mg_tool_<name>(conversation_id, args jsonb) returns a
-- jsonb object. Its "commit" member (when present) is a fragment of the
-- mg_commit_turn payload the worker merges into the turn (arrays
-- appended, "conversation" keys merged); everything else is the tool
-- result for the LLM (send it without "commit"). A tool never writes:
-- its effects land only if the turn commits with its lease. Invalid
-- arguments give {"ok":false,"erro":"..."} (in Portuguese, for the LLM).
-- Arguments arrive as an object; a JSON string holding an object is
-- accepted too.
-- Re-applied by `modegate migrate` on every run (CREATE OR REPLACE): edit
-- a function here, never in a numbered migration.
-- SPDX-License-Identifier: MIT

-- The tool arguments as an object (a JSON string holding an object is
-- parsed; anything else is an empty object).
CREATE OR REPLACE FUNCTION mg_tool_args(p_args jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	IF p_args IS NULL THEN
		RETURN '{}';
	END IF;
	IF jsonb_typeof(p_args) = 'string' THEN
		BEGIN
			p_args := (p_args #>> '{}')::jsonb;
		EXCEPTION WHEN others THEN
			RETURN '{}';
		END;
	END IF;
	IF jsonb_typeof(p_args) <> 'object' THEN
		RETURN '{}';
	END IF;
	RETURN p_args;
END $$;

-- Every word of p_needle is the start of a word of p_hay, ignoring case
-- and accents (words: runs of letters and digits): "sao paulo sul"
-- matches "São Paulo - Zona Sul", "pedi" matches "Pediatria" but not
-- "Ortopedia". An empty needle matches.
CREATE OR REPLACE FUNCTION mg_words_match(p_hay text,
    p_needle text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
	SELECT NOT EXISTS (
		SELECT 1 FROM regexp_split_to_table(mg_fold(coalesce(p_needle,
		    '')), '[^a-z0-9]+') w
		WHERE w <> '' AND position(' ' || w IN ' ' ||
		    regexp_replace(mg_fold(p_hay), '[^a-z0-9]+', ' ', 'g')) = 0)
$$;

-- The shift as shown to the doctor (no contact, no pay).
CREATE OR REPLACE FUNCTION mg_vaga_json(v vagas) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
	SELECT jsonb_build_object('id', v.id, 'hospital', v.hospital,
	    'especialidade', v.especialidade, 'regiao', v.regiao,
	    'turno', v.turno, 'data', v.data)
$$;

-- buscar_vagas {especialidade?, regiao?, turno?, data? (YYYY-MM-DD),
-- data_ate?}: open shifts from today on; each text filter matches when
-- all its words start words of the column, ignoring case and accents
-- (mg_words_match); at most 5, soonest first.
-- {"ok":true,"vagas":[{id,hospital,especialidade,regiao,turno,data}],
-- "total": n} -- never the responsible person's contact.
CREATE OR REPLACE FUNCTION mg_tool_buscar_vagas(p_conversation_id bigint,
    p_args jsonb)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
DECLARE
	a	jsonb := mg_tool_args(p_args);
	d1	date;
	d2	date;
	res	jsonb;
	total	int;
BEGIN
	BEGIN
		d1 := nullif(coalesce(a ->> 'data_de', a ->> 'data'), '')::date;
		d2 := nullif(a ->> 'data_ate', '')::date;
	EXCEPTION WHEN others THEN
		RETURN jsonb_build_object('ok', false,
		    'erro', 'data inválida: use AAAA-MM-DD');
	END;
	WITH hits AS (
		SELECT v FROM vagas v
		WHERE v.status = 'aberta' AND v.data >= current_date
		    AND mg_words_match(v.especialidade, a ->> 'especialidade')
		    AND mg_words_match(v.regiao, a ->> 'regiao')
		    AND mg_words_match(v.turno, a ->> 'turno')
		    AND (d1 IS NULL OR (d2 IS NULL AND v.data = d1) OR
			(d2 IS NOT NULL AND v.data >= d1))
		    AND (d2 IS NULL OR v.data <= d2)
		    -- a shift this doctor did not close is not offered again
		    AND NOT EXISTS (SELECT 1 FROM funnel_events f
			WHERE f.conversation_id = p_conversation_id
			    AND f.vaga_id = v.id AND f.status = 'nao_fechou')
	)
	SELECT (SELECT count(*) FROM hits),
	    coalesce((SELECT jsonb_agg(mg_vaga_json(h.v)
		ORDER BY (h.v).data, (h.v).id)
		FROM (SELECT v FROM hits ORDER BY (v).data, (v).id LIMIT 5) h),
		'[]')
	INTO total, res;
	RETURN jsonb_build_object('ok', true, 'vagas', res, 'total', total);
END $$;

-- The shift of a tool's vaga_id argument (number or digit string), or NULL.
CREATE OR REPLACE FUNCTION mg_tool_vaga(p_args jsonb) RETURNS vagas
LANGUAGE sql STABLE AS $$
	SELECT v FROM vagas v
	WHERE (mg_tool_args(p_args) ->> 'vaga_id') ~ '^\s*[0-9]{1,18}\s*$'
	    AND v.id = trim(mg_tool_args(p_args) ->> 'vaga_id')::bigint
$$;

-- criar_handoff_externo {vaga_id}: the shift must exist and be open.
-- {"ok":true,"vaga":{...},"responsavel":{"nome","contato"},
-- "ja_existente":bool,"commit":{"handoffs":[{"vaga_id"}]}} -- committing
-- it writes the bridge and funnel ponte_feita; the worker's core moves
-- oferta → followup (bridge made). Or {"ok":false,"erro"}.
CREATE OR REPLACE FUNCTION mg_tool_criar_handoff_externo(p_conversation_id
bigint,
    p_args jsonb) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE
	v vagas := mg_tool_vaga(p_args);
BEGIN
	IF v.id IS NULL THEN
		RETURN jsonb_build_object('ok', false,
		    'erro', 'vaga_id inexistente');
	END IF;
	IF v.status <> 'aberta' THEN
		RETURN jsonb_build_object('ok', false,
		    'erro', 'vaga já fechada');
	END IF;
	RETURN jsonb_build_object('ok', true, 'vaga', mg_vaga_json(v),
	    'responsavel', jsonb_build_object('nome', v.responsavel_nome,
		'contato', v.responsavel_contato),
	    'ja_existente', EXISTS (SELECT 1 FROM handoffs h
		WHERE h.conversation_id = p_conversation_id
		    AND h.vaga_id = v.id),
	    'commit', jsonb_build_object('handoffs',
		jsonb_build_array(jsonb_build_object('vaga_id', v.id))));
END $$;

-- registrar_status_intermediacao {status, vaga_id?, observacao?}: status
-- is a funnel status other than ponte_feita (written by the bridge
-- itself); vaga_id, when given, must exist.
-- {"ok":true,"status","commit":{"funnel":[{status,vaga_id,metadata}]}}.
CREATE OR REPLACE FUNCTION mg_tool_registrar_status_intermediacao(
    p_conversation_id bigint, p_args jsonb) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE
	a	jsonb := mg_tool_args(p_args);
	st	text := lower(trim(a ->> 'status'));
	v	vagas;
BEGIN
	IF st IS NULL OR st NOT IN ('interesse_confirmado',
	    'aguardando_desfecho', 'fechado_com_responsavel', 'nao_fechou',
	    'sem_resposta') THEN
		RETURN jsonb_build_object('ok', false, 'erro',
		    'status inválido: use interesse_confirmado, '
		    'aguardando_desfecho, fechado_com_responsavel, '
		    'nao_fechou ou sem_resposta');
	END IF;
	IF a ? 'vaga_id' AND jsonb_typeof(a -> 'vaga_id') <> 'null' THEN
		v := mg_tool_vaga(a);
		IF v.id IS NULL THEN
			RETURN jsonb_build_object('ok', false,
			    'erro', 'vaga_id inexistente');
		END IF;
	END IF;
	RETURN jsonb_build_object('ok', true, 'status', st,
	    'commit', jsonb_build_object('funnel', jsonb_build_array(
		jsonb_build_object('status', st, 'vaga_id', v.id,
		    'metadata', jsonb_strip_nulls(jsonb_build_object(
			'observacao', a ->> 'observacao', 'source', 'tool'))))));
END $$;

-- salvar_memoria {fato, especialidade?, regiao?}: a fact about the
-- doctor (1..500 characters); specialty and region, when given, also
-- fill the conversation's columns.
-- {"ok":true,"commit":{"memory":[fato],"conversation":{...}}}.
CREATE OR REPLACE FUNCTION mg_tool_salvar_memoria(p_conversation_id bigint,
    p_args jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	a	jsonb := mg_tool_args(p_args);
	fato	text := trim(coalesce(a ->> 'fato', a ->> 'fact'));
	conv	jsonb := '{}';
BEGIN
	IF fato IS NULL OR fato = '' OR length(fato) > 500 THEN
		RETURN jsonb_build_object('ok', false,
		    'erro', 'fato obrigatório (até 500 caracteres)');
	END IF;
	IF nullif(trim(a ->> 'especialidade'), '') IS NOT NULL THEN
		conv := conv || jsonb_build_object('especialidade',
		    trim(a ->> 'especialidade'));
	END IF;
	IF nullif(trim(a ->> 'regiao'), '') IS NOT NULL THEN
		conv := conv || jsonb_build_object('regiao', trim(a ->> 'regiao'));
	END IF;
	RETURN jsonb_build_object('ok', true, 'commit',
	    jsonb_build_object('memory', jsonb_build_array(fato)) ||
	    CASE WHEN conv = '{}' THEN '{}'::jsonb
		ELSE jsonb_build_object('conversation', conv) END);
END $$;

-- encaminhar_humano {motivo?}: hands the chat to a human operator.
-- {"ok":true,"commit":{"conversation":{"control":"human",
-- "control_updated_by":"encaminhar_humano"},"audit":[{step "tool",
-- decision "handoff_humano", reason motivo}]}}. After the commit the AI
-- stays silent until an operator releases the chat (issue 5).
CREATE OR REPLACE FUNCTION mg_tool_encaminhar_humano(p_conversation_id bigint,
    p_args jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
	SELECT jsonb_build_object('ok', true, 'commit', jsonb_build_object(
	    'conversation', jsonb_build_object('control', 'human',
		'control_updated_by', 'encaminhar_humano'),
	    'audit', jsonb_build_array(jsonb_build_object('step', 'tool',
		'decision', 'handoff_humano',
		'reason', coalesce(mg_tool_args(p_args) ->> 'motivo',
		    'pedido de atendimento humano')))))
$$;
