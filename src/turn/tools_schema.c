/*
 * tools_schema.c -- the descriptions and input schemas of Julia's tools,
 * in the order of TOOL_LIST (mode/core.h).
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "llm/wire.h"
#include "turn/tools_schema.h"

struct tools_def {
	const char	*description;
	const char	*schema;
};

static const struct tools_def tools_defs[TOOL__COUNT] = {
	[TOOL_BUSCAR_VAGAS] = {
	    "Busca vagas de plantão abertas. Todos os filtros são opcionais.",
	    "{\"type\":\"object\",\"properties\":{"
	    "\"especialidade\":{\"type\":\"string\",\"description\":"
	    "\"especialidade médica, ex.: clínica médica\"},"
	    "\"regiao\":{\"type\":\"string\",\"description\":"
	    "\"cidade ou região\"},"
	    "\"turno\":{\"type\":\"string\",\"enum\":[\"diurno\","
	    "\"noturno\",\"12h\",\"24h\"]},"
	    "\"data_de\":{\"type\":\"string\",\"description\":"
	    "\"primeiro dia, AAAA-MM-DD (sozinho: só esse dia)\"},"
	    "\"data_ate\":{\"type\":\"string\",\"description\":"
	    "\"último dia, AAAA-MM-DD (inclusive)\"}}}" },
	[TOOL_CRIAR_HANDOFF_EXTERNO] = {
	    "Conecta o médico ao responsável pela vaga (faz a ponte). Use "
	    "só depois que o médico aceitar receber o contato.",
	    "{\"type\":\"object\",\"properties\":{\"vaga_id\":{\"type\":"
	    "\"integer\"}},\"required\":[\"vaga_id\"]}" },
	[TOOL_REGISTRAR_STATUS] = {
	    "Registra o andamento da intermediação de uma vaga.",
	    "{\"type\":\"object\",\"properties\":{\"vaga_id\":{\"type\":"
	    "\"integer\"},\"status\":{\"type\":\"string\",\"enum\":["
	    "\"aguardando_desfecho\",\"fechado_com_responsavel\","
	    "\"nao_fechou\",\"sem_resposta\"]}},"
	    "\"required\":[\"vaga_id\",\"status\"]}" },
	[TOOL_SALVAR_MEMORIA] = {
	    "Guarda um fato útil sobre o médico (especialidade, região, "
	    "disponibilidade, preferências).",
	    "{\"type\":\"object\",\"properties\":{\"fato\":{\"type\":"
	    "\"string\"},\"especialidade\":{\"type\":\"string\","
	    "\"description\":\"a especialidade do médico, se ele disse\"},"
	    "\"regiao\":{\"type\":\"string\",\"description\":"
	    "\"a cidade ou região onde ele quer plantões, se disse\"}},"
	    "\"required\":[\"fato\"]}" },
	[TOOL_ENCAMINHAR_HUMANO] = {
	    "Passa a conversa para uma pessoa da equipe.",
	    "{\"type\":\"object\",\"properties\":{\"motivo\":{\"type\":"
	    "\"string\"}},\"required\":[\"motivo\"]}" },
};

/* Each schema as json-c, parsed on first use; kept for the process. */
static json_object	*parsed[TOOL__COUNT];

int
tools_schema_get(int t, struct llm_tool *out)
{
	if (t < 0 || t >= TOOL__COUNT)
		return -1;
	/* Parsed once per process and shared by every request (json-c
	 * counts the references): parsed per turn, the schemas were 7 KB
	 * of every turn waiting for the LLM. */
	if (parsed[t] == NULL)
		parsed[t] = llm_json_strict(tools_defs[t].schema,
		    strlen(tools_defs[t].schema));
	memset(out, 0, sizeof *out);
	out->name = tool_name(t);
	out->description = tools_defs[t].description;
	out->schema = parsed[t];
	out->schema_json = tools_defs[t].schema;
	return 0;
}
