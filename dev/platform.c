/* The VM's chipset (platform.h). */
#include "dev/platform.h"
#include "arch/x86/cmos.h"
#include "arch/x86/tsc.h"
#include "lib/print.h"
#include "lib/string.h"
#include "mm/frame.h"
#include "dev/acpi_tables.h"
#include "virt/emulate.h"
#include "virt/vm.h"

#define TESTDEV_IOMEM_ORDER 4 /* 64 KiB */
#define PORT_KBD_STATUS 0x64  /* 8042: a write of 0xFE pulses the reset line */
#define KBD_CMD_RESET 0xfe
#define RCR_RESET_CPU 0x04    /* port 0xCF9 (PIIX3 reset control): bit 2 resets */
#define ISA_IRQS 16
/* QEMU's MADT overrides IRQ 0 to GSI 2; the other ISA IRQs are their GSI. */
#define IRQ0_GSI 2

const char *const platform_device_names[DEV_COUNT] = {
	[DEV_IOAPIC] = "ioapic", [DEV_PIC] = "pic",         [DEV_PIT] = "pit",
	[DEV_RTC] = "rtc",       [DEV_PMTIMER] = "pmtimer", [DEV_FWCFG] = "fwcfg",
	[DEV_PCI] = "pci",       [DEV_TESTDEV] = "testdev",
};

static void testdev_irq(void *ctx, unsigned irq, bool level)
{
	if (irq < ISA_IRQS)
		platform_set_isa_irq(ctx, irq, level);
}

/* As a host-side invalidation: the mapping goes, the memory stays. */
static void testdev_flush(void *ctx, uint64_t gpa)
{
	struct vm *vm = ctx;

	if (gpa < vm->mem_bytes)
		mmu_zap(&vm->mmu, gpa, PAGE_SIZE);
}

int platform_init(struct vm *vm, bool testdev)
{
	struct platform *p = &vm->platform;
	uint64_t tsc = vm_guest_tsc(vm);
	struct testdev_ops ops = { .set_irq = testdev_irq, .flush_page = testdev_flush, .ctx = vm };
	uint64_t wall = cmos_unix_seconds();
	paddr_t iomem = 0;

	if (testdev && !(iomem = frame_alloc_zeroed(TESTDEV_IOMEM_ORDER)))
		return -1;
	ioapic_init(&p->ioapic, &vm->apic_bus);
	vm->apic_bus.level_eoi = ioapic_level_eoi;
	vm->apic_bus.level_eoi_ctx = &p->ioapic;
	pic_init(&p->pic);
	pit_init(&p->pit, tsc_khz());
	/* The RTC reads the host's wall clock as of the guest's TSC now. */
	rtc_init(&p->rtc, tsc_khz(), wall - (tsc_khz() ? tsc / (tsc_khz() * 1000) : 0),
		 vm->mem_bytes);
	pmtimer_init(&p->pmtimer, tsc_khz());
	fwcfg_init_vm(&p->fwcfg, vm->mem_bytes, vm->nr_vcpus);
	pci_init(&p->pci);
	/* No SMI command port: ACPI is on from the start (SCI_EN set). */
	p->pm1_cnt = ACPI_PM1_CNT_SCI_EN;
	p->testdev_on = testdev;
	testdev_init(&p->testdev, iomem ? pa_to_va(iomem) : NULL, &ops);
	return 0;
}

void platform_destroy(struct vm *vm)
{
	struct platform *p = &vm->platform;

	if (p->testdev.iomem)
		frame_free(va_to_pa(p->testdev.iomem), TESTDEV_IOMEM_ORDER);
	p->testdev.iomem = NULL;
}

int platform_write_acpi(struct vm *vm)
{
	static uint8_t rsdp[ACPI_RSDP_LEN], tables[ACPI_TABLES_SIZE(VM_VCPUS_MAX)];
	uint64_t tables_gpa = PLATFORM_ACPI_GPA + 0x40;
	size_t n = acpi_build(rsdp, tables, sizeof(tables), vm->nr_vcpus, PLATFORM_ACPI_GPA,
			      tables_gpa);

	if (!n || mmu_write_guest(&vm->mmu, PLATFORM_ACPI_GPA, rsdp, sizeof(rsdp)) ||
	    mmu_write_guest(&vm->mmu, tables_gpa, tables, n))
		return -1;
	return 0;
}

