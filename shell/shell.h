/* The serial console shell. Subsystems register commands with SHELL_COMMAND;
 * the shell collects them from a linker section, so adding a command touches
 * only the file that implements it. */
#pragma once
#include <stdbool.h>

struct shell_command {
	const char *name;
	int (*run)(int argc, char **argv); /* 0 on success */
	const char *usage;                 /* arguments, e.g. "[NAME]" */
	const char *help;                  /* one line */
};

#define SHELL_COMMAND(ident, name_, fn_, usage_, help_)                                \
	static const struct shell_command shell_cmd_##ident                            \
		__attribute__((used, section("shell_cmds"), aligned(8))) = {           \
			name_, fn_, usage_, help_                                      \
		}

/* While a guest runs: take what the console has received. Ctrl-C returns
 * true; other keys wait for the next prompt (console: N keys dropped when
 * more than 4 KiB arrive). */
bool console_poll(void);
/* Execute one command line as if typed, under the watchdog (watchdog=). */
void shell_execute(const char *line);
/* Run the commands of the kernel command line's run= option, as if typed. */
void shell_run(char *run_commands);
/* The prompt, for ever. */
void __attribute__((noreturn)) shell_main(void);
/* The timeout in seconds of a `vm run` that names none: run_timeout= for
 * one from run=, else 0 (none). */
unsigned shell_default_run_timeout(void);
/* For commands: report a bad argument on one line; returns the error status. */
int shell_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
