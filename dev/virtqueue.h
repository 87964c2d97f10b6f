/* The split virtqueue of virtio 1.x (OASIS virtio v1.2, 2.7) as the device
 * sees it: the driver's descriptor table, available ring and used ring in
 * guest memory, read and written only through the checked window of
 * dev/guest_mem.h. Pure, host-tested (tests/unit/test_virtqueue.c) and
 * fuzzed (tests/fuzz/fuzz_virtq.c).
 *
 * Everything in the rings is the guest's and is checked before use:
 *   - at enable (virtq_layout_ok): a size that is a power of two up to
 *     VIRTQ_SIZE_MAX, the rings' alignment (2.7: 16, 2, 4) and each ring
 *     whole inside guest RAM;
 *   - the available index may run at most `size` entries ahead of what the
 *     device consumed (16-bit arithmetic, so wrap-around is fine);
 *   - a head or next index below the table's size; an indirect table (only
 *     when negotiated) a whole number of descriptors, at most VIRTQ_SEGS_MAX,
 *     in RAM, not nested and not chained on (2.7.5.3.1); a readable
 *     descriptor after a writable one is refused (2.7.4.2);
 *   - a walk visits at most `size` descriptors of the table (a loop, or a
 *     chain longer than the queue, is an error) and at most VIRTQ_SEGS_MAX
 *     buffers in all; every buffer lies whole inside guest RAM.
 * A ring that breaks a rule makes the queue broken: virtq_pop says why once
 * (VIRTQ_BAD) and from then on returns VIRTQ_BROKEN until a reset, and the
 * device sets DEVICE_NEEDS_RESET (2.1.2). Nothing is consumed from a bad
 * entry. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dev/guest_mem.h"

#define VIRTQ_SIZE_MAX 128
#define VIRTQ_SEGS_MAX 128 /* buffers in one chain, indirect ones included */

#define VIRTQ_DESC_F_NEXT 1
#define VIRTQ_DESC_F_WRITE 2
#define VIRTQ_DESC_F_INDIRECT 4
#define VIRTQ_AVAIL_F_NO_INTERRUPT 1
#define VIRTQ_DESC_BYTES 16

/* One queue: what the driver configured through the transport, and where
 * the device is in the rings. All of it is device state (snapshots). */
struct virtq {
	uint16_t size;         /* entries; 0: the queue does not exist */
	uint16_t size_max;     /* what the device offers */
	uint16_t msix_vector;  /* VIRTIO_MSI_NO_VECTOR (0xffff): none */
	bool enabled;
	bool broken;           /* a bad ring was seen: nothing more until reset */
	uint64_t desc, avail, used; /* guest-physical */
	uint16_t last_avail;   /* the next available entry the device takes */
	uint16_t used_idx;     /* the used ring's idx as the device last wrote it */
	uint16_t signalled_used; /* used_idx at the last interrupt */
};

/* Negotiated features that change how the rings are read. */
struct virtq_features {
	bool indirect;  /* VIRTIO_F_INDIRECT_DESC */
	bool event_idx; /* VIRTIO_F_EVENT_IDX */
};

/* A buffer of a chain: [gpa, gpa + len), checked to be in guest RAM. */
struct virtq_seg {
	uint64_t gpa;
	uint32_t len;
};

/* A chain taken from the available ring: the device-readable buffers first
 * (seg[0 .. nr_out)), then the device-writable ones (seg[nr_out ..
 * nr_out + nr_in)). */
struct virtq_chain {
	uint16_t head;
	unsigned nr_out, nr_in;
	uint64_t out_bytes, in_bytes;
	struct virtq_seg seg[VIRTQ_SEGS_MAX];
};

enum virtq_result {
	VIRTQ_EMPTY,  /* nothing available */
	VIRTQ_CHAIN,  /* *c holds the next chain */
	VIRTQ_BAD,    /* the ring broke a rule (the reason in err); now broken */
	VIRTQ_BROKEN, /* broken before: nothing is read */
};

/* A queue as reset leaves it: no rings, disabled, offering size_max. */
void virtq_reset(struct virtq *q, uint16_t size_max);
/* The configured layout is one the device can use (see above); false with
 * the reason in err. */
bool virtq_layout_ok(const struct virtq *q, const struct guest_mem *m, char *err, size_t errlen);
/* Take the next available chain. */
enum virtq_result virtq_pop(struct virtq *q, const struct guest_mem *m,
			    const struct virtq_features *f, struct virtq_chain *c, char *err,
			    size_t errlen);
/* Hand chain head back with `written` bytes written into its writable
 * buffers: the used ring's next entry, then its idx. False (and the queue
 * broken, the reason in err) when the used ring is not writable RAM. */
bool virtq_push(struct virtq *q, const struct guest_mem *m, uint16_t head, uint32_t written,
		char *err, size_t errlen);
/* After pushes: does the driver want an interrupt for what was used since
 * the last one (VIRTQ_AVAIL_F_NO_INTERRUPT, or with event_idx the
 * available ring's used_event, 2.7.7)? Counts what it answers for as
 * signalled either way. */
bool virtq_need_interrupt(struct virtq *q, const struct guest_mem *m,
			  const struct virtq_features *f);
/* The bytes of a queue's rings in guest memory, as 2.7 lays them out. */
uint64_t virtq_avail_bytes(uint16_t size);
uint64_t virtq_used_bytes(uint16_t size);

/* Bytes of a chain as one stream: the device-readable buffers' from byte
 * `at` on into buf, or buf into the device-writable buffers from byte `at`
 * on. False when the chain has fewer bytes or a copy failed. */
bool virtq_chain_read(const struct guest_mem *m, const struct virtq_chain *c, uint64_t at,
		      void *buf, uint64_t len);
bool virtq_chain_write(const struct guest_mem *m, const struct virtq_chain *c, uint64_t at,
		       const void *buf, uint64_t len);
