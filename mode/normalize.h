/*
 * normalize.h -- normalisation of Brazilian WhatsApp Portuguese for
 * matching: UTF-8 lower-casing, accent folding, punctuation to spaces,
 * emoji to word tokens, repeated letters squeezed. Shared by the intent
 * detector and the output guard.
 * Pure: no I/O.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_NORMALIZE_H
#define MG_NORMALIZE_H

#include <stddef.h>
#include <stdint.h>

/* Normalise len bytes of UTF-8 (invalid bytes are skipped) into out, a
 * NUL-terminated string of single-space-separated words of at most
 * outlen-1 bytes. Returns its length. */
size_t	text_normalize(const char *in, size_t len, char *out, size_t outlen);

/* Decode the UTF-8 sequence at s (n >= 1 bytes left): its code point, its
 * length in *adv; -1 (and *adv 1) for a byte that starts no valid
 * sequence (overlong forms and surrogates included). */
int32_t	utf8_decode(const unsigned char *s, size_t n, size_t *adv);

#endif
