/* The virtio models' integrator for the host tests (virtio_host.h). */
#include "virtio_host.h"
#include <stdlib.h>
#include <string.h>

static bool copy_from(void *ctx, uint64_t gpa, void *buf, uint32_t len)
{
	memcpy(buf, ((struct virtio_host *)ctx)->ram + gpa, len);
	return true;
}

static bool copy_to(void *ctx, uint64_t gpa, const void *buf, uint32_t len)
{
	memcpy(((struct virtio_host *)ctx)->ram + gpa, buf, len);
	return true;
}

static void msi(void *ctx, const struct apic_msg *m)
{
	struct virtio_host *h = ctx;

	h->msis++;
	h->last_msi = *m;
}

static void set_intx(void *ctx, bool level)
{
	((struct virtio_host *)ctx)->intx = level;
}

static void report(void *ctx, const char *what)
{
	(void)what;
	((struct virtio_host *)ctx)->reports++;
}

void virtio_host_init(struct virtio_host *h, uint64_t mem_bytes, struct guest_mem *gm,
		      struct virtio_pci_ops *ops)
{
	memset(h, 0, sizeof(*h));
	h->ram = calloc(1, mem_bytes);
	*gm = (struct guest_mem){ .copy_from = copy_from, .copy_to = copy_to, .ctx = h };
	guest_mem_init_pc(gm, mem_bytes);
	*ops = (struct virtio_pci_ops){ msi, set_intx, report, h };
}

void virtio_host_free(struct virtio_host *h)
{
	free(h->ram);
}

void virtio_host_negotiate(struct virtio_pci *vp, uint64_t features)
{
	const uint8_t status = VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER;

	virtio_pci_write(vp, 0x14, 1, status);
	virtio_pci_write(vp, 0x08, 4, 0);
	virtio_pci_write(vp, 0x0c, 4, (uint32_t)features);
	virtio_pci_write(vp, 0x08, 4, 1);
	virtio_pci_write(vp, 0x0c, 4, (uint32_t)(features >> 32));
	virtio_pci_write(vp, 0x14, 1, status | VIRTIO_STATUS_FEATURES_OK);
}
