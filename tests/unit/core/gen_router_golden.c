/*
 * gen_router_golden.c -- print the router's decision for every (mode x
 * intent x pending target x pending age) combination, every event and
 * inactivity in every mode, and every manual move, with the default
 * mode/transitions.json. tests/cli/router_golden.sh diffs the output
 * against tests/cases/router.golden, so a rule change shows up as a
 * readable diff. Regenerate after a deliberate change with
 *	build/tests/gen_router_golden > tests/cases/router.golden
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>

#include "rules_flat.h"
#include "../../../mode/router.h"

#define T0	((int64_t)1700000000000)
#define SEC	((int64_t)1000)
#define MIN	(60 * SEC)
#define DAY	(24 * 60 * MIN)

/* One line: the case on the left, the outcome on the right. */
static void
line(const char *mode, const char *input, const char *pending,
    const char *age, const struct router_result *r)
{
	char	dec[32];

	snprintf(dec, sizeof dec, "%s%s", r->expired ? "EXPIRED+" : "",
	    decision_name(r->decision));
	printf("%-10s %-22s %-10s %-5s -> %-15s %-10s %-10s %s\n", mode, input,
	    pending, age, dec, mode_name(r->state.mode),
	    r->state.pending >= 0 ? mode_name(r->state.pending) : "-",
	    r->reason);
}

/* A quiet input at T0 (previous message a minute ago). */
static struct router_input
input(int intent)
{
	struct router_input	in;

	memset(&in, 0, sizeof in);
	in.intent = intent;
	in.manual_target = -1;
	in.now_ms = T0;
	in.last_message_at_ms = T0 - MIN;
	return in;
}

/* Every message in every mode, without and with each pending target. */
static void
messages(const struct matrix *mx)
{
	static const int64_t	 ages[] = { 29 * MIN + 59 * SEC, 30 * MIN };
	static const char	*agenames[] = { "29:59", "30:00" };
	struct mode_state	 st;
	struct router_input	 in;
	struct router_result	 r;
	int			 m, i, p, a;

	printf("# messages: mode intent pending age -> decision mode "
	    "pending reason\n");
	for (m = 0; m < MODE__COUNT; m++)
		for (i = 0; i < INTENT__COUNT; i++)
			for (p = -1; p < MODE__COUNT; p++)
				for (a = 0; a < 2; a++) {
					if (p == m || (p == -1 && a == 1))
						continue;
					mode_state_init(&st, T0 - DAY);
					st.mode = (enum mode)m;
					st.pending = p;
					st.pending_at_ms = T0 - ages[a];
					in = input(i);
					router_route(mx, &st, &in, &r);
					line(mode_name(m), intent_name(i),
					    p >= 0 ? mode_name(p) : "-",
					    p >= 0 ? agenames[a] : "-", &r);
				}
}

/* Events without a message, inactivity, and manual moves. */
static void
events(const struct matrix *mx)
{
	struct mode_state	 st;
	struct router_input	 in;
	struct router_result	 r;
	char			 what[32];
	int			 m, e, days;

	printf("# events, inactivity (a NEUTRO message), manual moves\n");
	for (m = 0; m < MODE__COUNT; m++) {
		mode_state_init(&st, T0 - DAY);
		st.mode = (enum mode)m;
		for (e = 0; e < EVENT__COUNT; e++) {
			if (e == EVENT_INACTIVITY)
				continue;
			in = input(-1);
			in.events = ROUTER_EV(e);
			in.campaign_id = "c1";
			router_route(mx, &st, &in, &r);
			snprintf(what, sizeof what, "event:%s", event_name(e));
			line(mode_name(m), what, "-", "-", &r);
		}
		for (days = 29; days <= 30; days++) {
			in = input(INTENT_NEUTRO);
			in.last_message_at_ms = T0 - days * DAY;
			router_route(mx, &st, &in, &r);
			snprintf(what, sizeof what, "idle:%dd", days);
			line(mode_name(m), what, "-", "-", &r);
		}
		for (e = 0; e < MODE__COUNT; e++) {
			in = input(-1);
			in.manual_target = e;
			router_route(mx, &st, &in, &r);
			snprintf(what, sizeof what, "manual:%s", mode_name(e));
			line(mode_name(m), what, "-", "-", &r);
		}
	}
}

int
main(int argc, char **argv)
{
	struct matrix	*mx;
	struct flat	 f;
	struct diag	 d;
	size_t		 i;

	rules_flat_init(argv[0]);
	diag_init(&d);
	if (rules_flat_load("mode/transitions.json", &f, &d) != 0)
		return 1;
	if ((mx = matrix_load(&f, &d)) == NULL || d.n > 0) {
		for (i = 0; i < d.n; i++)
			fprintf(stderr, "%s\n", d.msg[i]);
		return 1;
	}
	messages(mx);
	events(mx);
	matrix_free(mx);
	flat_free(&f);
	return 0;
}
