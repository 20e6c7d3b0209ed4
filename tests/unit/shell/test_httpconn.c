/*
 * test_httpconn.c -- the connection cap and the whole-request deadline of
 * httpconn.c on a real evhttp server and loopback sockets, in one thread:
 * the loop runs between the client's steps. Also frees the server with
 * connections still open (valgrind and ASan check that nothing leaks).
 * SPDX-License-Identifier: MIT
 */
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "../../../src/http/conns.h"

struct srv {
	struct event_base		*base;
	struct evhttp			*http;
	struct evhttp_bound_socket	*sock;
	struct httpconns		*conns;
	int				 port;
};

static void
srv_gen(struct evhttp_request *req, void *arg)
{
	struct srv	*s = arg;

	httpconns_request(s->conns, req);
	evbuffer_add(evhttp_request_get_output_buffer(req), "ok\n", 3);
	evhttp_send_reply(req, 200, NULL, NULL);
}

static void
srv_start(struct srv *s, int max, int deadline_s, int min_rate)
{
	struct sockaddr_in	sin;
	socklen_t		len = sizeof sin;

	memset(s, 0, sizeof *s);
	assert_non_null(s->base = event_base_new());
	assert_non_null(s->http = evhttp_new(s->base));
	evhttp_set_gencb(s->http, srv_gen, s);
	assert_non_null(s->sock = evhttp_bind_socket_with_handle(s->http,
	    "127.0.0.1", 0));
	assert_non_null(s->conns = httpconns_new(s->base, s->http, &s->sock,
	    max, deadline_s, min_rate, NULL, NULL));
	assert_int_equal(getsockname(evhttp_bound_socket_get_fd(s->sock),
	    (struct sockaddr *)&sin, &len), 0);
	s->port = ntohs(sin.sin_port);
}

/* As http_free does: evhttp first, then what it left us. */
static void
srv_free(struct srv *s)
{
	evhttp_free(s->http);
	httpconns_free(s->conns);
	event_base_free(s->base);
}

/* Let the server's loop run for ms milliseconds. */
static void
spin(struct srv *s, int ms)
{
	struct timeval	tv = { ms / 1000, (ms % 1000) * 1000 };

	event_base_loopexit(s->base, &tv);
	event_base_dispatch(s->base);
}

static int
dial(struct srv *s)
{
	struct sockaddr_in	sin;
	int			fd = socket(AF_INET, SOCK_STREAM, 0);

	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_port = htons((unsigned short)s->port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof sin), 0);
	assert_int_equal(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
	return fd;
}

static void
say(int fd, const char *text)
{
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
}

/* What the server sent so far: >0 bytes, 0 closed, -1 nothing yet. */
static ssize_t
heard(int fd, char *buf, size_t len)
{
	ssize_t	n = read(fd, buf, len - 1);

	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return -1;
	if (n < 0)
		return 0;	/* reset: closed too */
	buf[n] = '\0';
	return n;
}

static void
test_cap_queues_then_serves(void **state)
{
	struct srv	s;
	char		buf[512];
	int		a, b, c;

	srv_start(&s, 2, 30, 0);
	a = dial(&s);
	b = dial(&s);
	spin(&s, 50);
	assert_int_equal(httpconns_open(s.conns), 2);
	c = dial(&s);		/* the kernel queues it */
	say(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
	say(b, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
	spin(&s, 300);
	assert_int_equal(httpconns_open(s.conns), 2);
	assert_true(heard(b, buf, sizeof buf) > 0);
	assert_non_null(strstr(buf, " 200 "));
	assert_int_equal(heard(c, buf, sizeof buf), -1);
	close(a);
	spin(&s, 300);		/* noticed, accepting again, c answered */
	assert_true(heard(c, buf, sizeof buf) > 0);
	assert_non_null(strstr(buf, " 200 "));
	assert_int_equal(httpconns_open(s.conns), 2);
	close(b);
	spin(&s, 300);
	assert_int_equal(httpconns_open(s.conns), 1);
	srv_free(&s);		/* c still open */
	close(c);
}

static void
test_deadline_closes_slow_client(void **state)
{
	struct srv	s;
	char		buf[512];
	int		slow, ok, i;
	ssize_t		n = -1;

	srv_start(&s, 10, 1, 0);
	slow = dial(&s);
	say(slow, "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ");
	/* One byte every 200 ms: a per-read timeout would never fire. */
	for (i = 0; i < 25 && (n = heard(slow, buf, sizeof buf)) != 0; i++) {
		(void)write(slow, "a", 1);
		spin(&s, 200);
	}
	assert_int_equal(n, 0);
	ok = dial(&s);		/* others are still served */
	say(ok, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
	spin(&s, 100);
	assert_true(heard(ok, buf, sizeof buf) > 0);
	assert_non_null(strstr(buf, " 200 "));
	close(slow);
	close(ok);
	spin(&s, 300);
	assert_int_equal(httpconns_open(s.conns), 0);
	srv_free(&s);
}

static void
test_cap_evicts_the_idle_before_the_slow(void **state)
{
	struct srv	s;
	char		buf[512];
	int		idle, slow, c;

	srv_start(&s, 2, 30, 0);
	idle = dial(&s);
	slow = dial(&s);
	say(slow, "GET / HTTP/1.1\r\nHost: x\r\n");
	spin(&s, 700);		/* both older than the protected half second */
	c = dial(&s);		/* at the cap: evicts the idle one */
	say(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
	spin(&s, 300);
	assert_true(heard(c, buf, sizeof buf) > 0);
	assert_non_null(strstr(buf, " 200 "));
	assert_int_equal(heard(idle, buf, sizeof buf), 0);
	assert_int_equal(heard(slow, buf, sizeof buf), -1);
	say(slow, "\r\n");	/* the slow one finishes: still served */
	spin(&s, 100);
	assert_true(heard(slow, buf, sizeof buf) > 0);
	assert_non_null(strstr(buf, " 200 "));
	close(idle);
	close(slow);
	close(c);
	srv_free(&s);
}

static void
test_min_rate_closes_a_trickle(void **state)
{
	struct srv	s;
	char		buf[512];
	int		slow, fast, i;
	ssize_t		n = -1;

	srv_start(&s, 10, 30, 100);	/* 100 bytes/s after a second */
	slow = dial(&s);
	say(slow, "GET / HTTP/1.1\r\nHost: x\r\n");	/* 27 bytes */
	for (i = 0; i < 15 && (n = heard(slow, buf, sizeof buf)) != 0; i++) {
		(void)write(slow, "X", 1);
		spin(&s, 200);
	}
	assert_int_equal(n, 0);		/* closed long before the 30 s */
	assert_true(i <= 10);
	fast = dial(&s);		/* a whole request at once is served */
	say(fast, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
	spin(&s, 100);
	assert_true(heard(fast, buf, sizeof buf) > 0);
	assert_non_null(strstr(buf, " 200 "));
	close(slow);
	close(fast);
	srv_free(&s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cap_queues_then_serves),
		cmocka_unit_test(test_deadline_closes_slow_client),
		cmocka_unit_test(test_cap_evicts_the_idle_before_the_slow),
		cmocka_unit_test(test_min_rate_closes_a_trickle),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
