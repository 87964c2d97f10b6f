/* virtio-blk (OASIS virtio v1.2, 5.2) over dev/virtio_pci.h: one request
 * queue on a disk that is a host buffer, read-write (RAM, gone at power-off)
 * or read-only (a GRUB module: VIRTIO_BLK_F_RO, writes fail). Requests: IN,
 * OUT, FLUSH and GET_ID; one whose sectors run past the disk's end, or a
 * write to a read-only disk, ends with VIRTIO_BLK_S_IOERR and touches
 * nothing; an unknown type with VIRTIO_BLK_S_UNSUPP. A chain without the
 * 16-byte header or a status byte is a bad ring (the device needs a reset).
 * Pure, host-tested (tests/unit/test_virtio_blk.c). */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "dev/virtio_pci.h"

#define VIRTIO_ID_BLOCK 2
#define VIRTIO_BLK_SECTOR 512
#define VIRTIO_BLK_T_IN 0
#define VIRTIO_BLK_T_OUT 1
#define VIRTIO_BLK_T_FLUSH 4
#define VIRTIO_BLK_T_GET_ID 8
#define VIRTIO_BLK_S_OK 0
#define VIRTIO_BLK_S_IOERR 1
#define VIRTIO_BLK_S_UNSUPP 2
#define VIRTIO_BLK_F_SEG_MAX (1ull << 2)
#define VIRTIO_BLK_F_RO (1ull << 5)
#define VIRTIO_BLK_F_FLUSH (1ull << 9)

struct virtio_blk {
	uint8_t *disk;     /* the integrator's */
	uint64_t bytes;    /* a whole number of sectors */
	bool read_only;
	uint64_t reads, writes, ioerrs; /* requests */
	struct virtq_chain chain; /* the request being served */
};

extern const struct virtio_device virtio_blk_rw, virtio_blk_ro;
/* The device type for b (read-only or not). */
const struct virtio_device *virtio_blk_device(const struct virtio_blk *b);
