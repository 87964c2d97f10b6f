/* The `bench` console command: runs a registered scenario. */
#include "lib/print.h"
#include "lib/string.h"
#include "bench/scenario.h"
#include "shell/shell.h"

/* Weak: with no scenario registered the section, and so these, do not exist. */
extern const struct scenario __start_sprig_scenarios[] __attribute__((weak));
extern const struct scenario __stop_sprig_scenarios[] __attribute__((weak));

static int cmd_bench(int argc, char **argv)
{
	if (argc < 2) {
		kprintf("scenarios:\n");
		for (const struct scenario *s = __start_sprig_scenarios; s < __stop_sprig_scenarios; s++)
			kprintf("  bench %s %s: %s\n", s->name, s->usage, s->help);
		return 0;
	}
	for (const struct scenario *s = __start_sprig_scenarios; s < __stop_sprig_scenarios; s++)
		if (strcmp(s->name, argv[1]) == 0)
			return s->run(argc - 1, argv + 1);
	return shell_usage_error("bench", "unknown scenario '%s'", argv[1]);
}
SHELL_COMMAND(bench, "bench", cmd_bench, "[SCENARIO ARGS...]",
	      "run an MMU benchmark scenario in guests (no argument: list them)");
