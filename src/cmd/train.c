/*
 * train.c -- modegate train: learn mode/intent.model and
 * mode/guard.model from the labelled corpus.
 *
 * The corpus directory holds SPLITS (lines "SPLIT AUTHOR", SPLIT one of
 * train, dev, blind), messages/AUTHOR.tsv (LABEL<TAB>MESSAGE<TAB>
 * JULIA_BEFORE) and replies/AUTHOR.tsv (MODE<TAB>LABEL<TAB>REPLY). The
 * train authors are learned from, the dev authors calibrate the confidence
 * (temperature), and the blind authors are never opened. The same corpus
 * and rules always give the same weights, byte for byte.
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "base/config.h"
#include "rules/ruleset.h"

#ifndef MG_RULES_DIR
#define MG_RULES_DIR "."
#endif

#define TRAIN_AUTHORS	64

/* Hyper-parameters, chosen on the train and dev authors only. */
static struct model_params intent_params = {
	.bits = 18, .epochs = 40, .lr = 0.05, .l2 = 1e-4, .min_count = 2,
	.seed = 14, .scale = 0.001,
};
static struct model_params guard_params = {
	.bits = 16, .epochs = 20, .lr = 0.03, .l2 = 1e-4, .min_count = 2,
	.seed = 14, .scale = 0.001,
};
/* OPT_OUT needs this probability to win: a false opt-out silences a
 * doctor who wanted shifts. A reply is clean when OK reaches
 * ok_threshold: below 0.5, the guard needs more than an even chance to
 * call a reply a violation (false alarms cost a regeneration). */
static double	opt_out_threshold = 0.50;
static double	ok_threshold = 0.50;
/* A claim no rule names needs this probability (0: none). */
static double	solo_threshold = 0.5;

/* The authors of one split, in the order SPLITS lists them. */
struct split {
	char	name[TRAIN_AUTHORS][64];
	size_t	n;
};

/* A growing set of examples and their features. */
struct exset {
	struct model_example	*ex;
	size_t			 n, cap;
	uint32_t		*feat;
	size_t			 nfeat, capfeat;
};

/* Add one example with f's features; -1 when out of memory. */
static int
exset_add(struct exset *s, const struct feats *f, size_t label,
    uint32_t mask)
{
	void	*p;

	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 1024;
		if ((p = realloc(s->ex, s->cap * sizeof *s->ex)) == NULL)
			return -1;
		s->ex = p;
	}
	while (s->nfeat + f->n > s->capfeat) {
		s->capfeat = s->capfeat ? s->capfeat * 2 : 1 << 20;
		if ((p = realloc(s->feat, s->capfeat * sizeof *s->feat)) ==
		    NULL)
			return -1;
		s->feat = p;
	}
	memcpy(s->feat + s->nfeat, f->id, f->n * sizeof *f->id);
	/* Offsets now, pointers once the array stops moving. */
	s->ex[s->n].feat = (const uint32_t *)(uintptr_t)s->nfeat;
	s->ex[s->n].nfeat = f->n;
	s->ex[s->n].label = label;
	s->ex[s->n].mask = mask;
	s->n++;
	s->nfeat += f->n;
	return 0;
}

/* Turn the stored offsets into pointers. */
static void
exset_fix(struct exset *s)
{
	size_t	i;

	for (i = 0; i < s->n; i++)
		s->ex[i].feat = s->feat + (uintptr_t)s->ex[i].feat;
}

static void
exset_free(struct exset *s)
{
	free(s->ex);
	free(s->feat);
	memset(s, 0, sizeof *s);
}

