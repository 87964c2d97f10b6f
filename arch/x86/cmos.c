/* The host's CMOS clock (cmos.h). */
#include "arch/x86/cmos.h"
#include "arch/x86/cpu.h"
#include "arch/x86/lock.h"
#include "lib/civil.h"
#include <stdbool.h>

#define CMOS_INDEX 0x70
#define CMOS_DATA 0x71
#define NMI_DISABLE 0x80 /* keep NMIs masked while the index is set, as firmware does */
#define REG_A_UIP 0x80   /* an update is in progress: the time registers are changing */
#define REG_B_24H 0x02
#define REG_B_BINARY 0x04
#define HOUR_PM 0x80
#define UIP_SPINS 1000000

static uint8_t cmos_read(uint8_t reg)
{
	outb(CMOS_INDEX, NMI_DISABLE | reg);
	return inb(CMOS_DATA);
}

static unsigned from_bcd(uint8_t v, bool binary)
{
	return binary ? v : (v >> 4) * 10u + (v & 0xf);
}

struct cmos_time {
	uint8_t sec, min, hour, day, mon, year, century;
};

static void read_time(struct cmos_time *t)
{
	for (unsigned i = 0; i < UIP_SPINS && (cmos_read(0x0a) & REG_A_UIP); i++)
		cpu_relax();
	t->sec = cmos_read(0x00);
	t->min = cmos_read(0x02);
	t->hour = cmos_read(0x04);
	t->day = cmos_read(0x07);
	t->mon = cmos_read(0x08);
	t->year = cmos_read(0x09);
	t->century = cmos_read(0x32);
}

uint64_t cmos_unix_seconds(void)
{
	struct cmos_time a, b;
	uint8_t regb;
	bool binary;
	struct civil_time t;

	/* Read until two reads agree: an update may fall between the bytes. */
	read_time(&a);
	for (int tries = 0; tries < 4; tries++) {
		read_time(&b);
		if (a.sec == b.sec && a.min == b.min && a.hour == b.hour && a.day == b.day &&
		    a.mon == b.mon && a.year == b.year)
			break;
		a = b;
	}
	regb = cmos_read(0x0b);
	binary = regb & REG_B_BINARY;
	t.hour = from_bcd(b.hour & ~HOUR_PM, binary);
	if (!(regb & REG_B_24H) && (b.hour & HOUR_PM))
		t.hour = t.hour % 12 + 12;
	else if (!(regb & REG_B_24H) && t.hour == 12)
		t.hour = 0;
	t.year = from_bcd(b.year, binary) + 100 * (b.century ? from_bcd(b.century, binary) : 20);
	t.month = from_bcd(b.mon, binary);
	t.day = from_bcd(b.day, binary);
	t.min = from_bcd(b.min, binary);
	t.sec = from_bcd(b.sec, binary);
	if (t.month < 1 || t.month > 12 || t.day < 1 || t.day > 31 || t.hour > 23 || t.year < 1970)
		return 0;
	return (uint64_t)civil_to_unix(&t);
}
