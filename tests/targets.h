/* The targets of docs/targets.md, for the benchmarks' verdicts and the count
 * assertions of the host tests: the table is
 * read once, and each verdict looks its figure and comparison up by key. */
#pragma once
#include <stdbool.h>

struct target {
	const char *key;
	double figure;
	char test[3]; /* ">=", "<=" or "==" */
};

/* The row KEY of docs/targets.md; exits with a message if the table or the
 * row is missing (a verdict without its target would be a guess). */
const struct target *bench_target(const char *key);

/* Whether VALUE passes the target's test. */
bool target_met(const struct target *t, double value);

/* "met" or "not met", for printing. */
const char *target_verdict(const struct target *t, double value);
