/*
 * wa.c -- WhatsApp webhook edge: HMAC signature over the raw body,
 * verification handshake, and json-c extraction into plain structs.
 * SPDX-License-Identifier: MIT
 */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <json-c/json.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "rules/flatfile.h"
#include "http/wa.h"

#define WA_SIG_PREFIX	"sha256="

/* Value of one hex digit, or -1. */
static int
wa_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
wa_signature_ok(const char *header, const void *body, size_t len,
    const char *secret)
{
	unsigned char	 want[SHA256_DIGEST_LENGTH], got[EVP_MAX_MD_SIZE];
	unsigned int	 gotlen = 0;
	const char	*hex;
	size_t		 i;
	int		 hi, lo;

	if (header == NULL || secret == NULL ||
	    strncmp(header, WA_SIG_PREFIX, sizeof WA_SIG_PREFIX - 1) != 0)
		return 0;
	hex = header + sizeof WA_SIG_PREFIX - 1;
	if (strlen(hex) != 2 * SHA256_DIGEST_LENGTH)
		return 0;
	for (i = 0; i < SHA256_DIGEST_LENGTH; i++) {
		if ((hi = wa_hexval(hex[2 * i])) < 0 ||
		    (lo = wa_hexval(hex[2 * i + 1])) < 0)
			return 0;
		want[i] = (unsigned char)(hi << 4 | lo);
	}
	if (HMAC(EVP_sha256(), secret, (int)strlen(secret),
	    len > 0 ? body : (const void *)"", len, got, &gotlen) == NULL ||
	    gotlen != SHA256_DIGEST_LENGTH)
		return 0;
	return CRYPTO_memcmp(want, got, SHA256_DIGEST_LENGTH) == 0;
}

/* Constant-time string equality (compares SHA-256 digests). */
static int
wa_streq_ct(const char *a, const char *b)
{
	unsigned char	da[SHA256_DIGEST_LENGTH], db[SHA256_DIGEST_LENGTH];

	SHA256((const unsigned char *)a, strlen(a), da);
	SHA256((const unsigned char *)b, strlen(b), db);
	return CRYPTO_memcmp(da, db, sizeof da) == 0;
}

char *
wa_handshake_why(const char *query, const char *verify_token,
    const char **why)
{
	struct evkeyvalq	 q = { NULL, &q.tqh_first };
	const char		*mode, *token, *challenge, *w = NULL;
	char			*out = NULL;

	if (verify_token == NULL || *verify_token == '\0')
		w = "no verify token configured";
	else if (query == NULL || *query == '\0')
		w = "no query string (hub.mode, hub.verify_token, "
		    "hub.challenge)";
	else if (evhttp_parse_query_str(query, &q) == -1)
		w = "malformed query string";
	if (w != NULL)
		goto done;
	mode = evhttp_find_header(&q, "hub.mode");
	token = evhttp_find_header(&q, "hub.verify_token");
	challenge = evhttp_find_header(&q, "hub.challenge");
	if (mode == NULL)
		w = "hub.mode missing";
	else if (strcmp(mode, "subscribe") != 0)
		w = "hub.mode is not subscribe";
	else if (token == NULL)
		w = "hub.verify_token missing";
	else if (challenge == NULL || *challenge == '\0')
		w = "hub.challenge missing";
	else if (!wa_streq_ct(token, verify_token))
		w = "hub.verify_token does not match WHATSAPP_VERIFY_TOKEN";
	else if ((out = strdup(challenge)) == NULL)
		w = "out of memory";
done:
	evhttp_clear_headers(&q);
	if (why != NULL)
		*why = w;
	return out;
}

char *
wa_handshake(const char *query, const char *verify_token)
{
	return wa_handshake_why(query, verify_token, NULL);
}

/* Grow *v (n used, *cap slots of size sz) by one; NULL on failure. */
static void *
wa_grow(void **v, size_t n, size_t *cap, size_t sz)
{
	void	*nv;
	size_t	 ncap;

	if (n == *cap) {
		ncap = *cap ? *cap * 2 : 4;
		if ((nv = realloc(*v, ncap * sz)) == NULL)
			return NULL;
		*v = nv;
		*cap = ncap;
	}
	return (char *)*v + n * sz;
}

/* A string member, or NULL when absent or not a non-empty string. */
static const char *
wa_str(struct json_object *o, const char *key)
{
	struct json_object	*v;
	const char		*s;

	if (o == NULL || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	s = json_object_get_string(v);
	return *s != '\0' ? s : NULL;
}

/* A member of the given type, or NULL. */
static struct json_object *
wa_get(struct json_object *o, const char *key, enum json_type t)
{
	struct json_object	*v;

	if (o == NULL || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, t))
		return NULL;
	return v;
}

