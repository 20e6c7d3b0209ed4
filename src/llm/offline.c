/*
 * llm_offline.c -- LLM_PROVIDER=offline: a deterministic responder that
 * answers an Anthropic-shaped request with an Anthropic-shaped response,
 * so the local default and demos walk the same tool loop as the real
 * providers. It plays Julia from what a model would read: the mode, the
 * doctor's words in the transcript (what they ask for: shifts, a booking,
 * pay, a yes to the contact; the specialty, region and shift they named)
 * and the tool results. It searches with the doctor's filters, asks
 * before passing a contact, bridges with criar_handoff_externo on a yes,
 * never confirms a booking, and never repeats its previous reply
 * verbatim.
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

/* What the doctor said, folded: one term of a filter and its value. */
struct offline_term {
	const char	*said;		/* folded words */
	const char	*value;		/* the buscar_vagas argument */
};

static const struct offline_term offline_turnos[] = {
	{ "noturno", "noturno" }, { "noturna", "noturno" },
	{ "noite", "noturno" }, { "diurno", "diurno" },
	{ "diurna", "diurno" }, { "12h", "12h" }, { "24h", "24h" },
	{ NULL, NULL }
};
static const struct offline_term offline_regioes[] = {
	{ "zona sul", "zona sul" }, { "zona norte", "zona norte" },
	{ "zona leste", "zona leste" }, { "zona oeste", "zona oeste" },
	{ "centro", "centro" }, { "guarulhos", "Guarulhos" },
	{ "osasco", "Osasco" }, { "santo andre", "Santo André" },
	{ "abc", "ABC" }, { NULL, NULL }
};
static const struct offline_term offline_especialidades[] = {
	{ "clinica medica", "clínica médica" },
	{ "clinica geral", "clínica médica" },
	{ "clinico geral", "clínica médica" },
	{ "pediatria", "pediatria" }, { "pediatra", "pediatria" },
	{ "ortopedia", "ortopedia" }, { "ortopedista", "ortopedia" },
	{ "emergencia", "emergência" }, { "pronto socorro", "emergência" },
	{ "cardiologia", "cardiologia" }, { "cardiologista", "cardiologia" },
	{ "anestesia", "anestesiologia" }, { "anestesista", "anestesiologia" },
	{ "ginecologia", "ginecologia" }, { "obstetricia", "obstetrícia" },
	{ NULL, NULL }
};

static const char *const offline_shift_words[] = { "plantao", "plantoes",
    "vaga", "vagas", "escala", "escalas", NULL };
static const char *const offline_booking_words[] = { "confirmar",
    "confirma", "confirmado", "confirmada", "reserva", "reservar",
    "reservado", "reservada", "garantir", "garante", "agendar", NULL };
static const char *const offline_pay_words[] = { "valor", "valores",
    "quanto", "paga", "pagam", "pagamento", NULL };
static const char *const offline_yes_words[] = { "sim", "s", "ss", "pode",
    "claro", "quero", "isso", "ok", "blz", "beleza", "bora", "manda",
    "passa", NULL };
static const char *const offline_no_words[] = { "nao", "n", "nunca", NULL };

/* What the offline model read in the request. */
struct offline {
	json_object	*req, *msgs;
	const char	*mode, *system;
	const char	*prev;		/* its previous reply, or "" */
	char		 said[1024];	/* the doctor's last text, folded */
	char		 all[4096];	/* every text of the doctor, folded */
	const char	*esp, *reg, *tur;	/* filters named so far */
	char		 name[64];	/* "Nome no WhatsApp" of the prompt */
};

/* The term of table found in folded text (as whole words), or NULL. */
static const char *
offline_term(const char *folded, const struct offline_term *table)
{
	char	 hay[1100], needle[64];
	size_t	 i;

	snprintf(hay, sizeof hay, " %s ", folded);
	for (i = 0; table[i].said != NULL; i++) {
		snprintf(needle, sizeof needle, " %s ", table[i].said);
		if (strstr(hay, needle) != NULL)
			return table[i].value;
	}
	return NULL;
}

