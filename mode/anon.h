/*
 * anon.h -- anonymise a doctor's message before it joins the corpus
 * (modegate review label): every digit becomes 0 (phone numbers, CPF,
 * CRM, dates and values keep their shape, not their value), e-mail
 * addresses become "[email]", links "[link]", and names "[nome]": the
 * words of the sender's profile name, and capitalised words after a title
 * or an introduction ("Dr. Paulo Souza", "me chamo Ana", "aqui é a
 * Beatriz").
 * Pure: no I/O.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_ANON_H
#define MG_ANON_H

#include <stddef.h>

/* Anonymise len bytes of UTF-8 text into out (NUL-terminated, at most
 * outlen-1 bytes; TABs and line breaks become spaces). names (may be
 * NULL) is the sender's profile name. Returns the length written. */
size_t	anon_text(const char *text, size_t len, const char *names, char *out,
	    size_t outlen);

#endif
