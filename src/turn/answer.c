/*
 * answer.c -- the LLM part of a turn: Julia's system prompt with the
 * combined constraints, the transcript, only the mode's tools (layer 1),
 * tools executed by the mg_tool_* functions, the output guard with up to
 * two regenerations, and the fallbacks. Every step audited.
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/log.h"
#include "turn/tools_schema.h"
#include "turn/turn.h"

#define TURN_REGEN_MAX	2
#define TURN_SYSTEM_MAX	32768

/* One tool execution handed out by the LLM client. */
struct tool_call {
	struct turn		*t;
	int			 tool;
	llm_tool_reply_fn	*reply;
	void			*cookie;
};

/* The mg_tool_* statements (dbq borrows the SQL text). */
static const char *const tool_sql[TOOL__COUNT] = {
	[TOOL_BUSCAR_VAGAS] =
	    "SELECT mg_tool_buscar_vagas($1::bigint, $2::jsonb)::text",
	[TOOL_CRIAR_HANDOFF_EXTERNO] =
	    "SELECT mg_tool_criar_handoff_externo($1::bigint, $2::jsonb)::text",
	[TOOL_REGISTRAR_STATUS] = "SELECT mg_tool_registrar_status_"
	    "intermediacao($1::bigint, $2::jsonb)::text",
	[TOOL_SALVAR_MEMORIA] =
	    "SELECT mg_tool_salvar_memoria($1::bigint, $2::jsonb)::text",
	[TOOL_ENCAMINHAR_HUMANO] =
	    "SELECT mg_tool_encaminhar_humano($1::bigint, $2::jsonb)::text",
};

static void	answer_llm_done(struct llm_result *, void *);

/* A successful bridge is the event bridge_made: the core routes again. */
static void
answer_bridge_made(struct turn *t)
{
	const struct turn_route	*tr;

	if ((tr = turn_event(&t->w->rs, &t->plan, EVENT_BRIDGE_MADE)) == NULL)
		return;
	metrics_turn_decision((int)tr->r.decision);
	commit_route(&t->c, &t->plan, tr);
}

/* A tool's statement answered: the result (without "commit") goes to
 * the LLM, the fragment into the turn. */
static void
answer_tool_cb(PGresult *res, const char *err, void *arg)
{
	struct tool_call	*c = arg;
	struct turn		*t = c->t;
	json_object		*o = job_result_json(res, err), *frag, *ok;
	bool			 good;

	if (o == NULL) {
		c->reply(c->cookie, "{\"ok\":false,\"erro\":\"erro interno, "
		    "tente de novo mais tarde\"}", 1);
		goto done;
	}
	good = json_object_object_get_ex(o, "ok", &ok) &&
	    json_object_get_boolean(ok);
	if (json_object_object_get_ex(o, "commit", &frag)) {
		if (good && !t->finished && commit_merge(&t->c, frag) == -1)
			log_warnx("turn: conversation %s: tool %s: unknown keys "
			    "in its commit, ignored", t->conv_s,
			    tool_name(c->tool));
		json_object_object_del(o, "commit");
	}
	if (good && c->tool == TOOL_CRIAR_HANDOFF_EXTERNO && !t->finished)
		answer_bridge_made(t);
	c->reply(c->cookie, json_object_to_json_string_ext(o,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE), !good);
	json_object_put(o);
done:
	free(c);
	job_release(t);
}

