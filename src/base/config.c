/*
 * config.c -- the configuration table and its loader. Every variable is
 * declared once here: name, type, default, limits, secret, help.
 * SPDX-License-Identifier: MIT
 */
#include <sys/socket.h>
#include <sys/types.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "base/config.h"

#ifndef MG_RULES_DIR
#define MG_RULES_DIR "."
#endif

enum cf_type { CF_STR, CF_INT, CF_ENUM, CF_URL, CF_HOSTPORT, CF_CONNINFO,
    CF_RATIO };

struct cf_entry {
	const char	*name;
	enum cf_type	 type;
	int		 required;
	const char	*def;		/* NULL: no default */
	long		 min, max;	/* CF_INT */
	const char	*choices;	/* CF_ENUM: "a|b|c" */
	int		 secret;
	size_t		 off;
	const char	*help;
};

#define OFF(f) offsetof(struct config, f)

static const struct cf_entry cf_table[] = {
	{ "DATABASE_URL", CF_CONNINFO, 1, NULL, 0, 0, NULL, 1, OFF(database_url),
	  "libpq connection string or URI of the PostgreSQL database" },
	{ "MODEGATE_LISTEN", CF_HOSTPORT, 0, "127.0.0.1:8080", 0, 0, NULL, 0,
	  OFF(listen), "address:port the HTTP server listens on; an IPv6 "
	  "address in brackets ([::1]:8080); port 0: any free port (logged)" },
	{ "WHATSAPP_APP_SECRET", CF_STR, 1, NULL, 0, 0, NULL, 1,
	  OFF(app_secret), "Meta app secret; keys the X-Hub-Signature-256 "
	  "HMAC of every webhook" },
	{ "WHATSAPP_VERIFY_TOKEN", CF_STR, 1, NULL, 0, 0, NULL, 1,
	  OFF(verify_token), "token Meta echoes in the GET /webhook "
	  "verification handshake" },
	{ "WHATSAPP_TOKEN", CF_STR, 0, "", 0, 0, NULL, 1, OFF(wa_token),
	  "Graph API system-user access token; empty means dry-run "
	  "(replies are recorded, nothing is posted)" },
	{ "WHATSAPP_API_BASE", CF_URL, 0, "https://graph.facebook.com/v25.0",
	  0, 0, NULL, 0, OFF(wa_api_base),
	  "Graph API base URL including the version" },
	{ "WHATSAPP_TEMPLATE_WINDOW_CLOSED", CF_STR, 0, "", 0, 0, NULL, 0,
	  OFF(wa_template_closed), "approved template sent instead of a "
	  "free text once the 24-hour window is closed (131047), as "
	  "NAME:LANGUAGE (e.g. retomar_contato:pt_BR); empty: wa_templates "
	  "is left as it is (no row: the text is dropped, audited)" },
	{ "MODEGATE_SEND_CONCURRENCY", CF_INT, 0, "32", 1, 1000, NULL, 0,
	  OFF(send_concurrency), "outbox rows posted to the Graph API at "
	  "once (one row per conversation at a time)" },
	{ "MODEGATE_SEND_LEASE_S", CF_INT, 0, "30", 2, 600, NULL, 0,
	  OFF(send_lease_s), "lease of an outbox row being posted, seconds; "
	  "a crashed process's rows are settled by a status or posted again "
	  "after it and MODEGATE_SEND_RECONCILE_S" },
	{ "MODEGATE_SEND_RECONCILE_S", CF_INT, 0, "30", 0, 3600, NULL, 0,
	  OFF(send_reconcile_s), "a message whose lease expired without a "
	  "recorded answer waits this long for a status webhook naming it "
	  "(biz_opaque_callback_data) before it is posted again, seconds; 0: "
	  "posted again at once" },
	{ "MODEGATE_SEND_RETRY_BASE_MS", CF_INT, 0, "2000", 10, 600000, NULL,
	  0, OFF(send_retry_base_ms), "first retry delay after a transient "
	  "send error (network, 5xx, codes 1, 2, 131000, 131016), doubling "
	  "per attempt up to 15 min" },
	{ "LLM_PROVIDER", CF_ENUM, 0, "offline", 0, 0,
	  "anthropic|openai|offline", 0, OFF(llm_provider),
	  "LLM backend; offline is a deterministic built-in responder" },
	{ "LLM_API_KEY", CF_STR, 0, "", 0, 0, NULL, 1, OFF(llm_api_key),
	  "API key for the LLM provider; required unless offline, or openai "
	  "with an LLM_BASE_URL on this host (localhost, 127.0.0.1, [::1])" },
	{ "LLM_BASE_URL", CF_URL, 0, "", 0, 0, NULL, 0, OFF(llm_base_url),
	  "LLM endpoint base URL; empty: the provider's public API" },
	{ "LLM_MODEL", CF_STR, 0, "claude-sonnet-4-5", 0, 0, NULL, 0,
	  OFF(llm_model), "model name sent to the LLM provider" },
	{ "LLM_TIMEOUT", CF_INT, 0, "60", 1, 600, NULL, 0, OFF(llm_timeout_s),
	  "total timeout of one LLM request, seconds" },
	{ "LLM_MAX_TOKENS", CF_INT, 0, "1024", 16, 32000, NULL, 0,
	  OFF(llm_max_tokens), "most output tokens per LLM reply" },
	{ "LLM_TEMPERATURE", CF_RATIO, 0, "0.3", 0, 1, NULL, 0,
	  OFF(llm_temperature), "sampling temperature sent with every LLM "
	  "request, 0 to 1 (a constrained agent runs cool)" },
	{ "LLM_BREAKER_THRESHOLD", CF_INT, 0, "5", 1, 1000, NULL, 0,
	  OFF(llm_breaker_threshold), "consecutive LLM failures that open "
	  "the circuit breaker (open 90 s, then one probe)" },
	{ "MODEGATE_RULES_DIR", CF_STR, 0, MG_RULES_DIR, 0, 0, NULL, 0,
	  OFF(rules_dir), "folder holding the mode/ and policy/ rule files "
	  "and the sql/ migrations; "
	  "built in: $(PREFIX)/share/modegate of make install, else the "
	  "source tree it was built in" },
	{ "MODEGATE_LOG_LEVEL", CF_ENUM, 0, "info", 0, 0,
	  "debug|info|warn|error", 0, OFF(log_level),
	  "least severe level logged; message bodies, phone numbers and "
	  "secrets are never logged, at any level" },
	{ "MODEGATE_LOG_FORMAT", CF_ENUM, 0, "text", 0, 0, "text|json", 0,
	  OFF(log_format), "log line format" },
	{ "MODEGATE_DB_CONNECTIONS", CF_INT, 0, "2", 1, 64, NULL, 0,
	  OFF(db_connections), "PostgreSQL connections used for webhook "
	  "ingest (each commits a batch at a time)" },
	{ "MODEGATE_WORKER_DB_CONNECTIONS", CF_INT, 0, "4", 1, 64, NULL, 0,
	  OFF(worker_db_connections), "PostgreSQL connections of the turn "
	  "worker (claims, context, tools, commits)" },
	{ "MODEGATE_MAX_TURNS", CF_INT, 0, "1000", 0, 100000, NULL, 0,
	  OFF(max_turns), "most turns (conversations) in flight in one "
	  "process; 0: this process only ingests (others answer)" },
	{ "MODEGATE_COALESCE_MS", CF_INT, 0, "2000", 0, 60000, NULL, 0,
	  OFF(coalesce_ms), "double texting: a conversation is answered once "
	  "its newest message is this old, all of them in one turn" },
	{ "MODEGATE_MAX_AGE_HOURS", CF_INT, 0, "24", 1, 8760, NULL, 0,
	  OFF(max_age_hours), "inbound messages older than this are kept but "
	  "not answered (audited)" },
	{ "MODEGATE_MAX_ATTEMPTS", CF_INT, 0, "5", 1, 100, NULL, 0,
	  OFF(max_attempts), "turns of a message that failed or died with "
	  "their process before it is dead" },
	{ "MODEGATE_LEASE_S", CF_INT, 0, "60", 1, 3600, NULL, 0,
	  OFF(lease_s), "lease of a turn on its conversation, seconds "
	  "(renewed while the turn runs; a crashed process's turns are "
	  "retaken after it)" },
	{ "LLM_FALLBACK", CF_ENUM, 0, "reply", 0, 0, "reply|handoff", 0,
	  OFF(llm_fallback), "LLM unavailable: a safe fallback reply, or hand "
	  "the conversation to a human" },
	/* Scheduled work (src/followup.c). */
	{ "MODEGATE_SWEEP_S", CF_INT, 0, "60", 0, 3600, NULL, 0,
	  OFF(sweep_s), "period of the scheduler's sweep (follow-ups, "
	  "sem_resposta, stale pendings), seconds; 0: this process runs "
	  "none (others do)" },
	{ "MODEGATE_FOLLOWUP_AFTER_H", CF_INT, 0, "24", 24, 48, NULL, 0,
	  OFF(followup_after_h), "hours after a bridge (ponte_feita) "
	  "before its follow-up goes out" },
	{ "MODEGATE_FOLLOWUP_AFTER_S", CF_INT, 0, "0", 0, 172800, NULL, 0,
	  OFF(followup_after_s), "the same delay in seconds, overriding "
	  "MODEGATE_FOLLOWUP_AFTER_H when not 0 (tests, demos)" },
	{ "MODEGATE_NO_ANSWER_H", CF_INT, 0, "48", 1, 720, NULL, 0,
	  OFF(no_answer_h), "hours without an answer after a follow-up "
	  "before sem_resposta is recorded" },
	{ "MODEGATE_NO_ANSWER_S", CF_INT, 0, "0", 0, 2592000, NULL, 0,
	  OFF(no_answer_s), "the same delay in seconds, overriding "
	  "MODEGATE_NO_ANSWER_H when not 0 (tests, demos)" },
	{ "WHATSAPP_TEMPLATE_FOLLOWUP", CF_STR, 0, "", 0, 0, NULL, 0,
	  OFF(wa_template_followup), "approved template of the follow-up "
	  "when the 24-hour window is closed, as NAME:LANGUAGE; empty: "
	  "wa_templates is left as it is (no 'followup' row: the "
	  "window-closed template; none: not sent, audited)" },
	{ "MODEGATE_RETAIN_DAYS", CF_INT, 0, "180", 0, 36500, NULL, 0,
	  OFF(retain_days), "days personal data is kept: the sweep blanks "
	  "message bodies, names, prompts and transcripts in the audit older "
	  "than this (ids, times, decisions, modes and funnel rows stay); 0: "
	  "keep everything" },
	{ "MODEGATE_SENDER_TURNS", CF_INT, 0, "6", 0, 10000, NULL, 0,
	  OFF(sender_turns), "most turns (LLM replies) one conversation gets "
	  "in any MODEGATE_SENDER_WINDOW_S seconds; messages beyond it are "
	  "stored and answered together in the next allowed turn (audited "
	  "rate_limited); 0: no limit" },
	{ "MODEGATE_SENDER_WINDOW_S", CF_INT, 0, "60", 1, 86400, NULL, 0,
	  OFF(sender_window_s), "the window of MODEGATE_SENDER_TURNS, "
	  "seconds" },
	{ "MODEGATE_HTTP_TIMEOUT_S", CF_INT, 0, "10", 1, 3600, NULL, 0,
	  OFF(http_timeout_s), "an HTTP client must send a whole request "
	  "within this many seconds of connecting or of its previous answer "
	  "(slow and idle connections are closed)" },
	{ "MODEGATE_HTTP_MIN_RATE", CF_INT, 0, "500", 0, 100000000, NULL, 0,
	  OFF(http_min_rate), "once a request's first byte arrived, the rest "
	  "must arrive at this many bytes per second after a grace second, "
	  "or the connection is closed (slow headers and bodies); 0: no "
	  "minimum" },
	{ "MODEGATE_MAX_CONNECTIONS", CF_INT, 0, "512", 1, 1000000, NULL, 0,
	  OFF(max_connections), "open HTTP connections at most; at the cap a "
	  "new one evicts the slowest incomplete request (idle first, never "
	  "one being answered); when none can be, new ones wait in the "
	  "kernel's listen queue (keep it below the open-files limit)" },
	{ "MODEGATE_MAX_HEADER_BYTES", CF_INT, 0, "16384", 1024, 1048576, NULL,
	  0, OFF(max_header_bytes), "most bytes of an HTTP request line and "
	  "headers; a larger request is refused and its connection closed" },
};

