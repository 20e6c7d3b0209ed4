/*
 * test_graph.c -- the Graph API client against tests/fakes/fake_graph.py
 * on a real event loop: request shapes, wamid parsing, error dispatch on
 * error.code, the 4096-character trim.
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../../src/send/graph.h"
#include "fakepeer.h"

static struct fakepeer	 fake;
static struct event_base *base;
static struct curlev	*cv;
static struct graph	*g;
static struct graph_result got;
static int		 done;

static void
on_done(const struct graph_result *r, void *arg)
{
	got = *r;
	done = 1;
	event_base_loopbreak(base);
}

/* Run the loop until the callback fired (bounded by a 10 s guard). */
static void
wait_done(void)
{
	struct timeval	tv = { 10, 0 };

	event_base_loopexit(base, &tv);
	while (!done)
		if (event_base_dispatch(base) != 0 || !done)
			break;
	assert_true(done);
	done = 0;
}

static int
setup(void **state)
{
	struct graph_params	p = { 0 };
	char			api[96];

	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (fakepeer_start(&fake, "tests/fakes/fake_graph.py") == -1)
		return -1;
	base = event_base_new();
	cv = curlev_new(base);
	snprintf(api, sizeof api, "%s/v25.0/", fake.base);
	p.api_base = api;
	p.token = "tok-123";
	p.timeout_ms = 3000;
	g = graph_new(cv, &p);
	return g != NULL ? 0 : -1;
}

static int
teardown(void **state)
{
	graph_free(g);
	curlev_free(cv);
	event_base_free(base);
	fakepeer_stop(&fake);
	curl_global_cleanup();
	return 0;
}

/* Send text and return the recorded request list (caller puts). */
static json_object *
send_text(const char *text)
{
	fakepeer_reset(&fake);
	assert_int_equal(graph_send_text(g, "1234567", "5511988887777", text,
	    NULL, on_done, NULL), 0);
	wait_done();
	return fakepeer_requests(&fake);
}

static void
test_send_text_success(void **state)
{
	json_object	*reqs = send_text("Oi, tudo bem?");

	assert_int_equal(got.cls, GRAPH_OK);
	assert_int_equal(got.http_status, 200);
	assert_true(strncmp(got.wamid, "wamid.FAKE", 10) == 0);
	assert_string_equal(fakepeer_str(reqs, "0.path"),
	    "/v25.0/1234567/messages");
	assert_string_equal(fakepeer_str(reqs, "0.headers.authorization"),
	    "Bearer tok-123");
	assert_string_equal(fakepeer_str(reqs, "0.body.to"), "+5511988887777");
	assert_string_equal(fakepeer_str(reqs, "0.body.type"), "text");
	assert_string_equal(fakepeer_str(reqs, "0.body.messaging_product"),
	    "whatsapp");
	assert_string_equal(fakepeer_str(reqs, "0.body.text.preview_url"),
	    "false");
	assert_string_equal(fakepeer_str(reqs, "0.body.text.body"),
	    "Oi, tudo bem?");
	json_object_put(reqs);
}

/* Script one step, send, and return the classification. */
static enum graph_class
scripted(const char *steps)
{
	fakepeer_reset(&fake);
	fakepeer_script(&fake, steps);
	assert_int_equal(graph_send_text(g, "1234567", "5511988887777", "oi",
	    NULL, on_done, NULL), 0);
	wait_done();
	return got.cls;
}

static void
test_window_closed_needs_template(void **state)
{
	assert_int_equal(scripted("[{\"status\":400,\"code\":131047}]"),
	    GRAPH_NEEDS_TEMPLATE);
	assert_int_equal(got.code, 131047);
	assert_int_equal(got.http_status, 400);
	assert_true(got.fbtrace_id[0] != '\0');
	assert_non_null(strstr(got.message, "(#131047)"));
	assert_string_equal(got.wamid, "");
}

static void
test_expired_token_stops(void **state)
{
	assert_int_equal(scripted("[{\"status\":401,\"code\":190,"
	    "\"subcode\":463}]"), GRAPH_STOP);
	assert_int_equal(got.subcode, 463);
}

static void
test_throughput_backs_off(void **state)
{
	assert_int_equal(scripted("[{\"status\":400,\"code\":130429,"
	    "\"headers\":{\"retry-after\":\"7\"}}]"), GRAPH_BACKOFF);
	assert_int_equal(got.retry_after_s, 7);
	assert_int_equal(scripted("[{\"status\":400,\"code\":131056}]"),
	    GRAPH_BACKOFF);
}

