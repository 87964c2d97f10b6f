/* A VM's balloon: virtio-balloon (dev/virtio_balloon.h) on virtio-pci at
 * 00:04.0, its BAR at BALLOON_BAR_GPA (after the disk's) and INTx on ISA IRQ
 * 10 (PIRQA, as SeaBIOS routes slot 4's INTA), wired through
 * dev/virtio_vm.h. What leaves the guest (inflated pages, reported free
 * ranges) goes through the normal discard path, mmu_discard: the mappings
 * zapped, the frames freed, the next access faulting in a zero page, as
 * after a host's madvise(MADV_DONTNEED); deflated pages need nothing. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dev/disk.h"
#include "dev/virtio_balloon.h"
#include "dev/virtio_vm.h"

#define BALLOON_BAR_GPA (DISK_BAR_GPA + VIRTIO_PCI_BAR_SIZE)
#define BALLOON_DEVFN (4 << 3)
#define BALLOON_IRQ 10

struct vm_balloon {
	struct virtio_vm vv;
	struct virtio_balloon b;
	bool on;
};

/* Make the VM's balloon (on the PCI bus only when `on`). 0, or -1 with the
 * reason in err. */
int balloon_attach(struct vm *vm, bool on, char *err, size_t errlen);
/* Under the VM's lock: sprig's target, in pages (a configuration change). */
void balloon_set_target(struct vm *vm, uint32_t pages);
/* Print the target, actual, the counters and the guest's latest
 * statistics, and ask the guest for fresh ones. Takes the VM's lock. */
void balloon_print(struct vm *vm);