/* Unix seconds from a string or integer member; -1 when absent/bad. */
static int64_t
wa_time(struct json_object *o, const char *key)
{
	struct json_object	*v;
	const char		*s;
	char			*end;
	long long		 t;

	if (!json_object_object_get_ex(o, key, &v))
		return -1;
	if (json_object_is_type(v, json_type_int))
		return json_object_get_int64(v);
	if (!json_object_is_type(v, json_type_string))
		return -1;
	s = json_object_get_string(v);
	t = strtoll(s, &end, 10);
	return (end == s || *end != '\0' || t < 0) ? -1 : (int64_t)t;
}

/* o as compact JSON with every \u0000 turned into \ufffd (jsonb). */
static const char *
wa_raw(struct json_object *o)
{
	char	*s, *p;

	s = (char *)json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE);
	for (p = s; p != NULL && *p != '\0'; p++) {
		if (*p != '\\')
			continue;
		if (strncmp(p + 1, "u0000", 5) == 0)
			memcpy(p + 1, "ufffd", 5);
		p++;	/* skip the escaped character */
	}
	return s;
}

/* The contact of contacts[] that sent m (or the only one), or NULL. */
static struct json_object *
wa_contact(struct json_object *contacts, const char *from,
    const char *from_user)
{
	struct json_object	*c;
	const char		*w, *u;
	size_t			 i, n;

	n = contacts ? json_object_array_length(contacts) : 0;
	for (i = 0; i < n; i++) {
		c = json_object_array_get_idx(contacts, i);
		w = wa_str(c, "wa_id");
		u = wa_str(c, "user_id");
		if ((from && w && strcmp(from, w) == 0) ||
		    (from_user && u && strcmp(from_user, u) == 0))
			return c;
	}
	return n == 1 ? json_object_array_get_idx(contacts, 0) : NULL;
}