static void
test_permanent_and_transient(void **state)
{
	assert_int_equal(scripted("[{\"status\":400,\"code\":131026}]"),
	    GRAPH_PERMANENT);
	assert_int_equal(scripted("[{\"status\":500,\"code\":131000}]"),
	    GRAPH_RETRY);
	assert_int_equal(scripted("[{\"status\":503,\"raw\":\"<html>\"}]"),
	    GRAPH_RETRY);
}

static void
test_network_failure_retries(void **state)
{
	struct graph_params	 p = { 0 };
	struct graph		*dead;

	p.api_base = "http://127.0.0.1:1/v25.0";
	p.token = "t";
	p.timeout_ms = 2000;
	dead = graph_new(cv, &p);
	assert_int_equal(graph_send_text(dead, "1", "2", "oi", NULL, on_done,
	    NULL), 0);
	wait_done();
	assert_int_equal(got.cls, GRAPH_RETRY);
	assert_int_equal(got.http_status, 0);
	graph_free(dead);
}

static void
test_text_trimmed_on_utf8_boundary(void **state)
{
	char		*text;
	const char	*sent;
	size_t		 i, n = 0;
	json_object	*reqs;

	/* 4095 ASCII letters then 3 two-byte characters: byte 4096 falls
	 * inside the first "é". */
	text = malloc(4095 + 6 + 1);
	memset(text, 'a', 4095);
	strcpy(text + 4095, "\xc3\xa9\xc3\xa9\xc3\xa9");
	reqs = send_text(text);
	assert_int_equal(got.cls, GRAPH_OK);
	sent = fakepeer_str(reqs, "0.body.text.body");
	for (i = 0; sent[i] != '\0'; i++)
		if (((unsigned char)sent[i] & 0xC0) != 0x80)
			n++;
	assert_int_equal(n, GRAPH_TEXT_MAX);
	assert_int_equal(strlen(sent), 4095 + 2);
	assert_string_equal(sent + 4095, "\xc3\xa9");
	json_object_put(reqs);
	free(text);
	assert_int_equal(graph_utf8_prefix("\xe2\x82\xac\xe2\x82\xac", 1), 3);
	assert_int_equal(graph_utf8_prefix("abc", 10), 3);
}

static void
test_mark_read_with_typing(void **state)
{
	json_object	*reqs;

	fakepeer_reset(&fake);
	assert_int_equal(graph_mark_read(g, "1234567", "wamid.IN1", 1,
	    on_done, NULL), 0);
	wait_done();
	assert_int_equal(got.cls, GRAPH_OK);
	assert_int_equal(got.success, 1);
	reqs = fakepeer_requests(&fake);
	assert_string_equal(fakepeer_str(reqs, "0.body.status"), "read");
	assert_string_equal(fakepeer_str(reqs, "0.body.message_id"),
	    "wamid.IN1");
	assert_string_equal(fakepeer_str(reqs,
	    "0.body.typing_indicator.type"), "text");
	json_object_put(reqs);
}

static void
test_template(void **state)
{
	json_object	*reqs;

	fakepeer_reset(&fake);
	assert_int_equal(graph_send_template(g, "1234567", "5511988887777",
	    "retomar_contato", "pt_BR", NULL, on_done, NULL), 0);
	wait_done();
	assert_int_equal(got.cls, GRAPH_OK);
	reqs = fakepeer_requests(&fake);
	assert_string_equal(fakepeer_str(reqs, "0.body.type"), "template");
	assert_string_equal(fakepeer_str(reqs, "0.body.template.name"),
	    "retomar_contato");
	assert_string_equal(fakepeer_str(reqs,
	    "0.body.template.language.code"), "pt_BR");
	json_object_put(reqs);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_send_text_success),
		cmocka_unit_test(test_window_closed_needs_template),
		cmocka_unit_test(test_expired_token_stops),
		cmocka_unit_test(test_throughput_backs_off),
		cmocka_unit_test(test_permanent_and_transient),
		cmocka_unit_test(test_network_failure_retries),
		cmocka_unit_test(test_text_trimmed_on_utf8_boundary),
		cmocka_unit_test(test_mark_read_with_typing),
		cmocka_unit_test(test_template),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