/* ops.exec: run an allowed tool against PostgreSQL. */
static void
answer_tool_exec(const char *name, json_object *args, llm_tool_reply_fn *reply,
    void *cookie, void *arg)
{
	struct turn		*t = arg;
	struct tool_call	*c;
	const char		*p[2], *why;
	json_object		*o;
	int			 tool = tool_from_name(name);

	if (tool >= 0 && (why = turn_tool_refusal(&t->plan,
	    (enum tool)tool)) != NULL) {
		/* Refused in code, never run: the LLM reads why and asks. */
		o = json_object_new_object();
		json_object_object_add(o, "ok", json_object_new_boolean(0));
		json_object_object_add(o, "erro", json_object_new_string(why));
		reply(cookie, json_object_to_json_string_ext(o,
		    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE), 1);
		json_object_put(o);
		return;
	}
	if (tool < 0 || (c = calloc(1, sizeof *c)) == NULL) {
		reply(cookie, "{\"ok\":false,\"erro\":\"ferramenta "
		    "desconhecida\"}", 1);
		return;
	}
	c->t = t;
	c->tool = tool;
	c->reply = reply;
	c->cookie = cookie;
	p[0] = t->conv_s;
	p[1] = args != NULL ? json_object_to_json_string_ext(args,
	    JSON_C_TO_STRING_PLAIN) : "{}";
	if (dbq_query(t->w->q, tool_sql[tool], 2, p, answer_tool_cb, c) == -1) {
		free(c);
		reply(cookie, "{\"ok\":false,\"erro\":\"erro interno\"}", 1);
		return;
	}
	job_hold(t);
}

/* ops.refused: a tool outside the mode's allow-list (never executed;
 * audited with the other calls when the turn ends). */
static void
answer_tool_refused(const char *name, json_object *args, void *arg)
{
	struct turn	*t = arg;

	log_info("turn: conversation %s: tool %s refused in mode %s",
	    t->conv_s, name, mode_name(t->plan.prompt_mode));
}

/* Append to a growing buffer (truncating at its size). */
static void
cat(char *buf, size_t len, const char *s)
{
	size_t	n = strlen(buf);

	if (n + 1 < len)
		snprintf(buf + n, len - n, "%s", s);
}

/* What modegate knows about the doctor, for the prompt. */
static void
answer_doctor_text(struct turn *t, char *buf, size_t len)
{
	json_object	*c, *mem;
	const char	*v;
	size_t		 i;

	json_object_object_get_ex(t->ctx, "conversation", &c);
	cat(buf, len, "## O QUE VOCÊ SABE DO MÉDICO\n");
	if ((v = job_jstr(c, "profile_name")) != NULL) {
		cat(buf, len, "- Nome no WhatsApp: ");
		cat(buf, len, v);
		cat(buf, len, "\n");
	}
	if ((v = job_jstr(c, "especialidade")) != NULL) {
		cat(buf, len, "- Especialidade: ");
		cat(buf, len, v);
		cat(buf, len, "\n");
	}
	if ((v = job_jstr(c, "regiao")) != NULL) {
		cat(buf, len, "- Região: ");
		cat(buf, len, v);
		cat(buf, len, "\n");
	}
	if (json_object_object_get_ex(t->ctx, "memory", &mem))
		for (i = 0; i < json_object_array_length(mem); i++) {
			cat(buf, len, "- ");
			cat(buf, len, json_object_get_string(
			    json_object_array_get_idx(mem, i)));
			cat(buf, len, "\n");
		}
}

/* The system prompt: persona, constraints, the date, the doctor. Composed
 * in one scratch buffer for the request, which is its only copy kept: a
 * turn waits seconds for the LLM, thousands at once (the audit row and a
 * regeneration read it back from the LLM's result). */
static const char *
answer_system(struct turn *t)
{
	static char	buf[TURN_SYSTEM_MAX];
	char		today[128];

	buf[0] = '\0';
	turn_today(t->plan.now_ms, today, sizeof today);
	cat(buf, sizeof buf, t->w->persona);
	if (t->plan.constraints[0] != '\0') {
		cat(buf, sizeof buf, GATE_SEPARATOR);
		cat(buf, sizeof buf, t->plan.constraints);
	}
	cat(buf, sizeof buf, GATE_SEPARATOR);
	cat(buf, sizeof buf, "## DATA E HORA\n");
	cat(buf, sizeof buf, today);
	cat(buf, sizeof buf, " Use datas no formato AAAA-MM-DD "
	    "nas ferramentas (buscar_vagas aceita data_de e data_ate).\n");
	cat(buf, sizeof buf, GATE_SEPARATOR);
	answer_doctor_text(t, buf, sizeof buf);
	return buf;
}

