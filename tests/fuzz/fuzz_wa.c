/*
 * fuzz_wa.c -- fuzz target: WhatsApp webhook payload extraction
 * (wa_parse) on arbitrary bodies.
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "../../src/http/wa.h"
#include "fuzz_main.h"

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

/* 1 when the JSON text s holds the escape \u0000 (jsonb refuses it). */
static int
has_nul_escape(const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s != '\\')
			continue;
		if (strncmp(s + 1, "u0000", 5) == 0)
			return 1;
		if (s[1] != '\0')
			s++;
	}
	return 0;
}

/* Parse data as a webhook body and touch every extracted string. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wa_payload	 p;
	char			 err[256];
	size_t			 i, sum = 0;

	if (wa_parse(&p, (const char *)data, size, err, sizeof err) == 0) {
		for (i = 0; i < p.nmsgs; i++) {
			sum += strlen(p.msgs[i].raw);
			if (p.msgs[i].sender_key != NULL)
				sum += strlen(p.msgs[i].sender_key);
			if (p.msgs[i].type != NULL)
				sum += strlen(p.msgs[i].type);
			if (has_nul_escape(p.msgs[i].raw))
				abort();
		}
		for (i = 0; i < p.nstats; i++)
			sum += strlen(p.stats[i].raw);
		for (i = 0; i < p.nevents; i++)
			sum += strlen(p.events[i].raw) +
			    strlen(p.events[i].field);
	} else if (strnlen(err, sizeof err) == sizeof err)
		abort();
	wa_payload_free(&p);
	return sum == (size_t)-1;
}
