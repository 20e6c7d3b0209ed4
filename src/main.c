/*
 * main.c -- bin/modegate: a dispatch table of subcommands (tmux cmd_entry).
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"

static const struct cmd_entry cmd_table[] = {
	{ "check-config", cmd_check_config, "check-config [--list]",
	  "check the environment and rule files; --list prints the "
	  "variable table" },
	{ "migrate", cmd_migrate, "migrate",
	  "apply the sql/NNNN_*.sql migrations not yet applied, then "
	  "re-apply sql/functions/" },
	{ "serve", cmd_serve, "serve",
	  "run the HTTP front door: GET/POST /webhook, /healthz, /readyz, "
	  "/metrics" },
	{ "rules-flatten", cmd_rules_flatten, "rules-flatten FILE.json",
	  "print a rule file in the flat form the core reads" },
	{ "intent", cmd_intent, "intent [--context] [--explain] < MESSAGES",
	  "classify one message a line: INTENT<TAB>confidence<TAB>message; "
	  "--context reads MESSAGE<TAB>JULIA_BEFORE lines, --explain adds "
	  "who decided, the runner-up and the evidence" },
	{ "train", cmd_train, "train [--corpus DIR] [--out DIR] [--set P=V]",
	  "learn mode/intent.model and mode/guard.model from the corpus "
	  "(default tests/corpus; deterministic)" },
	{ "explain", cmd_explain, "explain --mode M [--pending P "
	  "--pending-age MIN] [--inactive-days D] [--json] MESSAGE",
	  "what modegate would do with a message (intent, policy, router, "
	  "gate), without a database" },
	{ "guard", cmd_guard, "guard --mode MODE",
	  "check replies (one a line on stdin) for the claims forbidden in "
	  "MODE; prints OK or VIOLATION<TAB>claim-id[,claim-id...]" },
	{ "flag", cmd_flag, "flag list | get NAME | set NAME on|off|shadow "
	  "[--percent N] [--by WHO] [--reason TEXT]",
	  "show or change a feature flag (recorded; every process's next "
	  "turn reads it)" },
	{ "takeover", cmd_takeover, "takeover WA_ID [--by WHO] "
	  "[--reason TEXT] [--phone-number-id ID]",
	  "a human takes the doctor's chat: the AI stays silent" },
	{ "release", cmd_release, "release WA_ID [--by WHO] "
	  "[--phone-number-id ID]",
	  "give the chat back to the AI, without stale context" },
	{ "set-mode", cmd_set_mode, "set-mode WA_ID MODE [--reason TEXT] "
	  "[--by WHO] [--phone-number-id ID]",
	  "set the conversation mode by hand (mode_source manual)" },
	{ "opt-out", cmd_opt_out, "opt-out WA_ID [--by WHO] "
	  "[--phone-number-id ID]",
	  "record the doctor's opt-out (nothing is sent)" },
	{ "opt-in", cmd_opt_in, "opt-in WA_ID [--by WHO] "
	  "[--phone-number-id ID]",
	  "clear the doctor's opt-out" },
	{ "cooling-off", cmd_cooling_off, "cooling-off WA_ID (--days N | "
	  "--clear) [--by WHO] [--phone-number-id ID]",
	  "pause proactive messages for N days, or end the pause" },
	{ "review", cmd_review, "review list [--since DATE] "
	  "[--max-confidence P] | label ID INTENT [--corpus DIR] [--by WHO]",
	  "messages the intent detector was unsure of; label one into the "
	  "corpus (anonymised) for `make train`" },
	{ "campaign", cmd_campaign, "campaign start ID --template NAME:LANG "
	  "[--phone-number-id ID] [--rate N] (WA_ID... | --file F) | "
	  "campaign status ID",
	  "a template to a list of doctors, once each; its figures" },
	{ "funnel", cmd_funnel, "funnel [--since DATE] [--until DATE]",
	  "the funnel metrics, overall and per day, beside their targets" },
};

#define CMD_COUNT (sizeof cmd_table / sizeof cmd_table[0])

/* Print every command's usage line. */
static void
usage(FILE *fp)
{
	size_t	i;

	fprintf(fp, "usage: modegate COMMAND [ARGS]\n\ncommands:\n");
	for (i = 0; i < CMD_COUNT; i++)
		fprintf(fp, "  %-44s %s\n", cmd_table[i].usage,
		    cmd_table[i].help);
}

int
main(int argc, char **argv)
{
	size_t	i;

	if (argc < 2) {
		usage(stderr);
		return EX_USAGE_CODE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	for (i = 0; i < CMD_COUNT; i++) {
		if (strcmp(argv[1], cmd_table[i].name) != 0)
			continue;
		if (argc > 2 && strcmp(argv[2], "--help") == 0) {
			printf("usage: modegate %s\n\n%s\n",
			    cmd_table[i].usage, cmd_table[i].help);
			return 0;
		}
		return cmd_table[i].exec(argc - 1, argv + 1);
	}
	fprintf(stderr, "modegate: unknown command \"%s\"\n", argv[1]);
	usage(stderr);
	return EX_USAGE_CODE;
}
