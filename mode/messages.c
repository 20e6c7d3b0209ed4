/*
 * messages.c -- mode/messages.json in the core: message types' actions
 * and the canned replies.
 * Pure: no I/O.
 * SPDX-License-Identifier: MIT
 */
#include <stdlib.h>
#include <string.h>

#include "messages.h"

#define MESSAGES_MAX	64

struct messages_pair {
	char	*key;
	char	*val;
};

struct messages {
	struct messages_pair	types[MESSAGES_MAX];
	size_t			ntypes;
	struct messages_pair	replies[MESSAGES_MAX];
	size_t			nreplies;
	enum msg_action		def;
};

static const char *const action_names[] = { "text", "ask_text", "ignore" };

const char *
messages_action_name(enum msg_action a)
{
	return (unsigned)a < 3 ? action_names[a] : "?";
}

static int
messages_action_from(const char *s)
{
	int	i;

	for (i = 0; s != NULL && i < 3; i++)
		if (strcmp(s, action_names[i]) == 0)
			return i;
	return -1;
}

/* Copy the string children of key into tab; problems to d. */
static size_t
messages_pairs(const struct flat *f, const char *key,
    struct messages_pair *tab, struct diag *d, int actions)
{
	char		 names[MESSAGES_MAX][FLAT_NAME_MAX];
	const char	*v;
	size_t		 n, i, k = 0;

	n = flat_children(f, key, names, MESSAGES_MAX);
	if (n > MESSAGES_MAX)
		diag_add(d, f->file, key, "more than %d entries", MESSAGES_MAX);
	for (i = 0; i < n && i < MESSAGES_MAX; i++) {
		if ((v = flat_str(f, "%s.%s", key, names[i])) == NULL) {
			diag_add(d, f->file, key, "%s: not a string", names[i]);
			continue;
		}
		if (actions && messages_action_from(v) < 0) {
			diag_add(d, f->file, key, "%s: unknown action \"%s\" "
			    "(text|ask_text|ignore)", names[i], v);
			continue;
		}
		if ((tab[k].key = strdup(names[i])) == NULL ||
		    (tab[k].val = strdup(v)) == NULL) {
			free(tab[k].key);
			tab[k].key = NULL;
			continue;
		}
		k++;
	}
	return k;
}

struct messages *
messages_load(const struct flat *f, struct diag *d)
{
	static const char *const need[] = {
#define MG_REPLY_ITEM(k) k,
		MESSAGES_REPLY_LIST(MG_REPLY_ITEM)
#undef MG_REPLY_ITEM
	};
	struct messages	*m;
	const char	*def;
	size_t		 i;
	int		 a;

	if ((m = calloc(1, sizeof *m)) == NULL)
		return NULL;
	m->ntypes = messages_pairs(f, "types", m->types, d, 1);
	m->nreplies = messages_pairs(f, "replies", m->replies, d, 0);
	m->def = MSG_IGNORE;
	if ((def = flat_str(f, "default")) != NULL) {
		if ((a = messages_action_from(def)) < 0)
			diag_add(d, f->file, "default", "unknown action \"%s\" "
			    "(text|ask_text|ignore)", def);
		else
			m->def = (enum msg_action)a;
	}
	for (i = 0; i < sizeof need / sizeof need[0]; i++)
		if (messages_reply(m, need[i]) == NULL)
			diag_add(d, f->file, "replies", "%s: missing", need[i]);
	return m;
}

void
messages_free(struct messages *m)
{
	size_t	i;

	if (m == NULL)
		return;
	for (i = 0; i < m->ntypes; i++) {
		free(m->types[i].key);
		free(m->types[i].val);
	}
	for (i = 0; i < m->nreplies; i++) {
		free(m->replies[i].key);
		free(m->replies[i].val);
	}
	free(m);
}

enum msg_action
messages_action(const struct messages *m, const char *type)
{
	size_t	i;

	for (i = 0; type != NULL && i < m->ntypes; i++)
		if (strcmp(m->types[i].key, type) == 0)
			return (enum msg_action)messages_action_from(
			    m->types[i].val);
	return m->def;
}

const char *
messages_reply(const struct messages *m, const char *key)
{
	size_t	i;

	for (i = 0; key != NULL && i < m->nreplies; i++)
		if (strcmp(m->replies[i].key, key) == 0)
			return m->replies[i].val;
	return NULL;
}
