/*
 * config.h -- configuration from environment variables (12-factor),
 * declared in one table (config.c) that also feeds check-config --list.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_CONFIG_H
#define MG_CONFIG_H

#include "../../mode/core.h"

#define EX_CONFIG_CODE	78	/* sysexits.h EX_CONFIG */

struct config {
	char	*database_url;
	char	*listen;		/* host:port as given */
	char	 listen_host[256];
	int	 listen_port;
	char	*app_secret;
	char	*verify_token;
	char	*wa_token;		/* empty: dry-run, nothing is posted */
	char	*wa_api_base;
	char	*wa_template_closed;	/* "name:language", "": none */
	int	 send_concurrency;	/* Graph API posts in flight */
	int	 send_lease_s;		/* lease of an outbox row being posted */
	int	 send_reconcile_s;	/* wait for a status before a re-post */
	int	 send_retry_base_ms;	/* first retry delay, doubling */
	char	*llm_provider;		/* anthropic | openai | offline */
	char	*llm_api_key;
	char	*llm_base_url;
	char	*llm_model;
	int	 llm_timeout_s;
	int	 llm_max_tokens;
	double	 llm_temperature;
	int	 llm_breaker_threshold;
	char	*rules_dir;
	char	*log_level;
	char	*log_format;		/* text | json */
	int	 db_connections;	/* ingest connections (group commit) */
	int	 worker_db_connections;	/* the worker's own pool */
	int	 max_turns;		/* turns in flight per process */
	int	 coalesce_ms;		/* double-texting window */
	int	 max_age_hours;		/* older inbound: kept, not answered */
	int	 max_attempts;		/* failed turns before 'dead' */
	int	 lease_s;		/* a turn's lease on its conversation */
	char	*llm_fallback;		/* reply | handoff */
	int	 sweep_s;		/* scheduler period; 0: none here */
	int	 followup_after_h;	/* bridge → follow-up, hours */
	int	 followup_after_s;	/* the same in s when not 0 */
	int	 no_answer_h;		/* follow-up → sem_resposta, hours */
	int	 no_answer_s;		/* the same in s when not 0 */
	char	*wa_template_followup;	/* "name:language", "": none */
	int	 retain_days;		/* personal data kept, days; 0: all */
	int	 sender_turns;		/* turns per sender per window, 0: any */
	int	 sender_window_s;	/* ... in this many seconds */
	int	 http_timeout_s;	/* idle, per read, whole request */
	int	 max_connections;	/* open HTTP connections */
	int	 http_min_rate;		/* bytes/s of a begun request */
	int	 max_header_bytes;	/* request line + headers */
};

/*
 * Fill cfg from getenv(); every problem is added to d, each naming the
 * variable and what is accepted. Returns 0 when d gained nothing, else -1.
 * Strings in cfg are owned by cfg; free with config_free.
 */
int	config_load(struct config *cfg, struct diag *d) MG_MUSTCHECK;
void	config_free(struct config *cfg);

/* Print the variable table as Markdown (check-config --list). */
void	config_print_table(void);

/* Print effective values, secrets shown as "(set)" or "(unset)". */
void	config_print(const struct config *cfg);

#endif