/* Read corpus/SPLITS into the train and dev lists. */
static int
read_splits(const char *corpus, struct split *train, struct split *dev)
{
	FILE	*fp;
	char	 path[4096], line[256], sp[32], au[64];
	size_t	 ln = 0;
	int	 rc = 0;

	snprintf(path, sizeof path, "%s/SPLITS", corpus);
	if ((fp = fopen(path, "r")) == NULL) {
		fprintf(stderr, "modegate train: %s: %s\n", path,
		    strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof line, fp) != NULL) {
		ln++;
		if (line[0] == '#' || line[strspn(line, " \t\n")] == '\0')
			continue;
		if (sscanf(line, "%31s %63s", sp, au) != 2 ||
		    strspn(au, "abcdefghijklmnopqrstuvwxyz0123456789_-") !=
		    strlen(au)) {
			fprintf(stderr, "%s:%zu: expected \"SPLIT AUTHOR\"\n",
			    path, ln);
			rc = -1;
		} else if (strcmp(sp, "train") == 0 && train->n < TRAIN_AUTHORS)
			strcpy(train->name[train->n++], au);
		else if (strcmp(sp, "dev") == 0 && dev->n < TRAIN_AUTHORS)
			strcpy(dev->name[dev->n++], au);
		else if (strcmp(sp, "blind") != 0) {
			fprintf(stderr, "%s:%zu: unknown split \"%s\"\n", path,
			    ln, sp);
			rc = -1;
		}
	}
	fclose(fp);
	return rc;
}

/* Split line (modified) into exactly three TAB-separated fields. */
static int
split3(char *line, char **a, char **b, char **c)
{
	size_t	n = strlen(line);

	while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = '\0';
	*a = line;
	if ((*b = strchr(*a, '\t')) == NULL)
		return -1;
	*(*b)++ = '\0';
	if ((*c = strchr(*b, '\t')) == NULL)
		return -1;
	*(*c)++ = '\0';
	return strchr(*c, '\t') == NULL ? 0 : -1;
}

/* Add the messages of one author file (absent: nothing) to s. */
static int
read_messages(const char *path, const struct lexicon *lex, struct exset *s)
{
	struct feats	 f;
	FILE		*fp;
	char		*line = NULL, *lab, *msg, *ctx;
	size_t		 cap = 0, ln = 0;
	int		 in, rc = 0;

	if ((fp = fopen(path, "r")) == NULL)
		return errno == ENOENT ? 0 : -1;
	while (getline(&line, &cap, fp) != -1) {
		ln++;
		if (line[0] == '\n' || line[0] == '#')
			continue;
		if (split3(line, &lab, &msg, &ctx) == -1 ||
		    (in = intent_from_name(lab)) == -1) {
			fprintf(stderr, "%s:%zu: expected INTENT<TAB>MESSAGE"
			    "<TAB>JULIA_BEFORE\n", path, ln);
			rc = -1;
			continue;
		}
		feats_init(&f, NULL);
		intent_features(lex, msg, strlen(msg), ctx, strlen(ctx), &f);
		if (exset_add(s, &f, (size_t)in, (1u << INTENT__COUNT) - 1) ==
		    -1) {
			rc = -1;
			break;
		}
	}
	free(line);
	fclose(fp);
	return rc;
}

/* Add the replies of one author file (absent: nothing) to s; the mask of
 * each is OK plus the claims its mode forbids. */
static int
read_replies(const char *path, const struct claims *cl,
    const struct gate *g, struct exset *s)
{
	struct feats	 f;
	FILE		*fp;
	char		*line = NULL, *mode, *lab, *reply;
	size_t		 cap = 0, ln = 0, i;
	uint32_t	 mask;
	int		 m, k, rc = 0;

	if ((fp = fopen(path, "r")) == NULL)
		return errno == ENOENT ? 0 : -1;
	while (getline(&line, &cap, fp) != -1) {
		ln++;
		if (line[0] == '\n' || line[0] == '#')
			continue;
		if (split3(line, &mode, &lab, &reply) == -1 ||
		    (m = mode_from_name(mode)) == -1) {
			fprintf(stderr, "%s:%zu: expected MODE<TAB>LABEL<TAB>"
			    "REPLY\n", path, ln);
			rc = -1;
			continue;
		}
		mask = 1;
		for (i = 0; i < gate_claim_count(g, (enum mode)m); i++)
			if ((k = claims_find(cl, gate_claim(g, (enum mode)m,
			    i))) != -1)
				mask |= 1u << (k + 1);
		k = strcmp(lab, "OK") == 0 ? -1 : claims_find(cl, lab);
		if (k == -1 && strcmp(lab, "OK") != 0) {
			fprintf(stderr, "%s:%zu: unknown claim \"%s\"\n", path,
			    ln, lab);
			rc = -1;
			continue;
		}
		if (!((mask >> (k + 1)) & 1)) {
			fprintf(stderr, "%s:%zu: %s is not forbidden in %s; "
			    "skipped\n", path, ln, lab, mode);
			continue;
		}
		feats_init(&f, NULL);
		guard_features(cl, reply, strlen(reply), &f);
		if (exset_add(s, &f, (size_t)(k + 1), mask) == -1) {
			rc = -1;
			break;
		}
	}
	free(line);
	fclose(fp);
	return rc;
}

