/*
 * test_llm.c -- the LLM client against tests/fakes/fake_llm.py on a real
 * event loop: request shapes per provider, the tool loop, refused tools,
 * retries, error classes, timeout, circuit breaker, offline provider.
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../../src/llm/llm.h"
#include "../../../src/turn/tools_schema.h"
#include "fakepeer.h"

static struct fakepeer	 fake;
static struct event_base *base;
static struct curlev	*cv;
static int64_t		 clock_ms = 1000000;
static struct llm_result *got;

/* Tools executed by the fake worker, in order. */
static char		 exec_log[8][256];
static int		 nexec;
static char		 refused_log[256];
static const char	*tool_answer = "{\"ok\":true}";

static const char *SYSTEM = "Você é a Julia, intermediadora de plantões.";
static const struct llm_msg TWO_MSGS[] = {
	{ "user", "Oi" },
	{ "user", "Tem vaga de plantão?" },
};

static int64_t
fake_now(void *arg)
{
	return clock_ms;
}

static void
on_done(struct llm_result *r, void *arg)
{
	got = r;
	event_base_loopbreak(base);
}

static void
exec_sync(const char *name, json_object *args, llm_tool_reply_fn *reply,
    void *cookie, void *arg)
{
	snprintf(exec_log[nexec++ % 8], sizeof exec_log[0], "%s %s", name,
	    json_object_to_json_string_ext(args, JSON_C_TO_STRING_PLAIN));
	reply(cookie, tool_answer, 0);
}

struct pending_reply {
	llm_tool_reply_fn	*reply;
	void			*cookie;
};

static void
later_cb(evutil_socket_t fd, short what, void *arg)
{
	struct pending_reply	*p = arg;

	p->reply(p->cookie, tool_answer, 0);
	free(p);
}

/* Like exec_sync but answers from the loop, as the worker will. */
static void
exec_async(const char *name, json_object *args, llm_tool_reply_fn *reply,
    void *cookie, void *arg)
{
	struct pending_reply	*p = malloc(sizeof *p);
	struct timeval		 tv = { 0, 1000 };

	snprintf(exec_log[nexec++ % 8], sizeof exec_log[0], "%s %s", name,
	    json_object_to_json_string_ext(args, JSON_C_TO_STRING_PLAIN));
	p->reply = reply;
	p->cookie = cookie;
	event_base_once(base, -1, EV_TIMEOUT, later_cb, p, &tv);
}

static void
on_refused(const char *name, json_object *args, void *arg)
{
	snprintf(refused_log, sizeof refused_log, "%s", name);
}

static const struct llm_tool_ops OPS = { exec_sync, on_refused, NULL };
static const struct llm_tool_ops OPS_ASYNC = { exec_async, on_refused, NULL };

static struct llm *
new_llm(enum llm_provider p, long timeout_ms, int threshold)
{
	struct llm_params	lp;
	char			url[96];

	llm_params_default(&lp);
	lp.provider = p;
	snprintf(url, sizeof url, "%s%s", fake.base,
	    p == LLM_OPENAI ? "/v1" : "");
	lp.base_url = url;
	lp.api_key = "sk-test";
	lp.model = "m-test";
	lp.timeout_ms = timeout_ms;
	lp.connect_timeout_ms = 1000;
	lp.backoff_base_ms = 5;
	lp.backoff_max_ms = 20;
	lp.retry_after_cap_ms = 2000;
	lp.breaker_threshold = threshold;
	lp.now_ms = fake_now;
	return llm_new(cv, &lp);
}

/* Tools by enum, into out[]; returns the count. */
static size_t
tools(struct llm_tool *out, const int *which, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		assert_int_equal(tools_schema_get(which[i], &out[i]), 0);
	return n;
}

/* Run one turn to completion and return its result (caller frees). */
static struct llm_result *
run(struct llm *l, const struct llm_request *req,
    const struct llm_tool_ops *ops)
{
	struct timeval	tv = { 15, 0 };

	got = NULL;
	assert_int_equal(llm_turn_start(l, req, ops, on_done, NULL), 0);
	assert_null(got);	/* never called back from inside start */
	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
	assert_non_null(got);
	return got;
}

static int
setup(void **state)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (fakepeer_start(&fake, "tests/fakes/fake_llm.py") == -1)
		return -1;
	base = event_base_new();
	cv = curlev_new(base);
	return cv != NULL ? 0 : -1;
}

