/* Host unit-test runner. Usage: unit [PREFIX...] runs the tests whose names start
 * with one of the prefixes (all tests when none is given). */
#include "check.h"
#include <stdlib.h>
#include <string.h>

static struct unit_test *tests_head;
int unit_failures_in_current;
static const char *current_name;

void unit_register(struct unit_test *t)
{
	/* Keep registration order (constructors run in link order). */
	struct unit_test **p = &tests_head;
	while (*p)
		p = &(*p)->next;
	t->next = NULL;
	*p = t;
}

void unit_fail(const char *file, int line, const char *expr)
{
	if (unit_failures_in_current < 10)
		printf("  %s: %s:%d: %s\n", current_name, file, line, expr);
	unit_failures_in_current++;
}

static int selected(const char *name, int argc, char **argv)
{
	if (argc < 2)
		return 1;
	for (int i = 1; i < argc; i++)
		if (strncmp(name, argv[i], strlen(argv[i])) == 0)
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	int passed = 0, failed = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (struct unit_test *t = tests_head; t; t = t->next) {
		if (!selected(t->name, argc, argv))
			continue;
		current_name = t->name;
		unit_failures_in_current = 0;
		t->fn();
		if (unit_failures_in_current) {
			printf("FAIL %s\n", t->name);
			failed++;
		} else {
			printf("ok %s\n", t->name);
			passed++;
		}
	}
	printf("unit: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