/* Add one line to the transcript, merging a run of one role. */
static void
answer_line(json_object *lines, json_object *roles, const char *role,
    const char *text)
{
	size_t		 n = json_object_array_length(lines);
	json_object	*last;
	char		*s;

	if (text == NULL || *text == '\0')
		return;
	if (n == 0 && strcmp(role, "user") != 0)
		return;			/* the model's turn cannot come first */
	if (n > 0 && strcmp(json_object_get_string(json_object_array_get_idx(
	    roles, n - 1)), role) == 0) {
		last = json_object_array_get_idx(lines, n - 1);
		if (asprintf(&s, "%s\n%s", json_object_get_string(last),
		    text) == -1)
			return;
		json_object_array_put_idx(lines, n - 1,
		    json_object_new_string(s));
		free(s);
		return;
	}
	json_object_array_add(lines, json_object_new_string(text));
	json_object_array_add(roles, json_object_new_string(role));
}

/* The lines in one block, their texts after them: a turn keeps it while
 * it waits (for a regeneration and the audit row), thousands at once. */
static int
answer_keep_lines(struct turn *t, json_object *lines, json_object *roles)
{
	struct llm_msg	*m;
	json_object	*l;
	char		*p;
	size_t		 i, len = 0, n = json_object_array_length(lines);

	for (i = 0; i < n; i++)
		len += (size_t)json_object_get_string_len(
		    json_object_array_get_idx(lines, i)) + 1;
	if (n == 0 || (m = malloc(n * sizeof *m + len)) == NULL)
		return -1;
	p = (char *)(m + n);
	for (i = 0; i < n; i++) {
		m[i].role = strcmp(json_object_get_string(
		    json_object_array_get_idx(roles, i)), "user") == 0 ?
		    "user" : "assistant";
		l = json_object_array_get_idx(lines, i);
		len = (size_t)json_object_get_string_len(l) + 1;
		memcpy(p, json_object_get_string(l), len);
		m[i].text = p;
		p += len;
	}
	t->msgs = m;
	t->nmsgs = n;
	return 0;
}

/* The transcript: history, then the claimed messages. */
static int
answer_transcript(struct turn *t)
{
	json_object	*lines = json_object_new_array();
	json_object	*roles = json_object_new_array(), *h, *m;
	size_t		 i;
	int		 rc;

	if (json_object_object_get_ex(t->ctx, "history", &h))
		for (i = 0; i < json_object_array_length(h); i++) {
			m = json_object_array_get_idx(h, i);
			answer_line(lines, roles, strcmp(job_jstr(m,
			    "direction") ? job_jstr(m, "direction") : "in",
			    "out") == 0 ? "assistant" : "user",
			    job_jstr(m, "text"));
		}
	if (json_object_object_get_ex(t->ctx, "messages", &h))
		for (i = 0; i < json_object_array_length(h); i++) {
			m = json_object_array_get_idx(h, i);
			if (i < t->plan.nmsgs &&
			    turn_in_transcript(&t->plan.msgs[i]))
				answer_line(lines, roles, "user",
				    job_jstr(m, "text"));
		}
	rc = answer_keep_lines(t, lines, roles);
	json_object_put(lines);
	json_object_put(roles);
	return rc;
}

/* Layer 1: the tools the plan offers (into tools; returns how many),
 * and the gate's audit row. */
