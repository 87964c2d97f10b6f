/* The console: a prompt on COM1 with line editing (backspace, Ctrl-U), and
 * the command table gathered from the shell_cmds linker section. Each
 * command runs under the watchdog when watchdog= is set. */
#include "shell/shell.h"
#include "arch/x86/cpu.h"
#include "arch/x86/lock.h"
#include "arch/x86/uart.h"
#include "arch/x86/watchdog.h"
#include "lib/parse.h"
#include "lib/print.h"
#include "lib/string.h"
#include "shell/console_line.h"
#include "shell/options.h"
#include <stdarg.h>

#define ARGS_MAX 32
#define RUN_COMMANDS_MAX 128
#define PROMPT "sprig> "
/* Keys typed while a guest runs wait for the next prompt, this many at most. */
#define KEYS_MAX 4096

extern const struct shell_command __start_shell_cmds[], __stop_shell_cmds[];

static bool in_run_list;

static const struct shell_command *find_command(const char *name)
{
	for (const struct shell_command *c = __start_shell_cmds; c < __stop_shell_cmds; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

int shell_usage_error(const char *cmd, const char *fmt, ...)
{
	const struct shell_command *c = find_command(cmd);
	va_list ap;
	kprintf("%s: ", cmd);
	va_start(ap, fmt);
	kvprintf(fmt, ap);
	va_end(ap);
	if (c)
		kprintf(" (usage: %s %s)", c->name, c->usage);
	kprintf("\n");
	return 2;
}

void shell_execute(const char *line)
{
	static char buf[CONSOLE_LINE_MAX + 1];
	char *argv[ARGS_MAX];
	char err[128];
	size_t n = strnlen(line, CONSOLE_LINE_MAX + 1);

	if (!line_check(line, n, err, sizeof(err))) {
		kprintf("%s\n", err);
		return;
	}
	memcpy(buf, line, n + 1);
	int argc = split_words(buf, argv, ARGS_MAX);
	if (argc < 0) {
		kprintf("error: more than %d words\n", ARGS_MAX);
		return;
	}
	if (argc == 0)
		return;
	const struct shell_command *c = find_command(argv[0]);
	if (!c) {
		kprintf("unknown command '%s' (type 'help' for the list)\n", argv[0]);
		return;
	}
	watchdog_arm(line, option_watchdog_s);
	c->run(argc, argv);
	watchdog_arm(line, 0);
}

unsigned shell_default_run_timeout(void)
{
	return in_run_list ? option_run_timeout_s : 0;
}

static int cmd_help(int argc, char **argv)
{
	(void)argv;
	if (argc > 1)
		return shell_usage_error("help", "takes no arguments");
	for (const struct shell_command *c = __start_shell_cmds; c < __stop_shell_cmds; c++) {
		char left[48];
		ksnprintf(left, sizeof(left), "%s %s", c->name, c->usage);
		kprintf("  %-28s %s\n", left, c->help);
	}
	return 0;
}
SHELL_COMMAND(help, "help", cmd_help, "", "list the commands");

static struct {
	uint8_t key[KEYS_MAX];
	size_t head, count;
	uint64_t dropped;
} typed;

bool console_poll(void)
{
	bool interrupt = false;
	int c;

	/* Bounded: a UART that always reads "data ready" must not hold the run. */
	for (unsigned n = 0; n < KEYS_MAX && (c = uart_getc()) >= 0; n++) {
		if (c == KEY_CTRL_C)
			interrupt = true;
		else if (typed.count == KEYS_MAX)
			typed.dropped++;
		else
			typed.key[(typed.head + typed.count++) % KEYS_MAX] = (uint8_t)c;
	}
	return interrupt;
}

/* The next key: one typed while a guest ran, else one from the UART. */
static int console_getc(void)
{
	int c;

	if (!typed.count)
		return uart_getc();
	c = typed.key[typed.head];
	typed.head = (typed.head + 1) % KEYS_MAX;
	typed.count--;
	return c;
}

static void echo(const char *s, size_t len)
{
	console_write(s, len);
}

/* Read one line with echo and editing; false if it was refused or cancelled. */
static bool read_line(struct line_editor *ed)
{
	char err[128];

	line_reset(ed);
	for (;;) {
		int c = console_getc();
		if (c < 0) {
			/* Sleep until the next timer tick rather than spin. */
			if (read_rflags() & (1u << 9))
				hlt();
			else
				cpu_relax();
			continue;
		}
		switch (line_feed(ed, (uint8_t)c, echo)) {
		case LINE_MORE:
			continue;
		case LINE_CANCELLED:
			return false;
		case LINE_DONE:
			if (line_accept(ed, err, sizeof(err)))
				return true;
			kprintf("%s\n", err);
			return false;
		}
	}
}

void shell_run(char *run_commands)
{
	char *cmds[RUN_COMMANDS_MAX];

	if (!run_commands || !run_commands[0])
		return;
	int n = split_commands(run_commands, cmds, RUN_COMMANDS_MAX);
	if (n < 0)
		kprintf("run: more than %d commands; none run\n", RUN_COMMANDS_MAX);
	in_run_list = true;
	for (int i = 0; i < n; i++) {
		kprintf(PROMPT "%s\n", cmds[i]);
		shell_execute(cmds[i]);
	}
	in_run_list = false;
}

void shell_main(void)
{
	static struct line_editor ed;

	for (;;) {
		if (typed.dropped) {
			kprintf("console: %llu keys dropped\n", (unsigned long long)typed.dropped);
			typed.dropped = 0;
		}
		kprintf(PROMPT);
		if (read_line(&ed))
			shell_execute(ed.line);
	}
}
