/*
 * intent.h -- deterministic intent detection for Brazilian WhatsApp
 * Portuguese: normalisation plus a lexicon loaded from mode/intents.json.
 * Pure: no I/O.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_INTENT_H
#define MG_INTENT_H

#include "flat.h"
#include "model.h"

struct lexicon;

/* Build a lexicon from the flat form of mode/intents.json. Every problem
 * goes to d as "file: key: problem". Returns a new lexicon (free with
 * lexicon_free) or NULL when d gained a problem. */
struct lexicon	*lexicon_load(const struct flat *, struct diag *d);
void		 lexicon_free(struct lexicon *);

/* Attach the learned model (mode/intent.model; its labels the intent
 * names in enum order) to lex, or detach it with NULL. Borrowed: the
 * caller frees the model after the lexicon. */
void	lexicon_set_model(struct lexicon *lex, const struct model *m);

#define INTENT_EVIDENCE_MAX 256

/* Who decided: the rules alone (no model, or a certain rule), the model,
 * or both agreeing. */
enum intent_source { INTENT_SRC_RULES, INTENT_SRC_MODEL, INTENT_SRC_BOTH };

struct intent_result {
	enum intent		intent;
	double			confidence;	/* 0..1, calibrated */
	char			evidence[INTENT_EVIDENCE_MAX];	/* what matched:
					   the rule patterns, or the model's top
					   features with their weights */
	enum intent_source	source;
	enum intent		runner_up;	/* the second most likely */
	double			runner_up_score;	/* its probability */
	enum intent		rule_intent;	/* what the rules alone say */
	enum intent		model_intent;	/* the model's argmax (NEUTRO
						   without a model) */
	double			model_confidence;
	bool			disagree;	/* rules and model differ */
};

/* Classify len bytes of UTF-8 text (need not be NUL-terminated). Same
 * input, same output. Borrows lex and text. */
void	intent_detect(const struct lexicon *lex, const char *text, size_t len,
	    struct intent_result *out);

/* The same with Julia's previous message as context (ctx, ctxlen bytes;
 * NULL or empty when none): a short answer ("s", "pode") reads
 * differently after a question. */
void	intent_detect_ctx(const struct lexicon *lex, const char *text,
	    size_t len, const char *ctx, size_t ctxlen,
	    struct intent_result *out);

/* The same, the evidence naming the model's top features for the winner
 * against the runner-up ("model: w:golpe +2.10 c:<gol +0.80"), not only
 * the rules' patterns. Slower (names are kept); -1 when out of memory
 * (then the result is intent_detect_ctx's). */
int	intent_explain(const struct lexicon *lex, const char *text,
	    size_t len, const char *ctx, size_t ctxlen,
	    struct intent_result *out);

/* The model's features of a message (the same intent_detect_ctx uses),
 * for the trainer and for explanations. */
void	intent_features(const struct lexicon *lex, const char *text,
	    size_t len, const char *ctx, size_t ctxlen, struct feats *f);

/* "intent_source" name: "rules", "model" or "both". */
const char	*intent_source_name(enum intent_source);

/* Normalise text for matching (lower case, accents folded, punctuation
 * and emoji to spaces or tokens, repeated letters squeezed, abbreviations
 * expanded). Writes a NUL-terminated string of at most outlen-1 bytes and
 * returns its length. */
size_t	intent_normalize(const struct lexicon *lex, const char *text,
	    size_t len, char *out, size_t outlen);

#endif
