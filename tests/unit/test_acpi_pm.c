/* Power and reset control (dev/acpi_pm.c): the PM1 registers as the guest
 * reads and writes them, S5, and the reset sources. */
#include "check.h"
#include "dev/acpi_pm.h"
#include "dev/acpi_tables.h"
#include <string.h>

#define CNT 4 /* PM1_CNT's offset */

TEST(acpi_pm_power_on)
{
	struct acpi_pm pm;

	acpi_pm_init(&pm);
	CHECK_EQ_U64(acpi_pm1_read(&pm, 0), 0);
	CHECK_EQ_U64(acpi_pm1_read(&pm, 2), 0);
	CHECK_EQ_U64(acpi_pm1_read(&pm, CNT), ACPI_PM1_CNT_SCI_EN);
	CHECK_EQ_U64(acpi_pm_reset_read(&pm), 0);
}

TEST(acpi_pm1_registers)
{
	struct acpi_pm pm;

	acpi_pm_init(&pm);
	pm.pm1_sts = 0x8121; /* as if events had set them */
	CHECK_EQ_U64(acpi_pm1_read(&pm, 0) & 0xffff, 0x8121);
	CHECK_EQ_U64(acpi_pm1_read(&pm, 1) & 0xff, 0x81);
	/* write one to clear, by word and by byte */
	CHECK(acpi_pm1_write(&pm, 0, 2, 0x0001) == ACPI_PM_NONE);
	CHECK_EQ_U64(pm.pm1_sts, 0x8120);
	CHECK(acpi_pm1_write(&pm, 1, 1, 0x80) == ACPI_PM_NONE);
	CHECK_EQ_U64(pm.pm1_sts, 0x0120);
	CHECK(acpi_pm1_write(&pm, 2, 2, 0x0121) == ACPI_PM_NONE);
	CHECK_EQ_U64(acpi_pm1_read(&pm, 2) & 0xffff, 0x0121);
	CHECK_EQ_U64(acpi_pm1_read(&pm, 3) & 0xff, 0x01);
	/* PM1_CNT: the low byte alone, the high byte alone, a reserved
	 * sleep type stored */
	CHECK(acpi_pm1_write(&pm, CNT, 1, 0x00) == ACPI_PM_NONE);
	CHECK_EQ_U64(acpi_pm1_read(&pm, CNT) & 0xffff, 0);
	CHECK(acpi_pm1_write(&pm, CNT + 1, 1, 0x14) == ACPI_PM_NONE); /* SLP_TYP 5 */
	CHECK_EQ_U64(acpi_pm1_read(&pm, CNT) & 0xffff, 0x1400);
	CHECK(acpi_pm1_write(&pm, CNT, 1, 0x01) == ACPI_PM_NONE);
	CHECK_EQ_U64(acpi_pm1_read(&pm, CNT) & 0xffff, 0x1401);
	CHECK_EQ_U64(acpi_pm1_read(&pm, 6) & 0xffff, 0);
}

TEST(acpi_pm1_sleep)
{
	struct acpi_pm pm;
	uint32_t s5 = ACPI_SLP_TYP_S5 << ACPI_PM1_CNT_SLP_TYP_SHIFT;

	acpi_pm_init(&pm);
	/* another sleep type with SLP_EN: stored, SLP_EN reads 0, nothing */
	CHECK(acpi_pm1_write(&pm, CNT, 2, (5u << ACPI_PM1_CNT_SLP_TYP_SHIFT) |
					      ACPI_PM1_CNT_SLP_EN | 1) == ACPI_PM_NONE);
	CHECK_EQ_U64(acpi_pm1_read(&pm, CNT) & 0xffff, (5u << ACPI_PM1_CNT_SLP_TYP_SHIFT) | 1);
	/* S5 without SLP_EN: nothing yet; with it, by word or high byte: off */
	CHECK(acpi_pm1_write(&pm, CNT, 2, s5 | 1) == ACPI_PM_NONE);
	CHECK(acpi_pm1_write(&pm, CNT, 2, s5 | ACPI_PM1_CNT_SLP_EN | 1) == ACPI_PM_POWER_OFF);
	CHECK(acpi_pm1_write(&pm, CNT + 1, 1, (s5 | ACPI_PM1_CNT_SLP_EN) >> 8) == ACPI_PM_POWER_OFF);
	CHECK_EQ_U64(acpi_pm1_read(&pm, CNT) & ACPI_PM1_CNT_SLP_EN, 0);
	/* SLP_EN is not kept: a later write of the other byte sleeps no more */
	CHECK(acpi_pm1_write(&pm, CNT, 1, 0x01) == ACPI_PM_NONE);
}

TEST(acpi_pm_reset_sources)
{
	struct acpi_pm pm;

	acpi_pm_init(&pm);
	CHECK(acpi_pm_reset_write(&pm, 0x02) == ACPI_PM_NONE);
	CHECK_EQ_U64(acpi_pm_reset_read(&pm), 0x02);
	CHECK(acpi_pm_reset_write(&pm, ACPI_RESET_VALUE) == ACPI_PM_RESET);
	CHECK_EQ_U64(acpi_pm_reset_read(&pm), 0x02); /* bit 2 is not kept */
	CHECK(acpi_pm_kbd_write(0xfe) == ACPI_PM_RESET);
	CHECK(acpi_pm_kbd_write(0xff) == ACPI_PM_NONE);
	CHECK(acpi_pm_kbd_write(0xd1) == ACPI_PM_NONE);
}

/* ---- the state record (acpi_pm_record) ---- */

TEST(acpi_pm_record_round_trip_and_refusals)
{
	struct acpi_pm a, b, z;
	uint8_t buf[16];
	struct field_io io = field_saver(buf, sizeof buf);
	struct record_limits lim = { .nr_vcpus = 1 };
	char err[128] = "";

	acpi_pm_init(&a);
	a.pm1_sts = 0x0121;
	CHECK(acpi_pm1_write(&a, 2, 2, 0x0120) == ACPI_PM_NONE);
	CHECK(acpi_pm1_write(&a, CNT + 1, 1, 0x14) == ACPI_PM_NONE);
	CHECK(acpi_pm_reset_write(&a, 0x0a) == ACPI_PM_NONE);
	acpi_pm_record.fields(&a, &io);
	REQUIRE(!io.overrun && io.pos == record_type_bytes(&acpi_pm_record));
	acpi_pm_init(&b);
	io = field_loader(buf, io.pos);
	acpi_pm_record.fields(&b, &io);
	CHECK(!io.overrun && !io.bad);
	CHECK(acpi_pm_record.check(&b, &lim, err, sizeof err));
	/* The same reads, and the same future: S5 powers off both. */
	for (unsigned off = 0; off < ACPI_PM1_BYTES; off++)
		CHECK_EQ_U64(acpi_pm1_read(&a, off), acpi_pm1_read(&b, off));
	CHECK_EQ_U64(acpi_pm_reset_read(&a), acpi_pm_reset_read(&b));
	CHECK(acpi_pm1_write(&a, CNT + 1, 1, 0x34) == acpi_pm1_write(&b, CNT + 1, 1, 0x34));
	/* What no write leaves behind is refused, naming the field. */
	memset(&z, 0, sizeof z);
	z.pm1_cnt = ACPI_PM1_CNT_SLP_EN;
	CHECK(!acpi_pm_record.check(&z, &lim, err, sizeof err) && strstr(err, "pm1_cnt"));
	memset(&z, 0, sizeof z);
	z.reset_control = 0x04;
	CHECK(!acpi_pm_record.check(&z, &lim, err, sizeof err) && strstr(err, "reset_control"));
}
