/* A virtio-pci function (dev/virtio_pci.h) wired to a VM, what every virtio
 * device of a VM shares: BAR 0's accesses from the MMIO bus while the BAR is
 * where firmware put it (a guest that moves it loses the device), MSI-X
 * messages to lapic_bus_deliver, INTx pin A on an ISA IRQ, guest RAM through
 * mmu_read_guest / mmu_write_guest, reports on the console
 * (docs/virtio.md). The devices: dev/disk.c, dev/balloon.c. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dev/bus.h"
#include "dev/virtio_pci.h"

struct vm;

struct virtio_vm {
	struct virtio_pci vp;
	struct vm *vm;
	uint32_t bar_gpa;
	uint8_t irq;
};

/* A device_spec's mmio_ops: its model is the struct virtio_vm. */
extern const struct bus_ops virtio_vm_bar_ops;

/* Make the function at devfn (virtio_pci_init), on the VM's PCI bus when
 * `on`, and its device into the VM's table (spec, with its ranges when
 * `on`). 0, or -1 with the reason in err. */
int virtio_vm_attach(struct virtio_vm *w, struct vm *vm, const struct device_spec *spec,
		     const struct virtio_device *dev, void *state, uint8_t devfn, uint32_t bar_gpa,
		     uint8_t irq, bool on, char *err, size_t errlen);
