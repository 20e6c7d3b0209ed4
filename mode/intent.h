/*
 * intent.h -- deterministic intent detection for Brazilian WhatsApp
 * Portuguese: normalisation plus a lexicon loaded from mode/intents.json.
 * Pure: no I/O.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_INTENT_H
#define MG_INTENT_H

#include "flat.h"

struct lexicon;

/* Build a lexicon from the flat form of mode/intents.json. Every problem
 * goes to d as "file: key: problem". Returns a new lexicon (free with
 * lexicon_free) or NULL when d gained a problem. */
struct lexicon	*lexicon_load(const struct flat *, struct diag *d);
void		 lexicon_free(struct lexicon *);

#define INTENT_EVIDENCE_MAX 128

struct intent_result {
	enum intent	intent;
	double		confidence;	/* 0..1 */
	char		evidence[INTENT_EVIDENCE_MAX];	/* what matched */
};

/* Classify len bytes of UTF-8 text (need not be NUL-terminated). Same
 * input, same output. Borrows lex and text. */
void	intent_detect(const struct lexicon *lex, const char *text, size_t len,
	    struct intent_result *out);

/* Normalise text for matching (lower case, accents folded, punctuation
 * and emoji to spaces or tokens, repeated letters squeezed, abbreviations
 * expanded). Writes a NUL-terminated string of at most outlen-1 bytes and
 * returns its length. */
size_t	intent_normalize(const struct lexicon *lex, const char *text,
	    size_t len, char *out, size_t outlen);

#endif
