/*
 * intent_bench.c -- classifications per second of intent_detect (rules and
 * learned model) over a corpus, and guard checks per second of
 * guard_check (rules and model, every claim) over labelled replies, for
 * about two seconds each. Links libcore.a only.
 *
 *	intent_bench LEXICON.flat INTENT.model CORPUS.tsv \
 *	    CLAIMS.flat GUARD.model REPLIES.tsv
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../mode/guard.h"
#include "../../mode/intent.h"

#define BENCH_SECONDS	2.0
#define BENCH_MSGS	4096

/* Read a whole file into a new NUL-terminated buffer; NULL on error. */
static char *
slurp(const char *path, size_t *len)
{
	FILE	*fp;
	char	*buf;
	long	 n;

	if ((fp = fopen(path, "r")) == NULL)
		return NULL;
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	rewind(fp);
	if (n < 0 || (buf = malloc((size_t)n + 1)) == NULL) {
		fclose(fp);
		return NULL;
	}
	*len = fread(buf, 1, (size_t)n, fp);
	buf[*len] = '\0';
	fclose(fp);
	return buf;
}

/* CPU seconds of this process: one core's throughput, however busy the
 * machine is (wall-clock figures swing with other load). */
static double
now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Load a model file for the given labels; NULL on error. */
static struct model *
load_model(const char *path, const char *kind, const char **labels,
    size_t n)
{
	struct model	*m;
	struct diag	 d;
	char		*buf;
	size_t		 len;

	diag_init(&d);
	if ((buf = slurp(path, &len)) == NULL)
		return NULL;
	m = model_load(buf, len, path, kind, labels, n, &d);
	if (m == NULL && d.n > 0)
		fprintf(stderr, "%s\n", d.msg[0]);
	free(buf);
	return m;
}

/* Split buf into the field-th TAB field of each line (0-based). */
static size_t
fields(char *buf, int field, const char **out, size_t max)
{
	char	*p, *q;
	size_t	 n = 0;
	int	 k;

	for (p = strtok(buf, "\n"); p != NULL && n < max;
	    p = strtok(NULL, "\n")) {
		for (k = 0, q = p; k < field && q != NULL; k++)
			if ((q = strchr(q, '\t')) != NULL)
				q++;
		if (q == NULL)
			continue;
		if (strchr(q, '\t') != NULL)
			*strchr(q, '\t') = '\0';
		out[n++] = q;
	}
	return n;
}

/* Guard checks per second over the replies, against every claim. */
static int
bench_guard(const char *claimsp, const char *modelp, const char *repp)
{
	static const char	*rep[BENCH_MSGS];
	const char		*labels[MODEL_MAX_LABELS];
	struct claims		*cl;
	struct model		*m;
	struct flat		 f;
	struct diag		 d;
	char			*cbuf, *rbuf;
	int			 which[GUARD_MAX_CLAIMS], viol[GUARD_MAX_CLAIMS];
	size_t			 len, n, i, nc;
	unsigned long		 count = 0;
	double			 t0, t;

	diag_init(&d);
	if ((cbuf = slurp(claimsp, &len)) == NULL ||
	    flat_parse(&f, "mode/claims.json", cbuf, len, &d) == -1 ||
	    (cl = claims_load(&f, &d)) == NULL ||
	    (rbuf = slurp(repp, &len)) == NULL) {
		fprintf(stderr, "intent_bench: cannot load %s or %s\n",
		    claimsp, repp);
		return 1;
	}
	nc = claims_count(cl);
	labels[0] = "OK";
	for (i = 0; i < nc; i++) {
		labels[i + 1] = claims_id(cl, (int)i);
		which[i] = (int)i;
	}
	if ((m = load_model(modelp, "guard", labels, nc + 1)) == NULL)
		return 1;
	claims_set_model(cl, m);
	if ((n = fields(rbuf, 2, rep, BENCH_MSGS)) == 0)
		return 1;
	t0 = now();
	do {
		for (i = 0; i < n; i++)
			guard_check(cl, which, nc, rep[i], strlen(rep[i]),
			    viol, GUARD_MAX_CLAIMS);
		count += n;
	} while ((t = now() - t0) < BENCH_SECONDS);
	printf("guard: %lu checks in %.2f s: %.0f per second "
	    "(%zu replies, %s)\n", count, t, (double)count / t, n, repp);
	claims_free(cl);
	model_free(m);
	flat_free(&f);
	free(cbuf);
	free(rbuf);
	return 0;
}

int
main(int argc, char **argv)
{
	const char		*lexp, *modelp, *corp;
	static const char	*msg[BENCH_MSGS], *ctx[BENCH_MSGS];
	const char		*labels[MODEL_MAX_LABELS];
	struct model		*model;
	struct intent_result	 r;
	struct lexicon		*lex;
	struct flat		 f;
	struct diag		 d;
	char			*lexbuf, *cbuf, *p, *tab;
	size_t			 len, n = 0, i;
	unsigned long		 count = 0;
	double			 t0, t;
	int			 k;

	if (argc != 7) {
		fprintf(stderr, "usage: intent_bench LEXICON.flat INTENT.model "
		    "CORPUS.tsv CLAIMS.flat GUARD.model REPLIES.tsv\n");
		return 64;
	}
	lexp = argv[1];
	modelp = argv[2];
	corp = argv[3];
	for (k = 0; k < INTENT__COUNT; k++)
		labels[k] = intent_name(k);
	diag_init(&d);
	if ((lexbuf = slurp(lexp, &len)) == NULL ||
	    flat_parse(&f, "mode/intents.json", lexbuf, len, &d) == -1 ||
	    (lex = lexicon_load(&f, &d)) == NULL ||
	    (cbuf = slurp(corp, &len)) == NULL) {
		fprintf(stderr, "intent_bench: cannot load %s or %s\n", lexp,
		    corp);
		return 1;
	}
	if ((model = load_model(modelp, "intent", labels, INTENT__COUNT)) ==
	    NULL)
		return 1;
	lexicon_set_model(lex, model);
	/* LABEL<TAB>MESSAGE[<TAB>JULIA_BEFORE] lines. */
	for (p = strtok(cbuf, "\n"); p != NULL && n < BENCH_MSGS;
	    p = strtok(NULL, "\n")) {
		if ((tab = strchr(p, '\t')) == NULL)
			continue;
		msg[n] = tab + 1;
		ctx[n] = "";
		if ((tab = strchr(tab + 1, '\t')) != NULL) {
			*tab = '\0';
			ctx[n] = tab + 1;
		}
		n++;
	}
	if (n == 0)
		return 1;
	t0 = now();
	do {
		for (i = 0; i < n; i++)
			intent_detect_ctx(lex, msg[i], strlen(msg[i]), ctx[i],
			    strlen(ctx[i]), &r);
		count += n;
	} while ((t = now() - t0) < BENCH_SECONDS);
	printf("intent: %lu classifications in %.2f s: %.0f per second "
	    "(%zu messages, %s)\n", count, t, (double)count / t, n, corp);
	lexicon_free(lex);
	model_free(model);
	flat_free(&f);
	free(lexbuf);
	free(cbuf);
	return bench_guard(argv[4], argv[5], argv[6]);
}
