/*
 * log.c -- levelled one-line logging to stderr (httpd log.c style).
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"

static enum log_level	log_min = LOG_INFO;
static int		log_json;
static const char	*level_names[] = { "debug", "info", "warn", "error" };

void
log_init(enum log_level level, int json)
{
	log_min = level;
	log_json = json;
}

int
log_level_from_name(const char *name)
{
	int	i;

	for (i = 0; i <= LOG_ERROR; i++)
		if (strcmp(name, level_names[i]) == 0)
			return i;
	return -1;
}

int
log_enabled(enum log_level level)
{
	return level >= log_min;
}

/* Write msg as a JSON string body (no quotes) to stderr. */
static void
log_json_escape(const char *s)
{
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(stderr, "\\%c", c);
		else if (c < 0x20)
			fprintf(stderr, "\\u%04x", c);
		else
			fputc(c, stderr);
	}
}

/* Format and emit one line; errstr is appended when not NULL. */
static void
log_vemit(enum log_level level, const char *errstr, const char *fmt,
    va_list ap)
{
	char		 msg[2048], ts[64];
	struct timespec	 now;
	struct tm	 tm;

	if (!log_enabled(level))
		return;
	vsnprintf(msg, sizeof msg, fmt, ap);
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
	    tm.tm_min, tm.tm_sec, now.tv_nsec / 1000000);
	if (log_json) {
		fprintf(stderr, "{\"ts\":\"%s\",\"level\":\"%s\",\"msg\":\"",
		    ts, level_names[level]);
		log_json_escape(msg);
		if (errstr != NULL) {
			fputs(": ", stderr);
			log_json_escape(errstr);
		}
		fputs("\"}\n", stderr);
	} else
		fprintf(stderr, "%s level=%s %s%s%s\n", ts, level_names[level],
		    msg, errstr != NULL ? ": " : "",
		    errstr != NULL ? errstr : "");
}

#define LOG_FUNC(name, level)						\
void									\
name(const char *fmt, ...)						\
{									\
	va_list	ap;							\
									\
	va_start(ap, fmt);						\
	log_vemit(level, NULL, fmt, ap);				\
	va_end(ap);							\
}

LOG_FUNC(log_debug, LOG_DEBUG)
LOG_FUNC(log_info, LOG_INFO)
LOG_FUNC(log_warnx, LOG_WARN)
LOG_FUNC(log_error, LOG_ERROR)

void
log_warn(const char *fmt, ...)
{
	va_list	ap;
	int	saved = errno;

	va_start(ap, fmt);
	log_vemit(LOG_WARN, strerror(saved), fmt, ap);
	va_end(ap);
}

void
fatal(const char *fmt, ...)
{
	va_list	ap;
	int	saved = errno;

	va_start(ap, fmt);
	log_vemit(LOG_ERROR, strerror(saved), fmt, ap);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vemit(LOG_ERROR, NULL, fmt, ap);
	va_end(ap);
	exit(1);
}

const char *
log_mask(const char *id, char *buf, size_t len)
{
	size_t	n, i;

	if (id == NULL)
		id = "";
	n = strlen(id);
	if (len == 0)
		return buf;
	if (n <= 6 || n + 1 > len) {
		snprintf(buf, len, "***");
		return buf;
	}
	for (i = 0; i < n; i++)
		buf[i] = (i < 4 || i >= n - 2) ? id[i] : '*';
	buf[n] = '\0';
	return buf;
}