#define CF_COUNT (sizeof cf_table / sizeof cf_table[0])

/* True when v is one of the '|'-separated choices. */
static int
cf_in_choices(const char *choices, const char *v)
{
	size_t		 n = strlen(v);
	const char	*p = choices, *bar;

	for (;;) {
		bar = strchr(p, '|');
		if ((size_t)((bar ? bar : p + strlen(p)) - p) == n &&
		    strncmp(p, v, n) == 0)
			return 1;
		if (bar == NULL)
			return 0;
		p = bar + 1;
	}
}

/*
 * Split "host:port" or "[v6]:port" into cfg; NULL when it is fine, else
 * what is wrong. The host must resolve as serve's bind will resolve it.
 */
static const char *
cf_hostport(struct config *cfg, const char *v)
{
	struct addrinfo	 hints, *ai;
	const char	*colon, *host = v, *hend;
	char		*end;
	long		 port;
	size_t		 hlen;

	if (*v == '[') {
		host = v + 1;
		if ((hend = strchr(host, ']')) == NULL || hend[1] != ':')
			return "must be HOST:PORT or [IPV6]:PORT";
		colon = hend + 1;
	} else {
		if ((colon = strrchr(v, ':')) == NULL)
			return "must be HOST:PORT or [IPV6]:PORT";
		hend = colon;
		if (memchr(v, ':', (size_t)(colon - v)) != NULL)
			return "an IPv6 address goes in brackets: [::1]:8080";
	}
	hlen = (size_t)(hend - host);
	if (hlen == 0 || hlen >= sizeof cfg->listen_host)
		return "must be HOST:PORT or [IPV6]:PORT with a host";
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno != 0 || *end != '\0' || end == colon + 1 ||
	    !isdigit((unsigned char)colon[1]) || port < 0 || port > 65535)
		return "the port must be a number from 0 to 65535";
	memcpy(cfg->listen_host, host, hlen);
	cfg->listen_host[hlen] = '\0';
	cfg->listen_port = (int)port;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	if (getaddrinfo(cfg->listen_host, NULL, &hints, &ai) != 0)
		return "the host is not an address of this machine or a name "
		    "that resolves";
	freeaddrinfo(ai);
	return NULL;
}

