/*
 * llm_wire.h -- internal to the LLM client: provider wire formats
 * (request bodies, response and error parsing) and the offline responder.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_LLM_WIRE_H
#define MG_LLM_WIRE_H

#include "llm/llm.h"

/* One tool call parsed from a response. */
struct llm_wire_call {
	char		*id;
	char		*name;
	json_object	*args;		/* owned; NULL when unparsable */
	char		*args_text;	/* as received, for the record */
};

/* A model response in neutral form. */
struct llm_wire_resp {
	enum llm_stop		 stop;
	char			*text;
	struct llm_wire_call	*calls;
	size_t			 ncalls;
	long			 in_tok, out_tok;
	char			*model;		/* NULL: none */
	json_object		*assistant;	/* the message to echo back */
};

/* The system prompt in a request body (new string; "" when none, NULL
 * when out of memory). */
char		*llm_wire_system(enum llm_provider, const char *body);

/* Strict JSON: whole buffer, no trailing garbage. New object or NULL. */
json_object	*llm_json_strict(const char *s, size_t len);

/* The messages array for the transcript (new object). */
json_object	*llm_wire_messages(enum llm_provider, const char *system,
		    const struct llm_msg *, size_t);

/* The tools array (new object; NULL when n == 0 or a schema is bad). */
json_object	*llm_wire_tools(enum llm_provider, const struct llm_tool *,
		    size_t, int *bad);

/* The request body (new string; caller frees). */
char		*llm_wire_body(enum llm_provider, const char *model,
		    int max_tokens, double temperature, int public_api,
		    const char *system,
		    json_object *messages, json_object *tools);

/* Parse a 2xx body; 0, or -1 with err filled (malformed). */
int		 llm_wire_parse(enum llm_provider, const char *body,
		    size_t len, struct llm_wire_resp *, struct llm_error *);
void		 llm_wire_resp_clear(struct llm_wire_resp *);

/* Append the tool results message(s), results[i] paired with calls[i]. */
void		 llm_wire_results(enum llm_provider, json_object *messages,
		    const struct llm_wire_resp *, char *const *results,
		    const int *is_error);

/* Classify a non-2xx answer from its status and body into err. */
void		 llm_wire_classify(enum llm_provider, long status,
		    const char *body, size_t len, struct llm_error *);

/* Offline responder: the answer (Anthropic response JSON, new string) to
 * an Anthropic-shaped request body. */
char		*llm_offline_respond(const char *body, const char *mode);

#endif
