/* virtio-blk on a host buffer (virtio_blk.h). */
#include "dev/virtio_blk.h"
#include "lib/bytes.h"
#include "lib/string.h"

#define HDR_BYTES 16
#define CONFIG_BYTES 24 /* capacity, size_max, seg_max, geometry, blk_size */

static struct virtio_blk *blk(struct virtio_pci *vp)
{
	return vp->dev_state;
}

static void config_read(struct virtio_pci *vp, unsigned off, void *buf, unsigned len)
{
	uint8_t c[CONFIG_BYTES] = { 0 };

	put64(c, blk(vp)->bytes / VIRTIO_BLK_SECTOR);
	put32(c + 12, VIRTQ_SEGS_MAX - 2); /* seg_max: the header and status take two */
	put32(c + 20, VIRTIO_BLK_SECTOR);
	memcpy(buf, c + off, len);
}

/* The status of request r's data [pos, pos + len) on the disk. */
static uint8_t transfer(struct virtio_pci *vp, const struct virtq_chain *c, uint32_t type,
			uint64_t sector, uint64_t len)
{
	struct virtio_blk *b = blk(vp);
	uint64_t pos = sector * VIRTIO_BLK_SECTOR;

	if (sector > b->bytes / VIRTIO_BLK_SECTOR || len > b->bytes - pos ||
	    (type == VIRTIO_BLK_T_OUT && b->read_only))
		return VIRTIO_BLK_S_IOERR;
	if (type == VIRTIO_BLK_T_IN) {
		b->reads++;
		return virtq_chain_write(&vp->mem, c, 0, b->disk + pos, len) ? VIRTIO_BLK_S_OK
									       : VIRTIO_BLK_S_IOERR;
	}
	b->writes++;
	return virtq_chain_read(&vp->mem, c, HDR_BYTES, b->disk + pos, len) ? VIRTIO_BLK_S_OK
									     : VIRTIO_BLK_S_IOERR;
}

/* Serve one request; the bytes written into the chain. */
static uint32_t serve(struct virtio_pci *vp, const struct virtq_chain *c, bool *bad)
{
	static const char id[20] = "sprig-virtio-blk";
	uint8_t hdr[HDR_BYTES], st;
	uint32_t type, written = 0;
	uint64_t sector;

	if (!c->in_bytes || !virtq_chain_read(&vp->mem, c, 0, hdr, sizeof hdr)) {
		*bad = true;
		return 0;
	}
	type = rd32(hdr);
	sector = rd64(hdr + 8);
	switch (type) {
	case VIRTIO_BLK_T_IN:
		st = transfer(vp, c, type, sector, c->in_bytes - 1);
		written = st == VIRTIO_BLK_S_OK ? (uint32_t)(c->in_bytes - 1) : 0;
		break;
	case VIRTIO_BLK_T_OUT:
		st = transfer(vp, c, type, sector, c->out_bytes - HDR_BYTES);
		break;
	case VIRTIO_BLK_T_FLUSH:
		st = VIRTIO_BLK_S_OK;
		break;
	case VIRTIO_BLK_T_GET_ID:
		written = c->in_bytes - 1 < sizeof id ? (uint32_t)(c->in_bytes - 1) : sizeof id;
		st = virtq_chain_write(&vp->mem, c, 0, id, written) ? VIRTIO_BLK_S_OK : VIRTIO_BLK_S_IOERR;
		break;
	default:
		st = VIRTIO_BLK_S_UNSUPP;
	}
	blk(vp)->ioerrs += st == VIRTIO_BLK_S_IOERR;
	if (!virtq_chain_write(&vp->mem, c, c->in_bytes - 1, &st, 1)) {
		*bad = true;
		return 0;
	}
	return written + 1;
}

static void notify(struct virtio_pci *vp, unsigned q)
{
	struct virtq_chain *c = &blk(vp)->chain;

	while (virtio_pop(vp, q, c)) {
		bool bad = false;
		uint32_t written = serve(vp, c, &bad);

		if (bad) {
			virtio_device_error(vp, "a request without its header or status byte");
			return;
		}
		virtio_push(vp, q, c->head, written);
	}
	virtio_interrupt(vp, q);
}

#define BLK_DEVICE(features_)                                                                    \
	{                                                                                        \
		.name = "blk", .id = VIRTIO_ID_BLOCK, .class = 0x018000, .nr_queues = 1,         \
		.queue_size = VIRTQ_SIZE_MAX, .features = (features_), .config_bytes = CONFIG_BYTES, \
		.config_read = config_read, .notify = notify,                                    \
	}
const struct virtio_device virtio_blk_rw = BLK_DEVICE(VIRTIO_BLK_F_SEG_MAX | VIRTIO_BLK_F_FLUSH);
const struct virtio_device virtio_blk_ro =
	BLK_DEVICE(VIRTIO_BLK_F_SEG_MAX | VIRTIO_BLK_F_FLUSH | VIRTIO_BLK_F_RO);

const struct virtio_device *virtio_blk_device(const struct virtio_blk *b)
{
	return b->read_only ? &virtio_blk_ro : &virtio_blk_rw;
}
