/* A VM's virtio disk, wired (disk.h). */
#include "dev/disk.h"
#include "lib/print.h"
#include "lib/string.h"
#include "mm/frame.h"
#include "virt/vm.h"

static const struct device_spec disk_device = {
	.name = "virtio_blk", .mmio_ops = &virtio_vm_bar_ops,
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
	return virtio_vm_attach(&d->vv, vm, &disk_device, virtio_blk_device(&d->blk), &d->blk,
				DISK_DEVFN, DISK_BAR_GPA, DISK_IRQ, bytes != 0, err, errlen);
}

void disk_destroy(struct vm *vm)
{
	struct vm_disk *d = &vm->platform.disk;

	if (d->copy)
		frame_free(d->copy, d->copy_order);
	d->copy = 0;
}
