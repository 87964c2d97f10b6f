/* Benchmark scenarios run in guests from the console (`bench NAME ARGS`): each
 * reproduces one optimisation's experiment and prints its table, optimisation
 * off and on, in one boot, with `@bench ... in=guest` lines for scripts. */
#pragma once

struct scenario {
	const char *name;
	int (*run)(int argc, char **argv); /* argv[0] is the scenario's name */
	const char *usage;
	const char *help;
};

#define SCENARIO(ident, ...)                                                            \
	static const struct scenario scenario_##ident                                  \
		__attribute__((used, section("sprig_scenarios"), aligned(8))) = { __VA_ARGS__ }