static int
teardown(void **state)
{
	curlev_free(cv);
	event_base_free(base);
	fakepeer_stop(&fake);
	curl_global_cleanup();
	return 0;
}

static int
reset(void **state)
{
	fakepeer_reset(&fake);
	nexec = 0;
	refused_log[0] = '\0';
	tool_answer = "{\"ok\":true}";
	return 0;
}

static void
test_anthropic_request_shape(void **state)
{
	static const int which[] = { TOOL_BUSCAR_VAGAS, TOOL_SALVAR_MEMORIA };
	struct llm_tool		 t[2];
	struct llm_request	 req = { SYSTEM, TWO_MSGS, 2, t, 0, "oferta" };
	struct llm		*l = new_llm(LLM_ANTHROPIC, 3000, 5);
	struct llm_result	*r;
	json_object		*reqs;

	req.ntools = tools(t, which, 2);
	r = run(l, &req, &OPS);
	assert_true(r->ok);
	assert_string_equal(r->text, "Olá! Em que posso ajudar?");
	assert_int_equal(r->rounds, 1);
	assert_int_equal(r->input_tokens, 120);
	assert_int_equal(r->output_tokens, 30);
	assert_string_equal(r->model, "m-test");
	assert_string_equal(r->system, SYSTEM);	/* for the audit row */
	reqs = fakepeer_requests(&fake);
	assert_string_equal(fakepeer_str(reqs, "0.path"), "/v1/messages");
	assert_string_equal(fakepeer_str(reqs, "0.headers.x-api-key"),
	    "sk-test");
	assert_string_equal(fakepeer_str(reqs, "0.headers.anthropic-version"),
	    "2023-06-01");
	assert_null(fakepeer_get(reqs, "0.headers.authorization"));
	assert_string_equal(fakepeer_str(reqs, "0.body.system"), SYSTEM);
	/* Two user lines become one user message; no system role. */
	assert_int_equal(json_object_array_length(fakepeer_get(reqs,
	    "0.body.messages")), 1);
	assert_string_equal(fakepeer_str(reqs, "0.body.messages.0.role"),
	    "user");
	assert_int_equal(json_object_array_length(fakepeer_get(reqs,
	    "0.body.tools")), 2);
	assert_string_equal(fakepeer_str(reqs, "0.body.tools.0.name"),
	    "buscar_vagas");
	assert_string_equal(fakepeer_str(reqs,
	    "0.body.tools.0.input_schema.type"), "object");
	assert_string_equal(fakepeer_str(reqs, "0.body.tools.1.name"),
	    "salvar_memoria");
	assert_int_equal(json_object_get_int(fakepeer_get(reqs,
	    "0.body.max_tokens")), 1024);
	json_object_put(reqs);
	llm_result_free(r);
	llm_free(l);
}

static void
test_openai_request_shape_without_tools(void **state)
{
	struct llm_request	 req = { SYSTEM, TWO_MSGS, 2, NULL, 0,
				    "discovery" };
	struct llm		*l = new_llm(LLM_OPENAI, 3000, 5);
	struct llm_result	*r = run(l, &req, &OPS);
	json_object		*reqs = fakepeer_requests(&fake);

	assert_true(r->ok);
	assert_string_equal(r->stop == LLM_STOP_END_TURN ? "end" : "x", "end");
	assert_string_equal(r->system, SYSTEM);
	assert_string_equal(fakepeer_str(reqs, "0.path"),
	    "/v1/chat/completions");
	assert_string_equal(fakepeer_str(reqs, "0.headers.authorization"),
	    "Bearer sk-test");
	assert_null(fakepeer_get(reqs, "0.headers.x-api-key"));
	assert_null(fakepeer_get(reqs, "0.body.system"));
	assert_null(fakepeer_get(reqs, "0.body.tools"));
	assert_string_equal(fakepeer_str(reqs, "0.body.messages.0.role"),
	    "system");
	assert_string_equal(fakepeer_str(reqs, "0.body.messages.0.content"),
	    SYSTEM);
	assert_string_equal(fakepeer_str(reqs, "0.body.messages.2.content"),
	    "Tem vaga de plantão?");
	json_object_put(reqs);
	llm_result_free(r);
	llm_free(l);
}

