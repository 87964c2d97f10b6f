/* Power and reset control (acpi_pm.h). */
#include "dev/acpi_pm.h"
#include "dev/acpi_tables.h"
#include "lib/print.h"
#include "lib/string.h"

#define RCR_RESET_CPU 0x04 /* PIIX3 reset control: bit 2 resets */
#define KBD_CMD_RESET 0xfe

void acpi_pm_init(struct acpi_pm *pm)
{
	memset(pm, 0, sizeof(*pm));
	pm->pm1_cnt = ACPI_PM1_CNT_SCI_EN;
}

uint32_t acpi_pm1_read(const struct acpi_pm *pm, unsigned off)
{
	if (off < 2)
		return (uint32_t)pm->pm1_sts >> (8 * off);
	if (off < 4)
		return (uint32_t)pm->pm1_en >> (8 * (off - 2));
	return (uint32_t)(pm->pm1_cnt & ~ACPI_PM1_CNT_SLP_EN) >> (8 * (off - 4));
}

enum acpi_pm_action acpi_pm1_write(struct acpi_pm *pm, unsigned off, unsigned size, uint32_t val)
{
	uint16_t cnt;

	if (off < 2) {
		pm->pm1_sts &= (uint16_t)~(val << (8 * off));
		return ACPI_PM_NONE;
	}
	if (off < 4) {
		pm->pm1_en = (uint16_t)(val << (8 * (off - 2)));
		return ACPI_PM_NONE;
	}
	cnt = off == 4 && size >= 2 ? (uint16_t)val
	      : off == 4 ? (uint16_t)((pm->pm1_cnt & 0xff00) | (val & 0xff))
			 : (uint16_t)((pm->pm1_cnt & 0xff) | (val << 8));
	pm->pm1_cnt = cnt & ~ACPI_PM1_CNT_SLP_EN;
	if ((cnt & ACPI_PM1_CNT_SLP_EN) &&
	    ((cnt & ACPI_PM1_CNT_SLP_TYP_MASK) >> ACPI_PM1_CNT_SLP_TYP_SHIFT) == ACPI_SLP_TYP_S5)
		return ACPI_PM_POWER_OFF;
	return ACPI_PM_NONE;
}

uint8_t acpi_pm_reset_read(const struct acpi_pm *pm)
{
	return pm->reset_control;
}

enum acpi_pm_action acpi_pm_reset_write(struct acpi_pm *pm, uint8_t val)
{
	pm->reset_control = val & ~RCR_RESET_CPU;
	return val & RCR_RESET_CPU ? ACPI_PM_RESET : ACPI_PM_NONE;
}

enum acpi_pm_action acpi_pm_kbd_write(uint8_t cmd)
{
	return cmd == KBD_CMD_RESET ? ACPI_PM_RESET : ACPI_PM_NONE;
}

/* The registers as the guest left them. A sleep request (SLP_EN) and the
 * reset bit act at the write and are never kept: a state holding one is not
 * one this model reaches. */
static void acpi_pm_fields(void *model, struct field_io *io)
{
	struct acpi_pm *pm = model;

	FIELD(io, pm->pm1_sts);
	FIELD(io, pm->pm1_en);
	FIELD(io, pm->pm1_cnt);
	FIELD(io, pm->reset_control);
}

static bool acpi_pm_state_check(const void *model, const struct record_limits *lim, char *err,
				size_t errlen)
{
	const struct acpi_pm *pm = model;

	(void)lim;
	if (pm->pm1_cnt & ACPI_PM1_CNT_SLP_EN) {
		ksnprintf(err, errlen, "pm1_cnt 0x%x holds SLP_EN", pm->pm1_cnt);
		return false;
	}
	if (pm->reset_control & RCR_RESET_CPU) {
		ksnprintf(err, errlen, "reset_control 0x%x holds the reset bit", pm->reset_control);
		return false;
	}
	return true;
}

const struct record_type acpi_pm_record = {
	.id = REC_ACPI_PM, .version = 1, .name = "acpi_pm", .model_bytes = sizeof(struct acpi_pm),
	.fields = acpi_pm_fields, .check = acpi_pm_state_check,
};
