/*
 * llm.h -- provider-neutral LLM client (Anthropic Messages, OpenAI Chat
 * Completions and compatible servers, and a built-in offline responder):
 * one asynchronous turn = the bounded tool-use loop, with retries, error
 * classification and a circuit breaker. See reference/llm.md.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_LLM_H
#define MG_LLM_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "base/curlev.h"

struct config;

#define LLM_PROVIDER_LIST(X)						\
	X(LLM_ANTHROPIC, "anthropic")					\
	X(LLM_OPENAI, "openai")						\
	X(LLM_OFFLINE, "offline")

/* Error classes: name and whether another attempt may help. */
#define LLM_ERR_LIST(X)							\
	X(LLM_ERR_NONE, "none", 0)					\
	X(LLM_ERR_TRANSPORT, "transport", 1)				\
	X(LLM_ERR_TIMEOUT, "timeout", 1)				\
	X(LLM_ERR_RATE_LIMIT, "rate_limit", 1)				\
	X(LLM_ERR_OVERLOADED, "overloaded", 1)				\
	X(LLM_ERR_SERVER, "server", 1)					\
	X(LLM_ERR_MALFORMED, "malformed", 1)				\
	X(LLM_ERR_QUOTA, "quota", 0)					\
	X(LLM_ERR_AUTH, "auth", 0)					\
	X(LLM_ERR_PERMISSION, "permission", 0)				\
	X(LLM_ERR_NOT_FOUND, "not_found", 0)				\
	X(LLM_ERR_INVALID_REQUEST, "invalid_request", 0)		\
	X(LLM_ERR_BREAKER_OPEN, "breaker_open", 0)			\
	X(LLM_ERR_TRUNCATED, "truncated", 0)				\
	X(LLM_ERR_REFUSAL, "refusal", 0)				\
	X(LLM_ERR_ROUNDS, "rounds_exhausted", 0)			\
	X(LLM_ERR_INTERNAL, "internal", 0)

/* Why the model stopped, both providers mapped onto one list. */
#define LLM_STOP_LIST(X)						\
	X(LLM_STOP_NONE, "none")					\
	X(LLM_STOP_END_TURN, "end_turn")				\
	X(LLM_STOP_TOOL_USE, "tool_use")				\
	X(LLM_STOP_MAX_TOKENS, "max_tokens")				\
	X(LLM_STOP_STOP_SEQUENCE, "stop_sequence")			\
	X(LLM_STOP_PAUSE_TURN, "pause_turn")				\
	X(LLM_STOP_REFUSAL, "refusal")					\
	X(LLM_STOP_CONTEXT, "model_context_window_exceeded")		\
	X(LLM_STOP_CONTENT_FILTER, "content_filter")			\
	X(LLM_STOP_UNKNOWN, "unknown")

#define LLM_ENUM2(e, s) e,
#define LLM_ENUM3(e, s, r) e,
enum llm_provider { LLM_PROVIDER_LIST(LLM_ENUM2) LLM__PROVIDERS };
enum llm_err { LLM_ERR_LIST(LLM_ENUM3) LLM__ERRS };
enum llm_stop { LLM_STOP_LIST(LLM_ENUM2) LLM__STOPS };
#undef LLM_ENUM2
#undef LLM_ENUM3

const char	*llm_provider_name(int);
int		 llm_provider_from_name(const char *);	/* -1: unknown */
const char	*llm_err_name(int);
int		 llm_err_retryable(int);
const char	*llm_stop_name(int);

/* The tool result text for a tool outside the turn's allow-list. */
#define LLM_TOOL_REFUSED	"ferramenta indisponível neste modo"

/* Tuning; llm_params_default fills the production values. Strings are
 * copied by llm_new. */
/* One attempt, as llm_params.observe hears of it. */
struct llm_attempt {
	enum llm_provider	provider;
	enum llm_err		err;		/* LLM_ERR_NONE: answered */
	double			seconds;	/* < 0: not sent (breaker) */
	long			input_tokens, output_tokens;
};

struct llm_params {
	enum llm_provider provider;
	const char	*base_url;	/* NULL or "": the public API */
	const char	*api_key;	/* secret, never logged */
	const char	*model;
	int		 max_tokens;		/* 1024 */
	double		 temperature;		/* < 0: the provider's */
	long		 connect_timeout_ms;	/* 5000 */
	long		 timeout_ms;		/* one HTTP attempt: 60000 */
	int		 max_retries;		/* 2 (3 attempts) */
	long		 backoff_base_ms;	/* 500, doubled per retry */
	long		 backoff_max_ms;	/* 8000 */
	long		 retry_after_cap_ms;	/* 30000; longer: no retry */
	int		 breaker_threshold;	/* 5 consecutive failures */
	long		 breaker_open_ms;	/* 90000, then one probe */
	int		 max_rounds;		/* 4 model calls per turn */
	/* Clock for the breaker (ms, monotonic); NULL: CLOCK_MONOTONIC. */
	int64_t		(*now_ms)(void *);
	void		*now_arg;
	/* Every HTTP attempt (or offline answer, or a call refused by the
	 * open breaker: seconds < 0) is reported here, e.g. to /metrics;
	 * the client's only way out besides a turn's done callback. NULL:
	 * nobody listens. */
	void		(*observe)(void *, const struct llm_attempt *);
	void		*observe_arg;
};

