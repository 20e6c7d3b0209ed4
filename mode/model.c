/*
 * model.c -- the hashed linear classifier: features, the weights file,
 * scoring, explanation and deterministic training (see model.h).
 * Pure: no I/O.
 * SPDX-License-Identifier: MIT
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

#define MODEL_MAGIC	"modegate-model 1"
#define MODEL_BITS_MIN	10
#define MODEL_BITS_MAX	22
#define FEAT_PAIR_MAX	(2 * 64 + 2)	/* a bigram is a feature while its
					   bytes are fewer */

struct model {
	char		 kind[16];
	size_t		 nlab;
	char		 label[MODEL_MAX_LABELS][MODEL_LABEL_LEN];
	unsigned	 bits;
	double		 scale;
	double		 temperature;
	double		 thr[MODEL_MAX_LABELS];
	int32_t		 bias[MODEL_MAX_LABELS];	/* in units of scale */
	uint16_t	*row;		/* [1 << bits]: 0 none, else index + 1 */
	int16_t		*w;		/* [nrows][MODEL_MAX_LABELS], units of
					   scale: exact integer sums */
	uint32_t	*bucket;	/* [nrows], ascending */
	size_t		 nrows;
};

/* FNV-1a over the tag and the bytes. */
static uint32_t
feat_hash(char tag, const char *s, size_t len)
{
	return mg_fnv(mg_fnv_byte(MG_FNV_BASIS, (unsigned char)tag), s, len);
}

void
feats_init(struct feats *f, char (*names)[FEAT_NAME])
{
	f->n = 0;
	f->name = names;
}

void
feats_add(struct feats *f, char tag, const char *s, size_t len)
{
	size_t	n;

	if (f->n == FEATS_MAX)
		return;
	if (f->name != NULL) {
		n = len < FEAT_NAME - 3 ? len : FEAT_NAME - 3;
		f->name[f->n][0] = tag;
		f->name[f->n][1] = ':';
		memcpy(f->name[f->n] + 2, s, n);
		f->name[f->n][n + 2] = '\0';
	}
	f->id[f->n++] = feat_hash(tag, s, len);
}

/* The character 3-5-grams of one word, padded: "<sim>" -> "<si", ... */
static void
feats_chars(struct feats *f, const char *w, size_t len)
{
	char		pad[64];
	size_t		n, i, k;

	if (len + 2 > sizeof pad)
		len = sizeof pad - 2;
	uint32_t	h;

	pad[0] = '<';
	memcpy(pad + 1, w, len);
	pad[len + 1] = '>';
	n = len + 2;
	if (f->name != NULL) {
		/* The same features in the same order, named. */
		for (i = 0; i + 3 <= n; i++)
			for (k = 3; k <= 5 && i + k <= n; k++)
				feats_add(f, 'c', pad + i, k);
		return;
	}
	/* FNV-1a extends a prefix: the 3-, 4- and 5-gram at i in one pass,
	 * the same hashes feats_add gives. */
	for (i = 0; i + 3 <= n && f->n + 3 <= FEATS_MAX; i++) {
		h = mg_fnv_byte(MG_FNV_BASIS, 'c');
		for (k = 0; k < 5 && i + k < n; k++) {
			h = mg_fnv_byte(h, (unsigned char)pad[i + k]);
			if (k >= 2)
				f->id[f->n++] = h;
		}
	}
}

/* Add the feature of a, a space and b joined (a bigram), without
 * copying them on the hot path (FNV-1a hashes piecewise). */
static void
feats_add_pair(struct feats *f, char tag, const char *a, size_t al,
    const char *b, size_t bl)
{
	char		buf[FEAT_PAIR_MAX];
	uint32_t	h;

	if (f->name != NULL) {
		memcpy(buf, a, al);
		buf[al] = ' ';
		memcpy(buf + al + 1, b, bl);
		feats_add(f, tag, buf, al + 1 + bl);
		return;
	}
	if (f->n == FEATS_MAX)
		return;
	h = feat_hash(tag, a, al);
	f->id[f->n++] = mg_fnv(mg_fnv_byte(h, ' '), b, bl);
}

