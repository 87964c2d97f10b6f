/* dev/virtio_balloon.c over dev/virtio_pci.c: a driver's view through the
 * BAR of guest RAM in a host buffer; what the device discards, its counters,
 * the queue numbering under the features negotiated, statistics, and
 * hostile buffers (PFNs outside RAM or in MMIO, odd lengths, wrong
 * directions). */
#include "check.h"
#include "dev/virtio_balloon.h"
#include "virtio_host.h"
#include <stdlib.h>
#include <string.h>

#define MEM_BYTES (4ull << 20)
#define RINGS 0x10000ull /* queue q's rings at RINGS + q * 0x1000 */
#define BUF 0x20000ull
#define BAR 0xfe008000u
#define DEVFN (4 << 3)
#define QSIZE 16
#define DISCARDS_MAX 64

struct rig {
	struct virtio_host h;
	struct virtio_pci vp;
	struct virtio_balloon b;
	uint16_t avail_idx[VIRTIO_QUEUES_MAX];
	struct { uint64_t gpa, len; } discard[DISCARDS_MAX];
	unsigned discards;
};

static void discard(void *ctx, uint64_t gpa, uint64_t len)
{
	struct rig *r = ctx;

	REQUIRE(r->discards < DISCARDS_MAX);
	r->discard[r->discards].gpa = gpa;
	r->discard[r->discards++].len = len;
}

static struct rig *rig_new(void)
{
	struct rig *r = calloc(1, sizeof(*r));
	struct guest_mem gm;
	struct virtio_pci_ops ops;

	virtio_host_init(&r->h, MEM_BYTES, &gm, &ops);
	r->b.ops = (struct virtio_balloon_ops){ discard, r };
	virtio_pci_init(&r->vp, &virtio_balloon_device, &r->b, DEVFN, BAR, 10, &gm, &ops);
	r->vp.fn.cfg[VIRTIO_PCI_CAP_MSIX + 3] = 0x80; /* MSI-X on, as Linux leaves it */
	return r;
}

static void rig_free(struct rig *r)
{
	virtio_host_free(&r->h);
	free(r);
}

static uint64_t rd(struct rig *r, uint32_t off, unsigned size)
{
	return virtio_pci_read(&r->vp, off, size);
}

static void wr(struct rig *r, uint32_t off, unsigned size, uint64_t v)
{
	virtio_pci_write(&r->vp, off, size, v);
}

static uint64_t ring(unsigned q)
{
	return RINGS + 0x1000ull * q;
}

/* Linux's virtio_pci_modern up to DRIVER_OK with nq queues: MSI-X vector 0
 * for configuration changes, q + 1 for queue q. */
static void driver_init(struct rig *r, uint64_t features, unsigned nq)
{
	wr(r, 0x14, 1, 0);
	memset(r->avail_idx, 0, sizeof r->avail_idx);
	memset(r->h.ram + RINGS, 0, 0x1000 * VIRTIO_QUEUES_MAX);
	virtio_host_negotiate(&r->vp, features);
	for (unsigned v = 0; v < VIRTIO_VECTORS; v++) {
		wr(r, VIRTIO_PCI_MSIX_TABLE + 16 * v, 4, 0xfee00000);
		wr(r, VIRTIO_PCI_MSIX_TABLE + 16 * v + 8, 4, 0x40 + v);
		wr(r, VIRTIO_PCI_MSIX_TABLE + 16 * v + 12, 4, 0);
	}
	wr(r, 0x10, 2, 0);
	for (unsigned q = 0; q < nq; q++) {
		wr(r, 0x16, 2, q);
		wr(r, 0x18, 2, QSIZE);
		wr(r, 0x1a, 2, q + 1);
		wr(r, 0x20, 8, ring(q));
		wr(r, 0x28, 8, ring(q) + 0x400);
		wr(r, 0x30, 8, ring(q) + 0x800);
		wr(r, 0x1c, 2, 1);
	}
	wr(r, 0x14, 1, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK |
			       VIRTIO_STATUS_DRIVER_OK);
}

