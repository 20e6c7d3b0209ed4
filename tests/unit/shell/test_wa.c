/*
 * test_wa.c -- the webhook edge: signature, handshake, payload extraction
 * over every shared WhatsApp fixture and our own committed payloads.
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "../../../src/http/wa.h"

#define FIXTURES	"../shared/fixtures/whatsapp"
#define OWN		"tests/cases/webhooks"
#define SECRET		"s3cr3t-app"

/* "sha256=" + lowercase hex HMAC of body under key, into out. */
static void
sign(const char *key, const void *body, size_t len, char *out, size_t outlen)
{
	unsigned char	md[EVP_MAX_MD_SIZE];
	unsigned int	mdlen, i;

	HMAC(EVP_sha256(), key, (int)strlen(key), body, len, md, &mdlen);
	snprintf(out, outlen, "sha256=");
	for (i = 0; i < mdlen; i++)
		snprintf(out + 7 + 2 * i, outlen - 7 - 2 * i, "%02x", md[i]);
}

static void
test_signature(void **state)
{
	static const char body[] = "{\"object\":\"whatsapp_business_account\","
	    "\"entry\":[{\"t\":\"\\u00e4\"}]}";
	char	hdr[80], other[96];
	size_t	i, len = strlen(body);

	sign(SECRET, body, len, hdr, sizeof hdr);
	assert_true(wa_signature_ok(hdr, body, len, SECRET));
	/* Uppercase hex digits are the same digest. */
	strcpy(other, hdr);
	for (i = 7; other[i] != '\0'; i++)
		if (other[i] >= 'a' && other[i] <= 'f')
			other[i] = (char)(other[i] - 'a' + 'A');
	assert_true(wa_signature_ok(other, body, len, SECRET));
	/* Missing, wrong prefix, wrong secret, other body, one bit off. */
	assert_false(wa_signature_ok(NULL, body, len, SECRET));
	assert_false(wa_signature_ok("", body, len, SECRET));
	assert_false(wa_signature_ok(hdr + 7, body, len, SECRET));
	memcpy(other, "sha1=", 5);
	assert_false(wa_signature_ok(other, body, len, SECRET));
	assert_false(wa_signature_ok(hdr, body, len, "other-secret"));
	assert_false(wa_signature_ok(hdr, body, len - 1, SECRET));
	strcpy(other, hdr);
	other[20] = other[20] == '0' ? '1' : '0';
	assert_false(wa_signature_ok(other, body, len, SECRET));
	/* Bad length: one digit short, one digit more, not hex. */
	strcpy(other, hdr);
	other[strlen(other) - 1] = '\0';
	assert_false(wa_signature_ok(other, body, len, SECRET));
	snprintf(other, sizeof other, "%s0", hdr);
	assert_false(wa_signature_ok(other, body, len, SECRET));
	strcpy(other, hdr);
	other[10] = 'g';
	assert_false(wa_signature_ok(other, body, len, SECRET));
}

static void
test_handshake(void **state)
{
	char	*c;

	c = wa_handshake("hub.mode=subscribe&hub.challenge=1158201444&"
	    "hub.verify_token=tok", "tok");
	assert_non_null(c);
	assert_string_equal(c, "1158201444");
	free(c);
	/* URL-decoding of keys' values, any order. */
	c = wa_handshake("hub.verify_token=a%20b%26c&hub.challenge=x%2Fy%3D1&"
	    "hub.mode=subscribe", "a b&c");
	assert_non_null(c);
	assert_string_equal(c, "x/y=1");
	free(c);
	/* Wrong token, wrong mode, missing keys, underscores for dots. */
	assert_null(wa_handshake("hub.mode=subscribe&hub.challenge=1&"
	    "hub.verify_token=tok2", "tok"));
	assert_null(wa_handshake("hub.mode=unsubscribe&hub.challenge=1&"
	    "hub.verify_token=tok", "tok"));
	assert_null(wa_handshake("hub.mode=subscribe&hub.verify_token=tok",
	    "tok"));
	assert_null(wa_handshake("hub.challenge=1&hub.verify_token=tok",
	    "tok"));
	assert_null(wa_handshake("hub_mode=subscribe&hub_challenge=1&"
	    "hub_verify_token=tok", "tok"));
	assert_null(wa_handshake("", "tok"));
	assert_null(wa_handshake(NULL, "tok"));
}

/* Read a whole file; caller frees. */
static char *
slurp(const char *path, size_t *len)
{
	FILE	*fp;
	char	*buf;
	long	 n;

	if ((fp = fopen(path, "rb")) == NULL)
		return NULL;
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	*len = fread(buf, 1, (size_t)n, fp);
	buf[*len] = '\0';
	fclose(fp);
	return buf;
}

