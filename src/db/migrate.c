/*
 * migrate.c -- forward-only schema migrations from sql/NNNN_*.sql, then
 * every file of sql/functions/ (functions, trigger functions, triggers,
 * views; CREATE OR REPLACE) re-applied in one transaction on every run.
 * SPDX-License-Identifier: MIT
 */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/pool.h"
#include "base/log.h"
#include "db/migrate.h"

#define MIGRATE_MAX	1000
#define MIGRATE_LOCK	"7231962504221006"	/* pg_advisory_lock key */

/* Best effort: run sql and ignore the outcome (rollback, unlock). */
static void
migrate_quiet(PGconn *pg, const char *sql)
{
	PQclear(PQexec(pg, sql));
}

/* True when name ends in ".sql" (a file of sql/functions/). */
static int
migrate_is_sql(const char *name)
{
	size_t	n = strlen(name);

	return n > 4 && name[0] != '.' && strcmp(name + n - 4, ".sql") == 0;
}

/* The version of a migration file name, or -1 when it is not one. */
static int
migrate_version(const char *name)
{
	size_t	n = strlen(name), i;

	if (n < 10 || strcmp(name + n - 4, ".sql") != 0 || name[4] != '_')
		return -1;
	for (i = 0; i < 4; i++)
		if (!isdigit((unsigned char)name[i]))
			return -1;
	return atoi(name);
}

/* qsort comparator of file names. */
static int
migrate_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The sorted file names of dir that keep() accepts; caller frees each and
 * *out.
 */
static int
migrate_list_of(const char *dir, int (*keep)(const char *), char ***out,
    size_t *n, char *err, size_t errlen)
{
	DIR		*d;
	struct dirent	*de;
	char		**v;

	*n = 0;
	if ((v = calloc(MIGRATE_MAX, sizeof *v)) == NULL ||
	    (d = opendir(dir)) == NULL) {
		snprintf(err, errlen, "%s: cannot open the migrations folder",
		    dir);
		free(v);
		return -1;
	}
	while ((de = readdir(d)) != NULL && *n < MIGRATE_MAX)
		if (keep(de->d_name) && (v[*n] = strdup(de->d_name)) != NULL)
			(*n)++;
	closedir(d);
	qsort(v, *n, sizeof *v, migrate_cmp);
	*out = v;
	return 0;
}

/* True when name is a versioned migration (NNNN_*.sql). */
static int
migrate_is_versioned(const char *name)
{
	return migrate_version(name) >= 0;
}

/* The sorted versioned migration file names of sqldir. */
static int
migrate_list(const char *sqldir, char ***out, size_t *n, char *err,
    size_t errlen)
{
	return migrate_list_of(sqldir, migrate_is_versioned, out, n, err,
	    errlen);
}

/* Free a list from migrate_list or migrate_list_of. */
static void
migrate_list_free(char **v, size_t n)
{
	while (n > 0)
		free(v[--n]);
	free(v);
}

int
migrate_latest(const char *sqldir, int *version, char *err, size_t errlen)
{
	char	**v;
	size_t	  n;

	if (migrate_list(sqldir, &v, &n, err, errlen) == -1)
		return -1;
	*version = n > 0 ? migrate_version(v[n - 1]) : 0;
	migrate_list_free(v, n);
	return 0;
}

/* Read a whole file into a new NUL-terminated string; caller frees. */
static char *
migrate_read(const char *path)
{
	FILE	*fp;
	char	*buf = NULL;
	long	 len;

	if ((fp = fopen(path, "rb")) == NULL)
		return NULL;
	if (fseek(fp, 0, SEEK_END) == 0 && (len = ftell(fp)) >= 0 &&
	    fseek(fp, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)len + 1)) != NULL) {
		if (fread(buf, 1, (size_t)len, fp) != (size_t)len) {
			free(buf);
			buf = NULL;
		} else
			buf[len] = '\0';
	}
	fclose(fp);
	return buf;
}

/* True when version is recorded; -1 on error. */
static int
migrate_applied(PGconn *pg, int version, char *err, size_t errlen)
{
	PGresult	*res;
	char		 vbuf[16];
	const char	*params[1] = { vbuf };
	int		 found;

	snprintf(vbuf, sizeof vbuf, "%d", version);
	res = PQexecParams(pg, "SELECT 1 FROM schema_migrations WHERE "
	    "version = $1", 1, NULL, params, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		snprintf(err, errlen, "%s", PQerrorMessage(pg));
		PQclear(res);
		return -1;
	}
	found = PQntuples(res) > 0;
	PQclear(res);
	return found;
}

