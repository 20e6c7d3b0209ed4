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
	  "variable table",
	  "  --list   print the table of environment variables (name, default, accepted\n"
	  "           values, secret, meaning) as Markdown, and exit\n"
	  "Checks what serve needs before it starts, with serve's words: every\n"
	  "variable, DATABASE_URL parsed by libpq, MODEGATE_LISTEN resolved, and in\n"
	  "MODEGATE_RULES_DIR the rule files of mode/ and policy/, mode/messages.json,\n"
	  "mode/julia.md and the sql/ migrations. Exit: 0 configuration OK; 78 a\n"
	  "configuration problem (each one printed); 64 bad usage.\n" },
	{ "migrate", cmd_migrate, "migrate",
	  "apply the sql/NNNN_*.sql migrations not yet applied, then "
	  "re-apply sql/functions/",
	  "Applies MODEGATE_RULES_DIR/sql/NNNN_*.sql not yet recorded in\n"
	  "schema_migrations, in order, each in one transaction, then re-applies\n"
	  "every file of sql/functions/, to DATABASE_URL (run it as the schema's\n"
	  "owner); records mode/transitions.json's pending timeout for SQL.\n"
	  "Exit: 0 done; 1 a migration or the connection failed; 78 DATABASE_URL\n"
	  "unset or unparseable.\n" },
	{ "serve", cmd_serve, "serve",
	  "run the HTTP front door: GET/POST /webhook, /healthz, /readyz, "
	  "/metrics",
	  "No options: configured by the environment (modegate check-config --list).\n"
	  "Logs its version first; refuses to start on any configuration problem\n"
	  "(exit 78, the same lines as check-config); SIGINT or SIGTERM stops\n"
	  "accepting, finishes the work in flight (at most 10 s) and exits 0.\n" },
	{ "rules-flatten", cmd_rules_flatten, "rules-flatten FILE.json",
	  "print a rule file in the flat form the core reads",
	  "  FILE.json   a rule file (mode/*.json, policy/*.json); prints one\n"
	  "              PATH<TAB>TYPE+VALUE line per scalar\n" },
	{ "intent", cmd_intent, "intent [--context] [--explain] < MESSAGES",
	  "classify one message a line: INTENT<TAB>confidence<TAB>message; "
	  "--context reads MESSAGE<TAB>JULIA_BEFORE lines, --explain adds "
	  "who decided, the runner-up and the evidence",
	  "  --context   input lines are MESSAGE<TAB>JULIA_BEFORE (Julia's message\n"
	  "              before it, the context the detector reads)\n"
	  "  --explain   four more fields: who decided (rules, model or both),\n"
	  "              the runner-up and the evidence\n"
	  "Reads messages from standard input, one a line; no database.\n" },
	{ "train", cmd_train, "train [--corpus DIR] [--out DIR] [--set P=V]",
	  "learn mode/intent.model and mode/guard.model from the corpus "
	  "(default tests/corpus; deterministic)",
	  "  --corpus DIR   the labelled corpus: SPLITS, messages/, replies/\n"
	  "                 (default tests/corpus); the blind authors are never read\n"
	  "  --out DIR      where the .model files go (default mode/)\n"
	  "  --set P=V      override a hyper-parameter, e.g. intent.epochs=20\n"
	  "The same corpus and rules always give the same weights, byte for byte.\n" },
	{ "explain", cmd_explain, "explain --mode M [--pending P "
	  "--pending-age MIN] [--inactive-days D] [--opted-out] [--cooling-off] "
	  "[--objection TEXT] [--json] MESSAGE",
	  "what modegate would do with a message (intent, policy, router, "
	  "gate), without a database",
	  "  --mode MODE            the conversation's mode (required): discovery,\n"
	  "                         oferta, followup or reativacao\n"
	  "  --pending MODE         a micro-confirmation pending towards MODE (not\n"
	  "                         the current mode)\n"
	  "  --pending-age MINUTES  the pending's age, 0-525600 minutes (default 0);\n"
	  "                         past the timeout of mode/transitions.json: EXPIRED\n"
	  "  --inactive-days DAYS   days since the doctor's previous message,\n"
	  "                         0-36500 (default: a minute ago)\n"
	  "  --opted-out            the doctor has opted out\n"
	  "  --cooling-off          the doctor is in a cooling-off period\n"
	  "  --objection TEXT       an open objection (what was objected)\n"
	  "  --json                 the turn's plan as one JSON object on one line\n"
	  "  MESSAGE                the doctor's message as one argument (quote it)\n" },
	{ "guard", cmd_guard, "guard --mode MODE",
	  "check replies (one a line on stdin) for the claims forbidden in "
	  "MODE; prints OK or VIOLATION<TAB>claim-id[,claim-id...]",
	  "  --mode MODE   the mode whose forbidden claims are checked: discovery,\n"
	  "                oferta, followup or reativacao (required)\n"
	  "Reads replies from standard input, one a line.\n" },
	{ "flag", cmd_flag, "flag list | get NAME | set NAME on|off|shadow "
	  "[--percent N] [--by WHO] [--reason TEXT]",
	  "show or change a feature flag (recorded; every process's next "
	  "turn reads it)",
	  "  list                    every flag: name, value, percent, when, by whom, why\n"
	  "  get NAME                one flag (exit 1 when there is no such flag)\n"
	  "  set NAME on|off|shadow  change it (recorded in feature_flag_changes)\n"
	  "  --percent N             0-100: the share of conversations (a stable hash\n"
	  "                          of the id) under the value, the others off;\n"
	  "                          default 100 for on and shadow; off keeps it\n"
	  "  --by WHO                who changes it (default $USER; when USER is\n"
	  "                          unset, the database user)\n"
	  "  --reason TEXT           why (recorded)\n"
	  "Needs DATABASE_URL. Exit: 0 done; 64 bad input; 1 failure (database down,\n"
	  "no such flag); 78 DATABASE_URL unset or unparseable.\n" },
	{ "takeover", cmd_takeover, "takeover WA_ID [--by WHO] "
	  "[--reason TEXT] [--phone-number-id ID]",
	  "a human takes the doctor's chat: the AI stays silent",
	  "  WA_ID                  the doctor's WhatsApp id (phone number, + optional)\n"
	  "  --by WHO               who takes it (default $USER; when USER is unset,\n"
	  "                         the database user)\n"
	  "  --reason TEXT          why (audited)\n"
	  "  --phone-number-id ID   only the conversation on this business number\n"
	  "                         (default: every one of the doctor's)\n"
	  "Drops the AI replies still queued. A chat a human already holds is left\n"
	  "as it is (\"already under human control\"). Exit: 0 done; 64 bad input;\n"
	  "1 no such conversation or database down; 78 DATABASE_URL unset.\n" },
	{ "release", cmd_release, "release WA_ID [--by WHO] "
	  "[--phone-number-id ID]",
	  "give the chat back to the AI, without stale context",
	  "  WA_ID                  the doctor's WhatsApp id (phone number, + optional)\n"
	  "  --by WHO               who gives it back (default $USER; when USER is\n"
	  "                         unset, the database user)\n"
	  "  --phone-number-id ID   only the conversation on this business number\n"
	  "Clears the pending transition and an open serious objection and restarts\n"
	  "the prompt's history now. A chat the AI already holds is left as it is\n"
	  "(\"already under AI control\"). Exit: 0 done; 64 bad input; 1 no such\n"
	  "conversation or database down; 78 DATABASE_URL unset.\n" },
	{ "set-mode", cmd_set_mode, "set-mode WA_ID MODE [--reason TEXT] "
	  "[--by WHO] [--phone-number-id ID]",
	  "set the conversation mode by hand (mode_source manual)",
	  "  WA_ID                  the doctor's WhatsApp id (phone number, + optional)\n"
	  "  MODE                   discovery, oferta, followup or reativacao\n"
	  "  --reason TEXT          why (audited; default \"set by hand\")\n"
	  "  --by WHO               who sets it (default $USER; when USER is unset,\n"
	  "                         the database user)\n"
	  "  --phone-number-id ID   only the conversation on this business number\n"
	  "Exit: 0 done; 64 bad input; 1 no such conversation or database down;\n"
	  "78 DATABASE_URL unset.\n" },
	{ "opt-out", cmd_opt_out, "opt-out WA_ID [--by WHO] "
	  "[--phone-number-id ID]",
	  "record the doctor's opt-out (nothing is sent)",
	  "  WA_ID                  the doctor's WhatsApp id (phone number, + optional)\n"
	  "  --by WHO               who does it (default $USER; when USER is\n"
	  "                         unset, the database user)\n"
	  "  --phone-number-id ID   only the conversation on this business number\n"
	  "                         (default: every one of the doctor's)\n"
	  "Exit: 0 done; 64 bad input; 1 no such conversation or database down;\n"
	  "78 DATABASE_URL unset or unparseable.\n" },
	{ "opt-in", cmd_opt_in, "opt-in WA_ID [--by WHO] "
	  "[--phone-number-id ID]",
	  "clear the doctor's opt-out",
	  "  WA_ID                  the doctor's WhatsApp id (phone number, + optional)\n"
	  "  --by WHO               who does it (default $USER; when USER is\n"
	  "                         unset, the database user)\n"
	  "  --phone-number-id ID   only the conversation on this business number\n"
	  "                         (default: every one of the doctor's)\n"
	  "Exit: 0 done; 64 bad input; 1 no such conversation or database down;\n"
	  "78 DATABASE_URL unset or unparseable.\n" },
	{ "cooling-off", cmd_cooling_off, "cooling-off WA_ID (--days N | "
	  "--clear) [--by WHO] [--phone-number-id ID]",
	  "pause proactive messages for N days, or end the pause",
	  "  WA_ID                  the doctor's WhatsApp id (phone number, + optional)\n"
	  "  --days N               1-3650: nothing proactive (follow-ups,\n"
	  "                         campaigns) for N days from now; inbound\n"
	  "                         messages are still answered\n"
	  "  --clear                end the pause now\n"
	  "  --by WHO               who does it (default $USER; when USER is\n"
	  "                         unset, the database user)\n"
	  "  --phone-number-id ID   only the conversation on this business number\n"
	  "                         (default: every one of the doctor's)\n"
	  "Exit: 0 done; 64 bad input; 1 no such conversation or database down;\n"
	  "78 DATABASE_URL unset or unparseable.\n" },
	{ "review", cmd_review, "review list [--since DATE] "
	  "[--max-confidence P] | label ID INTENT [--corpus DIR] [--by WHO]",
	  "messages the intent detector was unsure of; label one into the "
	  "corpus (anonymised) for `make train`",
	  "  list                  messages not yet labelled whose confidence was\n"
	  "                        below P, or where rules and model disagreed\n"
	  "  --since DATE          YYYY-MM-DD, inclusive (default: 7 days ago)\n"
	  "  --max-confidence P    0-1 (default 0.6)\n"
	  "  label ID INTENT       append message ID, anonymised, with Julia's\n"
	  "                        message before it, to the corpus as INTENT\n"
	  "  --corpus DIR          default tests/corpus\n"
	  "  --by WHO              who labels it (default $USER)\n"
	  "Needs DATABASE_URL. Exit: 0 done; 64 bad input; 1 failure; 78\n"
	  "DATABASE_URL unset or unparseable.\n" },
	{ "campaign", cmd_campaign, "campaign start ID --template NAME:LANG "
	  "[--phone-number-id ID] [--rate N] (WA_ID... | --file F) | "
	  "campaign status ID",
	  "a template to a list of doctors, once each; its figures",
	  "  start ID               send the approved template NAME:LANG once to\n"
	  "                         each doctor listed (WA_ID... or --file F, one\n"
	  "                         a line), skipping opted-out, cooling-off and\n"
	  "                         human-controlled ones; running it again sends\n"
	  "                         nothing new\n"
	  "  --template NAME:LANG   the approved WhatsApp template and language\n"
	  "  --phone-number-id ID   the business number of doctors without a\n"
	  "                         conversation yet\n"
	  "  --rate N               sends a minute (default 30)\n"
	  "  status ID              queued, sent, replied, and skipped by reason\n"
	  "Needs DATABASE_URL. Exit: 0 done; 64 bad input; 1 failure; 78\n"
	  "DATABASE_URL unset or unparseable.\n" },
	{ "funnel", cmd_funnel, "funnel [--since DATE] [--until DATE]",
	  "the funnel metrics, overall and per day, beside their targets",
	  "  --since DATE   first day counted, YYYY-MM-DD, inclusive (default: all)\n"
	  "  --until DATE   last day counted, YYYY-MM-DD, inclusive (default: today)\n"
	  "Days are calendar days in the database session's TimeZone. Exit: 0 done;\n"
	  "64 a bad date; 1 database down; 78 DATABASE_URL unset.\n" },
	{ "forget", cmd_forget, "forget WA_ID [--by WHO] [--reason TEXT]",
	  "erase the doctor's personal data everywhere (LGPD); the number "
	  "becomes a stable pseudonym; refused (exit 75) while a turn holds "
	  "the chat",
	  "  --by WHO       who asked (audited; default $USER, else the database\n"
	  "                 user)\n"
	  "  --reason TEXT  why (audited)\n"
	  "Exit: 0 done; 1 no such doctor or database down; 64 bad input; 75 a\n"
	  "turn holds the chat now (try again); 78 DATABASE_URL unset.\n" },
	{ "export", cmd_export, "export WA_ID [--by WHO]",
	  "print everything stored about the doctor as JSON (LGPD access)",
	  "  --by WHO       who asked (audited; default $USER, else the database\n"
	  "                 user)\n"
	  "Exit: 0 done; 1 no such doctor or database down; 64 bad input; 78\n"
	  "DATABASE_URL unset.\n" },
};

