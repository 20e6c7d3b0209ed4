/*
 * model.h -- a learned, deterministic linear classifier beside the rules:
 * multinomial logistic regression over hashed features (word uni- and
 * bigrams, character 3-5-grams of the normalised text, plus whatever the
 * caller adds: context words, the rules' verdicts). Used by the intent
 * detector (mode/intent.model) and the output guard (mode/guard.model).
 *
 * The weights live in a text file the shell reads and hands over as a
 * buffer (the core never opens files):
 *
 *	modegate-model 1
 *	kind intent|guard
 *	labels N			then N lines "label NAME", in order
 *	bits B				2^B hash buckets, 10 <= B <= 22
 *	scale S				a weight is an integer times S
 *	temperature T			calibration: scores are divided by T
 *	threshold NAME P		optional: NAME wins only with p >= P
 *	bias b1 .. bN			integers
 *	rows R				R <= 65535, then R lines
 *					"BUCKET w1 .. wN", buckets strictly
 *					ascending, weights -32767..32767
 *	end
 *
 * Training (model_train) is part of the core too: the same examples and
 * parameters always give the same weights, byte for byte (a fixed-seed
 * shuffle, no threads, no clock).
 * Pure: no I/O.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_MODEL_H
#define MG_MODEL_H

#include "core.h"

#define MODEL_MAX_LABELS	16
#define MODEL_LABEL_LEN		32
#define MODEL_MAX_BYTES		(16u << 20)	/* a weights file, at most */
#define MODEL_MAX_ROWS		65535	/* buckets with weights */
#define FEATS_MAX		4096	/* features of one text */
#define FEAT_NAME		32	/* bytes of a feature's name kept */

/* The features of one text: 32-bit hashes, and their names when asked
 * (for explanations; name NULL on the hot path). Caller-owned. */
struct feats {
	uint32_t	 id[FEATS_MAX];
	size_t		 n;
	char		(*name)[FEAT_NAME];	/* NULL or [FEATS_MAX] */
};

/* Start an empty feature list; names may be NULL. */
void	feats_init(struct feats *, char (*names)[FEAT_NAME]);
/* Add one feature: the tag byte (its kind) and len bytes of s. */
void	feats_add(struct feats *, char tag, const char *s, size_t len);
/* Add the word unigrams and bigrams (tags 'w', 'b') and the character
 * 3-5-grams of each word padded with '<' '>' (tag 'c') of norm, a
 * normalised NUL-terminated text (single-space-separated words). A text
 * of at most three words is also one feature whole (tag 'm'). */
void	feats_text(struct feats *, const char *norm);

struct model;

/* Parse a weights file (len bytes of buf). kind must match; the labels
 * must be exactly labels[0..nlabels) in that order. Every problem goes to
 * d as "file: line N: problem". Returns a new model or NULL. */
struct model	*model_load(const char *buf, size_t len, const char *file,
		    const char *kind, const char *const *labels,
		    size_t nlabels, struct diag *d);
void		 model_free(struct model *);

size_t		 model_nlabels(const struct model *);
size_t		 model_nrows(const struct model *);
/* The minimum probability label k needs to win (0: none). */
double		 model_threshold(const struct model *, size_t k);

/* Calibrated probabilities over the labels whose bit is set in mask
 * (bit k: label k; the others get 0) for the features in f. */
void	model_probs(const struct model *, const struct feats *f,
	    uint32_t mask, double *prob);

/* The features of f that most support label k against label r: up to max
 * indices into f, best first, their contributions in contrib. Returns how
 * many were written. */
size_t	model_top(const struct model *, const struct feats *f, size_t k,
	    size_t r, size_t *idx, double *contrib, size_t max);

/* One training example: borrowed features, its label, and the labels the
 * softmax runs over (mask; the label's own bit must be set). */
struct model_example {
	const uint32_t	*feat;
	size_t		 nfeat;
	size_t		 label;
	uint32_t	 mask;
};

struct model_params {
	unsigned	bits;		/* 2^bits buckets */
	int		epochs;
	double		lr;		/* AdaGrad step */
	double		l2;		/* weight decay on touched weights */
	unsigned	min_count;	/* a feature seen in fewer examples is
					   dropped */
	uint64_t	seed;		/* the shuffle's */
	double		scale;		/* weight quantum in the file */
};

/* Train a new model on ex[0..n). Returns NULL (problem in d) when out of
 * memory or the input is inconsistent. Deterministic. */
struct model	*model_train(const char *kind, const char *const *labels,
		    size_t nlabels, const struct model_example *ex, size_t n,
		    const struct model_params *p, struct diag *d);

/* Choose the temperature minimising the log-loss on ex[0..n) (a
 * held-out set); 1 when n is 0. */
void	model_calibrate(struct model *, const struct model_example *ex,
	    size_t n);
/* Set label k's threshold (0..1). */
void	model_set_threshold(struct model *, size_t k, double p);

/* The weights file of m: a new NUL-terminated buffer (caller frees) of
 * *len bytes, or NULL when out of memory. */
char	*model_write(const struct model *, size_t *len);

#endif
