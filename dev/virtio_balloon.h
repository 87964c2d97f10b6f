/* virtio-balloon (OASIS virtio v1.2, 5.5) over dev/virtio_pci.h: the guest
 * gives pages to the host (inflate) and takes them back (deflate), reports
 * its memory statistics, and reports free ranges it will not touch until it
 * allocates them again (free page reporting). Pure, host-tested
 * (tests/unit/test_virtio_balloon.c); the integrator discards what leaves
 * the guest (ops.discard: mapping zapped, frame freed, as a host's
 * madvise(MADV_DONTNEED)).
 *
 * Features offered: VIRTIO_BALLOON_F_STATS_VQ and VIRTIO_BALLOON_F_REPORTING
 * (not FREE_PAGE_HINT, DEFLATE_ON_OOM nor PAGE_POISON). The queues are
 * numbered densely over the features the driver negotiated, as Linux's
 * virtio_find_vqs numbers them: inflate 0, deflate 1, then the statistics
 * queue if STATS_VQ, then the reporting queue if REPORTING (2 without
 * STATS_VQ, 3 with it).
 *
 * Configuration (5.5.4): num_pages, the balloon's target in 4 KiB pages, set
 * by sprig (a configuration change interrupt); actual, the pages the driver
 * says it holds, written by the guest. Writes to num_pages are dropped.
 *
 * What the guest sends is checked before use:
 *   - inflate and deflate buffers: device-readable arrays of 32-bit PFNs
 *     (4 KiB pages, VIRTIO_BALLOON_PFN_SHIFT); a PFN whose page is not whole
 *     in guest RAM (past its end, in the VGA or BIOS hole, in MMIO) is
 *     refused and counted (bad_pfns), the others go on. Inflated pages are
 *     discarded in runs of contiguous PFNs, one discard a run; deflated
 *     pages need nothing: they fault back in as zero pages.
 *   - reporting buffers: device-writable guest ranges, each discarded whole;
 *     one not page-aligned is refused and counted (bad_ranges).
 *   - the statistics buffer: device-readable {le16 tag, le64 value} entries
 *     (5.5.6.3); the latest value of each known tag is kept. The device
 *     holds the buffer and hands it back when it wants fresh statistics
 *     (virtio_balloon_request_stats).
 *   A chain of the wrong direction or a length that is not a whole number of
 *   entries (or over BALLOON_CHAIN_BYTES_MAX) is a bad ring: the device needs
 *   a reset, nothing of the chain is used. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "dev/virtio_pci.h"

#define VIRTIO_ID_BALLOON 5
#define VIRTIO_BALLOON_F_STATS_VQ (1ull << 1)
#define VIRTIO_BALLOON_F_FREE_PAGE_HINT (1ull << 3)
#define VIRTIO_BALLOON_F_REPORTING (1ull << 5)
#define VIRTIO_BALLOON_PFN_SHIFT 12
/* A chain's bytes at most: 4096 PFNs (Linux sends 256), or the statistics. */
#define BALLOON_CHAIN_BYTES_MAX 16384u
#define VIRTIO_BALLOON_STAT_BYTES 10 /* le16 tag, le64 value, packed */
/* Statistics tags (5.5.6.3, and Linux's since): the names they print with. */
#define VIRTIO_BALLOON_S_NR 16
extern const char *const virtio_balloon_stat_names[VIRTIO_BALLOON_S_NR];

enum balloon_queue { BALLOON_INFLATE, BALLOON_DEFLATE, BALLOON_STATS, BALLOON_REPORTING,
		     BALLOON_NO_QUEUE };

struct virtio_balloon_ops {
	/* [gpa, gpa + len), whole pages of guest RAM, left the guest. */
	void (*discard)(void *ctx, uint64_t gpa, uint64_t len);
	void *ctx;
};

struct virtio_balloon {
	uint32_t num_pages; /* the target (configuration), sprig's */
	uint32_t actual;    /* the guest's (configuration) */
	/* Counters, as KVM/QEMU name them where they have them. */
	uint64_t inflated_pages, deflated_pages; /* PFNs taken from the queues */
	uint64_t reported_ranges, reported_bytes;
	uint64_t discards, discarded_bytes; /* ops.discard calls: the zaps */
	uint64_t bad_pfns, bad_ranges;      /* refused */
	/* The guest's latest statistics. */
	uint64_t stat[VIRTIO_BALLOON_S_NR];
	uint32_t stat_seen;   /* a bit per tag that ever came */
	uint64_t stat_updates; /* buffers taken */
	uint64_t stat_unknown; /* entries with a tag past VIRTIO_BALLOON_S_NR */
	bool stat_held;        /* the statistics buffer is the device's */
	uint16_t stat_head;
	/* Not device state. */
	struct virtio_balloon_ops ops;
	struct virtq_chain chain; /* the buffer being served */
};

extern const struct virtio_device virtio_balloon_device;
/* The queue's job under the driver's features (see above). */
enum balloon_queue virtio_balloon_queue(uint64_t driver_features, unsigned q);
/* sprig's target, in pages: the configuration changes. */
void virtio_balloon_set_target(struct virtio_pci *vp, uint32_t pages);
/* Hand the statistics buffer back so that the driver refills it: true when
 * the device held one. */
bool virtio_balloon_request_stats(struct virtio_pci *vp);
