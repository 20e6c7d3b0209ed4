/*
 * intent_bench.c -- classifications per second of intent_detect over the
 * corpus, for about two seconds. Links libcore.a only.
 *
 *	intent_bench [LEXICON.flat [CORPUS.tsv]]
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* Seconds on the monotonic clock. */
static double
now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	const char		*lexp = argc > 1 ? argv[1] :
				    "build/rules/mode/intents.flat";
	const char		*corp = argc > 2 ? argv[2] :
				    "tests/cases/intent.tsv";
	static const char	*msg[BENCH_MSGS];
	struct intent_result	 r;
	struct lexicon		*lex;
	struct flat		 f;
	struct diag		 d;
	char			*lexbuf, *cbuf, *p, *tab;
	size_t			 len, n = 0, i;
	unsigned long		 count = 0;
	double			 t0, t;

	diag_init(&d);
	if ((lexbuf = slurp(lexp, &len)) == NULL ||
	    flat_parse(&f, "mode/intents.json", lexbuf, len, &d) == -1 ||
	    (lex = lexicon_load(&f, &d)) == NULL ||
	    (cbuf = slurp(corp, &len)) == NULL) {
		fprintf(stderr, "intent_bench: cannot load %s or %s\n", lexp,
		    corp);
		return 1;
	}
	for (p = strtok(cbuf, "\n"); p != NULL && n < BENCH_MSGS;
	    p = strtok(NULL, "\n"))
		if ((tab = strchr(p, '\t')) != NULL)
			msg[n++] = tab + 1;
	if (n == 0)
		return 1;
	t0 = now();
	do {
		for (i = 0; i < n; i++)
			intent_detect(lex, msg[i], strlen(msg[i]), &r);
		count += n;
	} while ((t = now() - t0) < BENCH_SECONDS);
	printf("intent: %lu classifications in %.2f s: %.0f per second "
	    "(%zu messages, %s)\n", count, t, (double)count / t, n, corp);
	lexicon_free(lex);
	flat_free(&f);
	free(lexbuf);
	free(cbuf);
	return 0;
}