void
feats_text(struct feats *f, const char *norm)
{
	const char	*w, *prev = "<s>";
	size_t		 wl, pl = 3, nw = 0;
	char		 len;

	for (w = norm; *w != '\0'; w += wl + (w[wl] == ' ')) {
		for (wl = 0; w[wl] != ' ' && w[wl] != '\0'; wl++)
			;
		if (wl == 0)
			break;
		feats_add(f, 'w', w, wl);
		if (pl + wl + 1 < FEAT_PAIR_MAX)
			feats_add_pair(f, 'b', prev, pl, w, wl);
		feats_chars(f, w, wl);
		prev = w;
		pl = wl;
		nw++;
	}
	if (nw > 0 && pl + 5 < FEAT_PAIR_MAX)
		feats_add_pair(f, 'b', prev, pl, "</s>", 4);
	if (nw > 0 && nw <= 3)
		feats_add(f, 'm', norm, strlen(norm));
	len = (char)('0' + (nw > 9 ? 9 : nw));
	feats_add(f, 'l', &len, 1);
}

/* Allocate the tables of a model with nrows rows. */
static int
model_alloc(struct model *m, size_t nrows)
{
	m->row = calloc((size_t)1 << m->bits, sizeof *m->row);
	m->w = calloc((nrows + 1) * MODEL_MAX_LABELS, sizeof *m->w);
	m->bucket = calloc(nrows + 1, sizeof *m->bucket);
	if (m->row == NULL || m->w == NULL || m->bucket == NULL)
		return -1;
	return 0;
}

void
model_free(struct model *m)
{
	if (m == NULL)
		return;
	free(m->row);
	free(m->w);
	free(m->bucket);
	free(m);
}

size_t
model_nlabels(const struct model *m)
{
	return m->nlab;
}

size_t
model_nrows(const struct model *m)
{
	return m->nrows;
}

double
model_threshold(const struct model *m, size_t k)
{
	return k < m->nlab ? m->thr[k] : 0;
}

void
model_set_threshold(struct model *m, size_t k, double p)
{
	if (k < m->nlab)
		m->thr[k] = p;
}

/* A cursor over the lines of the weights file. */
struct reader {
	const char	*p, *end;
	const char	*file;
	size_t		 line;
	char		 buf[1024];
	struct diag	*d;
	bool		 bad;
};

/* The next line into r->buf; false at the end or on a line too long. */
static bool
reader_line(struct reader *r)
{
	const char	*nl;
	size_t		 n;

	if (r->p >= r->end)
		return false;
	nl = memchr(r->p, '\n', (size_t)(r->end - r->p));
	n = nl != NULL ? (size_t)(nl - r->p) : (size_t)(r->end - r->p);
	r->line++;
	if (n >= sizeof r->buf) {
		diag_add(r->d, r->file, "", "line %zu: too long", r->line);
		r->bad = true;
		return false;
	}
	memcpy(r->buf, r->p, n);
	r->buf[n] = '\0';
	r->p += n + (nl != NULL);
	return true;
}

/* Report a problem at the current line. */
static void
reader_err(struct reader *r, const char *what)
{
	diag_add(r->d, r->file, "", "line %zu: %s", r->line, what);
	r->bad = true;
}

/* Read "key VALUE" where VALUE is a number in [lo, hi]. */
static bool
reader_num(struct reader *r, const char *key, double lo, double hi,
    double *v)
{
	char	*e;
	size_t	 kl = strlen(key);

	if (!reader_line(r) || strncmp(r->buf, key, kl) != 0 ||
	    r->buf[kl] != ' ') {
		reader_err(r, key);
		diag_add(r->d, r->file, "", "line %zu: expected \"%s N\"",
		    r->line, key);
		return false;
	}
	*v = strtod(r->buf + kl + 1, &e);
	if (e == r->buf + kl + 1 || *e != '\0' || !(*v >= lo && *v <= hi)) {
		reader_err(r, "number missing or out of range");
		return false;
	}
	return true;
}