#define CMD_COUNT (sizeof cmd_table / sizeof cmd_table[0])

/* One command's help: usage, what it does, its options. */
static void
usage_cmd(FILE *fp, const struct cmd_entry *c)
{
	fprintf(fp, "usage: modegate %s\n\n%s\n\n%s", c->usage, c->help,
	    c->options);
}

/* True when argv holds -h or --help (before a "--"). */
static int
wants_help(int argc, char **argv)
{
	int	i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			return 0;
		if (strcmp(argv[i], "--help") == 0 ||
		    strcmp(argv[i], "-h") == 0)
			return 1;
	}
	return 0;
}

/* Print every command's usage line. */
static void
usage(FILE *fp)
{
	size_t	i;

	fprintf(fp, "usage: modegate COMMAND [ARGS]\n\ncommands:\n");
	for (i = 0; i < CMD_COUNT; i++)
		fprintf(fp, "  %-44s %s\n", cmd_table[i].usage,
		    cmd_table[i].help);
	fprintf(fp, "\n`modegate COMMAND --help` (or -h, anywhere) explains a "
	    "command's options;\n`modegate --version` prints the version.\n");
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
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		printf("modegate %s\n", MG_VERSION);
		return 0;
	}
	for (i = 0; i < CMD_COUNT; i++) {
		if (strcmp(argv[1], cmd_table[i].name) != 0)
			continue;
		if (wants_help(argc - 1, argv + 1)) {
			usage_cmd(stdout, &cmd_table[i]);
			return 0;
		}
		return cmd_table[i].exec(argc - 1, argv + 1);
	}
	fprintf(stderr, "modegate: unknown command \"%s\"\n", argv[1]);
	usage(stderr);
	return EX_USAGE_CODE;
}