static void count(struct platform *p, enum platform_device d)
{
	p->exits[d]++;
}

/* PM1a: status and enable (write-one-to-clear status), control with the
 * sleep request; S5 is the one sleep state offered (the DSDT's _S5). */
static bool pm_io(struct vm *vm, uint16_t port, unsigned size, bool in, uint32_t *val)
{
	struct platform *p = &vm->platform;
	unsigned off = port - ACPI_PM_BASE;

	if (off >= 8 && off < 12) {
		if (in)
			*val = pmtimer_read(&p->pmtimer, vm_guest_tsc(vm)) >> (8 * (off - 8));
		count(p, DEV_PMTIMER);
		return true;
	}
	count(p, DEV_PMTIMER);
	if (off < 2) {
		if (in)
			*val = p->pm1_sts >> (8 * off);
		else
			p->pm1_sts &= (uint16_t)~(*val << (8 * off));
	} else if (off < 4) {
		if (in)
			*val = p->pm1_en >> (8 * (off - 2));
		else
			p->pm1_en = (uint16_t)(*val << (8 * (off - 2)));
	} else if (in) {
		*val = (p->pm1_cnt & ~ACPI_PM1_CNT_SLP_EN) >> (8 * (off - 4));
	} else {
		uint16_t cnt = off == 4 && size >= 2 ? (uint16_t)*val
			       : off == 4 ? (uint16_t)((p->pm1_cnt & 0xff00) | (*val & 0xff))
					  : (uint16_t)((p->pm1_cnt & 0xff) | (*val << 8));

		p->pm1_cnt = cnt & ~ACPI_PM1_CNT_SLP_EN;
		if ((cnt & ACPI_PM1_CNT_SLP_EN) &&
		    ((cnt & ACPI_PM1_CNT_SLP_TYP_MASK) >> ACPI_PM1_CNT_SLP_TYP_SHIFT) == ACPI_SLP_TYP_S5) {
			vm->exit_note = " (ACPI power off)";
			vm_exit(vm, 0);
		}
	}
	return true;
}

bool platform_io(struct vm *vm, uint16_t port, unsigned size, bool in, uint32_t *val)
{
	struct platform *p = &vm->platform;
	uint64_t now = vm_guest_tsc(vm);

	if (port == PIC_MASTER_CMD || port == PIC_MASTER_DATA || port == PIC_SLAVE_CMD ||
	    port == PIC_SLAVE_DATA || port == PIC_ELCR_MASTER || port == PIC_ELCR_SLAVE) {
		if (in)
			*val = pic_port_read(&p->pic, port);
		else
			pic_port_write(&p->pic, port, (uint8_t)*val);
		count(p, DEV_PIC);
	} else if ((port >= PIT_PORT_CH0 && port <= PIT_PORT_CMD) || port == PIT_PORT_61) {
		if (in)
			*val = pit_port_read(&p->pit, port, now);
		else
			pit_port_write(&p->pit, port, (uint8_t)*val, now);
		count(p, DEV_PIT);
	} else if (port == RTC_PORT_INDEX || port == RTC_PORT_DATA) {
		if (in)
			*val = rtc_port_read(&p->rtc, port, now);
		else
			rtc_port_write(&p->rtc, port, (uint8_t)*val, now);
		count(p, DEV_RTC);
	} else if (port >= ACPI_PM_BASE && port < ACPI_PM_BASE + 12) {
		return pm_io(vm, port, size, in, val);
	} else if (port == FWCFG_PORT_SEL || port == FWCFG_PORT_DATA) {
		if (in)
			*val = fwcfg_port_read(&p->fwcfg, port, size);
		else
			fwcfg_port_write(&p->fwcfg, port, size, *val);
		count(p, DEV_FWCFG);
	} else if (port == ACPI_RESET_PORT && size == 1) {
		if (in) {
			*val = p->reset_control;
		} else {
			p->reset_control = (uint8_t)(*val & ~RCR_RESET_CPU);
			if (*val & RCR_RESET_CPU)
				vm_fail(vm, "guest reset");
		}
	} else if (port >= PCI_PORT_ADDR && port < PCI_PORT_DATA + 4) {
		if (in)
			*val = pci_port_read(&p->pci, port, size);
		else
			pci_port_write(&p->pci, port, size, *val);
		count(p, DEV_PCI);
	} else if (port == PORT_KBD_STATUS) {
		/* The 8042 is not there but for its reset line: its status reads
		 * "nothing to read, room to write". */
		if (in)
			*val = 0;
		else if ((*val & 0xff) == KBD_CMD_RESET)
			vm_fail(vm, "guest reset");
	} else if (p->testdev_on && (in ? testdev_port_read(&p->testdev, port, size, val)
				       : testdev_port_write(&p->testdev, port, size, *val))) {
		count(p, DEV_TESTDEV);
	} else {
		return false;
	}
	return true;
}

