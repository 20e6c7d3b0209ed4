/*
 * test_model.c -- the learned classifier: features, deterministic
 * training (the same examples give the same bytes), the weights file's
 * validation (every problem named with its line), masks, thresholds,
 * explanation; the intent detector and the guard with a model attached.
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../../mode/intent.h"
#include "../../../mode/normalize.h"

static const char *const labels3[] = { "A", "B", "C" };

/* A tiny labelled set: words that say A, B or C. */
static const struct { const char *text; size_t label; } toy[] = {
	{ "quero vaga de plantao", 0 }, { "tem vaga amanha", 0 },
	{ "me manda vaga", 0 }, { "procuro plantao noturno", 0 },
	{ "nao quero obrigado", 1 }, { "nao posso nao", 1 },
	{ "agora nao da", 1 }, { "nao tenho interesse", 1 },
	{ "bom dia", 2 }, { "boa tarde julia", 2 }, { "oi bom dia", 2 },
	{ "ola boa noite", 2 },
};
#define NTOY (sizeof toy / sizeof toy[0])

static const struct model_params params = {
	.bits = 12, .epochs = 20, .lr = 0.3, .l2 = 1e-4, .min_count = 1,
	.seed = 7, .scale = 0.001,
};

/* Features of every toy example, into fs; examples point into fs. */
static void
toy_examples(struct feats *fs, struct model_example *ex, uint32_t mask)
{
	char	norm[256];
	size_t	i;

	for (i = 0; i < NTOY; i++) {
		text_normalize(toy[i].text, strlen(toy[i].text), norm,
		    sizeof norm);
		feats_init(&fs[i], NULL);
		feats_text(&fs[i], norm);
		ex[i].feat = fs[i].id;
		ex[i].nfeat = fs[i].n;
		ex[i].label = toy[i].label;
		ex[i].mask = mask;
	}
}

/* The argmax label of text under m. */
static size_t
predict(const struct model *m, const char *text, uint32_t mask)
{
	static struct feats	f;
	char			norm[256];
	double			p[MODEL_MAX_LABELS];
	size_t			k, best = 0;

	text_normalize(text, strlen(text), norm, sizeof norm);
	feats_init(&f, NULL);
	feats_text(&f, norm);
	model_probs(m, &f, mask, p);
	for (k = 0; k < model_nlabels(m); k++)
		if (p[k] > p[best])
			best = k;
	return best;
}

static void
test_features_are_deterministic_and_named(void **state)
{
	static struct feats	a, b;
	static char		names[FEATS_MAX][FEAT_NAME];
	size_t			i;

	(void)state;
	feats_init(&a, NULL);
	feats_text(&a, "nao quero");
	feats_init(&b, names);
	feats_text(&b, "nao quero");
	assert_int_equal(a.n, b.n);
	assert_memory_equal(a.id, b.id, a.n * sizeof a.id[0]);
	/* words, bigrams with the edges, 3-5-grams of "<nao>", whole text. */
	for (i = 0; i < b.n && strcmp(b.name[i], "b:<s> nao") != 0; i++)
		;
	assert_true(i < b.n);
	for (i = 0; i < b.n && strcmp(b.name[i], "c:<na") != 0; i++)
		;
	assert_true(i < b.n);
	for (i = 0; i < b.n && strcmp(b.name[i], "m:nao quero") != 0; i++)
		;
	assert_true(i < b.n);
}

static void
test_training_is_byte_identical_and_learns(void **state)
{
	static struct feats	fs[NTOY];
	struct model_example	ex[NTOY];
	struct model		*m1, *m2, *back;
	struct diag		d;
	char			*w1, *w2, *w3;
	size_t			l1, l2, l3, i;

	(void)state;
	diag_init(&d);
	toy_examples(fs, ex, 7);
	m1 = model_train("intent", (const char **)labels3, 3, ex, NTOY,
	    &params, &d);
	m2 = model_train("intent", (const char **)labels3, 3, ex, NTOY,
	    &params, &d);
	assert_non_null(m1);
	assert_non_null(m2);
	w1 = model_write(m1, &l1);
	w2 = model_write(m2, &l2);
	assert_int_equal(l1, l2);
	assert_memory_equal(w1, w2, l1);
	assert_memory_equal(w1, "modegate-model 1\nkind intent\nlabels 3\n",
	    38);
	for (i = 0; i < NTOY; i++)
		assert_int_equal(predict(m1, toy[i].text, 7), toy[i].label);
	assert_int_equal(predict(m1, "tem plantao hoje", 7), 0);
	/* Read back, written again: the same bytes. */
	back = model_load(w1, l1, "mode/intent.model", "intent",
	    (const char **)labels3, 3, &d);
	assert_non_null(back);
	w3 = model_write(back, &l3);
	assert_int_equal(l1, l3);
	assert_memory_equal(w1, w3, l1);
	/* A mask leaves labels out: without A, "vaga" is not A. */
	assert_int_not_equal(predict(back, "quero vaga", 6), 0);
	free(w1);
	free(w2);
	free(w3);
	model_free(m1);
	model_free(m2);
	model_free(back);
}

