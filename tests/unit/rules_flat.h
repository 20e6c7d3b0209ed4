/*
 * rules_flat.h -- for core unit tests: read the default rule files in the
 * flat form the build writes to $(BUILD)/rules/ (next to $(BUILD)/tests/).
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_TEST_RULES_FLAT_H
#define MG_TEST_RULES_FLAT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../mode/flat.h"

static char rules_flat_dir[512] = "build/rules";

/* Locate $(BUILD)/rules from the test binary's path, $(BUILD)/tests/x. */
static inline void
rules_flat_init(const char *argv0)
{
	const char	*slash;
	size_t		 n;

	if ((slash = strrchr(argv0, '/')) == NULL)
		return;
	n = (size_t)(slash - argv0);
	snprintf(rules_flat_dir, sizeof rules_flat_dir, "%.*s/../rules",
	    (int)n, argv0);
}

/*
 * Load the flat form of the rule file label ("mode/transitions.json", a
 * string literal: f keeps pointing at it). Returns 0 or -1.
 */
static inline int
rules_flat_load(const char *label, struct flat *f, struct diag *d)
{
	char	 path[1024], buf[65536];
	FILE	*fp;
	size_t	 len;
	int	 rc;

	snprintf(path, sizeof path, "%s/%.*s.flat", rules_flat_dir,
	    (int)(strlen(label) - strlen(".json")), label);
	if ((fp = fopen(path, "r")) == NULL) {
		fprintf(stderr, "cannot open %s\n", path);
		return -1;
	}
	len = fread(buf, 1, sizeof buf, fp);
	fclose(fp);
	if (len == sizeof buf)
		return -1;
	rc = flat_parse(f, label, buf, len, d);
	return rc;
}

/* Parse a hand-written flat buffer (a string literal) for loader tests. */
static inline void
rules_flat_str(const char *label, const char *text, struct flat *f,
    struct diag *d)
{
	if (flat_parse(f, label, text, strlen(text), d) != 0)
		abort();
}

#endif
