/* dev/virtio_pci.c with dev/virtio_blk.c: a driver's view, through PCI
 * configuration ports and the BAR, of a disk in a host buffer and guest RAM
 * in another; hostile requests and rings. */
#include "check.h"
#include "dev/virtio_blk.h"
#include "virtio_host.h"
#include <stdlib.h>
#include <string.h>

#define MEM_BYTES (2ull << 20)
#define DESC 0x1000ull
#define AVAIL 0x2000ull
#define USED 0x3000ull
#define HDR 0x10000ull
#define DATA 0x11000ull
#define STATUS 0x12000ull
#define BAR 0xfe000000u
#define DEVFN (3 << 3)
#define DISK_BYTES (64 * 1024)

struct rig {
	struct virtio_host h;
	uint8_t *disk;
	struct pci pci;
	struct virtio_pci vp;
	struct virtio_blk blk;
	uint16_t avail_idx;
};

static void written(void *ctx)
{
	virtio_pci_config_written(ctx);
}

static struct rig *rig_new(bool read_only)
{
	struct rig *r = calloc(1, sizeof(*r));
	struct guest_mem gm;
	struct virtio_pci_ops ops;

	virtio_host_init(&r->h, MEM_BYTES, &gm, &ops);
	r->disk = malloc(DISK_BYTES);
	for (unsigned i = 0; i < DISK_BYTES; i++)
		r->disk[i] = (uint8_t)(i * 7 + i / 512);
	r->blk = (struct virtio_blk){ .disk = r->disk, .bytes = DISK_BYTES, .read_only = read_only };
	pci_init(&r->pci);
	virtio_pci_init(&r->vp, virtio_blk_device(&r->blk), &r->blk, DEVFN, BAR, 11, &gm, &ops);
	pci_add_function(&r->pci, &r->vp.fn, written, &r->vp);
	return r;
}

static void rig_free(struct rig *r)
{
	virtio_host_free(&r->h);
	free(r->disk);
	free(r);
}

static uint32_t cfg_read(struct rig *r, uint8_t off, unsigned size)
{
	pci_port_write(&r->pci, PCI_PORT_ADDR, 4, PCI_ADDR_ENABLE | DEVFN << 8 | (off & 0xfc));
	return pci_port_read(&r->pci, (uint16_t)(PCI_PORT_DATA + (off & 3)), size);
}

static void cfg_write(struct rig *r, uint8_t off, unsigned size, uint32_t v)
{
	pci_port_write(&r->pci, PCI_PORT_ADDR, 4, PCI_ADDR_ENABLE | DEVFN << 8 | (off & 0xfc));
	pci_port_write(&r->pci, (uint16_t)(PCI_PORT_DATA + (off & 3)), size, v);
}

static uint64_t rd(struct rig *r, uint32_t off, unsigned size)
{
	return virtio_pci_read(&r->vp, off, size);
}

static void wr(struct rig *r, uint32_t off, unsigned size, uint64_t v)
{
	virtio_pci_write(&r->vp, off, size, v);
}

/* What Linux's virtio_pci_modern does up to DRIVER_OK, with MSI-X vector 0
 * for configuration changes and 1 for the queue. */
static void driver_init(struct rig *r, uint64_t features)
{
	wr(r, 0x14, 1, 0);
	memset(r->h.ram + AVAIL, 0, 0x1000); /* fresh rings, as a driver makes them */
	memset(r->h.ram + USED, 0, 0x1000);
	r->avail_idx = 0;
	virtio_host_negotiate(&r->vp, features);
	cfg_write(r, VIRTIO_PCI_CAP_MSIX + 2, 2, 0x8000 | (VIRTIO_VECTORS - 1)); /* enable */
	for (unsigned v = 0; v < 2; v++) {
		wr(r, VIRTIO_PCI_MSIX_TABLE + 16 * v, 4, 0xfee01000); /* APIC ID 1 */
		wr(r, VIRTIO_PCI_MSIX_TABLE + 16 * v + 4, 4, 0);
		wr(r, VIRTIO_PCI_MSIX_TABLE + 16 * v + 8, 4, 0x40 + v);
		wr(r, VIRTIO_PCI_MSIX_TABLE + 16 * v + 12, 4, 0); /* unmask */
	}
	wr(r, 0x10, 2, 0);
	wr(r, 0x16, 2, 0);
	wr(r, 0x18, 2, 16);
	wr(r, 0x1a, 2, 1);
	wr(r, 0x20, 4, DESC);
	wr(r, 0x24, 4, 0);
	wr(r, 0x28, 8, AVAIL);
	wr(r, 0x30, 8, USED);
	wr(r, 0x1c, 2, 1);
	wr(r, 0x14, 1, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK |
			       VIRTIO_STATUS_DRIVER_OK);
}