static void
test_anthropic_tool_loop_pairs_results(void **state)
{
	static const int which[] = { TOOL_BUSCAR_VAGAS, TOOL_SALVAR_MEMORIA };
	struct llm_tool		 t[2];
	struct llm_request	 req = { SYSTEM, TWO_MSGS, 2, t, 2, "oferta" };
	struct llm		*l = new_llm(LLM_ANTHROPIC, 3000, 5);
	struct llm_result	*r;
	json_object		*reqs;

	tools(t, which, 2);
	fakepeer_script(&fake, "[{\"text\":\"Vou ver.\",\"tool_calls\":["
	    "{\"id\":\"toolu_A\",\"name\":\"buscar_vagas\",\"arguments\":"
	    "{\"especialidade\":\"cardiologia\"}},{\"id\":\"toolu_B\",\"name\":"
	    "\"salvar_memoria\",\"arguments\":{\"fato\":\"cardio\"}}]},"
	    "{\"text\":\"Achei 1 vaga.\"}]");
	r = run(l, &req, &OPS_ASYNC);
	assert_true(r->ok);
	assert_string_equal(r->text, "Achei 1 vaga.");
	assert_int_equal(r->rounds, 2);
	assert_int_equal(nexec, 2);
	assert_string_equal(exec_log[0],
	    "buscar_vagas {\"especialidade\":\"cardiologia\"}");
	assert_string_equal(exec_log[1], "salvar_memoria {\"fato\":\"cardio\"}");
	assert_int_equal(r->ncalls, 2);
	assert_string_equal(r->calls[1].id, "toolu_B");
	assert_true(r->calls[0].executed && !r->calls[0].refused);
	reqs = fakepeer_requests(&fake);
	assert_int_equal(json_object_array_length(reqs), 2);
	assert_string_equal(fakepeer_str(reqs, "1.body.messages.1.role"),
	    "assistant");
	assert_string_equal(fakepeer_str(reqs,
	    "1.body.messages.1.content.1.caller.type"), "direct");
	assert_string_equal(fakepeer_str(reqs,
	    "1.body.messages.2.content.0.tool_use_id"), "toolu_A");
	assert_string_equal(fakepeer_str(reqs,
	    "1.body.messages.2.content.1.tool_use_id"), "toolu_B");
	assert_string_equal(fakepeer_str(reqs,
	    "1.body.messages.2.content.0.content"), "{\"ok\":true}");
	json_object_put(reqs);
	llm_result_free(r);
	llm_free(l);
}

static void
test_openai_arguments_string_and_object(void **state)
{
	static const int which[] = { TOOL_BUSCAR_VAGAS };
	struct llm_tool		 t[1];
	struct llm_request	 req = { SYSTEM, TWO_MSGS, 2, t, 1, "oferta" };
	struct llm		*l = new_llm(LLM_OPENAI, 3000, 5);
	struct llm_result	*r;
	json_object		*reqs;

	tools(t, which, 1);
	fakepeer_script(&fake, "[{\"tool_calls\":[{\"id\":\"call_1\",\"name\":"
	    "\"buscar_vagas\",\"arguments\":\"{\\n\\\"regiao\\\": \\\"ABC\\\"\\n}"
	    "\"}]},{\"raw_arguments\":true,\"tool_calls\":[{\"id\":\"call_2\","
	    "\"name\":\"buscar_vagas\",\"arguments\":{\"regiao\":\"Santos\"}}]},"
	    "{\"text\":\"Pronto.\"}]");
	r = run(l, &req, &OPS);
	assert_true(r->ok);
	assert_int_equal(r->rounds, 3);
	assert_string_equal(exec_log[0], "buscar_vagas {\"regiao\":\"ABC\"}");
	assert_string_equal(exec_log[1], "buscar_vagas {\"regiao\":\"Santos\"}");
	reqs = fakepeer_requests(&fake);
	assert_string_equal(fakepeer_str(reqs, "0.body.tools.0.type"),
	    "function");
	assert_string_equal(fakepeer_str(reqs,
	    "0.body.tools.0.function.name"), "buscar_vagas");
	assert_string_equal(fakepeer_str(reqs,
	    "0.body.tools.0.function.parameters.type"), "object");
	assert_string_equal(fakepeer_str(reqs, "1.body.messages.4.role"),
	    "tool");
	assert_string_equal(fakepeer_str(reqs,
	    "1.body.messages.4.tool_call_id"), "call_1");
	/* The object arguments are echoed back as a JSON string. */
	assert_true(json_object_is_type(fakepeer_get(reqs,
	    "2.body.messages.5.tool_calls.0.function.arguments"),
	    json_type_string));
	json_object_put(reqs);
	llm_result_free(r);
	llm_free(l);
}