/* Accuracy of m on s (argmax over each example's mask), in percent. */
static double
exset_accuracy(const struct model *m, const struct exset *s)
{
	struct feats	f;
	double		prob[MODEL_MAX_LABELS];
	size_t		i, j, k, best, ok = 0;

	for (i = 0; i < s->n; i++) {
		feats_init(&f, NULL);
		for (j = 0; j < s->ex[i].nfeat && j < FEATS_MAX; j++)
			f.id[f.n++] = s->ex[i].feat[j];
		model_probs(m, &f, s->ex[i].mask, prob);
		for (k = 0, best = 0; k < model_nlabels(m); k++)
			if (prob[k] > prob[best])
				best = k;
		ok += best == s->ex[i].label;
	}
	return s->n ? 100.0 * (double)ok / (double)s->n : 0;
}

/* Write buf to dir/label through a temporary file and a rename. */
static int
write_model(const char *dir, const char *label, const struct model *m)
{
	FILE	*fp;
	char	 path[4096], tmp[4200], *buf;
	size_t	 len;
	int	 rc = 0;

	if ((buf = model_write(m, &len)) == NULL)
		return -1;
	snprintf(path, sizeof path, "%s/%s", dir, label);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	if ((fp = fopen(tmp, "w")) == NULL ||
	    fwrite(buf, 1, len, fp) != len || fclose(fp) != 0 ||
	    rename(tmp, path) == -1) {
		fprintf(stderr, "modegate train: %s: %s\n", path,
		    strerror(errno));
		rc = -1;
	}
	free(buf);
	return rc;
}

/* Read every listed author's files of kind ("messages" or "replies"). */
static int
read_split(const char *corpus, const struct split *sp, const char *kind,
    const struct ruleset *rs, struct exset *s)
{
	char	path[4096];
	size_t	i;
	int	rc = 0;

	for (i = 0; i < sp->n; i++) {
		snprintf(path, sizeof path, "%s/%s/%s.tsv", corpus, kind,
		    sp->name[i]);
		if (strcmp(kind, "messages") == 0)
			rc |= read_messages(path, rs->lex, s);
		else
			rc |= read_replies(path, rs->claims, rs->gate, s);
	}
	exset_fix(s);
	return rc;
}

/* Train, calibrate and write one model. */
static int
train_one(const char *corpus, const char *out, const struct split *train,
    const struct split *dev, const struct ruleset *rs, bool guard)
{
	const char		*labels[MODEL_MAX_LABELS];
	const char		*kind = guard ? "replies" : "messages";
	struct exset		 tr = { 0 }, dv = { 0 };
	struct model		*m = NULL;
	struct diag		 d;
	size_t			 nl, i;
	int			 rc = -1;

	nl = guard ? ruleset_guard_labels(rs->claims, labels) :
	    ruleset_intent_labels(labels);
	if (read_split(corpus, train, kind, rs, &tr) == -1 ||
	    read_split(corpus, dev, kind, rs, &dv) == -1) {
		fprintf(stderr, "modegate train: unusable %s\n", kind);
		goto out;
	}
	if (tr.n == 0) {
		fprintf(stderr, "%s: no %s in the train split; its model is "
		    "left as it is\n", guard ? "guard" : "intent", kind);
		rc = 0;
		goto out;
	}
	diag_init(&d);
	m = model_train(guard ? "guard" : "intent", labels, nl, tr.ex, tr.n,
	    guard ? &guard_params : &intent_params, &d);
	if (m == NULL) {
		fprintf(stderr, "%s\n", d.msg[0]);
		goto out;
	}
	model_calibrate(m, dv.ex, dv.n);
	if (!guard)
		model_set_threshold(m, INTENT_OPT_OUT, opt_out_threshold);
	else {
		model_set_threshold(m, 0, ok_threshold);
		for (i = 1; i < nl; i++)
			model_set_threshold(m, i, solo_threshold);
	}
	fprintf(stderr, "%s: %zu train, %zu dev examples; %zu rows; train "
	    "%.1f%%, dev %.1f%% (model alone)\n", guard ? "guard" : "intent",
	    tr.n, dv.n, model_nrows(m), exset_accuracy(m, &tr),
	    exset_accuracy(m, &dv));
	rc = write_model(out, guard ? "mode/guard.model" : "mode/intent.model",
	    m);
out:
	model_free(m);
	exset_free(&tr);
	exset_free(&dv);
	return rc;
}