/* The text of message m when it is a plain string, else NULL. */
static const char *
offline_msg_text(json_object *m)
{
	json_object	*c;

	if (!json_object_object_get_ex(m, "content", &c) ||
	    !json_object_is_type(c, json_type_string))
		return NULL;
	return json_object_get_string(c);
}

/* Read the transcript: the doctor's texts (the filters they named, the
 * latest winning), the last one, and the previous reply. */
static void
offline_read(struct offline *o)
{
	json_object	*m;
	const char	*role, *text, *v;
	char		 f[1024];
	size_t		 i, n;

	o->prev = "";
	for (i = 0; i < json_object_array_length(o->msgs); i++) {
		m = json_object_array_get_idx(o->msgs, i);
		role = offline_str(m, "role");
		if ((text = offline_msg_text(m)) == NULL || role == NULL)
			continue;
		if (strcmp(role, "assistant") == 0) {
			o->prev = text;
			continue;
		}
		offline_fold(text, f, sizeof f);
		snprintf(o->said, sizeof o->said, "%s", f);
		n = strlen(o->all);
		snprintf(o->all + n, sizeof o->all - n, " %s", f);
		if ((v = offline_term(f, offline_especialidades)) != NULL)
			o->esp = v;
		if ((v = offline_term(f, offline_regioes)) != NULL)
			o->reg = v;
		if ((v = offline_term(f, offline_turnos)) != NULL)
			o->tur = v;
	}
}

/* The doctor's WhatsApp name from the prompt ("" when absent). */
static void
offline_name(struct offline *o)
{
	const char	*p;
	size_t		 n;

	o->name[0] = '\0';
	if (o->system == NULL ||
	    (p = strstr(o->system, "Nome no WhatsApp: ")) == NULL)
		return;
	p += strlen("Nome no WhatsApp: ");
	n = strcspn(p, "\n");
	if (n >= sizeof o->name)
		n = sizeof o->name - 1;
	memcpy(o->name, p, n);
	o->name[n] = '\0';
}

/* Would text repeat the previous reply (or a part of it) verbatim? */
static int
offline_repeats(const struct offline *o, const char *text)
{
	return text[0] != '\0' && strstr(o->prev, text) != NULL;
}

/* Did the previous reply offer the responsible person's contact? */
static int
offline_offered_contact(const struct offline *o)
{
	char	f[2048];

	offline_fold(o->prev, f, sizeof f);
	return strstr(f, "contato") != NULL || strstr(f, "conecte") != NULL;
}

/* "de clínica médica, noturno, na zona sul": the filters in words. */
static void
offline_filters_text(const struct offline *o, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s%s%s%s", o->esp ? " de " : "",
	    o->esp ? o->esp : "", o->tur ? (o->esp ? ", " : " de ") : "",
	    o->tur ? o->tur : "", o->reg ? (strncmp(o->reg, "zona", 4) == 0 ?
	    " na " : " em ") : "", o->reg ? o->reg : "");
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

/* One tool call; takes input. */
static char *
offline_tool_call(const char *name, json_object *input)
{
	json_object	*content = json_object_new_array(), *b;

	b = json_object_new_object();
	json_object_object_add(b, "type", json_object_new_string("tool_use"));
	json_object_object_add(b, "id",
	    json_object_new_string("toolu_offline_1"));
	json_object_object_add(b, "name", json_object_new_string(name));
	json_object_object_add(b, "input", input);
	json_object_array_add(content, b);
	return offline_envelope(content, "tool_use");
}

/* buscar_vagas with the filters the doctor named. */
static char *
offline_search(const struct offline *o)
{
	json_object	*in = json_object_new_object();

	if (o->esp != NULL)
		json_object_object_add(in, "especialidade",
		    json_object_new_string(o->esp));
	if (o->reg != NULL)
		json_object_object_add(in, "regiao",
		    json_object_new_string(o->reg));
	if (o->tur != NULL)
		json_object_object_add(in, "turno",
		    json_object_new_string(o->tur));
	return offline_tool_call("buscar_vagas", in);
}

/*
 * Say one of n variants (variant k into buf by fn), the first that does
 * not repeat the previous reply; the last one with a smile added if all
 * would.
 */
typedef void (*offline_variant_fn)(const struct offline *, int k, char *,
    size_t);