static void
test_forbidden_tool_refused_not_executed(void **state)
{
	static const int which[] = { TOOL_SALVAR_MEMORIA };
	struct llm_tool		 t[1];
	struct llm_request	 req = { SYSTEM, TWO_MSGS, 2, t, 1,
				    "discovery" };
	struct llm		*l = new_llm(LLM_ANTHROPIC, 3000, 5);
	struct llm_result	*r;
	json_object		*reqs;

	tools(t, which, 1);
	fakepeer_script(&fake, "[{\"tool_calls\":[{\"id\":\"toolu_X\","
	    "\"name\":\"buscar_vagas\",\"arguments\":{}}]},"
	    "{\"text\":\"Me conta sua especialidade?\"}]");
	r = run(l, &req, &OPS);
	assert_true(r->ok);
	assert_int_equal(nexec, 0);
	assert_string_equal(refused_log, "buscar_vagas");
	assert_int_equal(r->ncalls, 1);
	assert_true(r->calls[0].refused);
	assert_false(r->calls[0].executed);
	reqs = fakepeer_requests(&fake);
	assert_string_equal(fakepeer_str(reqs,
	    "1.body.messages.2.content.0.content"), LLM_TOOL_REFUSED);
	assert_string_equal(fakepeer_str(reqs,
	    "1.body.messages.2.content.0.is_error"), "true");
	json_object_put(reqs);
	llm_result_free(r);
	llm_free(l);
}

/* A one-message turn with no tools against a script; result returned. */
static struct llm_result *
scripted(struct llm *l, const char *steps)
{
	struct llm_request	req = { NULL, TWO_MSGS, 1, NULL, 0, "oferta" };

	if (steps != NULL)
		fakepeer_script(&fake, steps);
	return run(l, &req, &OPS);
}

/* Number of requests the fake has seen. */
static size_t
nrequests(void)
{
	json_object	*reqs = fakepeer_requests(&fake);
	size_t		 n = json_object_array_length(reqs);

	json_object_put(reqs);
	return n;
}

static void
test_429_retry_after_then_success(void **state)
{
	struct llm		*l = new_llm(LLM_ANTHROPIC, 3000, 5);
	struct llm_result	*r = scripted(l, "[{\"status\":429,\"headers\":"
				    "{\"retry-after\":\"1\"}},{\"text\":\"ok\"}]");

	assert_true(r->ok);
	assert_string_equal(r->text, "ok");
	assert_int_equal(r->attempts, 2);
	assert_int_equal(nrequests(), 2);
	llm_result_free(r);
	/* A wait beyond the cap is not taken: the turn fails at once. */
	r = scripted(l, "[{\"status\":429,\"headers\":{\"retry-after\":"
	    "\"100\"}},{\"text\":\"never\"}]");
	assert_false(r->ok);
	assert_int_equal(r->err.cls, LLM_ERR_RATE_LIMIT);
	assert_int_equal(r->attempts, 1);
	llm_result_free(r);
	llm_free(l);
}

static void
test_529_twice_then_success(void **state)
{
	struct llm		*l = new_llm(LLM_ANTHROPIC, 3000, 5);
	struct llm_result	*r = scripted(l, "[{\"status\":529},"
				    "{\"status\":529},{\"text\":\"enfim\"}]");

	assert_true(r->ok);
	assert_string_equal(r->text, "enfim");
	assert_int_equal(r->attempts, 3);
	llm_result_free(r);
	llm_free(l);
}

static void
test_500_thrice_fails_after_two_retries(void **state)
{
	struct llm		*l = new_llm(LLM_ANTHROPIC, 3000, 5);
	struct llm_result	*r = scripted(l, "[{\"status\":500},"
				    "{\"status\":500},{\"status\":500},"
				    "{\"text\":\"never\"}]");

	assert_false(r->ok);
	assert_int_equal(r->err.cls, LLM_ERR_SERVER);
	assert_string_equal(r->err.type, "api_error");
	assert_int_equal(r->err.http_status, 500);
	assert_true(strncmp(r->err.request_id, "req_", 4) == 0);
	assert_int_equal(r->attempts, 3);
	assert_int_equal(nrequests(), 3);
	llm_result_free(r);
	llm_free(l);
}

