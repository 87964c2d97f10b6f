/* Reads docs/targets.md (see targets.h). The table's rows look like
 * | `key` | figure | test | kind | meaning |
 * The file is found from the working directory (make runs the benchmarks from
 * the top of the tree), else beside the program (build/host/bench). */
#include "tests/targets.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_TARGETS 64

static struct target targets[MAX_TARGETS];
static unsigned n_targets;
static bool loaded;

static FILE *open_table(void)
{
	char exe[512], path[600];
	ssize_t n;
	FILE *f = fopen("docs/targets.md", "r");

	if (f)
		return f;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = 0;
	*strrchr(exe, '/') = 0; /* build/host */
	snprintf(path, sizeof path, "%s/../../docs/targets.md", exe);
	return fopen(path, "r");
}

/* One table row into t; false for anything else (header, text, separator). */
static bool parse_row(char *line, struct target *t)
{
	char *cell[4], *p = line, *key, *end;

	if (strncmp(line, "| `", 3))
		return false;
	for (int i = 0; i < 4; i++) {
		p = strchr(p, '|');
		if (!p)
			return false;
		cell[i] = ++p;
	}
	for (int i = 0; i < 3; i++)
		*strchr(cell[i], '|') = 0;
	key = strchr(cell[0], '`') + 1;
	end = strchr(key, '`');
	if (!end)
		return false;
	*end = 0;
	t->key = strdup(key);
	t->figure = strtod(cell[1], NULL);
	if (sscanf(cell[2], " %2s", t->test) != 1)
		return false;
	return !strcmp(t->test, ">=") || !strcmp(t->test, "<=") || !strcmp(t->test, "==");
}

static void load(void)
{
	char line[1024];
	FILE *f = open_table();

	if (!f) {
		fprintf(stderr, "targets: cannot open docs/targets.md\n");
		exit(1);
	}
	while (fgets(line, sizeof line, f) && n_targets < MAX_TARGETS)
		if (parse_row(line, &targets[n_targets]))
			n_targets++;
	fclose(f);
	loaded = true;
}

const struct target *bench_target(const char *key)
{
	if (!loaded)
		load();
	for (unsigned i = 0; i < n_targets; i++)
		if (!strcmp(targets[i].key, key))
			return &targets[i];
	fprintf(stderr, "targets: docs/targets.md has no target '%s'\n", key);
	exit(1);
}

bool target_met(const struct target *t, double value)
{
	if (t->test[0] == '>')
		return value >= t->figure;
	if (t->test[0] == '<')
		return value <= t->figure;
	return value == t->figure;
}

const char *target_verdict(const struct target *t, double value)
{
	return target_met(t, value) ? "met" : "not met";
}