/* One line per extracted item: m:type:sender, s:status[:code], e:field. */
static void
summarize(const struct wa_payload *p, char *out, size_t len)
{
	size_t	i, n = 0;

	out[0] = '\0';
	for (i = 0; i < p->nmsgs; i++)
		n += (size_t)snprintf(out + n, len - n, "%sm:%s:%s", n ? " " :
		    "", p->msgs[i].type, p->msgs[i].sender_key);
	for (i = 0; i < p->nstats; i++) {
		n += (size_t)snprintf(out + n, len - n, "%ss:%s", n ? " " : "",
		    p->stats[i].status);
		if (p->stats[i].has_error)
			n += (size_t)snprintf(out + n, len - n, ":%d",
			    p->stats[i].error_code);
	}
	for (i = 0; i < p->nevents; i++)
		n += (size_t)snprintf(out + n, len - n, "%se:%s", n ? " " : "",
		    p->events[i].field);
}

#define U	"972987654321"
static const struct expect {
	const char	*file;
	const char	*summary;
} fixtures[] = {
	{ "account_update_restriction.json", "e:account_update" },
	{ "audio.json", "m:audio:" U },
	{ "audio_voice.json", "m:audio:" U },
	{ "button.json", "m:button:" U },
	{ "button_no_context.json", "m:button:" U },
	{ "button_reply.json", "m:interactive:" U },
	{ "contacts.json", "m:contacts:" U },
	{ "document.json", "m:document:" U },
	{ "echo_edit.json", "e:smb_message_echoes" },
	{ "echo_revoke.json", "e:smb_message_echoes" },
	{ "echo_text.json", "e:smb_message_echoes" },
	{ "edit_image.json", "m:edit:16505551234" },
	{ "flow_nfm_reply.json", "m:interactive:" U },
	{ "flow_nfm_reply_no_token.json", "m:interactive:" U },
	{ "image.json", "m:image:" U },
	{ "image_with_url.json", "m:image:" U },
	{ "interactive_without_payload.json",
	  "m:interactive:" U " e:messages.errors" },
	{ "list_reply.json", "m:interactive:" U },
	{ "list_reply_description.json", "m:interactive:" U },
	{ "location.json", "m:location:" U },
	{ "location_named_forwarded.json", "m:location:" U },
	{ "order.json", "m:order:" U },
	{ "reaction.json", "m:reaction:" U },
	{ "reaction_removed.json", "m:reaction:" U },
	{ "reaction_removed_no_emoji.json", "m:reaction:" U },
	{ "revoke.json", "m:revoke:<WHATSAPP_USER_PHONE_NUMBER>" },
	{ "status_delivered.json", "s:delivered" },
	{ "status_failed.json", "s:failed:130472" },
	{ "status_played.json", "s:played" },
	{ "status_read.json", "s:read" },
	{ "status_read_group.json", "s:read" },
	{ "status_sent.json", "s:sent" },
	{ "status_sent_biz_opaque_callback.json", "s:sent" },
	{ "sticker.json", "m:sticker:" U },
	{ "sticker_animated.json", "m:sticker:" U },
	{ "system_identity_changed.json", "m:system:" U },
	{ "system_user_changed_number.json", "m:system:" U },
	{ "template_status_approved.json", "e:message_template_status_update" },
	{ "template_status_rejected.json", "e:message_template_status_update" },
	{ "text.json", "m:text:" U },
	{ "text_forwarded.json", "m:text:" U },
	{ "text_frequently_forwarded.json", "m:text:" U },
	{ "text_referral_ad.json", "m:text:" U },
	{ "text_reply_context.json", "m:text:" U },
	{ "unsupported.json", "m:unsupported:" U },
	{ "unsupported_with_type.json", "m:unsupported:" U },
	{ "user_preferences_resume.json", "e:user_preferences" },
	{ "user_preferences_signup.json", "e:user_preferences" },
	{ "video.json", "m:video:" U },
	/* Our own payloads (tests/cases/webhooks). */
	{ "batch3.json", "m:text:5511988887777 m:image:5511988887777 "
	  "m:reaction:5511988887777" },
	{ "bsuid_only.json", "m:text:BR.1234567890123456789" },
	{ "mixed_entries.json", "m:hologram:5511977776666 s:read "
	  "e:account_update" },
	{ "nul_char.json", "m:text:5511966665555" },
	{ "value_errors.json", "e:messages.errors" },
};

/* Parse path and compare its summary with the table; returns 1 if seen. */
static int
check_file(const char *dir, const char *name)
{
	struct wa_payload	 p;
	char			 path[1024], err[256], got[1024];
	const char		*want = NULL;
	size_t			 i, len;
	char			*body;

	for (i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++)
		if (strcmp(fixtures[i].file, name) == 0)
			want = fixtures[i].summary;
	if (want == NULL)
		fail_msg("%s/%s: not in the expectation table", dir, name);
	snprintf(path, sizeof path, "%s/%s", dir, name);
	assert_non_null(body = slurp(path, &len));
	if (wa_parse(&p, body, len, err, sizeof err) != 0)
		fail_msg("%s: %s", path, err);
	summarize(&p, got, sizeof got);
	if (strcmp(got, want) != 0)
		fail_msg("%s: got \"%s\", want \"%s\"", path, got, want);
	for (i = 0; i < p.nmsgs; i++) {
		assert_non_null(p.msgs[i].wamid);
		assert_string_equal(p.msgs[i].phone_number_id,
		    strcmp(dir, OWN) == 0 ? "100000000000001" :
		    p.msgs[i].phone_number_id);
		assert_non_null(strstr(p.msgs[i].raw, p.msgs[i].wamid));
	}
	wa_payload_free(&p);
	free(body);
	return 1;
}