/* Parse n integers in [lo, hi] from s into out; false on a problem. */
static bool
parse_ints(const char *s, size_t n, long lo, long hi, int32_t *out)
{
	char	*e;
	long	 v;
	size_t	 i;

	for (i = 0; i < n; i++) {
		v = strtol(s, &e, 10);
		if (e == s || (*e != ' ' && *e != '\0') || v < lo || v > hi)
			return false;
		out[i] = (int32_t)v;
		s = e;
	}
	return *s == '\0';
}

/* The header: magic, kind, labels, bits, scale, temperature. */
static bool
model_read_header(struct model *m, struct reader *r, const char *kind,
    const char *const *labels, size_t nlabels)
{
	double	v;
	size_t	i;

	if (!reader_line(r) || strcmp(r->buf, MODEL_MAGIC) != 0) {
		reader_err(r, "not a modegate model (expected \""
		    MODEL_MAGIC "\")");
		return false;
	}
	if (!reader_line(r) || strncmp(r->buf, "kind ", 5) != 0 ||
	    strcmp(r->buf + 5, kind) != 0) {
		diag_add(r->d, r->file, "", "line %zu: expected \"kind %s\"",
		    r->line, kind);
		r->bad = true;
		return false;
	}
	if (!reader_num(r, "labels", 1, MODEL_MAX_LABELS, &v))
		return false;
	m->nlab = (size_t)v;
	if (m->nlab != nlabels)
		diag_add(r->d, r->file, "", "line %zu: %zu labels, the rules "
		    "have %zu (retrain: make train)", r->line, m->nlab,
		    nlabels);
	for (i = 0; i < m->nlab; i++) {
		if (!reader_line(r) || strncmp(r->buf, "label ", 6) != 0 ||
		    strlen(r->buf + 6) >= MODEL_LABEL_LEN) {
			reader_err(r, "expected \"label NAME\"");
			return false;
		}
		strcpy(m->label[i], r->buf + 6);
		if (i < nlabels && strcmp(m->label[i], labels[i]) != 0)
			diag_add(r->d, r->file, "", "line %zu: label %zu is "
			    "\"%s\", the rules say \"%s\" (retrain: make "
			    "train)", r->line, i, m->label[i], labels[i]);
	}
	if (m->nlab != nlabels) {
		r->bad = true;
		return false;
	}
	if (!reader_num(r, "bits", MODEL_BITS_MIN, MODEL_BITS_MAX, &v))
		return false;
	m->bits = (unsigned)v;
	if (!reader_num(r, "scale", 1e-9, 1, &m->scale) ||
	    !reader_num(r, "temperature", 0.01, 100, &m->temperature))
		return false;
	return !r->bad;
}

/* "threshold NAME P" lines, then "bias ...", then "rows R". */
static bool
model_read_middle(struct model *m, struct reader *r, double *rows)
{
	char	name[MODEL_LABEL_LEN];
	double	p;
	size_t	i;

	while (reader_line(r) && strncmp(r->buf, "threshold ", 10) == 0) {
		if (sscanf(r->buf + 10, "%31s %lf", name, &p) != 2 ||
		    !(p >= 0 && p <= 1)) {
			reader_err(r, "expected \"threshold NAME P\", P in 0..1");
			return false;
		}
		for (i = 0; i < m->nlab && strcmp(m->label[i], name) != 0; i++)
			;
		if (i == m->nlab) {
			reader_err(r, "threshold of an unknown label");
			return false;
		}
		m->thr[i] = p;
	}
	if (strncmp(r->buf, "bias ", 5) != 0 ||
	    !parse_ints(r->buf + 5, m->nlab, -1000000, 1000000, m->bias)) {
		reader_err(r, "expected \"bias\" and one integer a label");
		return false;
	}
	return reader_num(r, "rows", 0, MODEL_MAX_ROWS, rows);
}