/* A chain of n buffers on queue q (descriptors from 0), notified. */
static void post(struct rig *r, unsigned q, unsigned n, const uint64_t *gpa, const uint32_t *len,
		 uint16_t flags)
{
	uint8_t *avail = r->h.ram + ring(q) + 0x400;

	for (unsigned i = 0; i < n; i++) {
		uint8_t *d = r->h.ram + ring(q) + 16 * i;
		uint16_t f = flags | (i + 1 < n ? VIRTQ_DESC_F_NEXT : 0), next = (uint16_t)(i + 1);

		memcpy(d, &gpa[i], 8);
		memcpy(d + 8, &len[i], 4);
		memcpy(d + 12, &f, 2);
		memcpy(d + 14, &next, 2);
	}
	memset(avail + 4 + 2 * (r->avail_idx[q] % QSIZE), 0, 2);
	r->avail_idx[q]++;
	memcpy(avail + 2, &r->avail_idx[q], 2);
	wr(r, VIRTIO_PCI_NOTIFY + VIRTIO_PCI_NOTIFY_MULT * q, 2, 0);
}

/* An array of PFNs at BUF on queue q. */
static void pfns(struct rig *r, unsigned q, const uint32_t *pfn, unsigned n)
{
	uint64_t gpa = BUF;
	uint32_t len = 4 * n;

	memcpy(r->h.ram + BUF, pfn, len);
	post(r, q, 1, &gpa, &len, 0);
}

static uint16_t used_idx(struct rig *r, unsigned q)
{
	uint16_t v;

	memcpy(&v, r->h.ram + ring(q) + 0x800 + 2, 2);
	return v;
}

static bool needs_reset(struct rig *r)
{
	return rd(r, 0x14, 1) & VIRTIO_STATUS_NEEDS_RESET;
}

static const uint64_t ALL = VIRTIO_F_VERSION_1 | VIRTIO_BALLOON_F_STATS_VQ |
			    VIRTIO_BALLOON_F_REPORTING;

TEST(virtio_balloon_config_target_and_actual)
{
	struct rig *r = rig_new();

	wr(r, 0x00, 4, 0);
	CHECK_EQ_U64(rd(r, 0x04, 4) & 0xff, VIRTIO_BALLOON_F_STATS_VQ | VIRTIO_BALLOON_F_REPORTING);
	CHECK(!(rd(r, 0x04, 4) & VIRTIO_BALLOON_F_FREE_PAGE_HINT));
	driver_init(r, ALL, 4);
	virtio_balloon_set_target(&r->vp, 16384);
	CHECK_EQ_U64(r->h.msis, 1);
	CHECK_EQ_U64(r->h.last_msi.vector, 0x40); /* the configuration vector */
	CHECK_EQ_U64(rd(r, VIRTIO_PCI_DEVICE, 4), 16384);
	/* the guest writes actual, whole or a byte; num_pages is not its own */
	wr(r, VIRTIO_PCI_DEVICE + 4, 4, 300);
	wr(r, VIRTIO_PCI_DEVICE + 5, 1, 2);
	wr(r, VIRTIO_PCI_DEVICE, 4, 7);
	CHECK_EQ_U64(r->b.actual, 0x22c);
	CHECK_EQ_U64(rd(r, VIRTIO_PCI_DEVICE, 8), 16384 | 0x22cull << 32);
	/* a reset empties the balloon as the driver sees it; the target stays */
	wr(r, 0x14, 1, 0);
	CHECK_EQ_U64(rd(r, VIRTIO_PCI_DEVICE + 4, 4), 0);
	CHECK_EQ_U64(rd(r, VIRTIO_PCI_DEVICE, 4), 16384);
	rig_free(r);
}

TEST(virtio_balloon_inflate_coalesces_deflate_counts)
{
	struct rig *r = rig_new();
	const uint32_t in[] = { 0x200, 0x201, 0x202, 0x300, 0x203, 0x204, 0x100 };
	const uint32_t out[] = { 0x200, 0x300 };

	driver_init(r, ALL, 4);
	pfns(r, 0, in, 7);
	CHECK_EQ_U64(used_idx(r, 0), 1);
	CHECK_EQ_U64(r->h.msis, 1);
	CHECK_EQ_U64(r->h.last_msi.vector, 0x41);
	REQUIRE(r->discards == 4);
	CHECK_EQ_U64(r->discard[0].gpa, 0x200000);
	CHECK_EQ_U64(r->discard[0].len, 3 * 4096);
	CHECK_EQ_U64(r->discard[1].gpa, 0x300000);
	CHECK_EQ_U64(r->discard[1].len, 4096);
	CHECK_EQ_U64(r->discard[2].gpa, 0x203000);
	CHECK_EQ_U64(r->discard[2].len, 2 * 4096);
	CHECK_EQ_U64(r->discard[3].gpa, 0x100000);
	CHECK_EQ_U64(r->b.inflated_pages, 7);
	CHECK_EQ_U64(r->b.discards, 4);
	CHECK_EQ_U64(r->b.discarded_bytes, 7 * 4096);
	/* deflate: counted, nothing discarded */
	pfns(r, 1, out, 2);
	CHECK_EQ_U64(used_idx(r, 1), 1);
	CHECK_EQ_U64(r->discards, 4);
	CHECK_EQ_U64(r->b.deflated_pages, 2);
	CHECK(!needs_reset(r));
	rig_free(r);
}

