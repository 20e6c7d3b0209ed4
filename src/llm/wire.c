/*
 * llm_wire.c -- the two provider wire formats: request bodies, response
 * parsing into neutral form, tool results, error classification
 * (reference/llm.md §1, §2, §3).
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/wire.h"

json_object *
llm_json_strict(const char *s, size_t len)
{
	json_tokener	*tok;
	json_object	*o;

	if ((tok = json_tokener_new_ex(64)) == NULL)
		return NULL;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, s, (int)len);
	if (o != NULL && json_tokener_get_parse_end(tok) != len) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	return o;
}


/* The protocol's vocabulary: names of providers, error classes and stop
 * reasons (llm.h), shared by the client and the metrics. */
#define LLM_NAME2(e, s) s,
#define LLM_NAME3(e, s, r) s,
#define LLM_RETRY3(e, s, r) r,
static const char *provider_names[] = { LLM_PROVIDER_LIST(LLM_NAME2) };
static const char *err_names[] = { LLM_ERR_LIST(LLM_NAME3) };
static const int err_retry[] = { LLM_ERR_LIST(LLM_RETRY3) };
static const char *stop_names[] = { LLM_STOP_LIST(LLM_NAME2) };

const char *
llm_provider_name(int i)
{
	return i >= 0 && i < LLM__PROVIDERS ? provider_names[i] : "?";
}

int
llm_provider_from_name(const char *s)
{
	int	i;

	for (i = 0; s != NULL && i < LLM__PROVIDERS; i++)
		if (strcmp(provider_names[i], s) == 0)
			return i;
	return -1;
}

const char *
llm_err_name(int i)
{
	return i >= 0 && i < LLM__ERRS ? err_names[i] : "?";
}

int
llm_err_retryable(int i)
{
	return i >= 0 && i < LLM__ERRS ? err_retry[i] : 0;
}

const char *
llm_stop_name(int i)
{
	return i >= 0 && i < LLM__STOPS ? stop_names[i] : "?";
}