static size_t
answer_tools(struct turn *t, struct llm_tool *tools)
{
	const struct turn_plan	*p = &t->plan;
	json_object		*d = json_object_new_object(), *al, *rm;
	bool			 on = p->flag == TURN_FLAG_ON;
	size_t			 n = 0;
	int			 i;

	al = json_object_new_array();
	rm = json_object_new_array();
	t->tools_sent = 0;
	for (i = 0; i < TOOL__COUNT; i++) {
		if (!(p->tools_allowed & (1u << i)))
			json_object_array_add(rm, json_object_new_string(
			    tool_name(i)));
		if ((p->tools_offered & (1u << i)) &&
		    tools_schema_get(i, &tools[n]) == 0) {
			n++;
			t->tools_sent |= 1u << i;
			json_object_array_add(al, json_object_new_string(
			    tool_name(i)));
		}
	}
	json_object_object_add(d, "flag",
	    json_object_new_string(turn_flag_name(p->flag)));
	json_object_object_add(d, "pending", p->st.pending >= 0 ?
	    json_object_new_string(mode_name(p->st.pending)) : NULL);
	json_object_object_add(d, "tools_offered", al);
	al = json_object_new_array();
	for (i = 0; i < (int)gate_claim_count(t->w->rs.gate, p->prompt_mode);
	    i++)
		json_object_array_add(al, json_object_new_string(gate_claim(
		    t->w->rs.gate, p->prompt_mode, (size_t)i)));
	json_object_object_add(d, "forbidden_claims", al);
	json_object_object_add(d, on ? "tools_removed" : "tools_would_remove",
	    rm);
	commit_audit(&t->c, "gate", mode_name(p->prompt_mode), on ?
	    "enforced" : "not_enforced", d, p->reply_to);
	return n;
}

/* The prompt of the request answered, as recorded in the llm audit row
 * (a regeneration offers no tools). */
static json_object *
answer_prompt_json(struct turn *t, const char *system)
{
	json_object	*p = json_object_new_object(), *a, *m;
	size_t		 i;
	int		 k;

	json_object_object_add(p, "system", json_object_new_string(system));
	a = json_object_new_array();
	for (i = 0; i < t->nmsgs; i++) {
		m = json_object_new_object();
		json_object_object_add(m, "role",
		    json_object_new_string(t->msgs[i].role));
		json_object_object_add(m, "text",
		    json_object_new_string(t->msgs[i].text));
		json_object_array_add(a, m);
	}
	json_object_object_add(p, "messages", a);
	a = json_object_new_array();
	for (k = 0; k < TOOL__COUNT && t->regen == 0; k++)
		if (t->tools_sent & (1u << k))
			json_object_array_add(a,
			    json_object_new_string(tool_name(k)));
	json_object_object_add(p, "tools", a);
	return p;
}

/* Send one request (the first, or a regeneration with feedback). */
static void
answer_llm_send(struct turn *t, const char *system,
    const struct llm_tool *tools, size_t ntools)
{
	struct llm_request	req;
	struct llm_tool_ops	ops;

	memset(&req, 0, sizeof req);
	req.system = system;
	req.msgs = t->msgs;
	req.nmsgs = t->nmsgs;
	req.tools = ntools > 0 ? tools : NULL;
	req.ntools = ntools;
	req.mode = mode_name(t->plan.prompt_mode);
	memset(&ops, 0, sizeof ops);
	ops.exec = answer_tool_exec;
	ops.refused = answer_tool_refused;
	ops.arg = t;
	t->mt_mark = metrics_turn_now();
	if (llm_turn_start(t->w->llm, &req, &ops, answer_llm_done, t) == -1) {
		job_fail(t, "cannot start the LLM request");
		return;
	}
	job_hold(t);
}

void
answer_start(struct turn *t)
{
	struct llm_tool	tools[TOOL__COUNT];
	size_t		n;

	if (t->finished)
		return;
	if (answer_transcript(t) == -1) {
		job_fail(t, "cannot build the prompt");
		return;
	}
	n = answer_tools(t, tools);
	answer_llm_send(t, answer_system(t), tools, n);
	job_forget(t);
	commit_pack(&t->c);
}

