/*
 * migrate.h -- apply sql/NNNN_*.sql in order, once each, under an advisory
 * lock, then re-apply the files of sql/functions/; and tell the newest
 * version the binary's sql/ folder holds.
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
 * Apply every NNNN_*.sql of sqldir not yet recorded in schema_migrations,
 * each in its own transaction, then every .sql file of sqldir/functions
 * in name order in one transaction (on every run: they are CREATE OR
 * REPLACE), holding pg_advisory_lock so concurrent runs wait for each
 * other. *applied
 * counts the versioned files applied now, *functions the function files.
 */
int	migrate_run(PGconn *, const char *sqldir, int *applied,
	    int *functions, char *err, size_t errlen) MG_MUSTCHECK;

#endif