static bool in_ioapic(uint64_t gpa)
{
	return gpa >= IOAPIC_BASE && gpa < IOAPIC_BASE + IOAPIC_SIZE;
}

static bool in_testdev(const struct platform *p, uint64_t gpa)
{
	return p->testdev_on && gpa >= TESTDEV_MMIO_BASE &&
	       gpa < TESTDEV_MMIO_BASE + TESTDEV_MMIO_SIZE;
}

bool platform_claims(const struct vm *vm, uint64_t gpa)
{
	return in_ioapic(gpa) || in_testdev(&vm->platform, gpa);
}

bool platform_mmio(struct vm *vm, uint64_t gpa, unsigned size, uint64_t *val, bool write)
{
	struct platform *p = &vm->platform;

	if (in_ioapic(gpa)) {
		if (write)
			ioapic_mmio_write(&p->ioapic, (unsigned)(gpa - IOAPIC_BASE), size, (uint32_t)*val);
		else
			*val = ioapic_mmio_read(&p->ioapic, (unsigned)(gpa - IOAPIC_BASE), size);
		count(p, DEV_IOAPIC);
		return true;
	}
	if (in_testdev(p, gpa)) {
		if (write)
			testdev_mmio_write(&p->testdev, (unsigned)(gpa - TESTDEV_MMIO_BASE), size, *val);
		else
			*val = testdev_mmio_read(&p->testdev, (unsigned)(gpa - TESTDEV_MMIO_BASE), size);
		count(p, DEV_TESTDEV);
		return true;
	}
	return false;
}

void platform_set_isa_irq(struct vm *vm, unsigned irq, bool level)
{
	struct platform *p = &vm->platform;

	pic_set_irq(&p->pic, irq, level);
	ioapic_set_irq(&p->ioapic, irq == 0 ? IRQ0_GSI : irq, level);
}

void platform_update(struct vm *vm, uint64_t now)
{
	/* An edge each time: the PIC and the I/O APIC see the rise. */
	if (pit_irq0_edges(&vm->platform.pit, now)) {
		platform_set_isa_irq(vm, 0, true);
		platform_set_isa_irq(vm, 0, false);
	}
}

uint64_t platform_next_event(struct vm *vm, uint64_t now)
{
	return pit_next_irq0(&vm->platform.pit, now);
}

/* LINT0 takes the PIC's INTR when it is programmed ExtINT and unmasked, or
 * when the APIC is off and the pin is the CPU's INTR (SDM 10.4.3). */
static bool lint0_extint(const struct lapic *a)
{
	uint32_t lvt = a->lvt[LAPIC_LVT_LINT0];

	if (!lapic_hw_enabled(a))
		return true;
	return !(lvt & LAPIC_LVT_MASKED) && ((lvt >> 8) & 7) == LAPIC_DM_EXTINT;
}

bool platform_extint_pending(struct vm *vm)
{
	return lint0_extint(&vm->vcpus[0]->apic) && pic_output(&vm->platform.pic);
}

uint8_t platform_extint_ack(struct vm *vm)
{
	return pic_ack(&vm->platform.pic);
}

void platform_print_stats(const struct vm *vm)
{
	const struct platform *p = &vm->platform;

	for (int d = 0; d < DEV_COUNT; d++)
		kprintf("  exits_%-20s %llu\n", platform_device_names[d],
			(unsigned long long)p->exits[d]);
	for (unsigned pin = 0; pin < IOAPIC_PINS; pin++)
		if (p->ioapic.delivered[pin])
			kprintf("  ioapic_pin_%-15u %llu\n", pin,
				(unsigned long long)p->ioapic.delivered[pin]);
}
