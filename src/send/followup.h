/*
 * followup.h -- the scheduler of `modegate serve`: on a libevent timer,
 * one call of mg_followup_sweep (sql/functions/) queues the follow-up of every
 * bridge older than MODEGATE_FOLLOWUP_AFTER_H through the outbox, turns
 * sent follow-ups into funnel aguardando_desfecho, records sem_resposta
 * after MODEGATE_NO_ANSWER_H and clears stale pending micro-confirmations
 * (audited EXPIRED). Safe with several processes: the SQL takes its rows
 * with FOR UPDATE SKIP LOCKED and a follow-up is unique per bridge.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_FOLLOWUP_H
#define MG_FOLLOWUP_H

struct config;
struct event_base;
struct sender;
struct followup;

/*
 * Start the scheduler on base (borrowed, like cfg: both must outlive it):
 * reads the follow-up text (mode/messages.json replies.followup) and the
 * pending timeout (mode/transitions.json), stores
 * WHATSAPP_TEMPLATE_FOLLOWUP in wa_templates, then sweeps a second later and
 * every MODEGATE_SWEEP_S. MODEGATE_SWEEP_S=0 returns NULL without error
 * (*disabled set). NULL on failure (logged).
 */
struct followup	*followup_new(struct event_base *, const struct config *,
		    struct sender *,
		    int *disabled);

/* Stop and free; a sweep in flight is rolled back by the server when its
 * connection closes. NULL is a no-op. */
void		 followup_free(struct followup *);

#endif