/* The rows, strictly ascending buckets, then "end". */
static bool
model_read_rows(struct model *m, struct reader *r)
{
	unsigned long	 b;
	char		*e;
	size_t		 i, k;
	int32_t		 v[MODEL_MAX_LABELS];

	for (i = 0; i < m->nrows; i++) {
		if (!reader_line(r)) {
			reader_err(r, "fewer rows than announced");
			return false;
		}
		b = strtoul(r->buf, &e, 10);
		if (e == r->buf || *e != ' ' || b >= (1ul << m->bits) ||
		    (i > 0 && b <= m->bucket[i - 1])) {
			reader_err(r, "bucket missing, out of range or not "
			    "ascending");
			return false;
		}
		if (!parse_ints(e + 1, m->nlab, -32767, 32767, v)) {
			reader_err(r, "expected one integer weight a label "
			    "(-32767..32767)");
			return false;
		}
		for (k = 0; k < m->nlab; k++)
			m->w[i * MODEL_MAX_LABELS + k] = (int16_t)v[k];
		m->bucket[i] = (uint32_t)b;
		m->row[b] = (uint16_t)(i + 1);
	}
	if (!reader_line(r) || strcmp(r->buf, "end") != 0) {
		reader_err(r, "expected \"end\" after the rows");
		return false;
	}
	return true;
}

struct model *
model_load(const char *buf, size_t len, const char *file, const char *kind,
    const char *const *labels, size_t nlabels, struct diag *d)
{
	struct reader	 r = { buf, buf + len, file, 0, "", d, false };
	struct model	*m;
	double		 rows;

	if (len > MODEL_MAX_BYTES) {
		diag_add(d, file, "", "larger than %u bytes", MODEL_MAX_BYTES);
		return NULL;
	}
	if ((m = calloc(1, sizeof *m)) == NULL) {
		diag_add(d, file, "", "out of memory");
		return NULL;
	}
	snprintf(m->kind, sizeof m->kind, "%s", kind);
	if (!model_read_header(m, &r, kind, labels, nlabels) ||
	    !model_read_middle(m, &r, &rows))
		goto fail;
	m->nrows = (size_t)rows;
	if (model_alloc(m, m->nrows) == -1) {
		diag_add(d, file, "", "out of memory");
		goto fail;
	}
	if (!model_read_rows(m, &r))
		goto fail;
	return m;
fail:
	model_free(m);
	return NULL;
}

/* Raw scores z[k] (bias plus weights) for the labels of mask. */
static void
model_raw(const struct model *m, const struct feats *f, uint32_t mask,
    double *z)
{
	const int16_t	*w, *w1, *w2, *w3;
	uint32_t	 b, msk = ((uint32_t)1 << m->bits) - 1;
	size_t		 i, k;
	int32_t		 acc[MODEL_MAX_LABELS];

	uint16_t	 hit[FEATS_MAX];
	size_t		 nh = 0;

	for (k = 0; k < MODEL_MAX_LABELS; k++)
		acc[k] = k < m->nlab ? m->bias[k] : 0;
	/* Two passes: the independent row look-ups first (their cache
	 * misses overlap), then the sums. */
	for (i = 0; i < f->n; i++) {
		b = f->id[i] & msk;
		hit[nh] = m->row[b];
		nh += hit[nh] != 0;
	}
	/* Four rows at a time: the sums are exact integers, so their order
	 * is free, and acc (which the compiler keeps in memory) is read and
	 * written a quarter as often. A fixed-width loop it vectorises. */
	for (i = 0; i + 4 <= nh; i += 4) {
		w = m->w + (size_t)(hit[i] - 1) * MODEL_MAX_LABELS;
		w1 = m->w + (size_t)(hit[i + 1] - 1) * MODEL_MAX_LABELS;
		w2 = m->w + (size_t)(hit[i + 2] - 1) * MODEL_MAX_LABELS;
		w3 = m->w + (size_t)(hit[i + 3] - 1) * MODEL_MAX_LABELS;
		for (k = 0; k < MODEL_MAX_LABELS; k++)
			acc[k] += (w[k] + w1[k]) + (w2[k] + w3[k]);
	}
	for (; i < nh; i++) {
		w = m->w + (size_t)(hit[i] - 1) * MODEL_MAX_LABELS;
		for (k = 0; k < MODEL_MAX_LABELS; k++)
			acc[k] += w[k];
	}
	for (k = 0; k < m->nlab; k++)
		z[k] = (mask >> k) & 1 ? (double)acc[k] * m->scale : 0;
}

