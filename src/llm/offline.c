/*
 * llm_offline.c -- LLM_PROVIDER=offline: a deterministic responder that
 * answers an Anthropic-shaped request with an Anthropic-shaped response,
 * so the local default and demos walk the same tool loop as the real
 * providers (asks for buscar_vagas when allowed and the doctor asks for
 * shifts, then summarises the result).
 * SPDX-License-Identifier: MIT
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/wire.h"

/* Latin-1 letters U+00C0..U+00FF folded to ASCII ('_': not a letter). */
static const char fold_upper[] = "aaaaaaaceeeeiiiidnooooo_ouuuuy_s";
static const char fold_lower[] = "aaaaaaaceeeeiiiidnooooo_ouuuuy_y";

/* Lower-case, accent-folded copy of s with non-letters as spaces. */
static void
offline_fold(const char *s, char *out, size_t outlen)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 n = 0;
	unsigned int		 c;
	char			 ch;

	while (*p != '\0' && n + 1 < outlen) {
		if (*p == 0xC3 && p[1] >= 0x80 && p[1] <= 0xBF) {
			c = p[1] - 0x80;	/* offset from U+00C0 */
			ch = c < 32 ? fold_upper[c] : fold_lower[c - 32];
			out[n++] = ch == '_' ? ' ' : ch;
			p += 2;
			continue;
		}
		out[n++] = isalnum(*p) ? (char)tolower(*p) : ' ';
		p++;
	}
	out[n] = '\0';
}

/* Does the folded text hold one of the words? */
static int
offline_has_word(const char *folded, const char *const *words)
{
	char		 buf[1024], *tok, *save;
	size_t		 i;

	snprintf(buf, sizeof buf, "%s", folded);
	for (tok = strtok_r(buf, " ", &save); tok != NULL;
	    tok = strtok_r(NULL, " ", &save))
		for (i = 0; words[i] != NULL; i++)
			if (strcmp(tok, words[i]) == 0)
				return 1;
	return 0;
}

