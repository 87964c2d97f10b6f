/* The console: a prompt on COM1 with line editing (backspace, Ctrl-U), and
 * the command table gathered from the shell_cmds linker section. */
#include "virt/shell.h"
#include "arch/x86/cpu.h"
#include "arch/x86/lock.h"
#include "arch/x86/uart.h"
#include "lib/parse.h"
#include "lib/print.h"
#include "lib/string.h"
#include <stdarg.h>

#define LINE_MAX 256
#define ARGS_MAX 32
#define PROMPT "sprig> "

extern const struct shell_command __start_shell_cmds[], __stop_shell_cmds[];

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
	char buf[LINE_MAX];
	char *argv[ARGS_MAX];
	size_t n = strnlen(line, LINE_MAX);
	if (n == LINE_MAX) {
		kprintf("error: command line longer than %d characters\n", LINE_MAX - 1);
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
	c->run(argc, argv);
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

/* Read one line with echo and editing; returns its length. */
static size_t read_line(char *line)
{
	size_t len = 0;
	for (;;) {
		int c = uart_getc();
		if (c < 0) {
			/* Sleep until the next timer tick rather than spin. */
			if (read_rflags() & (1u << 9))
				hlt();
			else
				cpu_relax();
			continue;
		}
		if (c == '\r' || c == '\n') {
			kprintf("\n");
			line[len] = 0;
			return len;
		}
		if (c == 0x08 || c == 0x7f) {
			if (len) {
				len--;
				kprintf("\b \b");
			}
		} else if (c == 0x15) { /* Ctrl-U: erase the line */
			while (len) {
				len--;
				kprintf("\b \b");
			}
		} else if (c == 0x03) { /* Ctrl-C: abandon the line */
			kprintf("^C\n");
			len = 0;
			line[0] = 0;
			return 0;
		} else if (c >= 0x20 && c < 0x7f && len < LINE_MAX - 1) {
			line[len++] = (char)c;
			char echo = (char)c;
			console_write(&echo, 1);
		}
	}
}

void shell_main(const char *run_commands)
{
	static char run_buf[1024];
	static char line[LINE_MAX];
	char *cmds[64];

	if (run_commands && run_commands[0]) {
		size_t len = strnlen(run_commands, sizeof(run_buf));
		int n = -1;
		if (len < sizeof(run_buf)) {
			memcpy(run_buf, run_commands, len + 1);
			n = split_commands(run_buf, cmds, 64);
		}
		if (n < 0)
			kprintf("run: too long or more than 64 commands; none run\n");
		for (int i = 0; i < n; i++) {
			kprintf(PROMPT "%s\n", cmds[i]);
			shell_execute(cmds[i]);
		}
	}
	for (;;) {
		kprintf(PROMPT);
		read_line(line);
		shell_execute(line);
	}
}