static char *
offline_say(const struct offline *o, offline_variant_fn fn, int n)
{
	char	 buf[2048];
	size_t	 len;
	int	 k;

	for (k = 0; k < n; k++) {
		fn(o, k, buf, sizeof buf);
		if (!offline_repeats(o, buf))
			return offline_text(buf);
	}
	len = strlen(buf);
	snprintf(buf + len, sizeof buf - len, " 🙂");
	return offline_text(buf);
}

/* Discovery: greet by name once, note the specialty, one question. */
static void
offline_discovery(const struct offline *o, int k, char *buf, size_t len)
{
	char	hi[128];

	snprintf(hi, sizeof hi, "Oi%s%s! Aqui é a Julia, da equipe de "
	    "plantões 😊", o->name[0] ? ", " : "", o->name);
	if (o->esp == NULL && k == 0)
		snprintf(buf, len, "%s Pra eu te conhecer melhor: qual é a sua "
		    "especialidade?", hi);
	else if (o->esp == NULL)
		snprintf(buf, len, "Me conta: qual é a sua especialidade?");
	else if (o->reg == NULL && k == 0)
		snprintf(buf, len, "%s Que bom falar com vc! Anotei: %s. Em que "
		    "região vc costuma pegar plantão?", hi, o->esp);
	else if (o->reg == NULL)
		snprintf(buf, len, "E em que região vc prefere trabalhar?");
	else if (k == 0)
		snprintf(buf, len, "Anotado: %s, %s 😊 E como costuma ser a "
		    "sua disponibilidade, mais de dia ou à noite?", o->esp,
		    o->reg);
	else
		snprintf(buf, len, "Vc pega plantões com que frequência?");
}

/* Oferta, a booking asked for: Julia does not confirm; the responsible
 * person does; she offers the contact. */
static void
offline_booking(const struct offline *o, int k, char *buf, size_t len)
{
	if (k == 0)
		snprintf(buf, len, "Quem confirma é o responsável pela vaga, "
		    "não eu: eu só faço a ponte 😊 Posso te passar o contato "
		    "pra vocês acertarem direto?");
	else
		snprintf(buf, len, "Essa confirmação é com o responsável pela "
		    "vaga 😊 Quer que eu te passe o contato?");
}

/* Oferta, pay asked for: the responsible person agrees it. */
static void
offline_pay(const struct offline *o, int k, char *buf, size_t len)
{
	if (k == 0)
		snprintf(buf, len, "O valor quem acerta é o responsável pela "
		    "vaga, não eu 😊 Posso te passar o contato pra vocês "
		    "conversarem?");
	else
		snprintf(buf, len, "Sobre valor, é direto com o responsável "
		    "pela vaga. Quer o contato?");
}

/* Oferta, nothing to search yet: ask what is missing. */
static void
offline_oferta(const struct offline *o, int k, char *buf, size_t len)
{
	char	f[160];

	offline_filters_text(o, f, sizeof f);
	if (k == 0 && o->tur == NULL && (o->esp != NULL || o->reg != NULL))
		snprintf(buf, len, "Ótimo! Pra plantão%s, vc prefere diurno ou "
		    "noturno?", f);
	else if (k == 0 && o->reg == NULL)
		snprintf(buf, len, "Posso procurar vagas de plantão pra você! "
		    "Qual região e turno você prefere?");
	else if (k <= 1)
		snprintf(buf, len, "Quer que eu veja as vagas abertas%s?", f);
	else
		snprintf(buf, len, "Me diz a região e o turno que eu procuro "
		    "as vagas abertas pra vc 😊");
}

/* Followup: how did the contact go? */
static void
offline_followup(const struct offline *o, int k, char *buf, size_t len)
{
	if (k == 0)
		snprintf(buf, len, "E aí, como foi o contato com o responsável "
		    "pela vaga? Deu certo?");
	else
		snprintf(buf, len, "Conseguiu falar com o responsável? Me conta "
		    "como foi 😊");
}

/* Reativacao: light, no shifts. */
static void
offline_reativacao(const struct offline *o, int k, char *buf, size_t len)
{
	if (k == 0)
		snprintf(buf, len, "Oi! Quanto tempo 😊 Você ainda está pegando "
		    "plantões?");
	else
		snprintf(buf, len, "Que bom te ver por aqui! Ainda tem interesse "
		    "em plantões?");
}