/* A libpq connection string or URI libpq can parse; NULL or why not. */
static const char *
cf_conninfo(const char *v, char *why, size_t len)
{
	PQconninfoOption	*o;
	char			*err = NULL, *p;

	if ((o = PQconninfoParse(v, &err)) != NULL) {
		PQconninfoFree(o);
		return NULL;
	}
	snprintf(why, len, "libpq cannot parse it: %s", err != NULL ? err :
	    "out of memory");
	PQfreemem(err);
	for (p = why; *p != '\0'; p++)	/* one line */
		if (*p == '\n' || *p == '\t' || *p == '\r')
			*p = ' ';
	while (p > why && p[-1] == ' ')
		*--p = '\0';
	return why;
}

/* True when url's host is this machine (localhost, 127.x, [::1]). */
static int
cf_url_local(const char *url)
{
	const char	*h = strstr(url, "://");

	if (h == NULL)
		return 0;
	h += 3;
	return strncmp(h, "localhost", 9) == 0 && strchr(":/", h[9]) != NULL ?
	    1 : strncmp(h, "127.", 4) == 0 || strncmp(h, "[::1]", 5) == 0;
}

/* Check and store one entry's value. */
static void
cf_set(struct config *cfg, const struct cf_entry *e, const char *v,
    struct diag *d)
{
	char		*end, **sp = (char **)((char *)cfg + e->off);
	const char	*why;
	char		 buf[DIAG_LEN];
	long		 n;
	double		 x;

