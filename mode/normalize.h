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

/* Normalise len bytes of UTF-8 (invalid bytes are skipped) into out, a
 * NUL-terminated string of single-space-separated words of at most
 * outlen-1 bytes. Returns its length. */
size_t	text_normalize(const char *in, size_t len, char *out, size_t outlen);

#endif
