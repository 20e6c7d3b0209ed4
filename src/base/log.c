/*
 * log.c -- levelled one-line logging to stderr (httpd log.c style).
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "../../mode/normalize.h"

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

/* One event, built whole and written with one write(2). */
struct log_line {
	char	buf[8192];
	size_t	len;
};

#define LOG_TAIL	4	/* room always kept for "}\n or \n */

/* Append n bytes, unless they would eat the room kept for the end. */
static int
log_put(struct log_line *l, const char *s, size_t n)
{
	if (l->len + n > sizeof l->buf - LOG_TAIL)
		return -1;
	memcpy(l->buf + l->len, s, n);
	l->len += n;
	return 0;
}

/*
 * Append s so that the event stays on one line whatever it holds (libpq's
 * messages span lines): in JSON as a string body (no quotes), with bytes
 * that are not UTF-8 as U+FFFD; in text with control characters and such
 * bytes as \n, \r, \t or \xHH. Trailing newlines are dropped. Stops
 * before an escape that would not fit.
 */
static void
log_escape(struct log_line *l, const char *s)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 n = strlen(s), k;
	int32_t			 cp;
	char			 e[8];
	int			 r;

	while (n > 0 && (p[n - 1] == '\n' || p[n - 1] == '\r'))
		n--;
	for (; n > 0; p += k, n -= k) {
		cp = utf8_decode(p, n, &k);
		if (cp >= 0x20 && cp != 0x7f &&
		    (!log_json || (cp != '"' && cp != '\\'))) {
			r = log_put(l, (const char *)p, k);
		} else {
			if (*p == '\n')
				r = snprintf(e, sizeof e, "\\n");
			else if (*p == '\r')
				r = snprintf(e, sizeof e, "\\r");
			else if (*p == '\t')
				r = snprintf(e, sizeof e, "\\t");
			else if (*p == '"' || *p == '\\')
				r = snprintf(e, sizeof e, "\\%c", *p);
			else if (!log_json)
				r = snprintf(e, sizeof e, "\\x%02x", *p);
			else if (*p >= 0x80)
				r = snprintf(e, sizeof e, "\\ufffd");
			else
				r = snprintf(e, sizeof e, "\\u%04x", *p);
			r = log_put(l, e, (size_t)r);
		}
		if (r == -1)
			return;
	}
}

/* Format and emit one line; errstr is appended when not NULL. */
static void
log_vemit(enum log_level level, const char *errstr, const char *fmt,
    va_list ap)
{
	struct log_line	 l;
	char		 msg[2048];
	struct timespec	 now;
	struct tm	 tm;
	int		 n;

	if (!log_enabled(level))
		return;
	vsnprintf(msg, sizeof msg, fmt, ap);
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	n = snprintf(l.buf, sizeof l.buf, log_json ?
	    "{\"ts\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\",\"level\":\"%s\","
	    "\"msg\":\"" : "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s ",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
	    tm.tm_min, tm.tm_sec, now.tv_nsec / 1000000, level_names[level]);
	l.len = (size_t)n;
	log_escape(&l, msg);
	if (errstr != NULL && log_put(&l, ": ", 2) == 0)
		log_escape(&l, errstr);
	if (log_json) {
		memcpy(l.buf + l.len, "\"}\n", 3);
		l.len += 3;
	} else
		l.buf[l.len++] = '\n';
	fwrite(l.buf, 1, l.len, stderr);
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