/* Extract one message; -1 with err when it lacks id, type or sender. */
static int
wa_add_message(struct wa_payload *p, struct json_object *m,
    struct json_object *contacts, const char *pnid, char *err,
    size_t errlen)
{
	struct wa_message	*w;
	struct json_object	*c;
	const char		*from, *from_user;

	from = wa_str(m, "from");
	from_user = wa_str(m, "from_user_id");
	if (!json_object_is_type(m, json_type_object) || !wa_str(m, "id") ||
	    !wa_str(m, "type") || (!from && !from_user) || pnid == NULL) {
		snprintf(err, errlen, "a message lacks id, type, sender or "
		    "metadata.phone_number_id");
		return -1;
	}
	if ((w = wa_grow((void **)&p->msgs, p->nmsgs, &p->capmsgs,
	    sizeof *w)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	c = wa_contact(contacts, from, from_user);
	w->wamid = wa_str(m, "id");
	w->phone_number_id = pnid;
	w->sender_key = from ? from : from_user;
	w->wa_id = wa_str(c, "wa_id") ? wa_str(c, "wa_id") : from;
	w->user_id = from_user ? from_user : wa_str(c, "user_id");
	w->profile_name = wa_str(wa_get(c, "profile", json_type_object),
	    "name");
	w->type = wa_str(m, "type");
	w->timestamp = wa_time(m, "timestamp");
	w->raw = wa_raw(m);
	p->nmsgs++;
	return 0;
}

/* Extract one status; -1 with err when it lacks id or status. */
static int
wa_add_status(struct wa_payload *p, struct json_object *s, char *err,
    size_t errlen)
{
	struct wa_status	*w;
	struct json_object	*errs, *e0, *code;

	if (!wa_str(s, "id") || !wa_str(s, "status")) {
		snprintf(err, errlen, "a status lacks id or status");
		return -1;
	}
	if ((w = wa_grow((void **)&p->stats, p->nstats, &p->capstats,
	    sizeof *w)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	memset(w, 0, sizeof *w);
	w->wamid = wa_str(s, "id");
	w->status = wa_str(s, "status");
	w->recipient = wa_str(s, "recipient_id") ? wa_str(s, "recipient_id") :
	    wa_str(s, "recipient_user_id");
	w->callback = wa_str(s, "biz_opaque_callback_data");
	w->timestamp = wa_time(s, "timestamp");
	errs = wa_get(s, "errors", json_type_array);
	e0 = errs && json_object_array_length(errs) > 0 ?
	    json_object_array_get_idx(errs, 0) : NULL;
	if ((code = wa_get(e0, "code", json_type_int)) != NULL) {
		w->has_error = 1;
		w->error_code = json_object_get_int(code);
	}
	w->raw = wa_raw(s);
	p->nstats++;
	return 0;
}

/* Record a non-message change (or value.errors) as an event. */
static int
wa_add_event(struct wa_payload *p, const char *field, struct json_object *o,
    char *err, size_t errlen)
{
	struct wa_event	*w;

	if ((w = wa_grow((void **)&p->events, p->nevents, &p->capevents,
	    sizeof *w)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	w->field = field;
	w->raw = wa_raw(o);
	p->nevents++;
	return 0;
}

/* Extract the messages, statuses and errors of a "messages" change. */
static int
wa_messages_change(struct wa_payload *p, struct json_object *value,
    char *err, size_t errlen)
{
	struct json_object	*arr, *contacts, *errs;
	const char		*pnid;
	size_t			 i, n;

	pnid = wa_str(wa_get(value, "metadata", json_type_object),
	    "phone_number_id");
	contacts = wa_get(value, "contacts", json_type_array);
	arr = wa_get(value, "messages", json_type_array);
	n = arr ? json_object_array_length(arr) : 0;
	for (i = 0; i < n; i++)
		if (wa_add_message(p, json_object_array_get_idx(arr, i),
		    contacts, pnid, err, errlen) == -1)
			return -1;
	arr = wa_get(value, "statuses", json_type_array);
	n = arr ? json_object_array_length(arr) : 0;
	for (i = 0; i < n; i++)
		if (wa_add_status(p, json_object_array_get_idx(arr, i), err,
		    errlen) == -1)
			return -1;
	if ((errs = wa_get(value, "errors", json_type_array)) != NULL &&
	    wa_add_event(p, "messages.errors", errs, err, errlen) == -1)
		return -1;
	return 0;
}

/* Walk entry[] x changes[]. */
static int
wa_walk(struct wa_payload *p, struct json_object *entries, char *err,
    size_t errlen)
{
	struct json_object	*changes, *ch, *value;
	const char		*field;
	size_t			 i, j, nch, n = json_object_array_length(entries);

	for (i = 0; i < n; i++) {
		changes = wa_get(json_object_array_get_idx(entries, i),
		    "changes", json_type_array);
		if (changes == NULL) {
			snprintf(err, errlen, "entry[%zu] has no changes "
			    "array", i);
			return -1;
		}
		nch = json_object_array_length(changes);
		for (j = 0; j < nch; j++) {
			ch = json_object_array_get_idx(changes, j);
			field = wa_str(ch, "field");
			value = wa_get(ch, "value", json_type_object);
			if (field == NULL || value == NULL) {
				snprintf(err, errlen, "entry[%zu].changes[%zu]"
				    " lacks field or value", i, j);
				return -1;
			}
			if (strcmp(field, "messages") == 0 ?
			    wa_messages_change(p, value, err, errlen) == -1 :
			    wa_add_event(p, field, value, err, errlen) == -1)
				return -1;
		}
	}
	return 0;
}

int
wa_parse(struct wa_payload *p, const char *body, size_t len, char *err,
    size_t errlen)
{
	struct json_tokener	*tok;
	struct json_object	*entries;
	const char		*obj;
	size_t			 end;

	memset(p, 0, sizeof *p);
	if (len > INT_MAX || (tok = json_tokener_new()) == NULL) {
		snprintf(err, errlen, "body too large");
		return -1;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
	    JSON_TOKENER_VALIDATE_UTF8);
	p->root = json_tokener_parse_ex(tok, body, (int)len);
	end = json_tokener_get_parse_end(tok);
	if (p->root == NULL) {
		snprintf(err, errlen, "invalid JSON at byte %zu: %s", end,
		    rules_json_error(json_tokener_get_error(tok)));
		json_tokener_free(tok);
		return -1;
	}
	json_tokener_free(tok);
	while (end < len && isspace((unsigned char)body[end]))
		end++;
	if (end != len) {
		snprintf(err, errlen, "invalid JSON: data after the value at "
		    "byte %zu", end);
		goto fail;
	}
	obj = wa_str(p->root, "object");
	entries = wa_get(p->root, "entry", json_type_array);
	if (obj == NULL || strcmp(obj, "whatsapp_business_account") != 0 ||
	    entries == NULL) {
		snprintf(err, errlen, "not a WhatsApp Business Account webhook"
		    " (object, entry[])");
		goto fail;
	}
	if (wa_walk(p, entries, err, errlen) == -1)
		goto fail;
	return 0;
fail:
	wa_payload_free(p);
	return -1;
}

void
wa_payload_free(struct wa_payload *p)
{
	if (p == NULL)
		return;
	if (p->root != NULL)
		json_object_put(p->root);
	free(p->msgs);
	free(p->stats);
	free(p->events);
	memset(p, 0, sizeof *p);
}
