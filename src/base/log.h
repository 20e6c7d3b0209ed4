/*
 * log.h -- one line per event to stderr, levelled, text or JSON.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_LOG_H
#define MG_LOG_H

#include <stdarg.h>

#define LOG_PRINTF(f, a) __attribute__((format(printf, f, a)))

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

/* Set level and format ("text" or "json"); safe to call again. */
void	log_init(enum log_level, int json);
int	log_level_from_name(const char *);	/* -1 when unknown */
int	log_enabled(enum log_level);

/* log_warn appends strerror(errno); the x variants do not. fatal and
 * fatalx log and exit(1): for start-up and impossible states only. */
void	log_debug(const char *, ...) LOG_PRINTF(1, 2);
void	log_info(const char *, ...) LOG_PRINTF(1, 2);
void	log_warn(const char *, ...) LOG_PRINTF(1, 2);
void	log_warnx(const char *, ...) LOG_PRINTF(1, 2);
void	log_error(const char *, ...) LOG_PRINTF(1, 2);
__attribute__((noreturn)) void fatal(const char *, ...) LOG_PRINTF(1, 2);
__attribute__((noreturn)) void fatalx(const char *, ...) LOG_PRINTF(1, 2);

/*
 * Mask a phone number or user id for logs above debug: keeps the first
 * four and the last two characters ("5511*******21"). Writes into buf
 * (size len) and returns it.
 */
const char *log_mask(const char *id, char *buf, size_t len);

#endif
