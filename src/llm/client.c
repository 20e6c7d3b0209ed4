/*
 * llm.c -- the LLM turn: request, retries with backoff and jitter, the
 * circuit breaker, and the bounded tool-use loop (reference/llm.md §0).
 * Wire formats live in llm_wire.c, the offline responder in llm_offline.c.
 * SPDX-License-Identifier: MIT
 */
#include <sys/queue.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "base/config.h"
#include "llm/llm.h"
#include "llm/wire.h"
#include "base/log.h"

enum call_phase { PHASE_RETRY, PHASE_OFFLINE, PHASE_FINISH };
enum breaker { BREAKER_CLOSED, BREAKER_OPEN, BREAKER_HALF_OPEN };

struct llm_call {
	TAILQ_ENTRY(llm_call)	 entry;
	struct llm		*l;
	/* The request as sent (and sent again on a retry): the system
	 * prompt, the transcript, the tools. The only copy kept while the
	 * model is awaited, thousands of turns at once; curl borrows it. */
	char			*body;
	char			*mode;
	char			**allowed;	/* the names after them */
	size_t			 nallowed;
	struct llm_tool_ops	 ops;
	llm_done_fn		*done;
	void			*arg;
	struct event		*ev;
	enum call_phase		 phase;
	struct curlev_xfer	*xfer;
	int			 attempt;	/* retries in this model call */
	int			 probe;		/* this call is the breaker probe */
	struct timespec		 start;
	double			 sent;		/* this attempt, for metrics */
	struct llm_wire_resp	 resp;
	char			**results;
	int			*is_error;
	size_t			 next_call;
	int			 in_exec, waiting;
	struct llm_result	*res;
};

struct llm {
	struct curlev		*cv;
	struct llm_params	 p;
	char			*url;
	struct curl_slist	*hdrs;		/* of every request: the key */
	char			*model;
	int			 public_api;
	enum breaker		 breaker;
	int			 failures;
	int64_t			 opened_at;
	int			 probing;
	unsigned int		 seed;
	TAILQ_HEAD(, llm_call)	 turns;
	size_t			 nturns;
};

static void	call_request(struct llm_call *);
static void	call_next_tool(struct llm_call *);

void
llm_params_default(struct llm_params *p)
{
	memset(p, 0, sizeof *p);
	p->provider = LLM_OFFLINE;
	p->model = "claude-sonnet-4-5";
	p->max_tokens = 1024;
	p->temperature = -1;
	p->connect_timeout_ms = 5000;
	p->timeout_ms = 60000;
	p->max_retries = 2;
	p->backoff_base_ms = 500;
	p->backoff_max_ms = 8000;
	p->retry_after_cap_ms = 30000;
	p->breaker_threshold = 5;
	p->breaker_open_ms = 90000;
	p->max_rounds = 4;
}

void
llm_params_from_config(struct llm_params *p, const struct config *cfg)
{
	int	prov;

	llm_params_default(p);
	if ((prov = llm_provider_from_name(cfg->llm_provider)) != -1)
		p->provider = (enum llm_provider)prov;
	p->base_url = cfg->llm_base_url;
	p->api_key = cfg->llm_api_key;
	if (cfg->llm_model != NULL && *cfg->llm_model != '\0')
		p->model = cfg->llm_model;
	if (cfg->llm_timeout_s > 0)
		p->timeout_ms = cfg->llm_timeout_s * 1000L;
	if (cfg->llm_max_tokens > 0)
		p->max_tokens = cfg->llm_max_tokens;
	p->temperature = cfg->llm_temperature;
	if (cfg->llm_breaker_threshold > 0)
		p->breaker_threshold = cfg->llm_breaker_threshold;
}

