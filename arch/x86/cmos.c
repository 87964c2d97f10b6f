/* The host's CMOS clock (cmos.h). */
#include "arch/x86/cmos.h"
#include "arch/x86/cpu.h"
#include "arch/x86/lock.h"
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

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
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
	unsigned hour, year, mon, day;
	int64_t days;

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
	hour = from_bcd(b.hour & ~HOUR_PM, binary);
	if (!(regb & REG_B_24H) && (b.hour & HOUR_PM))
		hour = hour % 12 + 12;
	else if (!(regb & REG_B_24H) && hour == 12)
		hour = 0;
	year = from_bcd(b.year, binary) + 100 * (b.century ? from_bcd(b.century, binary) : 20);
	mon = from_bcd(b.mon, binary);
	day = from_bcd(b.day, binary);
	if (mon < 1 || mon > 12 || day < 1 || day > 31 || hour > 23 || year < 1970)
		return 0;
	days = days_from_civil(year, mon, day);
	return (uint64_t)days * 86400 + hour * 3600u + from_bcd(b.min, binary) * 60u +
	       from_bcd(b.sec, binary);
}
