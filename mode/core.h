/*
 * core.h -- the vocabulary shared by policy/ and mode/: modes, intents,
 * decisions, tools, and the allocation-free diagnostics list.
 * Pure: no I/O.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_CORE_H
#define MG_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MG_MUSTCHECK __attribute__((warn_unused_result))
#define MG_PRINTF(f, a) __attribute__((format(printf, f, a)))

/*
 * Every enum below comes from one X-macro list so the C name and the string
 * that goes into SQL and logs cannot drift apart.
 */
#define MODE_LIST(X)                                                   \
	X(MODE_DISCOVERY, "discovery")                                 \
	X(MODE_OFERTA, "oferta")                                       \
	X(MODE_FOLLOWUP, "followup")                                   \
	X(MODE_REATIVACAO, "reativacao")

#define INTENT_LIST(X)                                                 \
	X(INTENT_INTERESSE_VAGA, "INTERESSE_VAGA")                     \
	X(INTENT_CONFIRMACAO, "CONFIRMACAO")                           \
	X(INTENT_RECUSA, "RECUSA")                                     \
	X(INTENT_OBJECAO, "OBJECAO")                                   \
	X(INTENT_OPT_OUT, "OPT_OUT")                                   \
	X(INTENT_OBJECAO_GRAVE, "OBJECAO_GRAVE")                       \
	X(INTENT_PEDIDO_HUMANO, "PEDIDO_HUMANO")                       \
	X(INTENT_DESFECHO_FECHOU, "DESFECHO_FECHOU")                   \
	X(INTENT_DESFECHO_NAO_FECHOU, "DESFECHO_NAO_FECHOU")           \
	X(INTENT_SAUDACAO, "SAUDACAO")                                 \
	X(INTENT_NEUTRO, "NEUTRO")                                     \
	X(INTENT_OPT_IN, "OPT_IN")

#define DECISION_LIST(X)                                               \
	X(TRANS_APPLY, "APPLY")                                        \
	X(TRANS_PENDING, "PENDING")                                    \
	X(TRANS_CONFIRM, "CONFIRM")                                    \
	X(TRANS_CANCEL, "CANCEL")                                      \
	X(TRANS_REJECT, "REJECT")                                      \
	X(TRANS_NONE, "NONE")                                          \
	X(TRANS_EXPIRED, "EXPIRED")

#define TOOL_LIST(X)                                                   \
	X(TOOL_BUSCAR_VAGAS, "buscar_vagas")                           \
	X(TOOL_CRIAR_HANDOFF_EXTERNO, "criar_handoff_externo")         \
	X(TOOL_REGISTRAR_STATUS, "registrar_status_intermediacao")     \
	X(TOOL_SALVAR_MEMORIA, "salvar_memoria")                       \
	X(TOOL_ENCAMINHAR_HUMANO, "encaminhar_humano")

#define MG_ENUM_ITEM(e, s) e,
enum mode { MODE_LIST(MG_ENUM_ITEM) MODE__COUNT };
enum intent { INTENT_LIST(MG_ENUM_ITEM) INTENT__COUNT };
enum decision { DECISION_LIST(MG_ENUM_ITEM) TRANS__COUNT };
enum tool { TOOL_LIST(MG_ENUM_ITEM) TOOL__COUNT };
#undef MG_ENUM_ITEM

/* Name <-> value. *_name() never returns NULL ("?" when out of range);
 * *_from_name() returns -1 for an unknown name. */
const char	*mode_name(int);
int		 mode_from_name(const char *);
const char	*intent_name(int);
int		 intent_from_name(const char *);
const char	*decision_name(int);
int		 decision_from_name(const char *);
const char	*tool_name(int);
int		 tool_from_name(const char *);

/*
 * Diagnostics: a bounded list of "file: key: problem" lines, filled by the
 * rule loaders so every problem is reported at once. Allocation-free; the
 * caller owns it (usually on the stack). Overflow is counted, not lost
 * silently.
 */
#define DIAG_MAX	32
#define DIAG_LEN	256
struct diag {
	size_t	n;
	size_t	dropped;
	char	msg[DIAG_MAX][DIAG_LEN];
};

/* FNV-1a: the hash of the core's words, features and clauses. One byte
 * at a time, so a word's prefixes hash on the way (mg_fnv_byte). */
#define MG_FNV_BASIS	2166136261u

static inline uint32_t
mg_fnv_byte(uint32_t h, unsigned char c)
{
	return (h ^ c) * 16777619u;
}

/* h continued over len bytes of s (MG_FNV_BASIS to start). */
static inline uint32_t
mg_fnv(uint32_t h, const char *s, size_t len)
{
	size_t	i;

	for (i = 0; i < len; i++)
		h = mg_fnv_byte(h, (unsigned char)s[i]);
	return h;
}

void	diag_init(struct diag *);
void	diag_add(struct diag *, const char *file, const char *key,
	    const char *fmt, ...) MG_PRINTF(4, 5);

#endif
