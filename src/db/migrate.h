/*
 * migrate.h -- apply sql/NNNN_*.sql in order, once each, under an advisory
 * lock; and tell the newest version the binary's sql/ folder holds.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_MIGRATE_H
#define MG_MIGRATE_H

#include <libpq-fe.h>

#include "../../mode/core.h"

/* The newest NNNN among sqldir/NNNN_*.sql into *version (0: none). */
int	migrate_latest(const char *sqldir, int *version, char *err,
	    size_t errlen) MG_MUSTCHECK;

/*
 * Apply every file of sqldir not yet recorded in schema_migrations, each
 * in its own transaction, holding pg_advisory_lock so concurrent runs
 * wait for each other. *applied counts the files applied now.
 */
int	migrate_run(PGconn *, const char *sqldir, int *applied, char *err,
	    size_t errlen) MG_MUSTCHECK;

#endif