/* Audit the LLM call and each tool call it made. */
static void
answer_audit_llm(struct turn *t, const struct llm_result *r)
{
	json_object	*d = json_object_new_object(), *c, *e;
	size_t		 i;

	json_object_object_add(d, "model", json_object_new_string(r->model));
	json_object_object_add(d, "provider", json_object_new_string(
	    r->provider != NULL ? r->provider : "?"));
	json_object_object_add(d, "input_tokens",
	    json_object_new_int64(r->input_tokens));
	json_object_object_add(d, "output_tokens",
	    json_object_new_int64(r->output_tokens));
	json_object_object_add(d, "latency_ms",
	    json_object_new_int64(r->latency_ms));
	json_object_object_add(d, "rounds", json_object_new_int(r->rounds));
	json_object_object_add(d, "attempts", json_object_new_int(r->attempts));
	json_object_object_add(d, "regeneration", json_object_new_int(t->regen));
	if (!r->ok) {
		e = json_object_new_object();
		json_object_object_add(e, "class",
		    json_object_new_string(llm_err_name(r->err.cls)));
		json_object_object_add(e, "http_status",
		    json_object_new_int64(r->err.http_status));
		json_object_object_add(e, "message",
		    json_object_new_string(r->err.message));
		json_object_object_add(d, "error", e);
	}
	json_object_object_add(d, "prompt", answer_prompt_json(t,
	    r->system != NULL ? r->system : ""));
	commit_audit(&t->c, "llm", r->ok ? "ok" : "error", r->ok ?
	    llm_stop_name(r->stop) : llm_err_name(r->err.cls), d, t->plan.reply_to);
	for (i = 0; i < r->ncalls; i++) {
		c = json_object_new_object();
		json_object_object_add(c, "args", json_object_new_string(
		    r->calls[i].args != NULL ? r->calls[i].args : ""));
		json_object_object_add(c, "result", json_object_new_string(
		    r->calls[i].result != NULL ? r->calls[i].result : ""));
		json_object_object_add(c, "round",
		    json_object_new_int(r->calls[i].round));
		commit_audit(&t->c, "tool", r->calls[i].refused ? "refused" :
		    r->calls[i].is_error ? "error" : "executed",
		    r->calls[i].name, c, t->plan.reply_to);
	}
}

/* Remember the tool calls and results, for a regeneration's feedback. */
static void
answer_note_calls(struct turn *t, const struct llm_result *r)
{
	char	buf[8192] = "";
	size_t	i;

	if (t->calls_text != NULL || r->ncalls == 0)
		return;
	for (i = 0; i < r->ncalls; i++) {
		cat(buf, sizeof buf, "- ");
		cat(buf, sizeof buf, r->calls[i].name);
		cat(buf, sizeof buf, " ");
		cat(buf, sizeof buf, r->calls[i].args ? r->calls[i].args : "");
		cat(buf, sizeof buf, " -> ");
		cat(buf, sizeof buf, r->calls[i].result ?
		    r->calls[i].result : "");
		cat(buf, sizeof buf, "\n");
	}
	t->calls_text = strdup(buf);
}

/* A guarded reply was refused: ask again naming the claims, the system
 * prompt (as the first request sent it, kept from now on) corrected. */
static void
answer_regenerate(struct turn *t, const struct llm_result *r,
    const char **ids, size_t n)
{
	char	*sys;
	size_t	 i;
	int	 idx;

	if (t->base == NULL && (r->system == NULL ||
	    (t->base = strdup(r->system)) == NULL)) {
		job_fail(t, "out of memory");
		return;
	}
	if ((sys = calloc(1, TURN_SYSTEM_MAX)) == NULL) {
		job_fail(t, "out of memory");
		return;
	}
	cat(sys, TURN_SYSTEM_MAX, t->base);
	cat(sys, TURN_SYSTEM_MAX, GATE_SEPARATOR);
	cat(sys, TURN_SYSTEM_MAX, "## CORREÇÃO OBRIGATÓRIA\nSua resposta "
	    "anterior foi bloqueada e NÃO foi enviada:\n«");
	cat(sys, TURN_SYSTEM_MAX, r->text);
	cat(sys, TURN_SYSTEM_MAX, "»\nMotivo:\n");
	for (i = 0; i < n; i++) {
		idx = claims_find(t->w->rs.claims, ids[i]);
		cat(sys, TURN_SYSTEM_MAX, "- [");
		cat(sys, TURN_SYSTEM_MAX, ids[i]);
		cat(sys, TURN_SYSTEM_MAX, "] ");
		cat(sys, TURN_SYSTEM_MAX, idx >= 0 ?
		    claims_prompt(t->w->rs.claims, idx) : "");
		cat(sys, TURN_SYSTEM_MAX, "\n");
	}
	if (t->calls_text != NULL) {
		cat(sys, TURN_SYSTEM_MAX, "Resultados das ferramentas nesta "
		    "conversa:\n");
		cat(sys, TURN_SYSTEM_MAX, t->calls_text);
	}
	cat(sys, TURN_SYSTEM_MAX, "Escreva uma nova resposta ao médico, sem "
	    "isso.");
	t->regen++;
	answer_llm_send(t, sys, NULL, 0);
	free(sys);
}

