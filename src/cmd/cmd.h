/*
 * cmd.h -- subcommands of bin/modegate; one cmd_<verb> per command.
 * Each returns the process exit status.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_CMD_H
#define MG_CMD_H

#define EX_USAGE_CODE	64

struct cmd_entry {
	const char	*name;
	int		(*exec)(int argc, char **argv);
	const char	*usage;
	const char	*help;
};

int	cmd_check_config(int, char **);
int	cmd_rules_flatten(int, char **);
int	cmd_intent(int, char **);
int	cmd_guard(int, char **);
int	cmd_explain(int, char **);
int	cmd_migrate(int, char **);
int	cmd_serve(int, char **);
int	cmd_flag(int, char **);
int	cmd_takeover(int, char **);
int	cmd_release(int, char **);
int	cmd_set_mode(int, char **);
int	cmd_opt_out(int, char **);
int	cmd_opt_in(int, char **);
int	cmd_cooling_off(int, char **);
int	cmd_campaign(int, char **);
int	cmd_funnel(int, char **);
int	cmd_train(int, char **);
int	cmd_review(int, char **);

#endif