	switch (e->type) {
	case CF_INT:
		/* Blanks around the number are tolerated, before and after
		 * alike (env files often carry a trailing one). */
		errno = 0;
		n = strtol(v, &end, 10);
		while (isspace((unsigned char)*end))
			end++;
		if (errno != 0 || *end != '\0' || end == v ||
		    !isdigit((unsigned char)v[strspn(v, " \t")]) ||
		    n < e->min || n > e->max) {
			diag_add(d, e->name, "", "must be a whole number from "
			    "%ld to %ld, got \"%s\"", e->min, e->max, v);
			return;
		}
		*(int *)((char *)cfg + e->off) = (int)n;
		return;
	case CF_RATIO:
		errno = 0;
		x = strtod(v, &end);
		if (errno != 0 || *end != '\0' || end == v || x < e->min ||
		    x > e->max) {
			diag_add(d, e->name, "", "must be a number from %ld to "
			    "%ld (e.g. 0.3), got \"%s\"", e->min, e->max, v);
			return;
		}
		*(double *)((char *)cfg + e->off) = x;
		return;
	case CF_ENUM:
		if (!cf_in_choices(e->choices, v)) {
			diag_add(d, e->name, "", "must be one of %s, got "
			    "\"%s\"", e->choices, v);
			return;
		}
		break;
	case CF_URL:
		if (*v == '\0' && e->def != NULL && *e->def == '\0')
			break;		/* optional: empty is the default */
		if ((strncmp(v, "http://", 7) != 0 &&
		    strncmp(v, "https://", 8) != 0) ||
		    v[strcspn(v, ":") + 3] == '\0' ||
		    strchr("/?#", v[strcspn(v, ":") + 3]) != NULL ||
		    strpbrk(v, " \t\r\n") != NULL) {
			diag_add(d, e->name, "", "must be an http:// or "
			    "https:// URL with a host, got \"%s\"", v);
			return;
		}
		break;
	case CF_HOSTPORT:
		if ((why = cf_hostport(cfg, v)) != NULL) {
			diag_add(d, e->name, "", "%s, got \"%s\"", why, v);
			return;
		}
		break;
	case CF_CONNINFO:
		if (cf_conninfo(v, buf, sizeof buf) != NULL) {
			diag_add(d, e->name, "", "%s", buf);
			return;
		}
		break;
	case CF_STR:
		break;
	}
	free(*sp);
	if ((*sp = strdup(v)) == NULL)
		diag_add(d, e->name, "", "out of memory");
}