/* Check the LLM's reply with the core's guard; 1 when it may be sent. */
static int
answer_guard(struct turn *t, const struct llm_result *r)
{
	struct turn_guard_result	 g;
	json_object			*d, *a;
	const char			*reply = r->text;
	size_t				 i;
	double				 t0;
	int				 m;

	t0 = metrics_turn_now();
	turn_guard(&t->w->rs, &t->plan, reply, t->regen, &g);
	if (!g.checked)
		return 1;
	metrics_turn_step(MT_GUARD, t0);
	for (i = 0; i < g.n; i++)
		metrics_turn_guard_violation(g.ids[i]);
	d = json_object_new_object();
	a = json_object_new_array();
	for (i = 0; i < g.n; i++)
		json_object_array_add(a, json_object_new_string(g.ids[i]));
	json_object_object_add(d, "forbidden_claims", a);
	json_object_object_add(d, "attempt", json_object_new_int(t->regen));
	json_object_object_add(d, "mode", json_object_new_string(
	    mode_name(t->plan.st.mode)));
	a = json_object_new_array();
	for (m = 0; m < MODE__COUNT; m++)
		if (t->plan.guard_modes & (1u << m))
			json_object_array_add(a,
			    json_object_new_string(mode_name(m)));
	json_object_object_add(d, "modes_checked", a);
	json_object_object_add(d, "enforced",
	    json_object_new_boolean(g.enforced));
	if (g.n > 0)
		json_object_object_add(d, "reply",
		    json_object_new_string(reply));
	/* Shadow: the row says what enforcement would have done. */
	commit_audit(&t->c, "guard", turn_verdict_name(g.verdict),
	    g.n == 0 ? NULL : !g.enforced ? "shadow: not enforced" : g.ids[0],
	    d, t->plan.reply_to);
	if (g.send)
		return 1;
	if (g.verdict == VERDICT_FALLBACK) {
		job_reply(t, job_text(t, "guard_fallback"),
		    "guard_fallback");
		job_commit(t);
		return 0;
	}
	answer_regenerate(t, r, g.ids, g.n);
	return 0;
}

/* The LLM could not answer: the core's fallback. */
static void
answer_llm_fallback(struct turn *t)
{
	const char	*key = turn_llm_failed(t->regen,
	    strcmp(t->w->cfg->llm_fallback, "handoff") == 0);

	if (key != NULL)
		job_reply(t, job_text(t, key), strcmp(key, "fallback") == 0 ?
		    "llm_fallback" : key);
	else {
		commit_set(&t->c, COL_CONTROL, "human");
		commit_set(&t->c, COL_CONTROL_UPDATED_BY, "llm_unavailable");
		commit_audit(&t->c, "llm", "handoff", "llm_unavailable", NULL,
		    t->plan.reply_to);
		t->outcome = "handoff";
	}
	job_commit(t);
}

/* The LLM turn ended. */
static void
answer_llm_done(struct llm_result *r, void *arg)
{
	struct turn	*t = arg;

	metrics_turn_step(MT_LLM, t->mt_mark);
	if (r == NULL)
		job_fail(t, "out of memory");
	else if (!t->finished) {
		answer_audit_llm(t, r);
		answer_note_calls(t, r);
		if (!r->ok)
			answer_llm_fallback(t);
		else if (r->text[0] == '\0') {
			job_reply(t, job_text(t, "fallback"),
			    "empty_reply_fallback");
			job_commit(t);
		} else if (answer_guard(t, r)) {
			job_reply(t, r->text, t->regen > 0 ? "llm_regenerated" :
			    "llm");
			job_commit(t);
		}
	}
	llm_result_free(r);
	job_release(t);
}