/* "--set intent.epochs=20": override a hyper-parameter (experiments). */
static int
train_set(const char *arg)
{
	struct model_params	*p;
	const char		*eq, *name;
	double			 v;

	if (strncmp(arg, "intent.", 7) == 0)
		p = &intent_params;
	else if (strncmp(arg, "guard.", 6) == 0)
		p = &guard_params;
	else
		goto bad;
	name = strchr(arg, '.') + 1;
	if ((eq = strchr(name, '=')) == NULL)
		goto bad;
	v = strtod(eq + 1, NULL);
	if (strncmp(name, "epochs=", 7) == 0)
		p->epochs = (int)v;
	else if (strncmp(name, "lr=", 3) == 0)
		p->lr = v;
	else if (strncmp(name, "l2=", 3) == 0)
		p->l2 = v;
	else if (strncmp(name, "min_count=", 10) == 0)
		p->min_count = (unsigned)v;
	else if (strncmp(name, "bits=", 5) == 0)
		p->bits = (unsigned)v;
	else if (strncmp(name, "seed=", 5) == 0)
		p->seed = (uint64_t)v;
	else if (p == &intent_params && strncmp(name, "opt_out=", 8) == 0)
		opt_out_threshold = v;
	else if (p == &guard_params && strncmp(name, "ok=", 3) == 0)
		ok_threshold = v;
	else if (p == &guard_params && strncmp(name, "solo=", 5) == 0)
		solo_threshold = v;
	else
		goto bad;
	return 0;
bad:
	fprintf(stderr, "modegate train: --set %s: expected intent|guard."
	    "epochs|lr|l2|min_count|bits|seed=VALUE, intent.opt_out=P, "
	    "guard.ok=P\n", arg);
	return -1;
}

int
cmd_train(int argc, char **argv)
{
	struct split	 train = { .n = 0 }, dev = { .n = 0 };
	struct ruleset	 rs;
	struct diag	 d;
	const char	*corpus = "tests/corpus", *rules, *out = NULL;
	size_t		 i;
	int		 a, rc;

	if ((rules = getenv("MODEGATE_RULES_DIR")) == NULL || *rules == '\0')
		rules = MG_RULES_DIR;
	for (a = 1; a < argc; a++) {
		if (strcmp(argv[a], "--corpus") == 0 && a + 1 < argc)
			corpus = argv[++a];
		else if (strcmp(argv[a], "--out") == 0 && a + 1 < argc)
			out = argv[++a];
		else if (strcmp(argv[a], "--set") == 0 && a + 1 < argc) {
			if (train_set(argv[++a]) == -1)
				return EX_USAGE_CODE;
		} else {
			fprintf(stderr, "usage: modegate train [--corpus DIR] "
			    "[--out DIR] [--set intent|guard.PARAM=VALUE]\n");
			return EX_USAGE_CODE;
		}
	}
	if (out == NULL)
		out = rules;
	if (read_splits(corpus, &train, &dev) == -1)
		return EX_CONFIG_CODE;
	diag_init(&d);
	if (ruleset_load_opts(&rs, rules, false, &d) == -1) {
		for (i = 0; i < d.n; i++)
			fprintf(stderr, "%s\n", d.msg[i]);
		return EX_CONFIG_CODE;
	}
	rc = train_one(corpus, out, &train, &dev, &rs, false) == 0 &&
	    train_one(corpus, out, &train, &dev, &rs, true) == 0 ? 0 : 1;
	ruleset_free(&rs);
	return rc;
}
