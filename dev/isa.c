/* The ISA devices' adapters (isa.h): each one's bus operations converting
 * to its model's calls, next to its ranges. Port values come masked to the
 * access's size; the exit handler keeps the size's bytes of what a read
 * sets. Under the VM's lock. */
#include "dev/isa.h"
#include "dev/acpi_tables.h"
#include "virt/vm.h"

#define DEBUG_EXIT_PORT 0xf4 /* QEMU's isa-debug-exit */

static bool pic_read(struct vm *vm, struct vm_device *d, uint64_t port, unsigned size,
		     uint64_t *val)
{
	(void)vm, (void)size;
	*val = pic_port_read(d->model, (uint16_t)port);
	return true;
}

static bool pic_write(struct vm *vm, struct vm_device *d, uint64_t port, unsigned size,
		      uint64_t val)
{
	(void)vm, (void)size;
	pic_port_write(d->model, (uint16_t)port, (uint8_t)val);
	return true;
}

static const struct bus_ops pic_ops = { .read = pic_read, .write = pic_write };
const struct device_spec pic_device = {
	.name = "pic", .record = &pic_record, .port_ops = &pic_ops,
	.ports = { { PIC_MASTER_CMD, 2 }, { PIC_SLAVE_CMD, 2 }, { PIC_ELCR_MASTER, 2 } },
};

static bool pit_read(struct vm *vm, struct vm_device *d, uint64_t port, unsigned size,
		     uint64_t *val)
{
	(void)size;
	*val = pit_port_read(d->model, (uint16_t)port, vm_guest_tsc(vm));
	return true;
}

static bool pit_write(struct vm *vm, struct vm_device *d, uint64_t port, unsigned size,
		      uint64_t val)
{
	(void)size;
	pit_port_write(d->model, (uint16_t)port, (uint8_t)val, vm_guest_tsc(vm));
	return true;
}

static const struct bus_ops pit_ops = { .read = pit_read, .write = pit_write };
const struct device_spec pit_device = {
	.name = "pit", .record = &pit_record, .port_ops = &pit_ops,
	.ports = { { PIT_PORT_CH0, PIT_PORT_CMD - PIT_PORT_CH0 + 1 }, { PIT_PORT_61, 1 } },
};

static bool rtc_read(struct vm *vm, struct vm_device *d, uint64_t port, unsigned size,
		     uint64_t *val)
{
	(void)size;
	*val = rtc_port_read(d->model, (uint16_t)port, vm_guest_tsc(vm));
	return true;
}

static bool rtc_write(struct vm *vm, struct vm_device *d, uint64_t port, unsigned size,
		      uint64_t val)
{
	(void)size;
	rtc_port_write(d->model, (uint16_t)port, (uint8_t)val, vm_guest_tsc(vm));
	return true;
}

/* The clock reads the host's wall clock as of the restored guest TSC. */
static void rtc_loaded(struct vm *vm, void *model)
{
	struct rtc *r = model;

	r->unix_at_tsc0 = platform_wall_at_tsc0(vm);
}

static const struct bus_ops rtc_ops = { .read = rtc_read, .write = rtc_write };
const struct device_spec rtc_device = {
	.name = "rtc", .record = &rtc_record,
	.loaded = rtc_loaded, .port_ops = &rtc_ops, .ports = { { RTC_PORT_INDEX, 2 } },
};

/* The PM timer's four ports: a read of 0x609-0x60B has its upper bytes. */
static bool pmtimer_port_read(struct vm *vm, struct vm_device *d, uint64_t port, unsigned size,
			      uint64_t *val)
{
	(void)size;
	*val = pmtimer_read(d->model, vm_guest_tsc(vm)) >> (8 * (port - ACPI_PM_TMR));
	return true;
}

static bool pmtimer_port_write(struct vm *vm, struct vm_device *d, uint64_t port, unsigned size,
			       uint64_t val)
{
	(void)vm, (void)d, (void)port, (void)size, (void)val;
	return true; /* read-only */
}

static const struct bus_ops pmtimer_ops = { .read = pmtimer_port_read,
					    .write = pmtimer_port_write };
const struct device_spec pmtimer_device = {
	.name = "pmtimer", .port_ops = &pmtimer_ops, .ports = { { ACPI_PM_TMR, 4 } },
};

static bool fwcfg_read(struct vm *vm, struct vm_device *d, uint64_t port, unsigned size,
		       uint64_t *val)
{
	(void)vm;
	*val = fwcfg_port_read(d->model, (uint16_t)port, size);
	return true;
}

static bool fwcfg_write(struct vm *vm, struct vm_device *d, uint64_t port, unsigned size,
			uint64_t val)
{
	(void)vm;
	fwcfg_port_write(d->model, (uint16_t)port, size, (uint32_t)val);
	return true;
}

static const struct bus_ops fwcfg_ops = { .read = fwcfg_read, .write = fwcfg_write };
const struct device_spec fwcfg_device = {
	.name = "fwcfg", .record = &fwcfg_record, .port_ops = &fwcfg_ops, .ports = { { FWCFG_PORT_SEL, 2 } },
};

