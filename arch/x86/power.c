/* Power off and reboot. Each method gets time to take effect before the next
 * is tried: emulators act on some of these writes asynchronously. */
#include "arch/x86/power.h"
#include "arch/x86/acpi.h"
#include "arch/x86/cpu.h"
#include "arch/x86/direct_map.h"
#include "arch/x86/tsc.h"
#include "lib/print.h"

/* PM1 control register (ACPI 6.5, 4.8.4.2.1). */
#define PM1_SCI_EN (1u << 0)
#define PM1_SLP_TYP_SHIFT 10
#define PM1_SLP_TYP_MASK (7u << PM1_SLP_TYP_SHIFT)
#define PM1_SLP_EN (1u << 13)

#define QEMU_DEBUG_EXIT_PORT 0xf4
#define BOCHS_SHUTDOWN_PORT 0x8900

#define KBC_STATUS 0x64
#define KBC_COMMAND 0x64
#define KBC_INPUT_FULL 0x02
#define KBC_CMD_PULSE_RESET 0xfe

#define RST_CNT_PORT 0xcf9
#define RST_CNT_SYS_RST 0x02
#define RST_CNT_RST_CPU 0x04

#define PCI_CONFIG_ADDRESS 0xcf8
#define PCI_CONFIG_DATA 0xcfc

#define SETTLE_US 500000

__attribute__((noreturn)) static void halt_forever(void)
{
	for (;;) {
		cli();
		hlt();
	}
}

/* Firmware may leave the chipset in legacy mode, where SMM owns the PM1
 * registers; the FADT says how to hand them to the OS. */
static void acpi_enable_mode(void)
{
	if ((inw(acpi.pm1a_cnt) & PM1_SCI_EN) || !acpi.smi_cmd || !acpi.acpi_enable)
		return;
	outb(acpi.smi_cmd, acpi.acpi_enable);
	for (int i = 0; i < 3000 && !(inw(acpi.pm1a_cnt) & PM1_SCI_EN); i++)
		tsc_delay_us(1000);
}

static void pm1_write_sleep(uint16_t port, uint8_t slp_typ, uint16_t en)
{
	uint16_t v = inw(port) & ~(PM1_SLP_TYP_MASK | PM1_SLP_EN);
	outw(port, v | (uint16_t)((slp_typ & 7u) << PM1_SLP_TYP_SHIFT) | en);
}

static void acpi_s5(void)
{
	if (!acpi.has_s5 || !acpi.pm1a_cnt)
		return;
	kprintf("power: off through ACPI S5\n");
	acpi_enable_mode();
	/* As ACPICA does: the sleep type first, then SLP_EN, PM1a before PM1b. */
	pm1_write_sleep(acpi.pm1a_cnt, acpi.slp_typa, 0);
	if (acpi.pm1b_cnt)
		pm1_write_sleep(acpi.pm1b_cnt, acpi.slp_typb, 0);
	pm1_write_sleep(acpi.pm1a_cnt, acpi.slp_typa, PM1_SLP_EN);
	if (acpi.pm1b_cnt)
		pm1_write_sleep(acpi.pm1b_cnt, acpi.slp_typb, PM1_SLP_EN);
	tsc_delay_us(2 * SETTLE_US);
}

void power_off(void)
{
	static const char bochs_shutdown[] = "Shutdown";

	cli();
	acpi_s5();
	kprintf("power: trying the QEMU and Bochs exit ports\n");
	outb(QEMU_DEBUG_EXIT_PORT, 0);
	tsc_delay_us(SETTLE_US);
	for (const char *p = bochs_shutdown; *p; p++)
		outb(BOCHS_SHUTDOWN_PORT, (uint8_t)*p);
	tsc_delay_us(SETTLE_US);
	kprintf("power: could not power off; halted\n");
	halt_forever();
}

/* Bus 0 only, as the ACPI spec confines reset registers (5.2.3.2). */
static void pci_config_write8(uint64_t gas_address, uint8_t v)
{
	uint32_t dev = (gas_address >> 32) & 0x1f;
	uint32_t fn = (gas_address >> 16) & 0x7;
	uint32_t off = gas_address & 0xff;

	outl(PCI_CONFIG_ADDRESS, 0x80000000u | dev << 11 | fn << 8 | (off & 0xfc));
	outb(PCI_CONFIG_DATA + (off & 3), v);
}

static void acpi_reset(void)
{
	const struct acpi_gas *r = &acpi.reset_reg;

	if (!acpi.has_reset_reg)
		return;
	kprintf("power: reboot through the ACPI reset register\n");
	switch (r->space_id) {
	case ACPI_SPACE_IO:
		outb((uint16_t)r->address, acpi.reset_value);
		break;
	case ACPI_SPACE_MEMORY:
		*(volatile uint8_t *)pa_to_va(r->address) = acpi.reset_value;
		break;
	case ACPI_SPACE_PCI_CONFIG:
		pci_config_write8(r->address, acpi.reset_value);
		break;
	default:
		kprintf("power: reset register in address space %u unsupported\n",
			r->space_id);
		return;
	}
	tsc_delay_us(SETTLE_US);
}

static void kbc_reset(void)
{
	/* Without a controller the port floats to 0xff and looks always full. */
	for (int i = 0; i < 10000; i++) {
		if (!(inb(KBC_STATUS) & KBC_INPUT_FULL)) {
			kprintf("power: reboot through the keyboard controller\n");
			outb(KBC_COMMAND, KBC_CMD_PULSE_RESET);
			tsc_delay_us(SETTLE_US);
			return;
		}
		tsc_delay_us(10);
	}
}

static void rst_cnt_reset(void)
{
	kprintf("power: reboot through port 0xcf9\n");
	/* Select a hard reset, then start it with the 0->1 edge of RST_CPU. */
	outb(RST_CNT_PORT, RST_CNT_SYS_RST);
	tsc_delay_us(50);
	outb(RST_CNT_PORT, RST_CNT_SYS_RST | RST_CNT_RST_CPU);
	tsc_delay_us(SETTLE_US);
}

void power_reboot(void)
{
	static const struct {
		uint16_t limit;
		uint64_t base;
	} __attribute__((packed)) empty_idt = { 0, 0 };

	cli();
	acpi_reset();
	kbc_reset();
	rst_cnt_reset();
	kprintf("power: reboot through a triple fault\n");
	/* With no IDT, the breakpoint faults, the fault double-faults, and the
	 * double fault shuts the processor down, which the chipset turns into a reset. */
	__asm__ volatile("lidt %0; int3" ::"m"(empty_idt));
	halt_forever();
}