/* Softmax of z / t over the labels of mask into prob. */
static void
softmax_mask(const double *z, size_t n, uint32_t mask, double t,
    double *prob)
{
	double	mx = -1e300, sum = 0;
	size_t	k;

	for (k = 0; k < n; k++)
		if ((mask >> k) & 1 && z[k] > mx)
			mx = z[k];
	for (k = 0; k < n; k++) {
		prob[k] = (mask >> k) & 1 ? exp((z[k] - mx) / t) : 0;
		sum += prob[k];
	}
	for (k = 0; k < n; k++)
		prob[k] = sum > 0 ? prob[k] / sum : 0;
}

void
model_probs(const struct model *m, const struct feats *f, uint32_t mask,
    double *prob)
{
	double	z[MODEL_MAX_LABELS];

	model_raw(m, f, mask, z);
	softmax_mask(z, m->nlab, mask, m->temperature, prob);
}

size_t
model_top(const struct model *m, const struct feats *f, size_t k, size_t r,
    size_t *idx, double *contrib, size_t max)
{
	const int16_t	*w;
	uint32_t	 ri, msk = ((uint32_t)1 << m->bits) - 1;
	size_t		 i, j, n = 0;
	double		 c;

	if (k >= m->nlab || r >= m->nlab)
		return 0;
	for (i = 0; i < f->n; i++) {
		if ((ri = m->row[f->id[i] & msk]) == 0)
			continue;
		w = m->w + (size_t)(ri - 1) * MODEL_MAX_LABELS;
		c = ((double)w[k] - (k != r ? (double)w[r] : 0)) * m->scale;
		if (c <= 0)
			continue;
		/* Insert into the sorted top list. */
		for (j = n; j > 0 && contrib[j - 1] < c; j--)
			if (j < max) {
				contrib[j] = contrib[j - 1];
				idx[j] = idx[j - 1];
			}
		if (j < max) {
			contrib[j] = c;
			idx[j] = i;
			if (n < max)
				n++;
		}
	}
	return n;
}

/* A xorshift64* step: the trainer's only source of "randomness". */
static uint64_t
rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/* Document frequency of every bucket over the examples. */
static uint32_t *
train_counts(const struct model_example *ex, size_t n, unsigned bits)
{
	uint32_t	*df, *seen, msk = ((uint32_t)1 << bits) - 1, b;
	size_t		 i, j;

	df = calloc((size_t)1 << bits, sizeof *df);
	seen = calloc((size_t)1 << bits, sizeof *seen);
	if (df == NULL || seen == NULL) {
		free(df);
		free(seen);
		return NULL;
	}
	for (i = 0; i < n; i++)
		for (j = 0; j < ex[i].nfeat; j++) {
			b = ex[i].feat[j] & msk;
			if (seen[b] != i + 1) {
				seen[b] = (uint32_t)i + 1;
				df[b]++;
			}
		}
	free(seen);
	return df;
}

/* One AdaGrad step on example e against the dense weights W (and G). */
static void
train_step(const struct model_example *e, size_t nlab, unsigned bits,
    const uint32_t *df, unsigned min_count, float *W, float *G, float *B,
    float *GB, const struct model_params *p)
{
	double		 z[MODEL_MAX_LABELS], prob[MODEL_MAX_LABELS], g;
	uint32_t	 msk = ((uint32_t)1 << bits) - 1, b;
	size_t		 j, k;
	float		*w, *gg;

	for (k = 0; k < nlab; k++)
		z[k] = B[k];
	for (j = 0; j < e->nfeat; j++) {
		b = e->feat[j] & msk;
		if (df[b] < min_count)
			continue;
		w = W + (size_t)b * nlab;
		for (k = 0; k < nlab; k++)
			z[k] += w[k];
	}
	softmax_mask(z, nlab, e->mask, 1.0, prob);
	for (k = 0; k < nlab; k++) {
		if (!((e->mask >> k) & 1))
			continue;
		g = prob[k] - (k == e->label ? 1.0 : 0.0);
		GB[k] += (float)(g * g);
		B[k] -= (float)(p->lr * g / sqrt((double)GB[k] + 1e-8));
		for (j = 0; j < e->nfeat; j++) {
			b = e->feat[j] & msk;
			if (df[b] < min_count)
				continue;
			w = W + (size_t)b * nlab + k;
			gg = G + (size_t)b * nlab + k;
			*gg += (float)(g * g);
			*w -= (float)(p->lr * (g + p->l2 * *w) /
			    sqrt((double)*gg + 1e-8));
		}
	}
}

