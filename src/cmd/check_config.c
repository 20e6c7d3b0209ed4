/*
 * cmd_check_config.c -- modegate check-config: report every configuration
 * and rule-file problem at once (httpd -n).
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "base/config.h"
#include "rules/ruleset.h"

int
cmd_check_config(int argc, char **argv)
{
	struct config	cfg;
	struct ruleset	rs;
	struct diag	d;
	size_t		i;

	if (argc > 1 && strcmp(argv[1], "--list") == 0) {
		config_print_table();
		return 0;
	}
	if (argc > 1) {
		fprintf(stderr, "usage: modegate check-config [--list]\n");
		return EX_USAGE_CODE;
	}
	diag_init(&d);
	if (config_load(&cfg, &d) == -1 && d.n == 0)
		return EX_CONFIG_CODE;
	if (cfg.rules_dir != NULL && ruleset_load(&rs, cfg.rules_dir, &d) == 0)
		ruleset_free(&rs);
	for (i = 0; i < d.n; i++)
		fprintf(stderr, "%s\n", d.msg[i]);
	if (d.dropped > 0)
		fprintf(stderr, "... and %zu more problems\n", d.dropped);
	config_free(&cfg);
	if (d.n > 0)
		return EX_CONFIG_CODE;
	printf("configuration OK\n");
	return 0;
}