static bool testdev_read(struct vm *vm, struct vm_device *d, uint64_t port, unsigned size,
			 uint64_t *val)
{
	uint32_t v;

	(void)vm;
	if (!testdev_port_read(d->model, (uint16_t)port, size, &v))
		return false;
	*val = v;
	return true;
}

static bool testdev_write(struct vm *vm, struct vm_device *d, uint64_t port, unsigned size,
			  uint64_t val)
{
	(void)vm;
	return testdev_port_write(d->model, (uint16_t)port, size, (uint32_t)val);
}

static bool testdev_mem_read(struct vm *vm, struct vm_device *d, uint64_t gpa, unsigned size,
			     uint64_t *val)
{
	(void)vm;
	*val = testdev_mmio_read(d->model, (unsigned)(gpa - TESTDEV_MMIO_BASE), size);
	return true;
}

static bool testdev_mem_write(struct vm *vm, struct vm_device *d, uint64_t gpa, unsigned size,
			      uint64_t val)
{
	(void)vm;
	testdev_mmio_write(d->model, (unsigned)(gpa - TESTDEV_MMIO_BASE), size, val);
	return true;
}

static const struct bus_ops testdev_ops = { .read = testdev_read, .write = testdev_write };
static const struct bus_ops testdev_mem_ops = { .read = testdev_mem_read,
						.write = testdev_mem_write };
const struct device_spec testdev_device = {
	.name = "testdev", .record = &testdev_record, .port_ops = &testdev_ops,
	.ports = { { TESTDEV_PORT_SCRATCH, TESTDEV_PORT_BYTES + 4 - TESTDEV_PORT_SCRATCH },
		   { TESTDEV_PORT_IRQ, TESTDEV_IRQS } },
	.mmio_ops = &testdev_mem_ops, .mmio = { { TESTDEV_MMIO_BASE, TESTDEV_MMIO_SIZE } },
};

/* The model asked for the VM's end. */
static void acpi_pm_act(struct vm *vm, enum acpi_pm_action a)
{
	if (a == ACPI_PM_POWER_OFF) {
		vm->exit_note = " (ACPI power off)";
		vm_exit(vm, 0);
	} else if (a == ACPI_PM_RESET) {
		vm_fail(vm, "guest reset");
	}
}

/* PIIX3's reset control is one byte inside CONFIG_ADDRESS's four ports: a
 * wider access at 0xCF9 is the host bridge's (pci.h). */
static bool acpi_pm_read(struct vm *vm, struct vm_device *d, uint64_t port, unsigned size,
			 uint64_t *val)
{
	if (port == ACPI_RESET_PORT && size != 1)
		*val = pci_port_read(&vm->platform.pci, (uint16_t)port, size);
	else if (port == ACPI_RESET_PORT)
		*val = acpi_pm_reset_read(d->model);
	else if (port == KBD_STATUS_PORT)
		*val = 0;
	else
		*val = acpi_pm1_read(d->model, (unsigned)(port - ACPI_PM_BASE));
	return true;
}

static bool acpi_pm_write(struct vm *vm, struct vm_device *d, uint64_t port, unsigned size,
			  uint64_t val)
{
	if (port == ACPI_RESET_PORT && size != 1)
		pci_port_write(&vm->platform.pci, (uint16_t)port, size, (uint32_t)val);
	else if (port == ACPI_RESET_PORT)
		acpi_pm_act(vm, acpi_pm_reset_write(d->model, (uint8_t)val));
	else if (port == KBD_STATUS_PORT)
		acpi_pm_act(vm, acpi_pm_kbd_write((uint8_t)val));
	else
		acpi_pm_act(vm, acpi_pm1_write(d->model, (unsigned)(port - ACPI_PM_BASE), size,
					       (uint32_t)val));
	return true;
}

static const struct bus_ops acpi_pm_ops = { .read = acpi_pm_read, .write = acpi_pm_write };
const struct device_spec acpi_pm_device = {
	.name = "acpi_pm", .record = &acpi_pm_record, .port_ops = &acpi_pm_ops,
	.ports = { { ACPI_PM_BASE, ACPI_PM1_BYTES }, { ACPI_RESET_PORT, 1 }, { KBD_STATUS_PORT, 1 } },
};

/* A write ends the VM with its value as the status; reads find nothing. */
static bool debug_exit_read(struct vm *vm, struct vm_device *d, uint64_t port, unsigned size,
			    uint64_t *val)
{
	(void)vm, (void)d, (void)port, (void)size, (void)val;
	return false;
}

static bool debug_exit_write(struct vm *vm, struct vm_device *d, uint64_t port, unsigned size,
			     uint64_t val)
{
	(void)d, (void)port, (void)size;
	vm_exit(vm, (int)val);
	return true;
}

static const struct bus_ops debug_exit_ops = { .read = debug_exit_read,
					       .write = debug_exit_write };
const struct device_spec debug_exit_device = {
	.name = "debug_exit", .port_ops = &debug_exit_ops, .ports = { { DEBUG_EXIT_PORT, 1 } },
};