/* Member as a string, or NULL when absent or not a string. */
static const char *
wire_str(json_object *o, const char *key)
{
	json_object	*v;

	if (o == NULL || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* Member, or NULL. */
static json_object *
wire_get(json_object *o, const char *key)
{
	json_object	*v;

	if (o == NULL || !json_object_object_get_ex(o, key, &v))
		return NULL;
	return v;
}

/* Element i of an array, or NULL (o NULL, not an array, or too short). */
static json_object *
wire_idx(json_object *o, size_t i)
{
	if (o == NULL || !json_object_is_type(o, json_type_array) ||
	    i >= json_object_array_length(o))
		return NULL;
	return json_object_array_get_idx(o, i);
}

static json_object *
wire_msg(const char *role, const char *text)
{
	json_object	*m = json_object_new_object();

	json_object_object_add(m, "role", json_object_new_string(role));
	json_object_object_add(m, "content", json_object_new_string(text));
	return m;
}

/*
 * Anthropic wants a user message first and alternating roles: lines of
 * the same role are joined, and a transcript opened by Julia gets a
 * neutral first user line.
 */
static json_object *
wire_messages_anthropic(const struct llm_msg *msgs, size_t n)
{
	json_object	*arr = json_object_new_array(), *last = NULL;
	const char	*prev = NULL;
	char		*joined;
	size_t		 i;

	for (i = 0; i < n; i++) {
		const char *role = strcmp(msgs[i].role, "assistant") == 0 ?
		    "assistant" : "user";

		if (prev == NULL && strcmp(role, "assistant") == 0)
			json_object_array_add(arr, wire_msg("user",
			    "(conversa iniciada pela Julia)"));
		if (prev != NULL && strcmp(prev, role) == 0 && last != NULL) {
			if (asprintf(&joined, "%s\n%s", wire_str(last,
			    "content"), msgs[i].text) == -1)
				continue;
			json_object_object_add(last, "content",
			    json_object_new_string(joined));
			free(joined);
			continue;
		}
		last = wire_msg(role, msgs[i].text);
		json_object_array_add(arr, last);
		prev = role;
	}
	if (n == 0)
		json_object_array_add(arr, wire_msg("user", "(sem mensagens)"));
	return arr;
}

json_object *
llm_wire_messages(enum llm_provider p, const char *system,
    const struct llm_msg *msgs, size_t n)
{
	json_object	*arr;
	size_t		 i;

	if (p != LLM_OPENAI)
		return wire_messages_anthropic(msgs, n);
	arr = json_object_new_array();
	if (system != NULL && *system != '\0')
		json_object_array_add(arr, wire_msg("system", system));
	for (i = 0; i < n; i++)
		json_object_array_add(arr, wire_msg(strcmp(msgs[i].role,
		    "assistant") == 0 ? "assistant" : "user", msgs[i].text));
	return arr;
}

json_object *
llm_wire_tools(enum llm_provider p, const struct llm_tool *tools, size_t n,
    int *bad)
{
	json_object	*arr, *t, *f, *schema;
	size_t		 i;

	*bad = 0;
	if (n == 0)
		return NULL;
	arr = json_object_new_array();
	for (i = 0; i < n; i++) {
		if (tools[i].schema != NULL)
			schema = json_object_get(tools[i].schema);
		else if (tools[i].schema_json == NULL || (schema =
		    llm_json_strict(tools[i].schema_json,
		    strlen(tools[i].schema_json))) == NULL) {
			*bad = 1;
			json_object_put(arr);
			return NULL;
		}
		f = json_object_new_object();
		json_object_object_add(f, "name",
		    json_object_new_string(tools[i].name));
		json_object_object_add(f, "description", json_object_new_string(
		    tools[i].description ? tools[i].description : ""));
		json_object_object_add(f, p == LLM_OPENAI ? "parameters" :
		    "input_schema", schema);
		if (p == LLM_OPENAI) {
			t = json_object_new_object();
			json_object_object_add(t, "type",
			    json_object_new_string("function"));
			json_object_object_add(t, "function", f);
			f = t;
		}
		json_object_array_add(arr, f);
	}
	return arr;
}

char *
llm_wire_body(enum llm_provider p, const char *model, int max_tokens,
    double temperature, int public_api, const char *system,
    json_object *messages, json_object *tools)
{
	json_object	*o = json_object_new_object();
	char		*s;

	json_object_object_add(o, "model", json_object_new_string(model));
	/* OpenAI deprecated max_tokens; local servers still expect it. */
	json_object_object_add(o, p == LLM_OPENAI && public_api ?
	    "max_completion_tokens" : "max_tokens",
	    json_object_new_int(max_tokens));
	if (temperature >= 0)
		json_object_object_add(o, "temperature",
		    json_object_new_double(temperature));
	if (p != LLM_OPENAI && system != NULL && *system != '\0')
		json_object_object_add(o, "system",
		    json_object_new_string(system));
	json_object_object_add(o, "messages", json_object_get(messages));
	if (tools != NULL)
		json_object_object_add(o, "tools", json_object_get(tools));
	s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return s;
}

char *
llm_wire_system(enum llm_provider p, const char *body)
{
	json_object	*o = llm_json_strict(body, strlen(body)), *m;
	const char	*s;
	char		*r;

	if (p == LLM_OPENAI) {
		m = wire_idx(wire_get(o, "messages"), 0);
		s = wire_str(m, "role") != NULL &&
		    strcmp(wire_str(m, "role"), "system") == 0 ?
		    wire_str(m, "content") : NULL;
	} else
		s = wire_str(o, "system");
	r = strdup(s != NULL ? s : "");
	json_object_put(o);
	return r;
}

/* Arguments as object or as JSON text; *args is NULL when unparsable. */
static void
wire_args(json_object *v, struct llm_wire_call *c)
{
	const char	*s;

	c->args = NULL;
	if (v == NULL || json_object_is_type(v, json_type_null)) {
		c->args = json_object_new_object();
	} else if (json_object_is_type(v, json_type_object)) {
		c->args = json_object_get(v);
	} else if (json_object_is_type(v, json_type_string)) {
		s = json_object_get_string(v);
		if (s[strspn(s, " \t\r\n")] == '\0')
			c->args = json_object_new_object();
		else if ((c->args = llm_json_strict(s, strlen(s))) != NULL &&
		    !json_object_is_type(c->args, json_type_object)) {
			json_object_put(c->args);
			c->args = NULL;
		}
		c->args_text = strdup(s);
		return;
	}
	c->args_text = strdup(c->args ? json_object_to_json_string_ext(c->args,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE) :
	    json_object_to_json_string(v));
}

/* Append one call to r. */
static void
wire_add_call(struct llm_wire_resp *r, const char *id, const char *name,
    json_object *args)
{
	struct llm_wire_call	*c, *nc;
	char			 gen[32];

	nc = realloc(r->calls, (r->ncalls + 1) * sizeof *nc);
	if (nc == NULL)
		return;
	r->calls = nc;
	c = &r->calls[r->ncalls++];
	memset(c, 0, sizeof *c);
	/* Some local servers send calls without ids. */
	snprintf(gen, sizeof gen, "call_%zu", r->ncalls);
	c->id = strdup(id != NULL && *id != '\0' ? id : gen);
	c->name = strdup(name != NULL ? name : "");
	wire_args(args, c);
}

/* Append text to r->text. */
static void
wire_add_text(struct llm_wire_resp *r, const char *t)
{
	size_t	 a = strlen(r->text), b = strlen(t);
	char	*n;

	if ((n = realloc(r->text, a + b + 1)) == NULL)
		return;
	memcpy(n + a, t, b + 1);
	r->text = n;
}

static enum llm_stop
wire_stop(const char *s)
{
	static const struct { const char *name; enum llm_stop stop; } map[] = {
		{ "end_turn", LLM_STOP_END_TURN },
		{ "stop", LLM_STOP_END_TURN },
		{ "tool_use", LLM_STOP_TOOL_USE },
		{ "tool_calls", LLM_STOP_TOOL_USE },
		{ "tool", LLM_STOP_TOOL_USE },
		{ "function_call", LLM_STOP_TOOL_USE },
		{ "max_tokens", LLM_STOP_MAX_TOKENS },
		{ "length", LLM_STOP_MAX_TOKENS },
		{ "stop_sequence", LLM_STOP_STOP_SEQUENCE },
		{ "pause_turn", LLM_STOP_PAUSE_TURN },
		{ "refusal", LLM_STOP_REFUSAL },
		{ "model_context_window_exceeded", LLM_STOP_CONTEXT },
		{ "content_filter", LLM_STOP_CONTENT_FILTER },
	};
	size_t	i;

	if (s == NULL)
		return LLM_STOP_NONE;
	for (i = 0; i < sizeof map / sizeof map[0]; i++)
		if (strcmp(map[i].name, s) == 0)
			return map[i].stop;
	return LLM_STOP_UNKNOWN;
}

/* Anthropic: content blocks, stop_reason, usage; echo content verbatim. */
static int
wire_parse_anthropic(json_object *root, struct llm_wire_resp *r)
{
	json_object	*content, *b, *a;
	const char	*type;
	size_t		 i;

	content = wire_get(root, "content");
	if (content == NULL || !json_object_is_type(content, json_type_array))
		return -1;
	for (i = 0; i < json_object_array_length(content); i++) {
		b = json_object_array_get_idx(content, i);
		if ((type = wire_str(b, "type")) == NULL)
			continue;
		if (strcmp(type, "text") == 0 && wire_str(b, "text") != NULL)
			wire_add_text(r, wire_str(b, "text"));
		else if (strcmp(type, "tool_use") == 0)
			wire_add_call(r, wire_str(b, "id"), wire_str(b, "name"),
			    wire_get(b, "input"));
	}
	r->stop = wire_stop(wire_str(root, "stop_reason"));
	r->in_tok = json_object_get_int64(wire_get(wire_get(root, "usage"),
	    "input_tokens"));
	r->out_tok = json_object_get_int64(wire_get(wire_get(root, "usage"),
	    "output_tokens"));
	a = json_object_new_object();
	json_object_object_add(a, "role", json_object_new_string("assistant"));
	json_object_object_add(a, "content", json_object_get(content));
	r->assistant = a;
	return 0;
}

/* OpenAI: the assistant message is rebuilt so that it carries every call
 * with an id and its arguments as a JSON string, as strict servers want. */
static json_object *
wire_echo_openai(const struct llm_wire_resp *r, json_object *content)
{
	json_object	*a, *tcs, *tc, *f;
	size_t		 i;

	a = json_object_new_object();
	json_object_object_add(a, "role", json_object_new_string("assistant"));
	json_object_object_add(a, "content", json_object_get(content));
	if (r->ncalls == 0)
		return a;
	tcs = json_object_new_array();
	for (i = 0; i < r->ncalls; i++) {
		tc = json_object_new_object();
		f = json_object_new_object();
		json_object_object_add(tc, "id",
		    json_object_new_string(r->calls[i].id));
		json_object_object_add(tc, "type",
		    json_object_new_string("function"));
		json_object_object_add(f, "name",
		    json_object_new_string(r->calls[i].name));
		json_object_object_add(f, "arguments", json_object_new_string(
		    r->calls[i].args_text ? r->calls[i].args_text : "{}"));
		json_object_object_add(tc, "function", f);
		json_object_array_add(tcs, tc);
	}
	json_object_object_add(a, "tool_calls", tcs);
	return a;
}

/* OpenAI: choices[0].message, finish_reason, usage. */
static int
wire_parse_openai(json_object *root, struct llm_wire_resp *r)
{
	json_object	*ch, *msg, *tcs, *tc, *f;
	const char	*t;
	size_t		 i;

	ch = wire_idx(wire_get(root, "choices"), 0);
	if ((msg = wire_get(ch, "message")) == NULL ||
	    !json_object_is_type(msg, json_type_object))
		return -1;
	if ((t = wire_str(msg, "content")) != NULL)
		wire_add_text(r, t);
	tcs = wire_get(msg, "tool_calls");
	for (i = 0; tcs != NULL && json_object_is_type(tcs, json_type_array) &&
	    i < json_object_array_length(tcs); i++) {
		tc = json_object_array_get_idx(tcs, i);
		/* llama.cpp has shown calls without the function wrapper. */
		f = wire_get(tc, "function") ? wire_get(tc, "function") : tc;
		wire_add_call(r, wire_str(tc, "id"), wire_str(f, "name"),
		    wire_get(f, "arguments"));
	}
	r->stop = wire_stop(wire_str(ch, "finish_reason"));
	/* Whether tools are wanted is decided by the calls, not by
	 * finish_reason, unless the output was cut. */
	if (r->ncalls > 0 && r->stop != LLM_STOP_MAX_TOKENS &&
	    r->stop != LLM_STOP_CONTENT_FILTER)
		r->stop = LLM_STOP_TOOL_USE;
	else if (r->ncalls == 0 && r->stop == LLM_STOP_TOOL_USE)
		r->stop = LLM_STOP_END_TURN;
	if (wire_str(msg, "refusal") != NULL)
		r->stop = LLM_STOP_REFUSAL;
	r->in_tok = json_object_get_int64(wire_get(wire_get(root, "usage"),
	    "prompt_tokens"));
	r->out_tok = json_object_get_int64(wire_get(wire_get(root, "usage"),
	    "completion_tokens"));
	r->assistant = wire_echo_openai(r, wire_get(msg, "content"));
	return 0;
}

int
llm_wire_parse(enum llm_provider p, const char *body, size_t len,
    struct llm_wire_resp *r, struct llm_error *err)
{
	json_object	*root;
	int		 rc = -1;

	memset(r, 0, sizeof *r);
	if ((r->text = strdup("")) == NULL)
		return -1;
	root = llm_json_strict(body, len);
	if (root != NULL && json_object_is_type(root, json_type_object)) {
		rc = p == LLM_OPENAI ? wire_parse_openai(root, r) :
		    wire_parse_anthropic(root, r);
		if (wire_str(root, "model") != NULL)
			r->model = strdup(wire_str(root, "model"));
	}
	json_object_put(root);
	if (rc == -1) {
		llm_wire_resp_clear(r);
		err->cls = LLM_ERR_MALFORMED;
		err->retryable = 1;
		snprintf(err->message, sizeof err->message, "%s",
		    root == NULL ? "response is not valid JSON" :
		    "response lacks the expected fields");
	}
	return rc;
}

void
llm_wire_resp_clear(struct llm_wire_resp *r)
{
	size_t	i;

	for (i = 0; i < r->ncalls; i++) {
		free(r->calls[i].id);
		free(r->calls[i].name);
		free(r->calls[i].args_text);
		json_object_put(r->calls[i].args);
	}
	free(r->calls);
	free(r->text);
	free(r->model);
	json_object_put(r->assistant);
	memset(r, 0, sizeof *r);
}

void
llm_wire_results(enum llm_provider p, json_object *messages,
    const struct llm_wire_resp *r, char *const *results, const int *is_error)
{
	json_object	*content, *b, *m;
	size_t		 i;

	content = p == LLM_OPENAI ? NULL : json_object_new_array();
	for (i = 0; i < r->ncalls; i++) {
		b = json_object_new_object();
		if (p == LLM_OPENAI) {
			/* No error flag in OpenAI: the content says it. */
			json_object_object_add(b, "role",
			    json_object_new_string("tool"));
			json_object_object_add(b, "tool_call_id",
			    json_object_new_string(r->calls[i].id));
			json_object_object_add(b, "content",
			    json_object_new_string(results[i]));
			json_object_array_add(messages, b);
			continue;
		}
		json_object_object_add(b, "type",
		    json_object_new_string("tool_result"));
		json_object_object_add(b, "tool_use_id",
		    json_object_new_string(r->calls[i].id));
		json_object_object_add(b, "content",
		    json_object_new_string(results[i]));
		if (is_error[i])
			json_object_object_add(b, "is_error",
			    json_object_new_boolean(1));
		json_object_array_add(content, b);
	}
	if (content != NULL) {
		m = json_object_new_object();
		json_object_object_add(m, "role", json_object_new_string("user"));
		json_object_object_add(m, "content", content);
		json_object_array_add(messages, m);
	}
}

/* Error class from error.type / error.code text, or NONE when unknown. */
static enum llm_err
wire_err_from_type(const char *t)
{
	static const struct { const char *type; enum llm_err cls; } map[] = {
		{ "overloaded_error", LLM_ERR_OVERLOADED },
		{ "rate_limit_error", LLM_ERR_RATE_LIMIT },
		{ "rate_limit_exceeded", LLM_ERR_RATE_LIMIT },
		{ "api_error", LLM_ERR_SERVER },
		{ "server_error", LLM_ERR_SERVER },
		{ "service_unavailable_error", LLM_ERR_OVERLOADED },
		{ "server_is_overloaded", LLM_ERR_OVERLOADED },
		{ "unavailable_error", LLM_ERR_OVERLOADED },
		{ "timeout_error", LLM_ERR_TIMEOUT },
		{ "invalid_request_error", LLM_ERR_INVALID_REQUEST },
		{ "request_too_large", LLM_ERR_INVALID_REQUEST },
		{ "authentication_error", LLM_ERR_AUTH },
		{ "invalid_api_key", LLM_ERR_AUTH },
		{ "permission_error", LLM_ERR_PERMISSION },
		{ "not_found_error", LLM_ERR_NOT_FOUND },
		{ "model_not_found", LLM_ERR_NOT_FOUND },
		{ "billing_error", LLM_ERR_QUOTA },
		{ "insufficient_quota", LLM_ERR_QUOTA },
		{ "credit_balance_exhausted", LLM_ERR_QUOTA },
		{ "organization_spend_limit_exceeded", LLM_ERR_QUOTA },
		{ "project_spend_limit_exceeded", LLM_ERR_QUOTA },
		{ "organization_usage_limit_exceeded", LLM_ERR_QUOTA },
		{ "enforced_spend_limit_reached", LLM_ERR_QUOTA },
	};
	size_t	i;

	for (i = 0; t != NULL && i < sizeof map / sizeof map[0]; i++)
		if (strcmp(map[i].type, t) == 0)
			return map[i].cls;
	return LLM_ERR_NONE;
}

/* Error class from the HTTP status alone. */
static enum llm_err
wire_err_from_status(long status)
{
	if (status == 429)
		return LLM_ERR_RATE_LIMIT;
	if (status == 529 || status == 503)
		return LLM_ERR_OVERLOADED;
	if (status == 408 || status == 504)
		return LLM_ERR_TIMEOUT;
	if (status >= 500 || status == 409)
		return LLM_ERR_SERVER;
	if (status == 401)
		return LLM_ERR_AUTH;
	if (status == 402)
		return LLM_ERR_QUOTA;
	if (status == 403)
		return LLM_ERR_PERMISSION;
	if (status == 404)
		return LLM_ERR_NOT_FOUND;
	return LLM_ERR_INVALID_REQUEST;
}

void
llm_wire_classify(enum llm_provider p, long status, const char *body,
    size_t len, struct llm_error *err)
{
	json_object	*root, *e, *code;
	const char	*type, *msg;
	enum llm_err	 cls = LLM_ERR_NONE, c2;
	char		 codebuf[32];

	err->http_status = status;
	root = llm_json_strict(body, len);
	e = wire_get(root, "error");
	type = wire_str(e, "type");
	if ((msg = wire_str(e, "message")) != NULL)
		snprintf(err->message, sizeof err->message, "%s", msg);
	/* The code (a string, or an integer on llama.cpp) is more specific
	 * than the type: a quota 429 must not be retried. */
	code = wire_get(e, "code");
	if (code == NULL)
		code = wire_get(wire_get(e, "details"), "error_code");
	if (code != NULL && json_object_is_type(code, json_type_string))
		cls = wire_err_from_type(json_object_get_string(code));
	if (cls == LLM_ERR_NONE && (c2 = wire_err_from_type(type)) !=
	    LLM_ERR_NONE)
		cls = c2;
	snprintf(err->type, sizeof err->type, "%s", type ? type : "");
	if (cls == LLM_ERR_QUOTA && code != NULL &&
	    json_object_is_type(code, json_type_string))
		snprintf(err->type, sizeof err->type, "%s",
		    json_object_get_string(code));
	if (cls == LLM_ERR_NONE)
		cls = wire_err_from_status(status);
	if (err->type[0] == '\0' && code != NULL &&
	    json_object_is_type(code, json_type_int)) {
		snprintf(codebuf, sizeof codebuf, "%d", json_object_get_int(code));
		snprintf(err->type, sizeof err->type, "%s", codebuf);
	}
	if (err->message[0] == '\0')
		snprintf(err->message, sizeof err->message, "HTTP %ld%s",
		    status, root == NULL && len > 0 ? " (body not JSON)" : "");
	err->cls = cls;
	err->retryable = llm_err_retryable(cls);
	json_object_put(root);
	(void)p;
}