void	llm_params_default(struct llm_params *);

/* Defaults overlaid with the LLM_* variables of cfg (borrowed: p points
 * into cfg's strings). */
void	llm_params_from_config(struct llm_params *, const struct config *);

/* One transcript line. role is "user" (the doctor) or "assistant". */
struct llm_msg {
	const char	*role;
	const char	*text;
};

/* One tool offered to the model. The schema is a JSON Schema object,
 * given as json-c (borrowed) or, when schema is NULL, as text. */
struct llm_tool {
	const char	*name;
	const char	*description;
	json_object	*schema;
	const char	*schema_json;
};

/* Everything one turn needs; borrowed for the llm_turn_start call only. */
struct llm_request {
	const char		*system;	/* may be NULL */
	const struct llm_msg	*msgs;
	size_t			 nmsgs;
	const struct llm_tool	*tools;		/* the allow-list, exactly */
	size_t			 ntools;
	const char		*mode;		/* for logs and offline */
};

/*
 * The reply to one tool execution: result_json (copied; any text, usually
 * JSON) and whether the tool failed. Call it exactly once per exec, now or
 * later from the event loop, with the cookie exec was given.
 */
typedef void	llm_tool_reply_fn(void *cookie, const char *result_json,
		    int is_error);

/* How the caller executes tools. exec gets the name and the arguments
 * (borrowed for the call; json_object_get to keep them). refused, when
 * not NULL, reports a call outside the allow-list (it is never executed;
 * the client answers the model itself). */
struct llm_tool_ops {
	void	(*exec)(const char *name, json_object *args,
		    llm_tool_reply_fn *reply, void *cookie, void *arg);
	void	(*refused)(const char *name, json_object *args, void *arg);
	void	*arg;
};

struct llm_error {
	enum llm_err	 cls;
	int		 retryable;
	long		 http_status;	/* 0: none */
	char		 type[64];	/* error.type / error.code */
	char		 message[256];
	char		 request_id[128];
};

/* One tool call the model made, in order. */
struct llm_call_rec {
	char	*id;
	char	*name;
	char	*args;		/* JSON text of the arguments as received */
	char	*result;	/* what was sent back to the model */
	int	 is_error;
	int	 refused;	/* outside the allow-list: not executed */
	int	 executed;	/* handed to ops->exec */
	int	 round;		/* 1-based model call that asked for it */
};

/* The outcome of a turn; owned by the receiver of done, freed with
 * llm_result_free. */
struct llm_result {
	int			 ok;	/* text is a complete, final reply */
	char			*text;	/* never NULL; may be "" */
	enum llm_stop		 stop;
	struct llm_call_rec	*calls;
	size_t			 ncalls;
	int			 rounds;	/* model calls answered */
	int			 attempts;	/* HTTP attempts, retries too */
	long			 input_tokens, output_tokens;
	long			 latency_ms;
	char			 model[128];
	const char		*provider;
	struct llm_error	 err;
	char			*system;	/* the last request's system
						 * prompt as sent; NULL: out of
						 * memory */
};

void	llm_result_free(struct llm_result *);

typedef void	llm_done_fn(struct llm_result *res, void *arg);

struct llm;

/* A client on cv (borrowed; must outlive it). NULL on failure. */
struct llm	*llm_new(struct curlev *cv, const struct llm_params *);

/* Free the client and drop its turns without calling them back. Not while
 * a tool execution it handed out is still to reply. NULL is a no-op. */
void		 llm_free(struct llm *);

/*
 * Start a turn: req is copied; ops is copied. done(res, arg) is called
 * exactly once, from the event loop (never from inside this call), with a
 * result the callee owns, or NULL when memory ran out for it. Returns 0,
 * or -1 (done not called).
 */
int	llm_turn_start(struct llm *, const struct llm_request *req,
	    const struct llm_tool_ops *ops, llm_done_fn *done, void *arg)
	    MG_MUSTCHECK;

/* Breaker state for readiness and metrics: "closed", "open", "half-open". */
const char	*llm_breaker_state(struct llm *);

/* Turns in flight. */
size_t		 llm_pending(struct llm *);

#endif