/* Apply one file in its own transaction and record it. */
static int
migrate_one(PGconn *pg, const char *sqldir, const char *name, char *err,
    size_t errlen)
{
	char		 path[4096], vbuf[16], msg[512];
	const char	*params[2] = { vbuf, name };
	char		*sql;
	PGresult	*res;
	int		 ok;

	snprintf(path, sizeof path, "%s/%s", sqldir, name);
	snprintf(vbuf, sizeof vbuf, "%d", migrate_version(name));
	if ((sql = migrate_read(path)) == NULL) {
		snprintf(err, errlen, "%s: cannot read", path);
		return -1;
	}
	if (db_exec(pg, "BEGIN", msg, sizeof msg) == -1 ||
	    db_exec(pg, sql, msg, sizeof msg) == -1) {
		snprintf(err, errlen, "%s: %s", name, msg);
		free(sql);
		migrate_quiet(pg, "ROLLBACK");
		return -1;
	}
	free(sql);
	res = PQexecParams(pg, "INSERT INTO schema_migrations (version, name) "
	    "VALUES ($1, $2)", 2, NULL, params, NULL, NULL, 0);
	ok = PQresultStatus(res) == PGRES_COMMAND_OK;
	PQclear(res);
	if (!ok || db_exec(pg, "COMMIT", msg, sizeof msg) == -1) {
		snprintf(err, errlen, "%s: %s", name, PQerrorMessage(pg));
		migrate_quiet(pg, "ROLLBACK");
		return -1;
	}
	log_info("migrate: applied %s", name);
	return 0;
}

/*
 * Re-apply every file of sqldir/functions in name order, in one
 * transaction: all of them or none. *files counts them.
 */
static int
migrate_functions(PGconn *pg, const char *sqldir, int *files, char *err,
    size_t errlen)
{
	char	  dir[4096], path[4096 + 256], msg[512];
	char	**v, *sql;
	size_t	  n, i;
	int	  rc = -1;

	snprintf(dir, sizeof dir, "%s/functions", sqldir);
	if (migrate_list_of(dir, migrate_is_sql, &v, &n, err, errlen) == -1)
		return -1;
	if (db_exec(pg, "BEGIN", msg, sizeof msg) == -1) {
		snprintf(err, errlen, "functions: %s", msg);
		goto done;
	}
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, v[i]);
		if ((sql = migrate_read(path)) == NULL) {
			snprintf(err, errlen, "%s: cannot read", path);
			goto rollback;
		}
		if (db_exec(pg, sql, msg, sizeof msg) == -1) {
			snprintf(err, errlen, "functions/%s: %s", v[i], msg);
			free(sql);
			goto rollback;
		}
		free(sql);
	}
	if (db_exec(pg, "COMMIT", msg, sizeof msg) == -1) {
		snprintf(err, errlen, "functions: %s", msg);
		goto rollback;
	}
	*files = (int)n;
	log_info("migrate: re-applied %zu function files", n);
	rc = 0;
	goto done;
rollback:
	migrate_quiet(pg, "ROLLBACK");
done:
	migrate_list_free(v, n);
	return rc;
}

int
migrate_run(PGconn *pg, const char *sqldir, int *applied, int *functions,
    char *err, size_t errlen)
{
	char	**v;
	size_t	  n, i;
	int	  rc = -1, a;

	*applied = 0;
	*functions = 0;
	if (migrate_list(sqldir, &v, &n, err, errlen) == -1)
		return -1;
	if (db_exec(pg, "SET client_min_messages TO warning", err,
	    errlen) == -1 ||
	    db_exec(pg, "SELECT pg_advisory_lock(" MIGRATE_LOCK ")", err,
	    errlen) == -1)
		goto done;
	if (db_exec(pg, "CREATE TABLE IF NOT EXISTS schema_migrations ("
	    "version int PRIMARY KEY, name text NOT NULL, "
	    "applied_at timestamptz NOT NULL DEFAULT now())", err,
	    errlen) == -1)
		goto unlock;
	for (i = 0; i < n; i++) {
		if ((a = migrate_applied(pg, migrate_version(v[i]), err,
		    errlen)) == -1)
			goto unlock;
		if (a)
			continue;
		if (migrate_one(pg, sqldir, v[i], err, errlen) == -1)
			goto unlock;
		(*applied)++;
	}
	if (migrate_functions(pg, sqldir, functions, err, errlen) == -1)
		goto unlock;
	rc = 0;
unlock:
	migrate_quiet(pg, "SELECT pg_advisory_unlock(" MIGRATE_LOCK ")");
done:
	migrate_list_free(v, n);
	return rc;
}
