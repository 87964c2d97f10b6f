/* Power off and reboot. Each method gets time to take effect before the next
 * is tried: emulators act on some of these writes asynchronously. */
#include "arch/x86/power.h"
#include "arch/x86/acpi.h"
#include "arch/x86/cpu.h"
#include "arch/x86/apic.h"
#include "arch/x86/direct_map.h"
#include "arch/x86/lock.h"
#include "arch/x86/percpu.h"
#include "arch/x86/regs.h"
#include "arch/x86/smp.h"
#include "arch/x86/tsc.h"
#include "arch/x86/console.h"
#include "lib/print.h"

/* PM1 control register (ACPI 6.5, 4.8.4.2.1). */
#define PM1_SCI_EN (1u << 0)
#define PM1_SLP_TYP_SHIFT 10
#define PM1_SLP_TYP_MASK (7u << PM1_SLP_TYP_SHIFT)
#define PM1_SLP_EN (1u << 13)
/* PM1 status (4.8.4.1.1): write 1 to clear. Every fixed status bit, as
 * ACPICA's AcpiHwClearAcpiStatus: a wake status left set can wake the
 * machine from S5 at once. */
#define PM1_STS_ALL 0x8731u

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
/* How long the other CPUs get to take the stop NMI. */
#define STOP_WAIT_US 100000
#define NO_CPU (-1)

int power_panic_action = PANIC_HALT;
bool power_exit_failed;
const char *const panic_action_names[PANIC_ACTIONS + 1] = { "halt", "reboot", "poweroff", NULL };

static int stopping_cpu = NO_CPU; /* the CPU that stops the others */
static unsigned cpus_stopped;

__attribute__((noreturn)) static void halt_forever(void)
{
	for (;;) {
		cli();
		hlt();
	}
}

/* INIT is blocked in VMX root operation (SDM vol. 3C, 24.8) and held while
 * GIF is clear (APM vol. 2, 15.17); a reset through the chipset may be an
 * INIT. VMX: sprig's per-CPU state exists only after a VMXON that worked. */
static void leave_virtualization(void)
{
	uint64_t efer = rdmsr(MSR_EFER);

	if (efer & EFER_SVME) {
		__asm__ volatile("stgi" ::: "memory");
		wrmsr(MSR_EFER, efer & ~(uint64_t)EFER_SVME);
	} else if ((read_cr4() & CR4_VMXE) && this_cpu()->virt) {
		__asm__ volatile("vmxoff" ::: "cc", "memory");
		write_cr4(read_cr4() & ~CR4_VMXE);
	}
}

bool power_stop_requested(void)
{
	int cpu = __atomic_load_n(&stopping_cpu, __ATOMIC_ACQUIRE);

	return cpu != NO_CPU && cpu != (int)this_cpu()->id;
}

void power_stop_this_cpu(void)
{
	cli();
	leave_virtualization();
	__atomic_fetch_add(&cpus_stopped, 1, __ATOMIC_RELEASE);
	halt_forever();
}

/* As Linux's emergency shutdown: an NMI reaches a CPU whatever it does, in
 * a guest (which exits to sprig) or with interrupts off. The first CPU to
 * get here stops the others; one that comes second is stopped itself. */
static void stop_other_cpus(void)
{
	int none = NO_CPU;
	unsigned me = this_cpu()->id, sent = 0;

	if (!__atomic_compare_exchange_n(&stopping_cpu, &none, (int)me, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE) && none != (int)me)
		power_stop_this_cpu();
	for (unsigned id = 0; id < smp_cpu_count(); id++)
		if (id != me && smp_cpu_state(id) != CPU_OFFLINE) {
			apic_send_ipi(smp_apic_id(id), APIC_ICR_NMI | APIC_ICR_LEVEL_ASSERT);
			sent++;
		}
	for (uint64_t t0 = rdtsc(); __atomic_load_n(&cpus_stopped, __ATOMIC_ACQUIRE) < sent &&
				    rdtsc() - t0 < tsc_from_us(STOP_WAIT_US);)
		cpu_relax();
}

/* The other CPUs stopped, this one out of VMX or SVM, and the console ours
 * whoever held it (it may have been stopped holding it). */
static void leave_alone(void)
{
	cli();
	stop_other_cpus();
	leave_virtualization();
	console_lock_for_report();
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
	/* ACPI 6.5, 16.1.6: the status bits are cleared before SLP_EN. */
	if (acpi.pm1a_evt)
		outw(acpi.pm1a_evt, PM1_STS_ALL);
	if (acpi.pm1b_evt)
		outw(acpi.pm1b_evt, PM1_STS_ALL);
	/* As ACPICA does: the sleep type first, then SLP_EN, PM1a before PM1b. */
	pm1_write_sleep(acpi.pm1a_cnt, acpi.slp_typa, 0);
	if (acpi.pm1b_cnt)
		pm1_write_sleep(acpi.pm1b_cnt, acpi.slp_typb, 0);
	pm1_write_sleep(acpi.pm1a_cnt, acpi.slp_typa, PM1_SLP_EN);
	if (acpi.pm1b_cnt)
		pm1_write_sleep(acpi.pm1b_cnt, acpi.slp_typb, PM1_SLP_EN);
	tsc_delay_us(2 * SETTLE_US);
}

/* Only where the ACPI tables are QEMU's or Bochs': on a real machine these
 * ports may belong to a device. */
static void emulator_exit(void)
{
	static const char bochs_shutdown[] = "Shutdown";

	if (!acpi.emulator)
		return;
	kprintf("power: trying the QEMU and Bochs exit ports\n");
	outb(QEMU_DEBUG_EXIT_PORT, 0);
	tsc_delay_us(SETTLE_US);
	for (const char *p = bochs_shutdown; *p; p++)
		outb(BOCHS_SHUTDOWN_PORT, (uint8_t)*p);
	tsc_delay_us(SETTLE_US);
}

/* Before S5, which QEMU obeys with exit status 0: a test harness must see
 * that selftest failed. */
static void emulator_exit_failed(void)
{
	if (!acpi.emulator || !power_exit_failed)
		return;
	kprintf("power: selftest failed: writing 1 to the QEMU exit port\n");
	outb(QEMU_DEBUG_EXIT_PORT, 1);
	tsc_delay_us(SETTLE_US);
}

void power_off(void)
{
	leave_alone();
	emulator_exit_failed();
	acpi_s5();
	emulator_exit();
	if (power_panic_action == PANIC_REBOOT) {
		kprintf("power: could not power off; rebooting (panic=reboot)\n");
		power_reboot();
	}
	kprintf("power: could not power off; halting (panic=%s)\n",
		panic_action_names[power_panic_action]);
	halt_forever();
}

void power_panic(void)
{
	switch (power_panic_action) {
	case PANIC_REBOOT:
		kprintf("panic: rebooting (panic=reboot)\n");
		power_reboot();
	case PANIC_POWEROFF:
		kprintf("panic: powering off (panic=poweroff)\n");
		power_off();
	default:
		kprintf("panic: halting (panic=halt)\n*** CPU stopped.\n");
		halt_forever();
	}
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

	leave_alone();
	acpi_reset();
	kbc_reset();
	rst_cnt_reset();
	kprintf("power: reboot through a triple fault\n");
	/* With no IDT, the breakpoint faults, the fault double-faults, and the
	 * double fault shuts the processor down, which the chipset turns into a reset. */
	__asm__ volatile("lidt %0; int3" ::"m"(empty_idt));
	halt_forever();
}