TEST(virtio_balloon_hostile_pfns_refused)
{
	struct rig *r = rig_new();
	/* past RAM, the VGA hole, the I/O APIC, the last PFN, the page that
	 * straddles the end of low RAM (0x9fc00), then a good one */
	const uint32_t in[] = { MEM_BYTES >> 12, 0xa0, 0xfec00, 0xffffffff, 0x9f, 0x150 };

	driver_init(r, ALL, 4);
	pfns(r, 0, in, 6);
	CHECK_EQ_U64(r->b.bad_pfns, 5);
	CHECK_EQ_U64(r->b.inflated_pages, 1);
	REQUIRE(r->discards == 1);
	CHECK_EQ_U64(r->discard[0].gpa, 0x150000);
	CHECK_EQ_U64(r->h.reports, 1);
	CHECK(!needs_reset(r));
	CHECK_EQ_U64(used_idx(r, 0), 1);
	pfns(r, 1, in, 5);
	CHECK_EQ_U64(r->b.bad_pfns, 10);
	CHECK_EQ_U64(r->b.deflated_pages, 0);
	rig_free(r);
}

TEST(virtio_balloon_malformed_buffers_need_reset)
{
	struct rig *r = rig_new();
	const uint32_t in[] = { 0x200, 0x201 };
	uint64_t gpa = BUF;
	uint32_t len = 6;

	/* an odd length: nothing of it is used */
	driver_init(r, ALL, 4);
	memcpy(r->h.ram + BUF, in, 8);
	post(r, 0, 1, &gpa, &len, 0);
	CHECK(needs_reset(r));
	CHECK_EQ_U64(r->discards, 0);
	CHECK_EQ_U64(r->b.inflated_pages, 0);
	CHECK_EQ_U64(r->vp.bad_rings, 1);
	CHECK_EQ_U64(used_idx(r, 0), 0);
	/* a device-writable inflate buffer */
	driver_init(r, ALL, 4);
	len = 8;
	post(r, 0, 1, &gpa, &len, VIRTQ_DESC_F_WRITE);
	CHECK(needs_reset(r));
	CHECK_EQ_U64(r->discards, 0);
	/* more PFNs than a chain may hold */
	driver_init(r, ALL, 4);
	len = BALLOON_CHAIN_BYTES_MAX + 4;
	post(r, 0, 1, &gpa, &len, 0);
	CHECK(needs_reset(r));
	/* a statistics buffer that is not whole entries */
	driver_init(r, ALL, 4);
	len = 15;
	post(r, 2, 1, &gpa, &len, 0);
	CHECK(needs_reset(r));
	CHECK_EQ_U64(r->b.stat_updates, 0);
	/* a device-readable reporting buffer */
	driver_init(r, ALL, 4);
	len = 4096;
	post(r, 3, 1, &gpa, &len, 0);
	CHECK(needs_reset(r));
	CHECK_EQ_U64(r->discards, 0);
	/* a buffer in MMIO: the ring walk refuses it */
	driver_init(r, ALL, 4);
	gpa = 0xfee00000;
	post(r, 0, 1, &gpa, &len, 0);
	CHECK(needs_reset(r));
	CHECK_EQ_U64(r->discards, 0);
	CHECK_EQ_U64(r->vp.bad_rings, 6);
	rig_free(r);
}

TEST(virtio_balloon_reporting_discards_ranges)
{
	struct rig *r = rig_new();
	const uint64_t gpa[] = { 0x200000, 0x100000, 0x180000, 0x300800 };
	const uint32_t len[] = { 0x100000, 0x80000, 0x80000, 0x1000 };

	driver_init(r, ALL, 4);
	post(r, 3, 4, gpa, len, VIRTQ_DESC_F_WRITE);
	CHECK_EQ_U64(used_idx(r, 3), 1);
	CHECK_EQ_U64(r->b.reported_ranges, 3);
	CHECK_EQ_U64(r->b.reported_bytes, 0x200000);
	CHECK_EQ_U64(r->b.bad_ranges, 1); /* not page-aligned */
	REQUIRE(r->discards == 2);
	CHECK_EQ_U64(r->discard[0].gpa, 0x200000);
	CHECK_EQ_U64(r->discard[0].len, 0x100000);
	CHECK_EQ_U64(r->discard[1].gpa, 0x100000); /* the two that touch, as one */
	CHECK_EQ_U64(r->discard[1].len, 0x100000);
	CHECK(!needs_reset(r));
	rig_free(r);
}

