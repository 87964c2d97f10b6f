/* The test guests' verdict lines: `PASS: NAME`, `FAIL: NAME (detail)`,
 * `SKIP: NAME (why)`, then a summary "GUEST: N passed, N failed, N skipped".
 * The same lines bare and under sprig: details never hold what differs
 * between the two (timings go into `info:` lines). */
#pragma once

void pass(const char *name);
void fail(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void skip(const char *name, const char *why);
/* Print the summary line for guest; the exit status: 0 when nothing failed. */
int report_summary(const char *guest);