/* The quantised weight: w / scale rounded, clamped to int16. */
static long
quant(double w, double scale)
{
	long	q = lround(w / scale);

	return q > 32767 ? 32767 : q < -32767 ? -32767 : q;
}

/* Does bucket b keep a row: seen often enough, a weight not 0? */
static int
train_kept(const struct model *m, const float *W, const uint32_t *df,
    unsigned min_count, size_t b)
{
	size_t	k;

	if (df[b] < min_count)
		return 0;
	for (k = 0; k < m->nlab; k++)
		if (quant((double)W[b * m->nlab + k], m->scale) != 0)
			return 1;
	return 0;
}

/* Quantise the dense weights into m's rows (buckets with a weight). */
static int
train_quantise(struct model *m, const float *W, const float *B,
    const uint32_t *df, unsigned min_count)
{
	size_t	nb = (size_t)1 << m->bits, b, k, nrows = 0;

	for (b = 0; b < nb; b++)
		nrows += train_kept(m, W, df, min_count, b);
	if (nrows > MODEL_MAX_ROWS || model_alloc(m, nrows) == -1)
		return -1;
	for (k = 0; k < m->nlab; k++)
		m->bias[k] = (int32_t)lround((double)B[k] / m->scale);
	for (b = 0; b < nb; b++) {
		if (!train_kept(m, W, df, min_count, b))
			continue;
		for (k = 0; k < m->nlab; k++)
			m->w[m->nrows * MODEL_MAX_LABELS + k] = (int16_t)quant(
			    (double)W[b * m->nlab + k], m->scale);
		m->bucket[m->nrows] = (uint32_t)b;
		m->row[b] = (uint16_t)++m->nrows;
	}
	return 0;
}

struct model *
model_train(const char *kind, const char *const *labels, size_t nlabels,
    const struct model_example *ex, size_t n, const struct model_params *p,
    struct diag *d)
{
	struct model	*m = NULL;
	float		*W = NULL, *G = NULL, B[MODEL_MAX_LABELS] = { 0 };
	float		 GB[MODEL_MAX_LABELS] = { 0 };
	uint32_t	*df = NULL;
	size_t		*order = NULL, i, j, t, nb;
	uint64_t	 seed = p->seed | 1;
	int		 ep;

	if (nlabels == 0 || nlabels > MODEL_MAX_LABELS ||
	    p->bits < MODEL_BITS_MIN || p->bits > MODEL_BITS_MAX) {
		diag_add(d, "train", "", "bad labels or bits");
		return NULL;
	}
	nb = (size_t)1 << p->bits;
	if ((m = calloc(1, sizeof *m)) == NULL ||
	    (W = calloc(nb * nlabels, sizeof *W)) == NULL ||
	    (G = calloc(nb * nlabels, sizeof *G)) == NULL ||
	    (order = calloc(n + 1, sizeof *order)) == NULL ||
	    (df = train_counts(ex, n, p->bits)) == NULL)
		goto oom;
	snprintf(m->kind, sizeof m->kind, "%s", kind);
	m->nlab = nlabels;
	for (i = 0; i < nlabels; i++)
		snprintf(m->label[i], MODEL_LABEL_LEN, "%s", labels[i]);
	m->bits = p->bits;
	m->scale = p->scale;
	m->temperature = 1;
	for (i = 0; i < n; i++)
		order[i] = i;
	for (ep = 0; ep < p->epochs; ep++) {
		for (i = n; i > 1; i--) {
			j = (size_t)(rng_next(&seed) % i);
			t = order[i - 1];
			order[i - 1] = order[j];
			order[j] = t;
		}
		for (i = 0; i < n; i++)
			train_step(&ex[order[i]], nlabels, p->bits, df,
			    p->min_count, W, G, B, GB, p);
	}
	if (train_quantise(m, W, B, df, p->min_count) == -1)
		goto oom;
	free(W);
	free(G);
	free(df);
	free(order);
	return m;
oom:
	diag_add(d, "train", "", "out of memory");
	free(W);
	free(G);
	free(df);
	free(order);
	model_free(m);
	return NULL;
}

