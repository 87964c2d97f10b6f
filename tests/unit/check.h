/* Minimal host unit-test framework: TEST() registers a test, CHECK() records a failure.
 * The runner (tests/unit/main.c) prints "ok NAME" or "FAIL NAME: file:line: expr" and
 * a closing "unit: N passed, N failed". A test fails if any CHECK in it fails. */
#pragma once
#include <stdbool.h>
#include <stdio.h>

struct unit_test {
	const char *name;
	void (*fn)(void);
	struct unit_test *next;
};

void unit_register(struct unit_test *t);
void unit_fail(const char *file, int line, const char *expr);
extern int unit_failures_in_current;

#define TEST(name_)                                                            \
	static void test_##name_(void);                                        \
	static struct unit_test unit_##name_ = { #name_, test_##name_, 0 };    \
	__attribute__((constructor)) static void unit_reg_##name_(void)        \
	{                                                                      \
		unit_register(&unit_##name_);                                  \
	}                                                                      \
	static void test_##name_(void)

/* Record a failure and go on: one test can report several broken facts. */
#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			unit_fail(__FILE__, __LINE__, #cond);                  \
	} while (0)

/* Record a failure and leave the test: for facts the rest of the test builds on. */
#define REQUIRE(cond)                                                          \
	do {                                                                   \
		if (!(cond)) {                                                 \
			unit_fail(__FILE__, __LINE__, #cond);                  \
			return;                                                \
		}                                                              \
	} while (0)

#define CHECK_EQ_U64(a, b)                                                     \
	do {                                                                   \
		unsigned long long a_ = (a), b_ = (b);                         \
		if (a_ != b_) {                                                \
			char m_[256];                                          \
			snprintf(m_, sizeof m_, "%s == %s (0x%llx != 0x%llx)", \
				 #a, #b, a_, b_);                              \
			unit_fail(__FILE__, __LINE__, m_);                     \
		}                                                              \
	} while (0)
