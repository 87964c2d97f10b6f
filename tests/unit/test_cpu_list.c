/* `vm create ... cpus=LIST` (virt/cpu_list.c). */
#include "check.h"
#include "virt/cpu_list.h"
#include <string.h>

static unsigned parse(const char *s, uint8_t *list, unsigned cap, char *err)
{
	return cpu_list_parse(s, 64, list, cap, err, 128);
}

TEST(cpu_list_forms)
{
	uint8_t l[64];
	char err[128];

	CHECK_EQ_U64(parse("1", l, 64, err), 1);
	CHECK_EQ_U64(l[0], 1);
	CHECK_EQ_U64(parse("1,3", l, 64, err), 2);
	CHECK(l[0] == 1 && l[1] == 3);
	CHECK_EQ_U64(parse("1-3", l, 64, err), 3);
	CHECK(l[0] == 1 && l[1] == 2 && l[2] == 3);
	CHECK_EQ_U64(parse("3,0-1,5-5", l, 64, err), 4);
	CHECK(l[0] == 3 && l[1] == 0 && l[2] == 1 && l[3] == 5);
	CHECK_EQ_U64(parse("0x3", l, 64, err), 1);
	CHECK_EQ_U64(l[0], 3);
	CHECK_EQ_U64(parse("0-63", l, 64, err), 64);
	CHECK_EQ_U64(l[63], 63);
}

TEST(cpu_list_refused)
{
	static const char *const bad[] = {
		"", ",", "1,", ",1", "1,,2", "-", "1-", "-1", "3-1", "1-2-3", "a", "1a", "64",
		"0-64", "1 2", "99999999999999999999", "12345678901234567",
	};
	uint8_t l[64];
	char err[128];

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		CHECK_EQ_U64(parse(bad[i], l, 64, err), 0);
		CHECK(strstr(err, "bad CPU list") != NULL);
	}
	CHECK_EQ_U64(parse("1,1", l, 64, err), 0);
	CHECK(strstr(err, "CPU 1 is listed twice") != NULL);
	CHECK_EQ_U64(parse("0-2,1", l, 64, err), 0);
	CHECK(strstr(err, "listed twice") != NULL);
	CHECK_EQ_U64(parse("0-3", l, 3, err), 0);
	CHECK(strstr(err, "more than 3 CPUs") != NULL);
}