/* The answer to a doctor's text (no tool result yet). */
static char *
offline_answer(struct offline *o)
{
	char	 micro[512];
	int	 oferta = offline_tool_offered(o->req, "buscar_vagas");

	if (oferta && offline_has_word(o->said, offline_booking_words))
		return offline_say(o, offline_booking, 2);
	if (oferta && offline_has_word(o->said, offline_pay_words))
		return offline_say(o, offline_pay, 2);
	if (oferta && offline_tool_offered(o->req, "criar_handoff_externo") &&
	    offline_has_word(o->said, offline_yes_words) &&
	    !offline_has_word(o->said, offline_no_words) &&
	    offline_offered_contact(o))
		return offline_search(o);	/* then the bridge */
	if (oferta && offline_has_word(o->said, offline_shift_words))
		return offline_search(o);
	if (offline_micro(o->system, micro, sizeof micro))
		return offline_text(micro);
	if (oferta || (o->mode != NULL && strcmp(o->mode, "oferta") == 0))
		return offline_say(o, offline_oferta, 3);
	if (o->mode != NULL && strcmp(o->mode, "followup") == 0)
		return offline_say(o, offline_followup, 2);
	if (o->mode != NULL && strcmp(o->mode, "reativacao") == 0)
		return offline_say(o, offline_reativacao, 2);
	return offline_say(o, offline_discovery, 2);
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

/* The list of a buscar_vagas result (a list, or {"vagas": [...]}), or
 * NULL; *root gets the parsed result (caller puts it). */
static json_object *
offline_vagas(const char *result, json_object **root)
{
	json_object	*list = NULL;

	*root = result ? llm_json_strict(result, strlen(result)) : NULL;
	if (*root != NULL && json_object_is_type(*root, json_type_array))
		return *root;
	if (*root != NULL)
		json_object_object_get_ex(*root, "vagas", &list);
	return list != NULL && json_object_is_type(list, json_type_array) ?
	    list : NULL;
}

/* Summarise a buscar_vagas result with the filters it used. */
static char *
offline_summary(const struct offline *o, json_object *list)
{
	char	 buf[2048], f[160];
	size_t	 i, n;

	offline_filters_text(o, f, sizeof f);
	if (list == NULL)
		return offline_text("Não consegui consultar as vagas agora 😕 "
		    "Posso tentar de novo daqui a pouco?");
	if ((n = json_object_array_length(list)) == 0) {
		snprintf(buf, sizeof buf, "No momento não encontrei vagas "
		    "abertas%s. Quer que eu te avise quando surgir alguma?", f);
		return offline_text(buf);
	}
	snprintf(buf, sizeof buf, "Encontrei %zu vaga%s aberta%s%s%s:", n,
	    n > 1 ? "s" : "", n > 1 ? "s" : "", f,
	    n > 3 ? "; estas são as 3 primeiras" : "");
	for (i = 0; i < n && i < 3; i++)
		offline_vaga_line(json_object_array_get_idx(list, i), buf,
		    sizeof buf);
	n = strlen(buf);
	snprintf(buf + n, sizeof buf - n, "\nQuer que eu te conecte com o "
	    "responsável por %s?", i > 1 ? "alguma delas" : "ela");
	return offline_text(buf);
}

/* The shift the doctor meant: the one whose hospital they named (most
 * words of five letters or more in their texts), else the first. */
static json_object *
offline_pick(const struct offline *o, json_object *list)
{
	json_object	*best = json_object_array_get_idx(list, 0);
	char		 f[256], hay[4200], needle[80], *w, *save;
	const char	*h;
	size_t		 i;
	int		 hits, most = 0;

	snprintf(hay, sizeof hay, " %s ", o->all);
	for (i = 0; i < json_object_array_length(list); i++) {
		if ((h = offline_str(json_object_array_get_idx(list, i),
		    "hospital")) == NULL)
			continue;
		offline_fold(h, f, sizeof f);
		hits = 0;
		for (w = strtok_r(f, " ", &save); w != NULL;
		    w = strtok_r(NULL, " ", &save)) {
			snprintf(needle, sizeof needle, " %s ", w);
			if (strlen(w) >= 5 && strcmp(w, "hospital") != 0 &&
			    strstr(hay, needle) != NULL)
				hits++;
		}
		if (hits > most) {
			most = hits;
			best = json_object_array_get_idx(list, i);
		}
	}
	return best;
}

/* The bridge is made: the responsible person's name and contact. */
static char *
offline_bridged(json_object *res)
{
	json_object	*v = NULL, *r = NULL;
	const char	*nome, *contato, *h, *t;
	char		 buf[1024];

	json_object_object_get_ex(res, "vaga", &v);
	json_object_object_get_ex(res, "responsavel", &r);
	nome = offline_str(r, "nome");
	contato = offline_str(r, "contato");
	h = offline_str(v, "hospital");
	t = offline_str(v, "turno");
	if (nome == NULL || contato == NULL)
		return offline_text("Não consegui fazer a ponte agora 😕 Posso "
		    "tentar de novo daqui a pouco?");
	if (h != NULL)
		snprintf(buf, sizeof buf, "Prontinho! Quem cuida do plantão%s%s "
		    "do %s é %s: %s. É só chamar que vocês acertam os detalhes "
		    "direto 😉 Depois me conta como foi?", t ? " " : "",
		    t ? t : "", h, nome, contato);
	else
		snprintf(buf, sizeof buf, "Prontinho! Quem cuida da vaga é %s: "
		    "%s. É só chamar que vocês acertam os detalhes direto 😉 "
		    "Depois me conta como foi?", nome, contato);
	return offline_text(buf);
}

/* The answer after tool results: the bridge after a yes, or a summary. */
static char *
offline_after_tools(struct offline *o, json_object *blocks)
{
	json_object	*b0 = json_object_array_get_idx(blocks, 0), *e = NULL;
	json_object	*call, *root, *list, *in, *v, *id;
	const char	*tool = NULL;
	char		*answer;
	size_t		 n = json_object_array_length(o->msgs);

	call = json_object_array_get_idx(o->msgs, n - 2);
	if (json_object_object_get_ex(call, "content", &call))
		tool = offline_str(json_object_array_get_idx(call, 0), "name");
	json_object_object_get_ex(b0, "is_error", &e);
	list = offline_vagas(e != NULL && json_object_get_boolean(e) ? NULL :
	    offline_str(b0, "content"), &root);
	if (tool != NULL && strcmp(tool, "criar_handoff_externo") == 0)
		answer = offline_bridged(root);
	else if (list != NULL && json_object_array_length(list) > 0 &&
	    offline_tool_offered(o->req, "criar_handoff_externo") &&
	    offline_has_word(o->said, offline_yes_words) &&
	    offline_offered_contact(o)) {
		v = offline_pick(o, list);
		in = json_object_new_object();
		if (json_object_object_get_ex(v, "id", &id))
			json_object_object_add(in, "vaga_id",
			    json_object_get(id));
		answer = offline_tool_call("criar_handoff_externo", in);
	} else
		answer = offline_summary(o, list);
	json_object_put(root);
	return answer;
}

char *
llm_offline_respond(const char *body, const char *mode)
{
	struct offline	 o;
	json_object	*last, *content = NULL;
	char		*answer;

	memset(&o, 0, sizeof o);
	if ((o.req = llm_json_strict(body, strlen(body))) == NULL)
		return NULL;
	o.mode = mode;
	o.system = offline_str(o.req, "system");
	if (!json_object_object_get_ex(o.req, "messages", &o.msgs) ||
	    !json_object_is_type(o.msgs, json_type_array)) {
		json_object_put(o.req);
		return NULL;
	}
	offline_read(&o);
	offline_name(&o);
	last = json_object_array_get_idx(o.msgs,
	    json_object_array_length(o.msgs) - 1);
	json_object_object_get_ex(last, "content", &content);
	if (content != NULL && json_object_is_type(content, json_type_array))
		answer = offline_after_tools(&o, content);
	else
		answer = offline_answer(&o);
	json_object_put(o.req);
	return answer;
}