static void desc(struct rig *r, unsigned i, uint64_t addr, uint32_t len, uint16_t flags,
		 uint16_t next)
{
	uint8_t *d = r->h.ram + DESC + 16 * i;

	memcpy(d, &addr, 8);
	memcpy(d + 8, &len, 4);
	memcpy(d + 12, &flags, 2);
	memcpy(d + 14, &next, 2);
}

/* A request: header, data of len bytes at DATA, status; notified. The status. */
static uint8_t request(struct rig *r, uint32_t type, uint64_t sector, uint32_t len)
{
	uint16_t data_flags = (type == VIRTIO_BLK_T_OUT ? 0 : VIRTQ_DESC_F_WRITE) | VIRTQ_DESC_F_NEXT;

	memcpy(r->h.ram + HDR, &type, 4);
	memset(r->h.ram + HDR + 4, 0, 4);
	memcpy(r->h.ram + HDR + 8, &sector, 8);
	r->h.ram[STATUS] = 0xee;
	desc(r, 0, HDR, 16, VIRTQ_DESC_F_NEXT, 1);
	desc(r, 1, DATA, len, data_flags, 2);
	desc(r, 2, STATUS, 1, VIRTQ_DESC_F_WRITE, 0);
	memcpy(r->h.ram + AVAIL + 4 + 2 * (r->avail_idx % 16), &(uint16_t){ 0 }, 2);
	r->avail_idx++;
	memcpy(r->h.ram + AVAIL + 2, &r->avail_idx, 2);
	wr(r, VIRTIO_PCI_NOTIFY, 2, 0);
	return r->h.ram[STATUS];
}

TEST(virtio_pci_config_space_and_bar_sizing)
{
	struct rig *r = rig_new(false);
	unsigned found = 0, cap;

	CHECK_EQ_U64(cfg_read(r, 0, 4), 0x10421af4);
	CHECK_EQ_U64(cfg_read(r, 0x08, 1), 1); /* modern */
	CHECK(cfg_read(r, 0x06, 2) & 0x10);
	CHECK_EQ_U64(cfg_read(r, 0x3d, 1), 1);
	for (cap = cfg_read(r, 0x34, 1); cap; cap = cfg_read(r, (uint8_t)(cap + 1), 1)) {
		if (cfg_read(r, (uint8_t)cap, 1) == 0x11) {
			CHECK_EQ_U64(cfg_read(r, (uint8_t)(cap + 2), 2) & 0x7ff, VIRTIO_VECTORS - 1);
			CHECK_EQ_U64(cfg_read(r, (uint8_t)(cap + 4), 4), VIRTIO_PCI_MSIX_TABLE);
			found |= 1;
			continue;
		}
		REQUIRE(cfg_read(r, (uint8_t)cap, 1) == 0x09);
		unsigned type = cfg_read(r, (uint8_t)(cap + 3), 1);
		uint32_t off = cfg_read(r, (uint8_t)(cap + 8), 4);

		CHECK_EQ_U64(cfg_read(r, (uint8_t)(cap + 4), 1), 0);
		CHECK_EQ_U64(off, type == 1 ? VIRTIO_PCI_COMMON : type == 2 ? VIRTIO_PCI_NOTIFY
				  : type == 3 ? VIRTIO_PCI_ISR : VIRTIO_PCI_DEVICE);
		if (type == 2)
			CHECK_EQ_U64(cfg_read(r, (uint8_t)(cap + 16), 4), VIRTIO_PCI_NOTIFY_MULT);
		found |= 1u << type;
	}
	CHECK_EQ_U64(found, 0x1f);
	/* sizing: all ones reads back the size mask, the type bits stay */
	CHECK_EQ_U64(cfg_read(r, 0x10, 4), BAR);
	cfg_write(r, 0x10, 4, 0xffffffff);
	CHECK_EQ_U64(cfg_read(r, 0x10, 4), ~(VIRTIO_PCI_BAR_SIZE - 1));
	cfg_write(r, 0x10, 4, 0xe0000000);
	CHECK_EQ_U64(virtio_pci_bar(&r->vp), 0xe0000000);
	cfg_write(r, 0x04, 2, 0); /* memory decoding off */
	CHECK_EQ_U64(virtio_pci_bar(&r->vp), 0);
	/* the IDs stay */
	cfg_write(r, 0x00, 4, 0);
	CHECK_EQ_U64(cfg_read(r, 0, 4), 0x10421af4);
	rig_free(r);
}

