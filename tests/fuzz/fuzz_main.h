/*
 * fuzz_main.h -- the plain driver shared by the fuzz harnesses: when not
 * linked with libFuzzer (MG_LIBFUZZER undefined, e.g. built with gcc or
 * for afl), main feeds each file named on the command line, or stdin when
 * there is none, to LLVMFuzzerTestOneInput.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_FUZZ_MAIN_H
#define MG_FUZZ_MAIN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int	LLVMFuzzerInitialize(int *argc, char ***argv);

#ifndef MG_LIBFUZZER
/* Read all of fp into a new buffer (caller frees); NULL on error. */
static uint8_t *
fuzz_slurp(FILE *fp, size_t *len)
{
	uint8_t	*buf = NULL, *nb;
	size_t	 cap = 0, n = 0, got;

	for (;;) {
		if (n == cap) {
			cap = cap ? cap * 2 : 65536;
			if ((nb = realloc(buf, cap)) == NULL) {
				free(buf);
				return NULL;
			}
			buf = nb;
		}
		if ((got = fread(buf + n, 1, cap - n, fp)) == 0)
			break;
		n += got;
	}
	if (ferror(fp)) {
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

/* Run every file argument (or stdin) through the harness once. */
int
main(int argc, char **argv)
{
	uint8_t	*buf;
	size_t	 len;
	FILE	*fp;
	int	 i;

	LLVMFuzzerInitialize(&argc, &argv);
	for (i = 1; i < argc || i == 1; i++) {
		fp = argc > 1 ? fopen(argv[i], "rb") : stdin;
		if (fp == NULL) {
			perror(argv[i]);
			return 1;
		}
		buf = fuzz_slurp(fp, &len);
		if (fp != stdin)
			fclose(fp);
		if (buf == NULL) {
			fprintf(stderr, "read error\n");
			return 1;
		}
		LLVMFuzzerTestOneInput(buf, len);
		free(buf);
		if (argc <= 1)
			break;
	}
	return 0;
}
#endif

#endif