/* Queues are numbered over the features the driver took: without STATS_VQ
 * the reporting queue is 2. */
TEST(virtio_balloon_queue_numbering)
{
	struct rig *r = rig_new();
	uint64_t gpa = 0x200000;
	uint32_t len = 0x200000;

	CHECK_EQ_U64(virtio_balloon_queue(ALL, 2), BALLOON_STATS);
	CHECK_EQ_U64(virtio_balloon_queue(ALL, 3), BALLOON_REPORTING);
	CHECK_EQ_U64(virtio_balloon_queue(VIRTIO_BALLOON_F_REPORTING, 2), BALLOON_REPORTING);
	CHECK_EQ_U64(virtio_balloon_queue(VIRTIO_BALLOON_F_STATS_VQ, 3), BALLOON_NO_QUEUE);
	CHECK_EQ_U64(virtio_balloon_queue(0, 2), BALLOON_NO_QUEUE);
	driver_init(r, VIRTIO_F_VERSION_1 | VIRTIO_BALLOON_F_REPORTING, 3);
	post(r, 2, 1, &gpa, &len, VIRTQ_DESC_F_WRITE);
	CHECK_EQ_U64(r->b.reported_bytes, 0x200000);
	CHECK(!needs_reset(r));
	/* a queue the features do not give */
	driver_init(r, VIRTIO_F_VERSION_1, 3);
	post(r, 2, 1, &gpa, &len, VIRTQ_DESC_F_WRITE);
	CHECK(needs_reset(r));
	CHECK_EQ_U64(r->b.reported_bytes, 0x200000);
	rig_free(r);
}

static void stat_entry(uint8_t *p, uint16_t tag, uint64_t val)
{
	memcpy(p, &tag, 2);
	memcpy(p + 2, &val, 8);
}

TEST(virtio_balloon_stats_kept_and_requested)
{
	struct rig *r = rig_new();
	uint64_t gpa = BUF;
	uint32_t len = 3 * VIRTIO_BALLOON_STAT_BYTES;

	driver_init(r, ALL, 4);
	CHECK(!virtio_balloon_request_stats(&r->vp)); /* nothing held yet */
	stat_entry(r->h.ram + BUF, 4, 123 << 20);
	stat_entry(r->h.ram + BUF + 10, 5, 256 << 20);
	stat_entry(r->h.ram + BUF + 20, 99, 1);
	post(r, 2, 1, &gpa, &len, 0);
	CHECK_EQ_U64(r->b.stat[4], 123 << 20);
	CHECK_EQ_U64(r->b.stat[5], 256 << 20);
	CHECK_EQ_U64(r->b.stat_seen, 0x30);
	CHECK_EQ_U64(r->b.stat_unknown, 1);
	CHECK_EQ_U64(used_idx(r, 2), 0); /* held */
	unsigned msis = r->h.msis;
	CHECK(virtio_balloon_request_stats(&r->vp));
	CHECK_EQ_U64(used_idx(r, 2), 1);
	CHECK_EQ_U64(r->h.msis, msis + 1);
	CHECK_EQ_U64(r->h.last_msi.vector, 0x43);
	CHECK(!virtio_balloon_request_stats(&r->vp));
	/* the refill */
	stat_entry(r->h.ram + BUF, 4, 100 << 20);
	len = VIRTIO_BALLOON_STAT_BYTES;
	post(r, 2, 1, &gpa, &len, 0);
	CHECK_EQ_U64(r->b.stat[4], 100 << 20);
	CHECK_EQ_U64(r->b.stat_updates, 2);
	/* Linux kicks its first buffer in before DRIVER_OK: taken at DRIVER_OK */
	wr(r, 0x14, 1, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK);
	r->b.stat_updates = 0;
	r->b.stat_held = false;
	post(r, 2, 1, &gpa, &len, 0);
	CHECK_EQ_U64(r->b.stat_updates, 0);
	wr(r, 0x14, 1, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK |
			       VIRTIO_STATUS_DRIVER_OK);
	CHECK_EQ_U64(r->b.stat_updates, 1);
	CHECK(r->b.stat_held);
	/* a reset forgets the buffer */
	wr(r, 0x14, 1, 0);
	CHECK(!virtio_balloon_request_stats(&r->vp));
	rig_free(r);
}