static void
test_calibration_and_threshold(void **state)
{
	static struct feats	fs[NTOY], f;
	struct model_example	ex[NTOY];
	struct model		*m;
	struct diag		d;
	double			p[MODEL_MAX_LABELS];
	char			*w;
	size_t			l;

	(void)state;
	diag_init(&d);
	toy_examples(fs, ex, 7);
	m = model_train("intent", (const char **)labels3, 3, ex, NTOY,
	    &params, &d);
	model_calibrate(m, ex, NTOY);
	model_set_threshold(m, 1, 0.75);
	assert_true(model_threshold(m, 1) == 0.75);
	w = model_write(m, &l);
	assert_non_null(strstr(w, "\nthreshold B 0.75\n"));
	assert_non_null(strstr(w, "\ntemperature "));
	feats_init(&f, NULL);
	feats_text(&f, "bom dia");
	model_probs(m, &f, 7, p);
	assert_true(p[0] + p[1] + p[2] > 0.999 && p[0] + p[1] + p[2] < 1.001);
	assert_true(p[2] > 0.5);
	free(w);
	model_free(m);
}

/* Load buf and return the first problem (or "" when it loaded). */
static const char *
load_err(const char *buf)
{
	static struct diag	 d;
	static const char *const lab[] = { "OK", "x" };
	struct model		*m;

	diag_init(&d);
	m = model_load(buf, strlen(buf), "mode/guard.model", "guard", lab, 2,
	    &d);
	model_free(m);
	if (m != NULL)
		return "";
	assert_true(d.n > 0);
	return d.msg[0];
}

#define HEAD "modegate-model 1\nkind guard\nlabels 2\nlabel OK\nlabel x\n" \
	"bits 10\nscale 0.001\ntemperature 1.00\n"

static void
test_weights_file_validation(void **state)
{
	(void)state;
	assert_string_equal(load_err(HEAD "bias 1 -1\nrows 2\n5 10 -10\n"
	    "9 0 3\nend\n"), "");
	assert_string_equal(load_err("hello\n"), "mode/guard.model: line 1: "
	    "not a modegate model (expected \"modegate-model 1\")");
	assert_string_equal(load_err("modegate-model 1\nkind intent\n"),
	    "mode/guard.model: line 2: expected \"kind guard\"");
	assert_string_equal(load_err("modegate-model 1\nkind guard\nlabels 2\n"
	    "label OK\nlabel y\nbits 10\n"), "mode/guard.model: line 5: label "
	    "1 is \"y\", the rules say \"x\" (retrain: make train)");
	assert_string_equal(load_err("modegate-model 1\nkind guard\nlabels 3\n"),
	    "mode/guard.model: line 3: 3 labels, the rules have 2 (retrain: "
	    "make train)");
	assert_string_equal(load_err(HEAD "bias 1 -1\nrows 2\n9 1 1\n5 1 1\n"
	    "end\n"), "mode/guard.model: line 12: bucket missing, out of range "
	    "or not ascending");
	assert_string_equal(load_err(HEAD "bias 1 -1\nrows 1\n1024 1 1\nend\n"),
	    "mode/guard.model: line 11: bucket missing, out of range or not "
	    "ascending");
	assert_string_equal(load_err(HEAD "bias 1 -1\nrows 1\n3 1 99999\n"
	    "end\n"), "mode/guard.model: line 11: expected one integer weight "
	    "a label (-32767..32767)");
	assert_string_equal(load_err(HEAD "bias 1 -1\nrows 1\n3 1 1\n"),
	    "mode/guard.model: line 11: expected \"end\" after the rows");
	assert_string_equal(load_err(HEAD "bias 1\nrows 0\nend\n"),
	    "mode/guard.model: line 9: expected \"bias\" and one integer a "
	    "label");
	assert_string_equal(load_err(HEAD "threshold y 0.5\nbias 1 1\nrows 0\n"
	    "end\n"), "mode/guard.model: line 9: threshold of an unknown "
	    "label");
}

static void
test_top_features_explain(void **state)
{
	static struct feats	fs[NTOY], f;
	static char		names[FEATS_MAX][FEAT_NAME];
	struct model_example	ex[NTOY];
	struct model		*m;
	struct diag		d;
	double			c[3];
	size_t			idx[3], n;

	(void)state;
	diag_init(&d);
	toy_examples(fs, ex, 7);
	m = model_train("intent", (const char **)labels3, 3, ex, NTOY,
	    &params, &d);
	feats_init(&f, names);
	feats_text(&f, "vaga");
	n = model_top(m, &f, 0, 1, idx, c, 3);
	assert_true(n > 0);
	assert_true(c[0] > 0 && (n < 2 || c[0] >= c[1]));
	assert_non_null(strstr(names[idx[0]], "vag") != NULL ?
	    names[idx[0]] : strstr(names[idx[0]], "aga"));
	model_free(m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_features_are_deterministic_and_named),
		cmocka_unit_test(test_training_is_byte_identical_and_learns),
		cmocka_unit_test(test_calibration_and_threshold),
		cmocka_unit_test(test_weights_file_validation),
		cmocka_unit_test(test_top_features_explain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
