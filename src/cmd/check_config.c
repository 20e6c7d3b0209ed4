/*
 * cmd_check_config.c -- modegate check-config: report every configuration
 * and rule-file problem at once (httpd -n).
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "base/config.h"
#include "cmd/preflight.h"

int
cmd_check_config(int argc, char **argv)
{
	struct config	cfg;
	struct diag	d;
	int		rc;

	if (argc > 1 && strcmp(argv[1], "--list") == 0) {
		config_print_table();
		return 0;
	}
	if (argc > 1) {
		fprintf(stderr, "check-config: unknown argument \"%s\"\n"
		    "usage: modegate check-config [--list]\n", argv[1]);
		return EX_USAGE_CODE;
	}
	/* The very checks serve makes before it starts (preflight.c). */
	diag_init(&d);
	rc = preflight(&cfg, NULL, &d);
	preflight_print(&d);
	config_free(&cfg);
	if (rc == -1)
		return EX_CONFIG_CODE;
	printf("configuration OK\n");
	return 0;
}