static void
test_quota_429_is_permanent(void **state)
{
	struct llm		*l = new_llm(LLM_OPENAI, 3000, 5);
	struct llm_result	*r = scripted(l, "[{\"status\":429,\"type\":"
				    "\"insufficient_quota\",\"code\":"
				    "\"insufficient_quota\"},{\"text\":\"x\"}]");

	assert_false(r->ok);
	assert_int_equal(r->err.cls, LLM_ERR_QUOTA);
	assert_false(r->err.retryable);
	assert_int_equal(r->attempts, 1);
	llm_result_free(r);
	fakepeer_reset(&fake);
	r = scripted(l, "[{\"status\":401}]");
	assert_int_equal(r->err.cls, LLM_ERR_AUTH);
	assert_int_equal(r->attempts, 1);
	llm_result_free(r);
	llm_free(l);
}

static void
test_malformed_json_classified(void **state)
{
	struct llm		*l = new_llm(LLM_ANTHROPIC, 3000, 5);
	struct llm_result	*r = scripted(l, "[{\"raw\":\"{not json\"},"
				    "{\"raw\":\"{\\\"a\\\":1} trailing\"},"
				    "{\"raw\":\"{\\\"type\\\":\\\"message\\\"}\"}]");

	assert_false(r->ok);
	assert_int_equal(r->err.cls, LLM_ERR_MALFORMED);
	assert_int_equal(r->attempts, 3);
	llm_result_free(r);
	llm_free(l);
}

static void
test_timeout(void **state)
{
	struct llm_params	 lp;
	struct llm		*l;
	struct llm_result	*r;

	llm_params_default(&lp);
	lp.provider = LLM_ANTHROPIC;
	lp.base_url = fake.base;
	lp.api_key = "k";
	lp.timeout_ms = 300;
	lp.max_retries = 0;
	l = llm_new(cv, &lp);
	r = scripted(l, "[{\"delay\":3}]");
	assert_false(r->ok);
	assert_int_equal(r->err.cls, LLM_ERR_TIMEOUT);
	assert_true(r->err.retryable);
	assert_int_equal(r->attempts, 1);
	llm_result_free(r);
	llm_free(l);
}

static void
test_breaker_opens_and_probes(void **state)
{
	struct llm		*l = new_llm(LLM_ANTHROPIC, 3000, 2);
	struct llm_request	 req = { NULL, TWO_MSGS, 1, NULL, 0, "oferta" };
	struct llm_result	*r, *r2;

	/* Two turns failing after their retries open the circuit. */
	r = scripted(l, "[{\"status\":500},{\"status\":500},{\"status\":500},"
	    "{\"status\":529},{\"status\":529},{\"status\":529}]");
	assert_int_equal(r->err.cls, LLM_ERR_SERVER);
	llm_result_free(r);
	assert_string_equal(llm_breaker_state(l), "closed");
	r = scripted(l, NULL);
	assert_int_equal(r->err.cls, LLM_ERR_OVERLOADED);
	llm_result_free(r);
	assert_string_equal(llm_breaker_state(l), "open");
	r = scripted(l, "[{\"text\":\"not reached\"}]");
	assert_int_equal(r->err.cls, LLM_ERR_BREAKER_OPEN);
	assert_int_equal(r->attempts, 0);
	assert_int_equal(nrequests(), 6);
	llm_result_free(r);
	/* After 90 s one probe goes out; a concurrent turn is refused. */
	clock_ms += 90001;
	assert_string_equal(llm_breaker_state(l), "half-open");
	got = NULL;
	assert_int_equal(llm_turn_start(l, &req, &OPS, on_done, NULL), 0);
	r = run(l, &req, &OPS);
	assert_int_equal(r->err.cls, LLM_ERR_BREAKER_OPEN);
	got = NULL;
	event_base_dispatch(base);
	assert_non_null(got);
	r2 = got;
	assert_true(r2->ok);
	assert_string_equal(r2->text, "not reached");
	assert_string_equal(llm_breaker_state(l), "closed");
	llm_result_free(r);
	llm_result_free(r2);
	llm_free(l);
}