int
config_load(struct config *cfg, struct diag *d)
{
	const struct cf_entry	*e;
	const char		*v;
	size_t			 before = d->n + d->dropped, i;

	memset(cfg, 0, sizeof *cfg);
	for (i = 0; i < CF_COUNT; i++) {
		e = &cf_table[i];
		v = getenv(e->name);
		if (v == NULL || *v == '\0') {
			if (e->required) {
				diag_add(d, e->name, "", "is required but not "
				    "set (%s)", e->help);
				continue;
			}
			v = e->def;
		}
		if (v != NULL)
			cf_set(cfg, e, v, d);
	}
	if (cfg->llm_provider != NULL &&
	    strcmp(cfg->llm_provider, "offline") != 0 &&
	    (cfg->llm_api_key == NULL || cfg->llm_api_key[0] == '\0') &&
	    !(strcmp(cfg->llm_provider, "openai") == 0 &&
	    cfg->llm_base_url != NULL && cf_url_local(cfg->llm_base_url)))
		diag_add(d, "LLM_API_KEY", "", "is required when LLM_PROVIDER "
		    "is %s (only an openai-compatible server on this host, "
		    "LLM_BASE_URL=http://127.0.0.1:PORT/v1, may need none)",
		    cfg->llm_provider);
	if (cfg->wa_template_closed != NULL &&
	    cfg->wa_template_closed[0] != '\0' &&
	    (strchr(cfg->wa_template_closed, ':') == NULL ||
	    cfg->wa_template_closed[0] == ':' ||
	    strchr(cfg->wa_template_closed, ':')[1] == '\0'))
		diag_add(d, "WHATSAPP_TEMPLATE_WINDOW_CLOSED", "", "must be "
		    "NAME:LANGUAGE (e.g. retomar_contato:pt_BR), got \"%s\"",
		    cfg->wa_template_closed);
	if (cfg->wa_template_followup != NULL &&
	    cfg->wa_template_followup[0] != '\0' &&
	    (strchr(cfg->wa_template_followup, ':') == NULL ||
	    cfg->wa_template_followup[0] == ':' ||
	    strchr(cfg->wa_template_followup, ':')[1] == '\0'))
		diag_add(d, "WHATSAPP_TEMPLATE_FOLLOWUP", "", "must be "
		    "NAME:LANGUAGE (e.g. acompanhamento_ponte:pt_BR), got "
		    "\"%s\"", cfg->wa_template_followup);
	return d->n + d->dropped == before ? 0 : -1;
}