/* Check every .json of dir; returns how many. */
static size_t
check_dir(const char *dir)
{
	DIR		*d;
	struct dirent	*de;
	size_t		 n = 0, l;

	if ((d = opendir(dir)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		l = strlen(de->d_name);
		if (l > 5 && strcmp(de->d_name + l - 5, ".json") == 0)
			n += (size_t)check_file(dir, de->d_name);
	}
	closedir(d);
	return n;
}

static void
test_shared_fixtures(void **state)
{
	DIR	*d;

	if ((d = opendir(FIXTURES)) == NULL) {
		skip();
		return;
	}
	closedir(d);
	assert_int_equal(check_dir(FIXTURES), 49);
}

static void
test_own_payloads(void **state)
{
	assert_int_equal(check_dir(OWN), 5);
}

/* Parse one committed payload; caller frees p and the returned body. */
static char *
parse_own(const char *name, struct wa_payload *p)
{
	char	 path[256], err[256];
	char	*body;
	size_t	 len;

	snprintf(path, sizeof path, OWN "/%s", name);
	assert_non_null(body = slurp(path, &len));
	assert_int_equal(wa_parse(p, body, len, err, sizeof err), 0);
	return body;
}

static void
test_fields(void **state)
{
	struct wa_payload	 p;
	char			*body;

	body = parse_own("bsuid_only.json", &p);
	assert_string_equal(p.msgs[0].sender_key, "BR.1234567890123456789");
	assert_string_equal(p.msgs[0].user_id, "BR.1234567890123456789");
	assert_null(p.msgs[0].wa_id);
	assert_string_equal(p.msgs[0].profile_name, "Dra. Ana");
	assert_int_equal(p.msgs[0].timestamp, 1795334514);
	wa_payload_free(&p);
	free(body);

	body = parse_own("batch3.json", &p);
	assert_string_equal(p.msgs[0].wa_id, "5511988887777");
	assert_string_equal(p.msgs[0].profile_name, "Jo\xc3\xa3o");
	assert_string_equal(p.msgs[2].wamid, "wamid.mg-batch-3");
	wa_payload_free(&p);
	free(body);

	/* jsonb refuses \u0000: it becomes \ufffd; an escaped backslash
	 * followed by the text "u0000" stays as it is. */
	body = parse_own("nul_char.json", &p);
	assert_null(strstr(p.msgs[0].raw, "\"a\\u0000b"));
	assert_non_null(strstr(p.msgs[0].raw, "\"a\\ufffdb \\\\u0000 c/d\""));
	wa_payload_free(&p);
	free(body);
}

static void
test_bsuid_of_fixture(void **state)
{
	struct wa_payload	 p;
	char			 err[256];
	char			*body;
	size_t			 len;

	if ((body = slurp(FIXTURES "/button_no_context.json", &len)) == NULL) {
		skip();
		return;
	}
	assert_int_equal(wa_parse(&p, body, len, err, sizeof err), 0);
	assert_string_equal(p.msgs[0].user_id, "US.13491208655302741918");
	assert_string_equal(p.msgs[0].wa_id, "972987654321");
	wa_payload_free(&p);
	free(body);
}

static void
test_malformed(void **state)
{
	static const char *const names[] = { "truncated.json",
	    "not_whatsapp.json", "no_sender.json", "trailing.json",
	    "bad_utf8.json", "single_quotes.json" };
	struct wa_payload	 p;
	char			 path[256], err[256];
	char			*body;
	size_t			 i, len;

	for (i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(path, sizeof path, OWN "/malformed/%s", names[i]);
		assert_non_null(body = slurp(path, &len));
		err[0] = '\0';
		if (wa_parse(&p, body, len, err, sizeof err) != -1)
			fail_msg("%s: accepted", path);
		assert_true(err[0] != '\0');
		assert_null(p.root);
		wa_payload_free(&p);
		free(body);
	}
	assert_int_equal(wa_parse(&p, "", 0, err, sizeof err), -1);
	assert_int_equal(wa_parse(&p, "[]", 2, err, sizeof err), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_signature),
		cmocka_unit_test(test_handshake),
		cmocka_unit_test(test_shared_fixtures),
		cmocka_unit_test(test_own_payloads),
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_bsuid_of_fixture),
		cmocka_unit_test(test_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
