/* The VM's chipset (platform.h). */
#include "dev/platform.h"
#include "arch/x86/cmos.h"
#include "arch/x86/tsc.h"
#include "lib/print.h"
#include "lib/string.h"
#include "mm/frame.h"
#include "dev/acpi_tables.h"
#include "dev/com1.h"
#include "dev/firmware.h"
#include "dev/isa.h"
#include "virt/vm.h"

#define TESTDEV_IOMEM_ORDER 4 /* 64 KiB */
#define ISA_IRQS 16
/* QEMU's MADT overrides IRQ 0 to GSI 2; the other ISA IRQs are their GSI. */
#define IRQ0_GSI 2

/* ---- the devices' adapters (the ISA ports': isa.c, COM1's: com1.c) ---- */

static bool ioapic_read(struct vm *vm, struct vm_device *d, uint64_t gpa, unsigned size,
			uint64_t *val)
{
	(void)vm;
	*val = ioapic_mmio_read(d->model, (unsigned)(gpa - IOAPIC_BASE), size);
	return true;
}

static bool ioapic_write(struct vm *vm, struct vm_device *d, uint64_t gpa, unsigned size,
			 uint64_t val)
{
	(void)vm;
	ioapic_mmio_write(d->model, (unsigned)(gpa - IOAPIC_BASE), size, (uint32_t)val);
	return true;
}

static const struct bus_ops ioapic_ops = { .read = ioapic_read, .write = ioapic_write };
static const struct device_spec ioapic_device = {
	.name = "ioapic", .record = &ioapic_record, .mmio_ops = &ioapic_ops, .mmio = { { IOAPIC_BASE, IOAPIC_SIZE } },
};

static bool pci_read(struct vm *vm, struct vm_device *d, uint64_t port, unsigned size,
		     uint64_t *val)
{
	(void)vm;
	*val = pci_port_read(d->model, (uint16_t)port, size);
	return true;
}

static bool pci_write(struct vm *vm, struct vm_device *d, uint64_t port, unsigned size,
		      uint64_t val)
{
	(void)vm;
	pci_port_write(d->model, (uint16_t)port, size, (uint32_t)val);
	return true;
}

/* CONFIG_ADDRESS's bytes and CONFIG_DATA, 0xCF8-0xCFF but for PIIX3's reset
 * control at 0xCF9 (isa.c). */
static const struct bus_ops pci_ops = { .read = pci_read, .write = pci_write };
static const struct device_spec pci_device = {
	.name = "pci", .record = &pci_record, .port_ops = &pci_ops,
	.ports = { { PCI_PORT_ADDR, 1 },
		   { ACPI_RESET_PORT + 1, PCI_PORT_DATA + 4 - (ACPI_RESET_PORT + 1) } },
};

/* ---- creation ---- */

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

/* Every device into the VM's table, in the order stats prints them, with its
 * ranges (pc-testdev's only when the VM has one). */
static int attach_devices(struct vm *vm, bool testdev, char *err, size_t errlen)
{
	struct platform *p = &vm->platform;
	const struct {
		const struct device_spec *spec;
		void *model;
		bool ranges;
	} devs[] = {
		{ &ioapic_device, &p->ioapic, true }, { &pic_device, &p->pic, true },
		{ &pit_device, &p->pit, true },       { &rtc_device, &p->rtc, true },
		{ &pmtimer_device, &p->pmtimer, true }, { &fwcfg_device, &p->fwcfg, true },
		{ &pci_device, &p->pci, true },       { &testdev_device, &p->testdev, testdev },
		{ &acpi_pm_device, &p->acpi_pm, true }, { &com1_device, &vm->com1.uart, true },
		{ &debug_exit_device, NULL, true },
	};

	for (unsigned i = 0; i < sizeof(devs) / sizeof(devs[0]); i++)
		if (!device_attach(&vm->devices, &vm->port_bus, &vm->mmio_bus, devs[i].spec,
				   devs[i].model, devs[i].ranges, err, errlen))
			return -1;
	return 0;
}

uint64_t platform_wall_at_tsc0(struct vm *vm)
{
	uint64_t khz = tsc_khz();

	return cmos_unix_seconds() - (khz ? vm_guest_tsc(vm) / (khz * 1000) : 0);
}

int platform_init(struct vm *vm, bool testdev, const struct disk_args *disk, bool balloon,
		  char *err, size_t errlen)
{
	struct platform *p = &vm->platform;
	struct testdev_ops ops = { .set_irq = testdev_irq, .flush_page = testdev_flush, .ctx = vm };
	paddr_t iomem = 0;

	if (testdev && !(iomem = frame_alloc_zeroed(TESTDEV_IOMEM_ORDER))) {
		ksnprintf(err, errlen, "out of memory for the chipset");
		return -1;
	}
	ioapic_init(&p->ioapic, &vm->apic_bus);
	vm->apic_bus.level_eoi = ioapic_level_eoi;
	vm->apic_bus.level_eoi_ctx = &p->ioapic;
	pic_init(&p->pic);
	pit_init(&p->pit, tsc_khz());
	/* The RTC reads the host's wall clock as of the guest's TSC now. */
	rtc_init(&p->rtc, tsc_khz(), platform_wall_at_tsc0(vm), vm->mem_bytes);
	pmtimer_init(&p->pmtimer, tsc_khz());
	acpi_pm_init(&p->acpi_pm);
	fwcfg_init_vm(&p->fwcfg, vm->mem_bytes, vm->nr_vcpus);
	pci_init(&p->pci);
	testdev_init(&p->testdev, iomem ? pa_to_va(iomem) : NULL, &ops);
	if (attach_devices(vm, testdev, err, errlen))
		return -1;
	if (disk_attach(vm, disk, err, errlen))
		return -1;
	return balloon_attach(vm, balloon, err, errlen);
}

