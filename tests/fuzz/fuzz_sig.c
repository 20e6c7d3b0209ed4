/*
 * fuzz_sig.c -- fuzz target: the X-Hub-Signature-256 header check
 * (wa_signature_ok) and the GET handshake query parser (wa_handshake).
 * Input: the header (or query) up to the first newline, then the body.
 * Besides crashes it checks the verdict: the header is accepted exactly
 * when it is "sha256=" and the body's HMAC in hex, in either case.
 * SPDX-License-Identifier: MIT
 */
#include <strings.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "../../src/http/wa.h"
#include "fuzz_main.h"

#define SECRET	"fuzz-app-secret"
#define TOKEN	"fuzz-verify-token"

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

/* 1 when hdr is "sha256=" + the hex of mac (case-insensitive). */
static int
sig_expected(const char *hdr, const unsigned char *mac)
{
	char	hex[2 * 32 + 1];
	size_t	i;

	if (strncmp(hdr, "sha256=", 7) != 0 || strlen(hdr + 7) != 64)
		return 0;
	for (i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", mac[i]);
	return strcasecmp(hdr + 7, hex) == 0;
}

/* Check the header against the body, then a correct header, then the
 * header line as a handshake query. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t	*nl = memchr(data, '\n', size);
	size_t		 hlen = nl ? (size_t)(nl - data) : size;
	const uint8_t	*body = nl ? nl + 1 : data + size;
	size_t		 blen = size - hlen - (nl != NULL), i;
	unsigned char	 mac[32];
	unsigned int	 maclen = 0;
	char		*hdr, good[7 + 64 + 1], *ch;

	if ((hdr = malloc(hlen + 1)) == NULL)
		return 0;
	memcpy(hdr, data, hlen);
	hdr[hlen] = '\0';
	HMAC(EVP_sha256(), SECRET, (int)strlen(SECRET),
	    blen ? body : (const uint8_t *)"", blen, mac, &maclen);
	if (wa_signature_ok(hdr, body, blen, SECRET) !=
	    sig_expected(hdr, mac))
		abort();
	memcpy(good, "sha256=", 7);
	for (i = 0; i < 32; i++)
		snprintf(good + 7 + 2 * i, 3, (blen & 1) ? "%02X" : "%02x",
		    mac[i]);
	if (wa_signature_ok(good, body, blen, SECRET) != 1)
		abort();
	if (wa_signature_ok(good, body, blen, "another-secret") != 0)
		abort();
	if ((ch = wa_handshake(hdr, TOKEN)) != NULL)
		free(ch);
	free(hdr);
	return 0;
}