/* The mean negative log-likelihood of ex at temperature t. */
static double
calib_nll(const struct model *m, const struct model_example *ex, size_t n,
    double t)
{
	struct feats	*f;
	double		 z[MODEL_MAX_LABELS], prob[MODEL_MAX_LABELS], nll = 0;
	size_t		 i, j;

	if ((f = malloc(sizeof *f)) == NULL)
		return 1e300;
	for (i = 0; i < n; i++) {
		feats_init(f, NULL);
		for (j = 0; j < ex[i].nfeat && j < FEATS_MAX; j++)
			f->id[f->n++] = ex[i].feat[j];
		model_raw(m, f, ex[i].mask, z);
		softmax_mask(z, m->nlab, ex[i].mask, t, prob);
		nll -= log(prob[ex[i].label] > 1e-12 ? prob[ex[i].label] :
		    1e-12);
	}
	free(f);
	return n > 0 ? nll / (double)n : 0;
}

void
model_calibrate(struct model *m, const struct model_example *ex, size_t n)
{
	double	t, best = 1, bv = 1e300, v;

	if (n == 0) {
		m->temperature = 1;
		return;
	}
	for (t = 0.25; t <= 6.0 + 1e-9; t += 0.05) {
		v = calib_nll(m, ex, n, t);
		if (v < bv - 1e-12) {
			bv = v;
			best = t;
		}
	}
	m->temperature = round(best * 100) / 100;
}

/* A growing output buffer. */
struct wbuf {
	char	*p;
	size_t	 len, cap;
	bool	 oom;
};

/* Append printf-formatted text. */
static void MG_PRINTF(2, 3)
wbuf_add(struct wbuf *b, const char *fmt, ...)
{
	va_list	 ap;
	int	 n;
	char	*np;

	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if ((size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		if ((np = realloc(b->p, b->cap * 2 + (size_t)n)) == NULL) {
			b->oom = true;
			return;
		}
		b->p = np;
		b->cap = b->cap * 2 + (size_t)n;
	}
}

char *
model_write(const struct model *m, size_t *len)
{
	struct wbuf	b = { malloc(4096), 0, 4096, false };
	size_t		i, k;

	if (b.p == NULL)
		return NULL;
	b.p[0] = '\0';
	wbuf_add(&b, "%s\nkind %s\nlabels %zu\n", MODEL_MAGIC, m->kind,
	    m->nlab);
	for (k = 0; k < m->nlab; k++)
		wbuf_add(&b, "label %s\n", m->label[k]);
	wbuf_add(&b, "bits %u\nscale %g\ntemperature %.2f\n", m->bits,
	    m->scale, m->temperature);
	for (k = 0; k < m->nlab; k++)
		if (m->thr[k] > 0)
			wbuf_add(&b, "threshold %s %.2f\n", m->label[k],
			    m->thr[k]);
	wbuf_add(&b, "bias");
	for (k = 0; k < m->nlab; k++)
		wbuf_add(&b, " %ld", (long)m->bias[k]);
	wbuf_add(&b, "\nrows %zu\n", m->nrows);
	for (i = 0; i < m->nrows; i++) {
		wbuf_add(&b, "%u", m->bucket[i]);
		for (k = 0; k < m->nlab; k++)
			wbuf_add(&b, " %d", m->w[i * MODEL_MAX_LABELS + k]);
		wbuf_add(&b, "\n");
	}
	wbuf_add(&b, "end\n");
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	*len = b.len;
	return b.p;
}