void platform_destroy(struct vm *vm)
{
	struct platform *p = &vm->platform;

	if (p->testdev.iomem)
		frame_free(va_to_pa(p->testdev.iomem), TESTDEV_IOMEM_ORDER);
	p->testdev.iomem = NULL;
	disk_destroy(vm);
}

int platform_firmware_start(struct vm *vm)
{
	struct platform *p = &vm->platform;
	uint64_t now = vm_guest_tsc(vm);
	uint32_t ivt[FW_IVT_VECTORS];

	firmware_pic(&p->pic);
	firmware_pit(&p->pit, now);
	firmware_bsp_apic(vm->vcpus[0]->apic, now);
	firmware_ivt(ivt);
	if (mmu_write_guest(&vm->mmu, FW_STUBS_GPA, firmware_stubs, firmware_stubs_len) ||
	    mmu_write_guest(&vm->mmu, FW_IVT_GPA, ivt, sizeof(ivt)))
		return -1;
	return 0;
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

void platform_set_isa_irq(struct vm *vm, unsigned irq, bool level)
{
	struct platform *p = &vm->platform;

	pic_set_irq(&p->pic, irq, level);
	ioapic_set_irq(&p->ioapic, irq == 0 ? IRQ0_GSI : irq, level);
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

/* Some APIC on the bus has vector v requested or in service. */
static bool apics_hold(const struct lapic_bus *bus, uint8_t v)
{
	for (unsigned i = 0; i < bus->count; i++) {
		const struct lapic *a = bus->apic[i];

		if ((a->irr[v / 32] | a->isr[v / 32]) >> (v % 32) & 1)
			return true;
	}
	return false;
}

/* IRQ 0 as the PIT's reinjection needs to see it (dev/pit.h): it reaches a
 * CPU through the PIC (unmasked, to the BSP's LINT0 as ExtINT) or the I/O
 * APIC (an unmasked fixed or lowest-priority entry); and there, the one last
 * raised is still requested or in service (the PIC's IRR or ISR, the
 * vector in an APIC's IRR or ISR) until the guest's EOI, which KVM's PIT
 * learns from its ack notifiers. This runs before every entry, so after the
 * exit of the EOI itself. */
static enum pit_irq0_state irq0_state(struct vm *vm)
{
	struct platform *p = &vm->platform;
	uint64_t e = p->ioapic.redir[IRQ0_GSI];
	unsigned mode = (e >> IOAPIC_RTE_MODE_SHIFT) & 7;
	bool via_pic = lint0_extint(vm->vcpus[0]->apic) && !pic_irq_masked(&p->pic, 0);
	bool via_ioapic = !(e & IOAPIC_RTE_MASKED) && (mode == LAPIC_DM_FIXED || mode == LAPIC_DM_LOWEST);

	if (!via_pic && !via_ioapic)
		return PIT_IRQ0_MASKED;
	if ((via_pic && pic_irq_busy(&p->pic, 0)) ||
	    (via_ioapic && apics_hold(&vm->apic_bus, e & IOAPIC_RTE_VECTOR)))
		return PIT_IRQ0_BUSY;
	return PIT_IRQ0_IDLE;
}

void platform_update(struct vm *vm, uint64_t now)
{
	/* An edge each time: the PIC and the I/O APIC see the rise. */
	if (pit_irq0_raise(&vm->platform.pit, irq0_state(vm), now)) {
		platform_set_isa_irq(vm, 0, true);
		platform_set_isa_irq(vm, 0, false);
	}
}

void platform_resume(struct vm *vm, uint64_t now)
{
	pit_irq0_resumed(&vm->platform.pit, now);
}

uint64_t platform_next_event(struct vm *vm, uint64_t now)
{
	return pit_next_irq0(&vm->platform.pit, now);
}

bool platform_extint_pending(struct vm *vm)
{
	return lint0_extint(vm->vcpus[0]->apic) && pic_output(&vm->platform.pic);
}

uint8_t platform_extint_ack(struct vm *vm)
{
	return pic_ack(&vm->platform.pic);
}

void platform_print_stats(const struct vm *vm)
{
	const struct platform *p = &vm->platform;

	for (unsigned i = 0; i < vm->devices.count; i++)
		kprintf("  exits_%-20s %llu\n", vm->devices.dev[i].name,
			(unsigned long long)vm->devices.dev[i].exits);
	for (unsigned pin = 0; pin < IOAPIC_PINS; pin++)
		if (p->ioapic.delivered[pin])
			kprintf("  ioapic_pin_%-15u %llu\n", pin,
				(unsigned long long)p->ioapic.delivered[pin]);
	if (p->disk.blk.bytes) {
		kprintf("  %-26s %llu\n", "virtio_blk_reads", (unsigned long long)p->disk.blk.reads);
		kprintf("  %-26s %llu\n", "virtio_blk_writes", (unsigned long long)p->disk.blk.writes);
		kprintf("  %-26s %llu\n", "virtio_blk_ioerrs", (unsigned long long)p->disk.blk.ioerrs);
		kprintf("  %-26s %llu\n", "virtio_blk_bad_rings",
			(unsigned long long)p->disk.vv.vp.bad_rings);
	}
}