/* Seconds on a monotonic clock, for an attempt's latency. */
static double
llm_secs(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Tell the observer about an attempt. */
static void
llm_observe(struct llm *l, enum llm_err err, double secs, long in, long out)
{
	struct llm_attempt	a;

	if (l->p.observe == NULL)
		return;
	a.provider = l->p.provider;
	a.err = err;
	a.seconds = secs;
	a.input_tokens = in;
	a.output_tokens = out;
	l->p.observe(l->p.observe_arg, &a);
}

/* Milliseconds on the breaker's clock. */
static int64_t
llm_now(struct llm *l)
{
	struct timespec	ts;

	if (l->p.now_ms != NULL)
		return l->p.now_ms(l->p.now_arg);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Endpoint URL and request headers (the key's too) for the provider. */
static int
llm_endpoint(struct llm *l)
{
	const char	*base = l->p.base_url, *hdrs[4];
	char		*auth;
	size_t		 n;
	int		 rc;

	l->public_api = base == NULL || *base == '\0';
	if (l->public_api)
		base = l->p.provider == LLM_OPENAI ?
		    "https://api.openai.com/v1" : "https://api.anthropic.com";
	n = strlen(base);
	while (n > 0 && base[n - 1] == '/')
		n--;
	rc = asprintf(&l->url, "%.*s%s", (int)n, base,
	    l->p.provider == LLM_OPENAI ? "/chat/completions" :
	    "/v1/messages");
	if (rc == -1)
		return -1;
	rc = asprintf(&auth, l->p.provider == LLM_OPENAI ?
	    "Authorization: Bearer %s" : "x-api-key: %s",
	    l->p.api_key ? l->p.api_key : "");
	if (rc == -1)
		return -1;
	/* One list for every request (curl borrows it). */
	hdrs[0] = auth;
	hdrs[1] = "Content-Type: application/json";
	hdrs[2] = l->p.provider == LLM_ANTHROPIC ?
	    "anthropic-version: 2023-06-01" : NULL;
	hdrs[3] = NULL;
	l->hdrs = curlev_headers(hdrs);
	explicit_bzero(auth, strlen(auth));
	free(auth);
	return l->hdrs == NULL ? -1 : 0;
}

struct llm *
llm_new(struct curlev *cv, const struct llm_params *p)
{
	struct llm	*l;

	if ((l = calloc(1, sizeof *l)) == NULL)
		return NULL;
	l->cv = cv;
	l->p = *p;
	l->p.base_url = l->p.api_key = NULL;
	TAILQ_INIT(&l->turns);
	l->seed = (unsigned int)time(NULL) ^ (unsigned int)getpid();
	if ((l->model = strdup(p->model ? p->model : "")) == NULL)
		goto fail;
	l->p.model = l->model;
	l->p.base_url = p->base_url;
	l->p.api_key = p->api_key;
	if (llm_endpoint(l) == -1)
		goto fail;
	/* Only the copies made by llm_endpoint are kept. */
	l->p.base_url = l->p.api_key = NULL;
	return l;
fail:
	llm_free(l);
	return NULL;
}

void
llm_result_free(struct llm_result *r)
{
	size_t	i;

	if (r == NULL)
		return;
	for (i = 0; i < r->ncalls; i++) {
		free(r->calls[i].id);
		free(r->calls[i].name);
		free(r->calls[i].args);
		free(r->calls[i].result);
	}
	free(r->calls);
	free(r->text);
	free(r->system);
	free(r);
}

/* Free the per-round tool state. */
static void
call_clear_round(struct llm_call *t)
{
	size_t	i;

	for (i = 0; t->results != NULL && i < t->resp.ncalls; i++)
		free(t->results[i]);
	free(t->results);
	free(t->is_error);
	t->results = NULL;
	t->is_error = NULL;
	t->next_call = 0;
	llm_wire_resp_clear(&t->resp);
}

/* Release a turn (no callback). */
static void
call_free(struct llm_call *t)
{
	TAILQ_REMOVE(&t->l->turns, t, entry);
	t->l->nturns--;
	if (t->probe)
		t->l->probing = 0;
	curlev_cancel(t->xfer);
	if (t->ev != NULL)
		event_free(t->ev);
	call_clear_round(t);
	free(t->allowed);
	free(t->body);
	free(t->mode);
	llm_result_free(t->res);
	free(t);
}

void
llm_free(struct llm *l)
{
	struct llm_call		*t;
	struct curl_slist	*h;

	if (l == NULL)
		return;
	while ((t = TAILQ_FIRST(&l->turns)) != NULL)
		call_free(t);
	for (h = l->hdrs; h != NULL; h = h->next)
		explicit_bzero(h->data, strlen(h->data));
	curl_slist_free_all(l->hdrs);
	free(l->url);
	free(l->model);
	free(l);
}

const char *
llm_breaker_state(struct llm *l)
{
	if (l->breaker == BREAKER_OPEN &&
	    llm_now(l) - l->opened_at >= l->p.breaker_open_ms)
		return "half-open";
	return l->breaker == BREAKER_OPEN ? "open" :
	    l->breaker == BREAKER_HALF_OPEN ? "half-open" : "closed";
}

size_t
llm_pending(struct llm *l)
{
	return l->nturns;
}

/* Arm the turn's single timer for phase after ms. */
static void
call_schedule(struct llm_call *t, enum call_phase phase, long ms)
{
	struct timeval	tv;

	t->phase = phase;
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_add(t->ev, &tv);
}

/* The turn's result, made on the first answer or at the end: thousands
 * of turns wait for the model at once. NULL: out of memory. */
static struct llm_result *
call_res(struct llm_call *t)
{
	struct llm_result	*r;

	if (t->res != NULL)
		return t->res;
	if ((r = calloc(1, sizeof *r)) == NULL)
		return NULL;
	if ((r->text = strdup("")) == NULL) {
		free(r);
		return NULL;
	}
	r->provider = llm_provider_name(t->l->p.provider);
	snprintf(r->model, sizeof r->model, "%s", t->l->model);
	return t->res = r;
}

/* End the turn: done is called from the loop, then the turn is freed. */
static void
call_finish(struct llm_call *t, enum llm_err cls, const char *why)
{
	struct timespec	now;

	if (call_res(t) == NULL) {
		call_schedule(t, PHASE_FINISH, 0);	/* done gets NULL */
		return;
	}
	if (cls != LLM_ERR_NONE) {
		t->res->ok = 0;
		t->res->err.cls = cls;
		t->res->err.retryable = llm_err_retryable(cls);
		if (why != NULL)
			snprintf(t->res->err.message,
			    sizeof t->res->err.message, "%s", why);
	} else
		t->res->ok = 1;
	clock_gettime(CLOCK_MONOTONIC, &now);
	t->res->latency_ms = (now.tv_sec - t->start.tv_sec) * 1000 +
	    (now.tv_nsec - t->start.tv_nsec) / 1000000;
	free(t->res->system);
	t->res->system = llm_wire_system(t->l->p.provider, t->body);
	call_schedule(t, PHASE_FINISH, 0);
}

/* Record the outcome of one model call (after its retries). */
static void
breaker_record(struct llm *l, struct llm_call *t, int failed)
{
	if (t->probe) {
		t->probe = 0;
		l->probing = 0;
	}
	if (!failed) {
		if (l->breaker != BREAKER_CLOSED)
			log_info("llm: circuit closed");
		l->breaker = BREAKER_CLOSED;
		l->failures = 0;
		return;
	}
	l->failures++;
	if (l->breaker == BREAKER_HALF_OPEN ||
	    l->failures >= l->p.breaker_threshold) {
		if (l->breaker != BREAKER_OPEN)
			log_warnx("llm: circuit open after %d failures",
			    l->failures);
		l->breaker = BREAKER_OPEN;
		l->opened_at = llm_now(l);
	}
}

/* May a model call go out now? Marks the half-open probe. */
static int
breaker_allow(struct llm *l, struct llm_call *t)
{
	if (l->breaker == BREAKER_OPEN &&
	    llm_now(l) - l->opened_at >= l->p.breaker_open_ms)
		l->breaker = BREAKER_HALF_OPEN;
	if (l->breaker == BREAKER_CLOSED)
		return 1;
	if (l->breaker == BREAKER_HALF_OPEN && !l->probing) {
		l->probing = 1;
		t->probe = 1;
		return 1;
	}
	return 0;
}

/* Delay before retry n (0-based): retry-after when sane, else backoff
 * with jitter. -1: the server asks for longer than the cap; give up. */
static long
call_retry_delay(struct llm_call *t, const struct curlev_resp *r)
{
	struct llm	*l = t->l;
	double		 secs;
	long		 ms = -1, b;
	char		*end;
	time_t		 when;

	if (r != NULL && r->retry_after_ms[0] != '\0') {
		ms = strtol(r->retry_after_ms, &end, 10);
		if (*end != '\0')
			ms = -1;
	}
	if (ms < 0 && r != NULL && r->retry_after[0] != '\0') {
		secs = strtod(r->retry_after, &end);
		if (*end == '\0' && end != r->retry_after)
			ms = (long)(secs * 1000);
		else if ((when = curl_getdate(r->retry_after, NULL)) != -1)
			ms = (long)(when - time(NULL)) * 1000;
	}
	if (ms > l->p.retry_after_cap_ms)
		return -1;
	if (ms > 0)
		return ms;
	b = l->p.backoff_base_ms << t->attempt;
	if (b > l->p.backoff_max_ms || b <= 0)
		b = l->p.backoff_max_ms;
	return (long)(b * (1.0 - 0.25 * ((double)rand_r(&l->seed) /
	    RAND_MAX)));
}

/* A model call failed with err: retry, or end the turn. */
static void
call_fail(struct llm_call *t, const struct curlev_resp *r)
{
	struct llm_error	*err = &t->res->err;
	long			 delay = -1;

	if (r != NULL && strcmp(r->should_retry, "true") == 0)
		err->retryable = 1;
	else if (r != NULL && strcmp(r->should_retry, "false") == 0)
		err->retryable = 0;
	if (err->retryable && t->attempt < t->l->p.max_retries)
		delay = call_retry_delay(t, r);
	if (err->http_status == 0)	/* no answer: say why */
		log_warnx("llm: %s: %s%s", llm_err_name(err->cls),
		    err->message[0] != '\0' ? err->message : "no answer",
		    delay >= 0 ? " (retrying)" : "");
	else
		log_warnx("llm: %s: http %ld%s%s%s", llm_err_name(err->cls),
		    err->http_status, err->type[0] != '\0' ? " type " : "",
		    err->type, delay >= 0 ? " (retrying)" : "");
	if (delay >= 0) {
		t->attempt++;
		call_schedule(t, PHASE_RETRY, delay);
		return;
	}
	breaker_record(t->l, t, err->cls != LLM_ERR_INVALID_REQUEST);
	call_finish(t, err->cls, NULL);
}

/* Append the response's calls to the result record; -1 on no memory. */
static int
call_record_calls(struct llm_call *t)
{
	struct llm_result	*res = t->res;
	struct llm_call_rec	*nc, *c;
	size_t			 i;

	nc = realloc(res->calls, (res->ncalls + t->resp.ncalls) * sizeof *nc);
	if (nc == NULL)
		return -1;
	res->calls = nc;
	for (i = 0; i < t->resp.ncalls; i++) {
		c = &res->calls[res->ncalls++];
		memset(c, 0, sizeof *c);
		c->id = strdup(t->resp.calls[i].id);
		c->name = strdup(t->resp.calls[i].name);
		c->args = strdup(t->resp.calls[i].args_text ?
		    t->resp.calls[i].args_text : "");
		c->round = res->rounds;
	}
	return 0;
}

/*
 * Append the model's answer to the request's transcript, and the results
 * of this round's tool calls after tool use. The body is read back: no
 * other copy of the transcript is kept. -1: out of memory.
 */
static int
call_extend(struct llm_call *t, int with_results)
{
	json_object	*o, *msgs;
	char		*body = NULL;

	o = llm_json_strict(t->body, strlen(t->body));
	if (o != NULL && json_object_object_get_ex(o, "messages", &msgs)) {
		json_object_array_add(msgs, json_object_get(t->resp.assistant));
		if (with_results)
			llm_wire_results(t->l->p.provider, msgs, &t->resp,
			    t->results, t->is_error);
		body = strdup(json_object_to_json_string_ext(o,
		    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	}
	json_object_put(o);
	if (body == NULL)
		return -1;
	free(t->body);
	t->body = body;
	return 0;
}

/* A model answer arrived: apply the ending rules of reference/llm.md. */
static void
call_on_answer(struct llm_call *t)
{
	struct llm_result	*res = t->res;
	struct llm_wire_resp	*w = &t->resp;

	res->rounds++;
	res->stop = w->stop;
	res->input_tokens += w->in_tok;
	res->output_tokens += w->out_tok;
	if (w->model != NULL && w->model[0] != '\0')
		snprintf(res->model, sizeof res->model, "%s", w->model);
	free(res->text);
	res->text = strdup(w->text);
	switch (w->stop) {
	case LLM_STOP_TOOL_USE:
		if (w->ncalls == 0)
			break;
		if (call_record_calls(t) == -1) {
			call_finish(t, LLM_ERR_INTERNAL, "out of memory");
			return;
		}
		if (res->rounds >= t->l->p.max_rounds) {
			call_finish(t, LLM_ERR_ROUNDS, "tool loop limit reached");
			return;
		}
		t->results = calloc(w->ncalls, sizeof *t->results);
		t->is_error = calloc(w->ncalls, sizeof *t->is_error);
		if (t->results == NULL || t->is_error == NULL) {
			call_finish(t, LLM_ERR_INTERNAL, "out of memory");
			return;
		}
		call_next_tool(t);
		return;
	case LLM_STOP_PAUSE_TURN:
		if (res->rounds >= t->l->p.max_rounds) {
			call_finish(t, LLM_ERR_ROUNDS, "paused too often");
			return;
		}
		if (call_extend(t, 0) == -1) {
			call_finish(t, LLM_ERR_INTERNAL, "out of memory");
			return;
		}
		llm_wire_resp_clear(w);
		t->attempt = 0;
		call_request(t);
		return;
	case LLM_STOP_MAX_TOKENS:
	case LLM_STOP_CONTEXT:
		/* Truncated: a trailing tool call may be cut; never run it. */
		call_finish(t, LLM_ERR_TRUNCATED, "output truncated");
		return;
	case LLM_STOP_REFUSAL:
	case LLM_STOP_CONTENT_FILTER:
		call_finish(t, LLM_ERR_REFUSAL, "the model declined");
		return;
	default:
		break;
	}
	call_finish(t, LLM_ERR_NONE, NULL);
}

/* One HTTP answer (or the offline responder's). */
static void
call_on_http(const struct curlev_resp *r, void *arg)
{
	struct llm_call		*t = arg;
	struct llm_error	*err;
	double			 secs;

	t->xfer = NULL;
	if (call_res(t) == NULL) {
		call_finish(t, LLM_ERR_INTERNAL, "out of memory");
		return;
	}
	err = &t->res->err;
	t->res->attempts++;
	secs = llm_secs() - t->sent;
	memset(err, 0, sizeof *err);
	snprintf(err->request_id, sizeof err->request_id, "%s", r->request_id);
	err->http_status = r->status;
	if (r->code != CURLE_OK) {
		err->cls = r->code == CURLE_OPERATION_TIMEDOUT ?
		    LLM_ERR_TIMEOUT : LLM_ERR_TRANSPORT;
		err->retryable = 1;
		snprintf(err->message, sizeof err->message, "%s",
		    r->error[0] != '\0' ? r->error :
		    curl_easy_strerror(r->code));
		llm_observe(t->l, err->cls, secs, 0, 0);
		call_fail(t, r);
		return;
	}
	if (r->status < 200 || r->status > 299) {
		llm_wire_classify(t->l->p.provider, r->status, r->body, r->len,
		    err);
		llm_observe(t->l, err->cls, secs, 0, 0);
		call_fail(t, r);
		return;
	}
	if (llm_wire_parse(t->l->p.provider, r->body, r->len, &t->resp,
	    err) == -1) {
		llm_observe(t->l, err->cls, secs, 0, 0);
		call_fail(t, r);
		return;
	}
	llm_observe(t->l, LLM_ERR_NONE, secs, t->resp.in_tok,
	    t->resp.out_tok);
	memset(err, 0, sizeof *err);
	breaker_record(t->l, t, 0);
	t->attempt = 0;
	call_on_answer(t);
}

/* Send the current conversation to the model. */
static void
call_request(struct llm_call *t)
{
	struct llm	*l = t->l;

	if (!breaker_allow(l, t)) {
		llm_observe(l, LLM_ERR_BREAKER_OPEN, -1, 0, 0);
		if (t->res != NULL)
			t->res->err.http_status = 0;
		call_finish(t, LLM_ERR_BREAKER_OPEN, "circuit breaker open");
		return;
	}
	t->sent = llm_secs();
	if (l->p.provider == LLM_OFFLINE) {
		call_schedule(t, PHASE_OFFLINE, 0);
		return;
	}
	t->xfer = curlev_post_borrowed(l->cv, l->url, l->hdrs, t->body,
	    l->p.connect_timeout_ms, l->p.timeout_ms, call_on_http, t);
	if (t->xfer == NULL)
		call_finish(t, LLM_ERR_INTERNAL, "cannot start request");
}

/* Run the built-in responder as if it had answered over HTTP. */
static void
call_offline(struct llm_call *t)
{
	struct curlev_resp	 r;
	char			*answer;

	memset(&r, 0, sizeof r);
	answer = llm_offline_respond(t->body, t->mode);
	r.code = CURLE_OK;
	r.status = answer != NULL ? 200 : 500;
	r.body = answer != NULL ? answer : "";
	r.len = strlen(r.body);
	snprintf(r.request_id, sizeof r.request_id, "offline");
	call_on_http(&r, t);
	free(answer);
}

/* The turn's timer: retry, offline answer, or completion. */
static void
call_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct llm_call		*t = arg;
	struct llm_result	*res;

	switch (t->phase) {
	case PHASE_RETRY:
		call_request(t);
		break;
	case PHASE_OFFLINE:
		call_offline(t);
		break;
	case PHASE_FINISH:
		res = t->res;
		t->res = NULL;
		t->done(res, t->arg);
		call_free(t);
		break;
	}
}

/* Is name in the turn's allow-list? */
static int
call_allowed(struct llm_call *t, const char *name)
{
	size_t	i;

	for (i = 0; i < t->nallowed; i++)
		if (strcmp(t->allowed[i], name) == 0)
			return 1;
	return 0;
}

/* The record of the call being handled. */
static struct llm_call_rec *
call_rec(struct llm_call *t)
{
	return &t->res->calls[t->res->ncalls - t->resp.ncalls + t->next_call];
}

/* Keep the result of the current call and move to the next one. */
static void
call_store_result(struct llm_call *t, const char *text, int is_error)
{
	struct llm_call_rec	*rec = call_rec(t);

	t->results[t->next_call] = strdup(text != NULL ? text : "");
	t->is_error[t->next_call] = is_error;
	rec->result = strdup(text != NULL ? text : "");
	rec->is_error = is_error;
	t->next_call++;
}

/* llm_tool_reply_fn: a tool finished (now or later). */
static void
call_tool_reply(void *cookie, const char *result_json, int is_error)
{
	struct llm_call	*t = cookie;

	if (!t->waiting) {
		log_warnx("llm: tool reply without a pending call ignored");
		return;
	}
	t->waiting = 0;
	call_store_result(t, result_json, is_error);
	if (!t->in_exec)
		call_next_tool(t);
}

/*
 * Run the calls of this round one at a time, in order; a call outside the
 * allow-list is answered here and never executed. When every call has its
 * result, send them back paired with their ids.
 */
static void
call_next_tool(struct llm_call *t)
{
	struct llm_wire_call	*c;

	while (t->next_call < t->resp.ncalls) {
		c = &t->resp.calls[t->next_call];
		if (!call_allowed(t, c->name) || t->ops.exec == NULL) {
			call_rec(t)->refused = 1;
			log_warnx("llm: tool %s refused in mode %s", c->name,
			    t->mode ? t->mode : "?");
			if (t->ops.refused != NULL)
				t->ops.refused(c->name, c->args, t->ops.arg);
			call_store_result(t, LLM_TOOL_REFUSED, 1);
			continue;
		}
		if (c->args == NULL) {
			call_store_result(t, "{\"erro\":\"argumentos inválidos: "
			    "JSON malformado\"}", 1);
			continue;
		}
		call_rec(t)->executed = 1;
		t->waiting = 1;
		t->in_exec = 1;
		t->ops.exec(c->name, c->args, call_tool_reply, t, t->ops.arg);
		t->in_exec = 0;
		if (t->waiting)
			return;
	}
	if (call_extend(t, 1) == -1) {
		call_finish(t, LLM_ERR_INTERNAL, "out of memory");
		return;
	}
	call_clear_round(t);
	call_request(t);
}

/* Copy the allow-list names of req into t, in one block. */
static int
call_copy_allowed(struct llm_call *t, const struct llm_request *req)
{
	size_t	 i, len = 0;
	char	*p;

	if (req->ntools == 0)
		return 0;
	for (i = 0; i < req->ntools; i++)
		len += strlen(req->tools[i].name) + 1;
	if ((t->allowed = malloc(req->ntools * sizeof *t->allowed +
	    len)) == NULL)
		return -1;
	p = (char *)(t->allowed + req->ntools);
	for (i = 0; i < req->ntools; i++) {
		len = strlen(req->tools[i].name) + 1;
		t->allowed[i] = memcpy(p, req->tools[i].name, len);
		p += len;
	}
	t->nallowed = req->ntools;
	return 0;
}

int
llm_turn_start(struct llm *l, const struct llm_request *req,
    const struct llm_tool_ops *ops, llm_done_fn *done, void *arg)
{
	struct llm_call	*t;
	json_object	*msgs, *tools;
	int		 bad = 0;

	if ((t = calloc(1, sizeof *t)) == NULL)
		return -1;
	t->l = l;
	TAILQ_INSERT_TAIL(&l->turns, t, entry);
	l->nturns++;
	t->ops = *ops;
	t->done = done;
	t->arg = arg;
	clock_gettime(CLOCK_MONOTONIC, &t->start);
	t->mode = strdup(req->mode ? req->mode : "");
	t->ev = evtimer_new(curlev_base(l->cv), call_timer_cb, t);
	if (t->mode == NULL || t->ev == NULL ||
	    call_copy_allowed(t, req) == -1)
		goto fail;
	msgs = llm_wire_messages(l->p.provider, req->system, req->msgs,
	    req->nmsgs);
	tools = llm_wire_tools(l->p.provider, req->tools, req->ntools, &bad);
	if (!bad && msgs != NULL)
		t->body = llm_wire_body(l->p.provider, l->model,
		    l->p.max_tokens, l->p.temperature, l->public_api,
		    req->system, msgs, tools);
	json_object_put(msgs);
	json_object_put(tools);
	if (t->body == NULL)
		goto fail;
	call_request(t);
	return 0;
fail:
	call_free(t);
	return -1;
}
