/* A virtio-pci function wired to a VM (virtio_vm.h). */
#include "dev/virtio_vm.h"
#include "lib/print.h"
#include "virt/vm.h"

static bool copy_from(void *ctx, uint64_t gpa, void *buf, uint32_t len)
{
	return !mmu_read_guest(&((struct virtio_vm *)ctx)->vm->mmu, gpa, buf, len);
}

static bool copy_to(void *ctx, uint64_t gpa, const void *buf, uint32_t len)
{
	return !mmu_write_guest(&((struct virtio_vm *)ctx)->vm->mmu, gpa, buf, len);
}

static void msi(void *ctx, const struct apic_msg *m)
{
	lapic_bus_deliver(&((struct virtio_vm *)ctx)->vm->apic_bus, m);
}

static void set_intx(void *ctx, bool level)
{
	struct virtio_vm *w = ctx;

	platform_set_isa_irq(w->vm, w->irq, level);
}

static void report(void *ctx, const char *what)
{
	kprintf("vm %s: %s\n", ((struct virtio_vm *)ctx)->vm->name, what);
}

static void config_written(void *ctx)
{
	virtio_pci_config_written(ctx);
}

/* BAR 0 where the guest has it (memory decoding on, not moved). */
static bool bar_read(struct vm *vm, struct vm_device *d, uint64_t gpa, unsigned size,
		     uint64_t *val)
{
	struct virtio_vm *w = d->model;

	(void)vm;
	if (virtio_pci_bar(&w->vp) != w->bar_gpa)
		return false;
	*val = virtio_pci_read(&w->vp, (uint32_t)(gpa - w->bar_gpa), size);
	return true;
}

static bool bar_write(struct vm *vm, struct vm_device *d, uint64_t gpa, unsigned size,
		      uint64_t val)
{
	struct virtio_vm *w = d->model;

	(void)vm;
	if (virtio_pci_bar(&w->vp) != w->bar_gpa)
		return false;
	virtio_pci_write(&w->vp, (uint32_t)(gpa - w->bar_gpa), size, val);
	return true;
}

const struct bus_ops virtio_vm_bar_ops = { .read = bar_read, .write = bar_write };

int virtio_vm_attach(struct virtio_vm *w, struct vm *vm, const struct device_spec *spec,
		     const struct virtio_device *dev, void *state, uint8_t devfn, uint32_t bar_gpa,
		     uint8_t irq, bool on, char *err, size_t errlen)
{
	struct guest_mem mem = { .copy_from = copy_from, .copy_to = copy_to, .ctx = w };
	struct virtio_pci_ops ops = { .msi = msi, .set_intx = set_intx, .report = report, .ctx = w };

	w->vm = vm;
	w->bar_gpa = bar_gpa;
	w->irq = irq;
	guest_mem_init_pc(&mem, vm->mem_bytes);
	virtio_pci_init(&w->vp, dev, state, devfn, bar_gpa, irq, &mem, &ops);
	if (on && !pci_add_function(&vm->platform.pci, &w->vp.fn, config_written, &w->vp)) {
		ksnprintf(err, errlen, "no room on the PCI bus for virtio-%s", dev->name);
		return -1;
	}
	return device_attach(&vm->devices, &vm->port_bus, &vm->mmio_bus, spec, w, on, err,
			     errlen) ? 0 : -1;
}
