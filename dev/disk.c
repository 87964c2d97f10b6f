/* A VM's virtio disk, wired (disk.h). */
#include "dev/disk.h"
#include "lib/print.h"
#include "lib/string.h"
#include "mm/frame.h"
#include "virt/vm.h"

static bool copy_from(void *ctx, uint64_t gpa, void *buf, uint32_t len)
{
	return !mmu_read_guest(&((struct vm *)ctx)->mmu, gpa, buf, len);
}

static bool copy_to(void *ctx, uint64_t gpa, const void *buf, uint32_t len)
{
	return !mmu_write_guest(&((struct vm *)ctx)->mmu, gpa, buf, len);
}

static void msi(void *ctx, const struct apic_msg *m)
{
	lapic_bus_deliver(&((struct vm *)ctx)->apic_bus, m);
}

static void set_intx(void *ctx, bool level)
{
	platform_set_isa_irq(ctx, DISK_IRQ, level);
}

static void report(void *ctx, const char *what)
{
	kprintf("vm %s: %s\n", ((struct vm *)ctx)->name, what);
}

static void config_written(void *ctx)
{
	virtio_pci_config_written(ctx);
}

/* BAR 0 where the guest has it (memory decoding on, not moved). */
static bool bar_read(struct vm *vm, struct vm_device *d, uint64_t gpa, unsigned size,
		     uint64_t *val)
{
	struct virtio_pci *vp = d->model;

	(void)vm;
	if (virtio_pci_bar(vp) != DISK_BAR_GPA)
		return false;
	*val = virtio_pci_read(vp, (uint32_t)(gpa - DISK_BAR_GPA), size);
	return true;
}

static bool bar_write(struct vm *vm, struct vm_device *d, uint64_t gpa, unsigned size,
		      uint64_t val)
{
	struct virtio_pci *vp = d->model;

	(void)vm;
	if (virtio_pci_bar(vp) != DISK_BAR_GPA)
		return false;
	virtio_pci_write(vp, (uint32_t)(gpa - DISK_BAR_GPA), size, val);
	return true;
}

static const struct bus_ops disk_ops = { .read = bar_read, .write = bar_write };
static const struct device_spec disk_device = {
	.name = "virtio_blk", .mmio_ops = &disk_ops,
	.mmio = { { DISK_BAR_GPA, VIRTIO_PCI_BAR_SIZE } },
};

static unsigned order_of(uint64_t bytes)
{
	unsigned order = 0;

	while ((PAGE_SIZE << order) < bytes)
		order++;
	return order;
}

int disk_attach(struct vm *vm, const struct disk_args *a, char *err, size_t errlen)
{
	struct vm_disk *d = &vm->platform.disk;
	struct guest_mem mem = { .copy_from = copy_from, .copy_to = copy_to, .ctx = vm };
	struct virtio_pci_ops ops = { .msi = msi, .set_intx = set_intx, .report = report, .ctx = vm };
	uint64_t bytes = a->bytes & ~(uint64_t)(VIRTIO_BLK_SECTOR - 1);
	uint8_t *disk = (uint8_t *)(uintptr_t)a->data;

	memset(d, 0, sizeof(*d));
	if (a->bytes && !bytes) {
		ksnprintf(err, errlen, "the disk is smaller than a sector");
		return -1;
	}
	if (bytes && a->writable) {
		d->copy_order = order_of(bytes);
		if (d->copy_order > FRAME_MAX_ORDER || !(d->copy = frame_alloc(d->copy_order))) {
			ksnprintf(err, errlen, "out of memory for the disk's copy");
			d->copy = 0;
			return -1;
		}
		disk = pa_to_va(d->copy);
		memcpy(disk, a->data, bytes);
	}
	d->blk = (struct virtio_blk){ .disk = disk, .bytes = bytes, .read_only = !a->writable };
	guest_mem_init_pc(&mem, vm->mem_bytes);
	virtio_pci_init(&d->vp, virtio_blk_device(&d->blk), &d->blk, DISK_DEVFN, DISK_BAR_GPA,
			DISK_IRQ, &mem, &ops);
	if (!bytes)
		return device_attach(&vm->devices, &vm->port_bus, &vm->mmio_bus, &disk_device,
				     &d->vp, false, err, errlen) ? 0 : -1;
	if (!pci_add_function(&vm->platform.pci, &d->vp.fn, config_written, &d->vp)) {
		ksnprintf(err, errlen, "no room on the PCI bus for the disk");
		return -1;
	}
	return device_attach(&vm->devices, &vm->port_bus, &vm->mmio_bus, &disk_device, &d->vp,
			     true, err, errlen) ? 0 : -1;
}

void disk_destroy(struct vm *vm)
{
	struct vm_disk *d = &vm->platform.disk;

	if (d->copy)
		frame_free(d->copy, d->copy_order);
	d->copy = 0;
}
