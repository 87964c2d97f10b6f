/* A VM's disk: virtio-blk (dev/virtio_blk.h) on virtio-pci at 00:03.0, its
 * BAR at DISK_BAR_GPA and INTx on ISA IRQ 11 (PIRQD, as SeaBIOS routes slot
 * 3's INTA), wired to the VM through dev/virtio_vm.h (docs/virtio.md). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dev/virtio_blk.h"
#include "dev/virtio_vm.h"

#define DISK_BAR_GPA 0xfe000000u
#define DISK_DEVFN (3 << 3)
#define DISK_IRQ 11

struct vm;
struct bus;
struct vm_devices;

/* What `vm create ... disk=` asks for: the module's bytes, used as they are
 * (read-only), or copied into memory of sprig's (writable, gone with the VM);
 * bytes 0: no disk. */
struct disk_args {
	const void *data;
	uint64_t bytes;
	bool writable;
};

struct vm_disk {
	struct virtio_vm vv;
	struct virtio_blk blk;
	uint64_t copy;      /* the writable copy's frames (host-physical), 0: none */
	unsigned copy_order;
};

/* Make the VM's disk (nothing when a->bytes is 0) and attach it. 0, or -1
 * with the reason in err. */
int disk_attach(struct vm *vm, const struct disk_args *a, char *err, size_t errlen);
void disk_destroy(struct vm *vm);