/* Member as a string or NULL. */
static const char *
offline_str(json_object *o, const char *key)
{
	json_object	*v;

	if (o == NULL || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* Is a tool of that name offered in the request? */
static int
offline_tool_offered(json_object *req, const char *name)
{
	json_object	*tools;
	size_t		 i;
	const char	*n;

	if (!json_object_object_get_ex(req, "tools", &tools))
		return 0;
	for (i = 0; i < json_object_array_length(tools); i++) {
		n = offline_str(json_object_array_get_idx(tools, i), "name");
		if (n != NULL && strcmp(n, name) == 0)
			return 1;
	}
	return 0;
}

/* Julia's short reply for a mode when no tool is involved. */
static const char *
offline_mode_reply(const char *mode)
{
	if (mode == NULL)
		mode = "";
	if (strcmp(mode, "discovery") == 0)
		return "Oi! Aqui é a Julia 😊 Pra eu te conhecer melhor: "
		    "qual é a sua especialidade?";
	if (strcmp(mode, "oferta") == 0)
		return "Posso procurar vagas de plantão pra você! Qual região "
		    "e turno você prefere?";
	if (strcmp(mode, "followup") == 0)
		return "E aí, como foi o contato com o responsável pela vaga? "
		    "Deu certo?";
	if (strcmp(mode, "reativacao") == 0)
		return "Oi! Quanto tempo 😊 Você ainda está pegando plantões?";
	return "Oi! Aqui é a Julia 😊 Como posso te ajudar?";
}

/*
 * A micro-confirmation is pending: the system prompt holds the gate's
 * micro-confirmation block; ask its first example question, as a model
 * following it would. 0 when there is none.
 */
static int
offline_micro(const char *system, char *buf, size_t len)
{
	const char	*p, *q;

	if (system == NULL ||
	    (p = strstr(system, "MICRO-CONFIRMAÇÃO")) == NULL ||
	    (p = strstr(p, "\n- \"")) == NULL ||
	    (q = strchr(p + 4, '"')) == NULL || (size_t)(q - p - 4) >= len)
		return 0;
	memcpy(buf, p + 4, (size_t)(q - p - 4));
	buf[q - p - 4] = '\0';
	return 1;
}

/* Append one line describing a shift to buf. */
static void
offline_vaga_line(json_object *v, char *buf, size_t len)
{
	const char	*h = offline_str(v, "hospital");
	const char	*e = offline_str(v, "especialidade");
	const char	*t = offline_str(v, "turno");
	const char	*d = offline_str(v, "data");
	const char	*r = offline_str(v, "regiao");
	size_t		 n = strlen(buf);

	snprintf(buf + n, len - n, "\n• %s%s%s%s%s%s%s%s%s", h ? h : "Vaga",
	    e ? " — " : "", e ? e : "", t ? ", " : "", t ? t : "",
	    d ? ", " : "", d ? d : "", r ? " — " : "", r ? r : "");
}

/* Summarise a buscar_vagas result (a list, or {"vagas": [...]}). */
static void
offline_summary(const char *result, int is_error, char *buf, size_t len)
{
	json_object	*root, *list = NULL;
	size_t		 i, n;

	root = result ? llm_json_strict(result, strlen(result)) : NULL;
	if (root != NULL && json_object_is_type(root, json_type_array))
		list = root;
	else if (root != NULL)
		json_object_object_get_ex(root, "vagas", &list);
	if (is_error || list == NULL ||
	    !json_object_is_type(list, json_type_array)) {
		snprintf(buf, len, "Não consegui consultar as vagas agora 😕 "
		    "Posso tentar de novo daqui a pouco?");
		json_object_put(root);
		return;
	}
	n = json_object_array_length(list);
	if (n == 0)
		snprintf(buf, len, "No momento não encontrei vagas abertas "
		    "com esse perfil. Quer que eu te avise quando surgir "
		    "alguma?");
	else {
		snprintf(buf, len, "Encontrei %zu vaga%s aberta%s%s:", n,
		    n > 1 ? "s" : "", n > 1 ? "s" : "",
		    n > 3 ? "; estas são as 3 primeiras" : "");
		for (i = 0; i < n && i < 3; i++)
			offline_vaga_line(json_object_array_get_idx(list, i),
			    buf, len);
		n = strlen(buf);
		snprintf(buf + n, len - n, "\nQuer que eu te conecte com o "
		    "responsável por alguma delas?");
	}
	json_object_put(root);
}

/* The response envelope around content. */
static char *
offline_envelope(json_object *content, const char *stop)
{
	json_object	*o = json_object_new_object(), *u;
	char		*s;

	json_object_object_add(o, "id", json_object_new_string("msg_offline"));
	json_object_object_add(o, "type", json_object_new_string("message"));
	json_object_object_add(o, "role", json_object_new_string("assistant"));
	json_object_object_add(o, "model", json_object_new_string("offline"));
	json_object_object_add(o, "content", content);
	json_object_object_add(o, "stop_reason", json_object_new_string(stop));
	u = json_object_new_object();
	json_object_object_add(u, "input_tokens", json_object_new_int(0));
	json_object_object_add(u, "output_tokens", json_object_new_int(0));
	json_object_object_add(o, "usage", u);
	s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return s;
}

/* A text-only answer. */
static char *
offline_text(const char *text)
{
	json_object	*content = json_object_new_array(), *b;

	b = json_object_new_object();
	json_object_object_add(b, "type", json_object_new_string("text"));
	json_object_object_add(b, "text", json_object_new_string(text));
	json_object_array_add(content, b);
	return offline_envelope(content, "end_turn");
}

/* A buscar_vagas call. */
static char *
offline_tool_call(void)
{
	json_object	*content = json_object_new_array(), *b;

	b = json_object_new_object();
	json_object_object_add(b, "type", json_object_new_string("tool_use"));
	json_object_object_add(b, "id",
	    json_object_new_string("toolu_offline_1"));
	json_object_object_add(b, "name", json_object_new_string("buscar_vagas"));
	json_object_object_add(b, "input", json_object_new_object());
	json_object_array_add(content, b);
	return offline_envelope(content, "tool_use");
}

/* The answer after tool results: a summary of the first result. */
static char *
offline_after_tools(json_object *blocks)
{
	json_object	*b0 = json_object_array_get_idx(blocks, 0), *e;
	char		 buf[2048];

	e = NULL;
	json_object_object_get_ex(b0, "is_error", &e);
	offline_summary(offline_str(b0, "content"),
	    e != NULL && json_object_get_boolean(e), buf, sizeof buf);
	return offline_text(buf);
}

char *
llm_offline_respond(const char *body, const char *mode)
{
	static const char *const shift_words[] = { "plantao", "plantoes",
	    "vaga", "vagas", NULL };
	json_object	*req, *msgs, *last, *content;
	char		 folded[1024], micro[512], *answer;
	const char	*text = "";

	if ((req = llm_json_strict(body, strlen(body))) == NULL)
		return NULL;
	json_object_object_get_ex(req, "messages", &msgs);
	last = json_object_array_get_idx(msgs,
	    json_object_array_length(msgs) - 1);
	content = NULL;
	json_object_object_get_ex(last, "content", &content);
	if (content != NULL && json_object_is_type(content, json_type_array)) {
		answer = offline_after_tools(content);
		json_object_put(req);
		return answer;
	}
	if (content != NULL && json_object_is_type(content, json_type_string))
		text = json_object_get_string(content);
	offline_fold(text, folded, sizeof folded);
	if (offline_tool_offered(req, "buscar_vagas") &&
	    offline_has_word(folded, shift_words))
		answer = offline_tool_call();
	else if (offline_micro(offline_str(req, "system"), micro,
	    sizeof micro))
		answer = offline_text(micro);
	else
		answer = offline_text(offline_mode_reply(mode));
	json_object_put(req);
	return answer;
}