static void
test_truncated_tool_call_not_executed(void **state)
{
	static const int which[] = { TOOL_BUSCAR_VAGAS };
	struct llm_tool		 t[1];
	struct llm_request	 req = { SYSTEM, TWO_MSGS, 2, t, 1, "oferta" };
	struct llm		*l = new_llm(LLM_ANTHROPIC, 3000, 5);
	struct llm_result	*r;

	tools(t, which, 1);
	fakepeer_script(&fake, "[{\"stop\":\"max_tokens\",\"tool_calls\":"
	    "[{\"name\":\"buscar_vagas\",\"arguments\":{}}]}]");
	r = run(l, &req, &OPS);
	assert_false(r->ok);
	assert_int_equal(r->err.cls, LLM_ERR_TRUNCATED);
	assert_int_equal(r->stop, LLM_STOP_MAX_TOKENS);
	assert_int_equal(nexec, 0);
	llm_result_free(r);
	llm_free(l);
}

static void
test_rounds_are_bounded(void **state)
{
	static const int which[] = { TOOL_BUSCAR_VAGAS };
	struct llm_tool		 t[1];
	struct llm_request	 req = { SYSTEM, TWO_MSGS, 2, t, 1, "oferta" };
	struct llm		*l = new_llm(LLM_ANTHROPIC, 3000, 5);
	struct llm_result	*r;

	tools(t, which, 1);
	fakepeer_script(&fake, "[{\"tool_calls\":[{\"name\":\"buscar_vagas\"}]},"
	    "{\"tool_calls\":[{\"name\":\"buscar_vagas\"}]},"
	    "{\"tool_calls\":[{\"name\":\"buscar_vagas\"}]},"
	    "{\"tool_calls\":[{\"name\":\"buscar_vagas\"}]},"
	    "{\"text\":\"never\"}]");
	r = run(l, &req, &OPS);
	assert_false(r->ok);
	assert_int_equal(r->err.cls, LLM_ERR_ROUNDS);
	assert_int_equal(r->rounds, 4);
	assert_int_equal(nexec, 3);
	llm_result_free(r);
	llm_free(l);
}

static void
test_offline_walks_buscar_vagas(void **state)
{
	static const int which[] = { TOOL_BUSCAR_VAGAS, TOOL_SALVAR_MEMORIA };
	static const struct llm_msg msgs[] = {
		{ "user", "Tem algum PLANTÃO pra semana?" } };
	struct llm_tool		 t[2];
	struct llm_request	 req = { SYSTEM, msgs, 1, t, 2, "oferta" };
	struct llm		*l = new_llm(LLM_OFFLINE, 3000, 5);
	struct llm_result	*r;

	tools(t, which, 2);
	tool_answer = "[{\"id\":7,\"hospital\":\"Hospital São Luiz\","
	    "\"especialidade\":\"clínica médica\",\"turno\":\"noturno\","
	    "\"data\":\"2026-12-01\"}]";
	r = run(l, &req, &OPS);
	assert_true(r->ok);
	assert_int_equal(r->rounds, 2);
	assert_int_equal(nexec, 1);
	assert_string_equal(exec_log[0], "buscar_vagas {}");
	assert_non_null(strstr(r->text, "Encontrei 1 vaga"));
	assert_non_null(strstr(r->text, "Hospital São Luiz"));
	assert_string_equal(r->provider, "offline");
	llm_result_free(r);
	/* In discovery buscar_vagas is not offered: a qualification
	 * question, no tool. */
	req.tools = &t[1];
	req.ntools = 1;
	req.mode = "discovery";
	r = run(l, &req, &OPS);
	assert_true(r->ok);
	assert_int_equal(r->rounds, 1);
	assert_int_equal(nexec, 1);
	assert_non_null(strstr(r->text, "especialidade"));
	llm_result_free(r);
	assert_int_equal(nrequests(), 0);
	llm_free(l);
}

#define T(f) cmocka_unit_test_setup(f, reset)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_anthropic_request_shape),
		T(test_openai_request_shape_without_tools),
		T(test_anthropic_tool_loop_pairs_results),
		T(test_openai_arguments_string_and_object),
		T(test_forbidden_tool_refused_not_executed),
		T(test_429_retry_after_then_success),
		T(test_529_twice_then_success),
		T(test_500_thrice_fails_after_two_retries),
		T(test_quota_429_is_permanent),
		T(test_malformed_json_classified),
		T(test_timeout),
		T(test_breaker_opens_and_probes),
		T(test_truncated_tool_call_not_executed),
		T(test_rounds_are_bounded),
		T(test_offline_walks_buscar_vagas),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
