/*
 * cmd_rules.c -- modegate rules-flatten FILE.json: print the flat form the
 * core reads (mode/flat.h). Used by the build to hand core unit tests the
 * default rules without linking json-c, and by people reading a rule change.
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>

#include "cmd/cmd.h"
#include "rules/flatfile.h"

int
cmd_rules_flatten(int argc, char **argv)
{
	struct diag	 d;
	size_t		 len, i;
	char		*buf;

	if (argc != 2) {
		fprintf(stderr, "usage: modegate rules-flatten FILE.json\n");
		return EX_USAGE_CODE;
	}
	diag_init(&d);
	if ((buf = rules_flatten_file(argv[1], argv[1], &len, &d)) == NULL) {
		for (i = 0; i < d.n; i++)
			fprintf(stderr, "%s\n", d.msg[i]);
		return 1;
	}
	fwrite(buf, 1, len, stdout);
	free(buf);
	return 0;
}
