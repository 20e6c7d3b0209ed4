/*
 * fuzz_model.c -- fuzz target: the weights-file parser (model_load) on
 * any bytes, for both kinds; a file that loads is scored on a few texts
 * and written back, and the copy must load to the same bytes.
 * SPDX-License-Identifier: MIT
 */
#include <stdlib.h>
#include <string.h>

#include "../../mode/model.h"
#include "fuzz_main.h"

static const char	*labels[INTENT__COUNT];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int	k;

	for (k = 0; k < INTENT__COUNT; k++)
		labels[k] = intent_name(k);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct feats	 f;
	struct model		*m, *m2;
	struct diag		 d;
	double			 p[MODEL_MAX_LABELS], sum = 0;
	char			*w, *w2;
	size_t			 len, len2, k;

	diag_init(&d);
	if (labels[0] == NULL)
		LLVMFuzzerInitialize(NULL, NULL);
	m = model_load((const char *)data, size, "mode/intent.model",
	    "intent", labels, INTENT__COUNT, &d);
	if (m == NULL)
		return d.n + d.dropped > 0 ? 0 : (abort(), 0);
	feats_init(&f, NULL);
	feats_text(&f, "quero voltar a receber vagas de plantao");
	model_probs(m, &f, (1u << INTENT__COUNT) - 1, p);
	for (k = 0; k < INTENT__COUNT; k++)
		sum += p[k];
	if (sum < 0.999 || sum > 1.001)
		abort();
	if ((w = model_write(m, &len)) == NULL)
		abort();
	m2 = model_load(w, len, "copy", "intent", labels, INTENT__COUNT, &d);
	if (m2 == NULL || (w2 = model_write(m2, &len2)) == NULL ||
	    len2 != len || memcmp(w, w2, len) != 0)
		abort();
	free(w);
	free(w2);
	model_free(m);
	model_free(m2);
	return 0;
}
