/*
 * opsdb.h -- what the operators' commands (flag, takeover, release,
 * set-mode, funnel) share: connect from DATABASE_URL, run one
 * parameterised statement, print a result as an aligned table.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_OPSDB_H
#define MG_OPSDB_H

#include <stdio.h>

#include <libpq-fe.h>

#include "../../mode/core.h"

/*
 * Connect to $DATABASE_URL. NULL after printing "CMD: ..." to stderr;
 * *rc is then the exit status (78 when DATABASE_URL is unset, else 1).
 */
PGconn		*opsdb_connect(const char *cmd, int *rc);

/*
 * Run sql with n text parameters (borrowed; NULL is SQL NULL). Returns
 * the result (caller PQclears) or NULL after printing "CMD: message" to
 * stderr; *rc is then 64 for invalid input (SQLSTATE class 22) and 1
 * otherwise.
 */
PGresult	*opsdb_query(PGconn *, const char *cmd, const char *sql, int n,
		    const char *const *params, int *rc);

/*
 * Print res (borrowed) to fp as a table aligned on column widths, with a
 * header line and a rule; NULL prints "-", booleans "yes"/"no".
 */
void		 opsdb_print(FILE *fp, const PGresult *res);

#endif
