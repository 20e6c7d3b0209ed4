/*
 * preflight.h -- everything `serve` needs before it starts, checked in one
 * place: `check-config` and `serve` both call it, so they accept and
 * refuse the same things with the same words.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_PREFLIGHT_H
#define MG_PREFLIGHT_H

#include "base/config.h"

/*
 * Load cfg from the environment (config_load) and check the rules folder
 * it names: the rule files of mode/ and policy/, mode/messages.json with
 * the replies the service sends among them and mode/julia.md
 * (ruleset_load), and sql/ (the
 * migrations; *latest gets the newest number when latest is not NULL).
 * Every problem goes to d, one line each. Returns 0 when d gained nothing,
 * else -1; cfg is filled either way (free with config_free).
 */
int	preflight(struct config *cfg, int *latest, struct diag *d)
	    MG_MUSTCHECK;

/* Print d's lines to stderr (and how many were dropped). */
void	preflight_print(const struct diag *d);

#endif