void
config_free(struct config *cfg)
{
	size_t	i;

	for (i = 0; i < CF_COUNT; i++) {
		if (cf_table[i].type == CF_INT || cf_table[i].type == CF_RATIO)
			continue;
		free(*(char **)((char *)cfg + cf_table[i].off));
	}
	memset(cfg, 0, sizeof *cfg);
}

void
config_print_table(void)
{
	const struct cf_entry	*e;
	const char		*c, *def;
	size_t			 i;
	int			 quote;

	printf("| variable | default | accepted | secret | meaning |\n");
	printf("|---|---|---|---|---|\n");
	for (i = 0; i < CF_COUNT; i++) {
		e = &cf_table[i];
		def = e->required ? "(required)" : e->def && *e->def ? e->def :
		    "(empty)";
		quote = e->def && *e->def;
		/* A path compiled in says where this binary was built: the
		 * table (the README's) names the rule instead. */
		if (e->off == OFF(rules_dir)) {
			def = "(built in)";
			quote = 0;
		}
		printf("| `%s` | %s%s%s | ", e->name, quote ? "`" : "", def,
		    quote ? "`" : "");
		switch (e->type) {
		case CF_INT:
			printf("%ld–%ld", e->min, e->max);
			break;
		case CF_RATIO:
			printf("%ld.0–%ld.0", e->min, e->max);
			break;
		case CF_ENUM:	/* '|' would end the Markdown cell */
			for (c = e->choices; *c != '\0'; c++) {
				if (*c == '|')
					fputs(" \\| ", stdout);
				else
					putchar(*c);
			}
			break;
		case CF_URL:
			printf("http(s) URL");
			break;
		case CF_HOSTPORT:
			printf("HOST:PORT");
			break;
		case CF_STR:
			printf("text");
			break;
		case CF_CONNINFO:
			printf("libpq URI or key=value");
			break;
		}
		printf(" | %s | %s |\n", e->secret ? "yes" : "no", e->help);
	}
}

void
config_print(const struct config *cfg)
{
	const struct cf_entry	*e;
	const char		*v;
	size_t			 i;

	for (i = 0; i < CF_COUNT; i++) {
		e = &cf_table[i];
		if (e->type == CF_INT) {
			printf("%s=%d\n", e->name,
			    *(const int *)((const char *)cfg + e->off));
			continue;
		}
		if (e->type == CF_RATIO) {
			printf("%s=%g\n", e->name,
			    *(const double *)((const char *)cfg + e->off));
			continue;
		}
		v = *(char *const *)((const char *)cfg + e->off);
		if (e->secret)
			printf("%s=%s\n", e->name, v && *v ? "(set)" :
			    "(unset)");
		else
			printf("%s=%s\n", e->name, v ? v : "");
	}
}
