/* The test guests' verdict lines (report.h). */
#include "guests/rt/report.h"
#include "guests/rt/rt.h"

static int passed, failed, skipped;

void pass(const char *name)
{
	printf("PASS: %s\n", name);
	passed++;
}

void fail(const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("FAIL: %s (", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(")\n");
	failed++;
}

void skip(const char *name, const char *why)
{
	printf("SKIP: %s (%s)\n", name, why);
	skipped++;
}

int report_summary(const char *guest)
{
	printf("%s: %d passed, %d failed, %d skipped\n", guest, passed, failed, skipped);
	return failed ? 1 : 0;
}
