/* What a virtio device's integrator does, for the host tests of the virtio
 * models: guest RAM in a host buffer, MSI messages and the INTx line
 * recorded, reports counted. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "dev/virtio_pci.h"

struct virtio_host {
	uint8_t *ram;
	unsigned msis, reports;
	struct apic_msg last_msi;
	bool intx;
};

/* mem_bytes of zeroed RAM; *gm and *ops point at h. */
void virtio_host_init(struct virtio_host *h, uint64_t mem_bytes, struct guest_mem *gm,
		      struct virtio_pci_ops *ops);
void virtio_host_free(struct virtio_host *h);
/* The driver's steps from ACKNOWLEDGE to FEATURES_OK with these features. */
void virtio_host_negotiate(struct virtio_pci *vp, uint64_t features);
