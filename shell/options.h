/* Named switches that the console's `mmu` command and the kernel command line
 * set alike. A switch is a boolean (on/off) or one of a few named values. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

struct option_desc {
	const char *name;
	int *value_int;          /* enum-valued: index into choices */
	bool *value_bool;        /* boolean: on/off */
	const char *const *choices; /* enum-valued: NULL-terminated names */
	const char *help;
};

/* Register with OPTION(...) in the file that owns the switch. */
#define OPTION(ident, ...)                                                              \
	static const struct option_desc option_##ident                                 \
		__attribute__((used, section("sprig_options"), aligned(8))) = { __VA_ARGS__ }

/* Apply KEY=VALUE; false with a one-line reason in err. */
bool option_set(const char *key, const char *value, char *err, unsigned errlen);
/* Seconds from the kernel command line: watchdog= (0: none) bounds every
 * console command, run= ones included; run_timeout= is the timeout of a
 * `vm run` in run= that names none. panic= sets power_panic_action. */
#define RUN_TIMEOUT_DEFAULT_S 600
extern unsigned option_watchdog_s;
extern unsigned option_run_timeout_s;

/* Apply every KEY=VALUE of the kernel command line that names an option,
 * then watchdog=, run_timeout= and panic=. */
void options_from_cmdline(const char *cmdline);
void options_print(void);
/* maxcpus=N of the kernel command line: how many CPUs sprig brings up, 0 for
 * all (also when absent; a bad value is reported and ignored). */
unsigned options_maxcpus(const char *cmdline);
/* console= of the kernel command line into value ("auto" when absent). */
void options_console(const char *cmdline, char *value, size_t len);