TEST(virtio_pci_feature_negotiation)
{
	struct rig *r = rig_new(true);
	const uint8_t want = VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK;

	wr(r, 0x00, 4, 1);
	CHECK(rd(r, 0x04, 4) & 1); /* VERSION_1 */
	wr(r, 0x00, 4, 0);
	CHECK(rd(r, 0x04, 4) & VIRTIO_BLK_F_RO);
	/* without VERSION_1: refused */
	driver_init(r, VIRTIO_BLK_F_RO);
	CHECK(!(rd(r, 0x14, 1) & VIRTIO_STATUS_FEATURES_OK));
	/* a bit not offered: refused */
	driver_init(r, VIRTIO_F_VERSION_1 | (1ull << 40));
	CHECK(!(rd(r, 0x14, 1) & VIRTIO_STATUS_FEATURES_OK));
	driver_init(r, VIRTIO_F_VERSION_1 | VIRTIO_BLK_F_RO);
	CHECK_EQ_U64(rd(r, 0x14, 1) & want, want);
	/* fixed after FEATURES_OK */
	wr(r, 0x08, 4, 0);
	wr(r, 0x0c, 4, 0);
	CHECK_EQ_U64(rd(r, 0x0c, 4), VIRTIO_BLK_F_RO);
	/* reset */
	wr(r, 0x14, 1, 0);
	CHECK_EQ_U64(rd(r, 0x14, 1), 0);
	CHECK_EQ_U64(rd(r, 0x1c, 2), 0);
	rig_free(r);
}

TEST(virtio_blk_read_write_and_msix)
{
	struct rig *r = rig_new(false);

	driver_init(r, VIRTIO_F_VERSION_1);
	CHECK_EQ_U64(rd(r, VIRTIO_PCI_DEVICE, 8), DISK_BYTES / 512); /* capacity */
	CHECK_EQ_U64(request(r, VIRTIO_BLK_T_IN, 3, 1024), VIRTIO_BLK_S_OK);
	CHECK(!memcmp(r->h.ram + DATA, r->disk + 3 * 512, 1024));
	CHECK_EQ_U64(r->h.msis, 1);
	CHECK_EQ_U64(r->h.last_msi.vector, 0x41);
	CHECK_EQ_U64(r->h.last_msi.dest, 1);
	uint32_t used_len;
	memcpy(&used_len, r->h.ram + USED + 8, 4);
	CHECK_EQ_U64(used_len, 1025);
	memset(r->h.ram + DATA, 0x5a, 512);
	CHECK_EQ_U64(request(r, VIRTIO_BLK_T_OUT, DISK_BYTES / 512 - 1, 512), VIRTIO_BLK_S_OK);
	CHECK(r->disk[DISK_BYTES - 1] == 0x5a && r->disk[DISK_BYTES - 512] == 0x5a);
	CHECK_EQ_U64(r->blk.reads, 1);
	CHECK_EQ_U64(r->blk.writes, 1);
	rig_free(r);
}

TEST(virtio_blk_out_of_range_and_read_only)
{
	struct rig *r = rig_new(true);
	uint8_t *before = malloc(DISK_BYTES);

	memcpy(before, r->disk, DISK_BYTES);
	driver_init(r, VIRTIO_F_VERSION_1 | VIRTIO_BLK_F_RO);
	memset(r->h.ram + DATA, 0x11, 4096);
	/* past the end, straddling the end, a sector number that overflows */
	CHECK_EQ_U64(request(r, VIRTIO_BLK_T_IN, DISK_BYTES / 512, 512), VIRTIO_BLK_S_IOERR);
	CHECK_EQ_U64(request(r, VIRTIO_BLK_T_IN, DISK_BYTES / 512 - 1, 1024), VIRTIO_BLK_S_IOERR);
	CHECK_EQ_U64(request(r, VIRTIO_BLK_T_IN, 1ull << 55, 512), VIRTIO_BLK_S_IOERR);
	CHECK_EQ_U64(request(r, VIRTIO_BLK_T_IN, ~0ull, 512), VIRTIO_BLK_S_IOERR);
	CHECK(r->h.ram[DATA] == 0x11 && r->h.ram[DATA + 1023] == 0x11);
	/* read-only */
	CHECK_EQ_U64(request(r, VIRTIO_BLK_T_OUT, 0, 512), VIRTIO_BLK_S_IOERR);
	CHECK(!memcmp(before, r->disk, DISK_BYTES));
	CHECK_EQ_U64(request(r, 99, 0, 512), VIRTIO_BLK_S_UNSUPP);
	CHECK_EQ_U64(r->blk.ioerrs, 5);
	CHECK_EQ_U64(r->vp.bad_rings, 0);
	free(before);
	rig_free(r);
}

