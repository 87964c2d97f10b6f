/* The option table (gathered from the sprig_options section) and the `mmu`
 * console command that reads and sets it; maxcpus= and console=, read once at
 * boot; and the unattended-safety limits watchdog=, run_timeout= and panic=. */
#include "shell/options.h"
#include "arch/x86/power.h"
#include "lib/parse.h"
#include "lib/print.h"
#include "lib/string.h"
#include "shell/shell.h"

/* Weak: with no option registered the section, and so these, do not exist. */
extern const struct option_desc __start_sprig_options[] __attribute__((weak));
extern const struct option_desc __stop_sprig_options[] __attribute__((weak));

static const struct option_desc *option_find(const char *name)
{
	for (const struct option_desc *o = __start_sprig_options; o < __stop_sprig_options; o++)
		if (strcmp(o->name, name) == 0)
			return o;
	return NULL;
}

static const char *option_value_name(const struct option_desc *o)
{
	if (o->value_bool)
		return *o->value_bool ? "on" : "off";
	return o->choices[*o->value_int];
}

/* The value VALUE means for option o (0/1 for a boolean, the choice's index);
 * -1 with a reason in err when it means nothing. */
static int option_parse(const struct option_desc *o, const char *value, char *err, unsigned errlen)
{
	if (o->value_bool) {
		if (strcmp(value, "on") == 0 || strcmp(value, "1") == 0)
			return 1;
		if (strcmp(value, "off") == 0 || strcmp(value, "0") == 0)
			return 0;
		ksnprintf(err, errlen, "%s takes on or off, not '%s'", o->name, value);
		return -1;
	}
	for (int i = 0; o->choices[i]; i++)
		if (strcmp(o->choices[i], value) == 0)
			return i;
	int n = ksnprintf(err, errlen, "%s takes", o->name);
	for (int i = 0; o->choices[i] && n > 0 && (unsigned)n < errlen; i++)
		n += ksnprintf(err + n, errlen - n, "%s%s", i ? "|" : " ", o->choices[i]);
	if (n > 0 && (unsigned)n < errlen)
		ksnprintf(err + n, errlen - n, ", not '%s'", value);
	return -1;
}

static void option_apply(const struct option_desc *o, int v)
{
	if (o->value_bool)
		*o->value_bool = v;
	else
		*o->value_int = v;
}

bool option_set(const char *key, const char *value, char *err, unsigned errlen)
{
	const struct option_desc *o = option_find(key);
	int v;

	if (!o) {
		ksnprintf(err, errlen, "unknown option '%s'", key);
		return false;
	}
	if ((v = option_parse(o, value, err, errlen)) < 0)
		return false;
	option_apply(o, v);
	return true;
}

unsigned option_watchdog_s;
unsigned option_run_timeout_s = RUN_TIMEOUT_DEFAULT_S;

/* NAME=SECONDS into *out, 0 (off) to 86400; a bad value is reported and ignored. */
static void seconds_from_cmdline(const char *cmdline, const char *name, unsigned *out)
{
	char value[24];
	uint64_t n;

	switch (cmdline_get(cmdline, name, value, sizeof(value))) {
	case CMDLINE_ABSENT:
		return;
	case CMDLINE_FOUND:
		if (parse_u64_in(value, 0, 86400, &n)) {
			*out = (unsigned)n;
			return;
		}
		break;
	case CMDLINE_TOO_LONG:
		break;
	}
	kprintf("cmdline: %s= takes seconds, 0 (off) to 86400; ignored\n", name);
}

static void safety_from_cmdline(const char *cmdline)
{
	char value[24];
	int i = 0;

	seconds_from_cmdline(cmdline, "watchdog", &option_watchdog_s);
	seconds_from_cmdline(cmdline, "run_timeout", &option_run_timeout_s);
	if (cmdline_get(cmdline, "panic", value, sizeof(value)) != CMDLINE_ABSENT) {
		while (panic_action_names[i] && strcmp(panic_action_names[i], value) != 0)
			i++;
		if (panic_action_names[i])
			power_panic_action = i;
		else
			kprintf("cmdline: panic= takes halt, reboot or poweroff; ignored\n");
	}
	kprintf("safety: watchdog %u s (0: off), run_timeout %u s, panic=%s\n",
		option_watchdog_s, option_run_timeout_s, panic_action_names[power_panic_action]);
}

void options_from_cmdline(const char *cmdline)
{
	char value[64], err[96];

	for (const struct option_desc *o = __start_sprig_options; o < __stop_sprig_options; o++) {
		enum cmdline_status st = cmdline_get(cmdline, o->name, value, sizeof(value));
		if (st == CMDLINE_ABSENT)
			continue;
		if (st == CMDLINE_TOO_LONG || !option_set(o->name, value, err, sizeof(err)))
			kprintf("cmdline: %s ignored\n", st == CMDLINE_TOO_LONG ? o->name : err);
	}
	safety_from_cmdline(cmdline);
}

void options_print(void)
{
	for (const struct option_desc *o = __start_sprig_options; o < __stop_sprig_options; o++) {
		char left[48];
		ksnprintf(left, sizeof(left), "%s=%s", o->name, option_value_name(o));
		kprintf("  %-28s %s\n", left, o->help);
	}
}

unsigned options_maxcpus(const char *cmdline)
{
	char value[24];
	uint64_t n;

	switch (cmdline_get(cmdline, "maxcpus", value, sizeof(value))) {
	case CMDLINE_ABSENT:
		return 0;
	case CMDLINE_FOUND:
		if (parse_u64_in(value, 0, UINT32_MAX, &n))
			return (unsigned)n;
		break;
	case CMDLINE_TOO_LONG:
		break;
	}
	kprintf("cmdline: maxcpus= takes a number of CPUs (0: all); ignored\n");
	return 0;
}

void options_console(const char *cmdline, char *value, size_t len)
{
	switch (cmdline_get(cmdline, "console", value, len)) {
	case CMDLINE_FOUND:
		return;
	case CMDLINE_ABSENT:
		ksnprintf(value, len, "auto");
		return;
	case CMDLINE_TOO_LONG: /* longer than any console: a bad value */
		ksnprintf(value, len, "(too long)");
		return;
	}
}

static int cmd_mmu(int argc, char **argv)
{
	char err[96];

	if (argc == 1) {
		options_print();
		return 0;
	}
	/* All or nothing: every KEY=VALUE is checked before any is applied. */
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 1; i < argc; i++) {
			char *eq = strchr(argv[i], '=');
			if (!eq)
				return shell_usage_error("mmu", "expected KEY=VALUE, not '%s'", argv[i]);
			*eq = 0;
			const struct option_desc *o = option_find(argv[i]);
			int v = o ? option_parse(o, eq + 1, err, sizeof(err)) : -1;
			if (!o)
				ksnprintf(err, sizeof(err), "unknown option '%s'", argv[i]);
			*eq = '=';
			if (v < 0)
				return shell_usage_error("mmu", "%s", err);
			if (pass == 1)
				option_apply(o, v);
		}
	}
	options_print();
	return 0;
}
SHELL_COMMAND(mmu, "mmu", cmd_mmu, "[KEY=VALUE...]", "show or set the MMU's switches");
