/* The lock order is written down once for readers, in docs/locking.md's
 * table, and once for the checker, in LOCK_CLASSES (arch/x86/lock.h): the
 * two must list the same classes in the same order, with the same leaf and
 * nesting columns; and every leaf must come after every non-leaf (a leaf is
 * never held while a lock that may wait is taken). */
#include "arch/x86/lock.h"
#include "check.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROW_MAX 32

struct class_row {
	const char *name, *leaf, *nest;
};

struct doc_row {
	char name[32], leaf[8], nest[32];
};

#define LOCK_CLASS_ROW(e, n, l, g) { n, l ? "yes" : "no", #g },
static const struct class_row code_rows[] = { LOCK_CLASSES(LOCK_CLASS_ROW) };
#undef LOCK_CLASS_ROW
#define CODE_ROWS (sizeof(code_rows) / sizeof(code_rows[0]))

/* docs/locking.md from the source tree: the working directory (make test
 * runs from the top) or two levels above build/host/unit. */
static FILE *open_doc(void)
{
	char exe[4096], path[4200];
	ssize_t n;
	FILE *f = fopen("docs/locking.md", "r");

	if (f || (n = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) <= 0)
		return f;
	exe[n] = 0;
	for (int up = 0; up < 3; up++) {
		char *slash = strrchr(exe, '/');

		if (slash)
			*slash = 0;
	}
	snprintf(path, sizeof(path), "%s/docs/locking.md", exe);
	return fopen(path, "r");
}

/* Column i (0 = order) of a table row "| 1 | vm | ... | no | - |", trimmed. */
static void column(const char *line, int i, char *out, size_t len)
{
	const char *p = line;
	size_t n;

	for (int k = 0; k < i; k++)
		if (!(p = strchr(p + 1, '|')))
			break;
	out[0] = 0;
	if (!p)
		return;
	p++;
	while (*p == ' ')
		p++;
	n = strcspn(p, "|");
	while (n && p[n - 1] == ' ')
		n--;
	if (n >= len)
		n = len - 1;
	memcpy(out, p, n);
	out[n] = 0;
}

TEST(lockcheck_doc_table_matches_lock_classes)
{
	FILE *f = open_doc();
	struct doc_row doc[ROW_MAX];
	unsigned rows = 0;
	char line[512];

	REQUIRE(f != NULL);
	while (fgets(line, sizeof(line), f) && rows < ROW_MAX) {
		if (line[0] != '|' || line[2] < '1' || line[2] > '9')
			continue;
		column(line, 1, doc[rows].name, sizeof(doc[rows].name));
		column(line, 3, doc[rows].leaf, sizeof(doc[rows].leaf));
		column(line, 4, doc[rows].nest, sizeof(doc[rows].nest));
		rows++;
	}
	fclose(f);
	REQUIRE(rows == CODE_ROWS);
	for (unsigned i = 0; i < rows; i++) {
		const char *nest = code_rows[i].nest;
		const char *want_nest = "-";

		/* The code names the guard by its enum (COW_SHARE), the doc by
		 * its name (cow_share). */
		for (unsigned k = 0; k < CODE_ROWS && strcmp(nest, "NONE"); k++) {
			char upper[32];
			size_t n = strlen(code_rows[k].name);

			for (size_t c = 0; c <= n && c < sizeof(upper); c++)
				upper[c] = (char)(code_rows[k].name[c] >= 'a' && code_rows[k].name[c] <= 'z'
							  ? code_rows[k].name[c] - 'a' + 'A'
							  : code_rows[k].name[c]);
			if (!strcmp(upper, nest))
				want_nest = code_rows[k].name;
		}
		CHECK(!strcmp(doc[i].name, code_rows[i].name));
		CHECK(!strcmp(doc[i].leaf, code_rows[i].leaf));
		CHECK(!strcmp(doc[i].nest, want_nest));
		if (i && !strcmp(code_rows[i - 1].leaf, "yes"))
			CHECK(!strcmp(code_rows[i].leaf, "yes"));
	}
}