TEST(virtio_pci_bad_ring_needs_reset)
{
	struct rig *r = rig_new(false);

	driver_init(r, VIRTIO_F_VERSION_1);
	desc(r, 0, HDR, 16, VIRTQ_DESC_F_NEXT, 1);
	desc(r, 1, 0xfec00000, 512, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 0); /* I/O APIC; a loop */
	memset(r->h.ram + AVAIL + 4, 0, 2);
	memcpy(r->h.ram + AVAIL + 2, &(uint16_t){ 1 }, 2);
	wr(r, VIRTIO_PCI_NOTIFY, 2, 0);
	CHECK(rd(r, 0x14, 1) & VIRTIO_STATUS_NEEDS_RESET);
	CHECK_EQ_U64(r->vp.bad_rings, 1);
	CHECK_EQ_U64(r->h.reports, 1);
	CHECK_EQ_U64(r->h.msis, 1); /* the configuration vector */
	CHECK_EQ_U64(r->h.last_msi.vector, 0x40);
	CHECK_EQ_U64(rd(r, 0x15, 1), 1); /* config generation */
	wr(r, VIRTIO_PCI_NOTIFY, 2, 0); /* ignored now */
	CHECK_EQ_U64(r->h.reports, 1);
	/* a request without a status byte is a bad ring too, after a reset */
	driver_init(r, VIRTIO_F_VERSION_1);
	CHECK(!(rd(r, 0x14, 1) & VIRTIO_STATUS_NEEDS_RESET));
	r->avail_idx = 0;
	desc(r, 0, HDR, 16, 0, 0);
	memcpy(r->h.ram + AVAIL + 2, &(uint16_t){ 1 }, 2);
	wr(r, VIRTIO_PCI_NOTIFY, 2, 0);
	CHECK(rd(r, 0x14, 1) & VIRTIO_STATUS_NEEDS_RESET);
	CHECK_EQ_U64(r->vp.bad_rings, 2);
	/* a queue enabled with rings outside RAM */
	driver_init(r, VIRTIO_F_VERSION_1);
	wr(r, 0x14, 1, 0);
	wr(r, 0x18, 2, 16);
	wr(r, 0x20, 8, 0xfee00000);
	wr(r, 0x1c, 2, 1);
	CHECK_EQ_U64(rd(r, 0x1c, 2), 0);
	CHECK(rd(r, 0x14, 1) & VIRTIO_STATUS_NEEDS_RESET);
	rig_free(r);
}

TEST(virtio_pci_intx_and_msix_masking)
{
	struct rig *r = rig_new(false);

	driver_init(r, VIRTIO_F_VERSION_1);
	cfg_write(r, VIRTIO_PCI_CAP_MSIX + 2, 2, 0); /* MSI-X off: INTx */
	CHECK_EQ_U64(request(r, VIRTIO_BLK_T_IN, 0, 512), VIRTIO_BLK_S_OK);
	CHECK(r->h.intx);
	CHECK_EQ_U64(r->h.msis, 0);
	CHECK_EQ_U64(rd(r, VIRTIO_PCI_ISR, 1), VIRTIO_ISR_QUEUE);
	CHECK(!r->h.intx);
	CHECK_EQ_U64(rd(r, VIRTIO_PCI_ISR, 1), 0);
	/* INTx disabled in the command register */
	cfg_write(r, 0x04, 2, 0x0402);
	CHECK_EQ_U64(request(r, VIRTIO_BLK_T_IN, 0, 512), VIRTIO_BLK_S_OK);
	CHECK(!r->h.intx);
	cfg_write(r, 0x04, 2, 0x0002);
	CHECK(r->h.intx);
	rd(r, VIRTIO_PCI_ISR, 1);
	/* MSI-X with the queue's entry masked: pending, sent on unmask */
	cfg_write(r, VIRTIO_PCI_CAP_MSIX + 2, 2, 0x8000);
	wr(r, VIRTIO_PCI_MSIX_TABLE + 16 + 12, 4, 1);
	CHECK_EQ_U64(request(r, VIRTIO_BLK_T_IN, 0, 512), VIRTIO_BLK_S_OK);
	CHECK_EQ_U64(r->h.msis, 0);
	CHECK_EQ_U64(rd(r, VIRTIO_PCI_MSIX_PBA, 4), 2);
	wr(r, VIRTIO_PCI_MSIX_TABLE + 16 + 12, 4, 0);
	CHECK_EQ_U64(r->h.msis, 1);
	CHECK_EQ_U64(rd(r, VIRTIO_PCI_MSIX_PBA, 4), 0);
	/* the function mask */
	cfg_write(r, VIRTIO_PCI_CAP_MSIX + 2, 2, 0xc000);
	CHECK_EQ_U64(request(r, VIRTIO_BLK_T_IN, 0, 512), VIRTIO_BLK_S_OK);
	CHECK_EQ_U64(r->h.msis, 1);
	cfg_write(r, VIRTIO_PCI_CAP_MSIX + 2, 2, 0x8000);
	CHECK_EQ_U64(r->h.msis, 2);
	rig_free(r);
}
