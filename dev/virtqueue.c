/* The split virtqueue, device side (virtqueue.h has the rules). */
#include "dev/virtqueue.h"
#include "lib/print.h"
#include "lib/string.h"

/* Ring layout (2.7): desc[size] of 16 bytes; avail {flags, idx,
 * ring[size], used_event} of u16; used {flags, idx, ring[size] of {u32 id,
 * u32 len}, avail_event}. All little-endian, as x86 is. */
#define AVAIL_IDX 2
#define AVAIL_RING 4
#define USED_IDX 2
#define USED_RING 4
#define USED_ELEM 8

struct desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};

uint64_t virtq_avail_bytes(uint16_t size)
{
	return AVAIL_RING + 2ull * size + 2;
}

uint64_t virtq_used_bytes(uint16_t size)
{
	return USED_RING + (uint64_t)USED_ELEM * size + 2;
}

void virtq_reset(struct virtq *q, uint16_t size_max)
{
	memset(q, 0, sizeof(*q));
	q->size_max = size_max;
	q->size = size_max;
	q->msix_vector = 0xffff;
}

bool virtq_layout_ok(const struct virtq *q, const struct guest_mem *m, char *err, size_t errlen)
{
	if (!q->size || q->size > q->size_max || (q->size & (q->size - 1))) {
		ksnprintf(err, errlen, "queue size %u is not a power of two up to %u", q->size,
			  q->size_max);
		return false;
	}
	if ((q->desc & 15) || (q->avail & 1) || (q->used & 3)) {
		ksnprintf(err, errlen, "rings misaligned (desc 0x%llx, avail 0x%llx, used 0x%llx)",
			  (unsigned long long)q->desc, (unsigned long long)q->avail,
			  (unsigned long long)q->used);
		return false;
	}
	if (!guest_mem_ok(m, q->desc, (uint64_t)VIRTQ_DESC_BYTES * q->size) ||
	    !guest_mem_ok(m, q->avail, virtq_avail_bytes(q->size)) ||
	    !guest_mem_ok(m, q->used, virtq_used_bytes(q->size))) {
		ksnprintf(err, errlen, "a ring is outside guest RAM (desc 0x%llx, avail 0x%llx, used 0x%llx)",
			  (unsigned long long)q->desc, (unsigned long long)q->avail,
			  (unsigned long long)q->used);
		return false;
	}
	return true;
}

static enum virtq_result bad(struct virtq *q)
{
	q->broken = true;
	return VIRTQ_BAD;
}

static bool read16(const struct guest_mem *m, uint64_t gpa, uint16_t *v)
{
	return guest_mem_read(m, gpa, v, sizeof(*v));
}

static bool read_desc(const struct guest_mem *m, uint64_t table, uint16_t i, struct desc *d)
{
	return guest_mem_read(m, table + (uint64_t)VIRTQ_DESC_BYTES * i, d, sizeof(*d));
}

/* Walk the chain at head into c: every descriptor and buffer checked, at
 * most q->size descriptors of the queue's table and VIRTQ_SEGS_MAX buffers. */
static enum virtq_result walk(struct virtq *q, const struct guest_mem *m,
			      const struct virtq_features *f, uint16_t head, struct virtq_chain *c,
			      char *err, size_t errlen)
{
	uint64_t table = q->desc;
	unsigned table_size = q->size, visited = 0;
	bool indirect = false;
	uint16_t i = head;
	struct desc d;

	memset(c, 0, offsetof(struct virtq_chain, seg));
	c->head = head;
	for (;;) {
		if (i >= table_size) {
			ksnprintf(err, errlen, "descriptor %u past the %s table of %u", i,
				  indirect ? "indirect" : "queue's", table_size);
			return bad(q);
		}
		if (++visited > table_size) {
			ksnprintf(err, errlen, "chain at head %u runs past %u descriptors (a loop?)",
				  head, table_size);
			return bad(q);
		}
		if (!read_desc(m, table, i, &d)) {
			ksnprintf(err, errlen, "descriptor %u at 0x%llx is outside guest RAM", i,
				  (unsigned long long)(table + (uint64_t)VIRTQ_DESC_BYTES * i));
			return bad(q);
		}
		if (d.flags & VIRTQ_DESC_F_INDIRECT) {
			if (!f->indirect || indirect || (d.flags & VIRTQ_DESC_F_NEXT)) {
				ksnprintf(err, errlen, "descriptor %u: indirect %s", i,
					  !f->indirect ? "not negotiated"
					  : indirect   ? "inside an indirect table"
						       : "with NEXT set");
				return bad(q);
			}
			if (!d.len || d.len % VIRTQ_DESC_BYTES ||
			    d.len / VIRTQ_DESC_BYTES > VIRTQ_SEGS_MAX ||
			    !guest_mem_ok(m, d.addr, d.len)) {
				ksnprintf(err, errlen, "descriptor %u: indirect table of %u bytes at 0x%llx",
					  i, d.len, (unsigned long long)d.addr);
				return bad(q);
			}
			table = d.addr;
			table_size = d.len / VIRTQ_DESC_BYTES;
			indirect = true;
			visited = 0;
			i = 0;
			continue;
		}
		bool writable = d.flags & VIRTQ_DESC_F_WRITE;
		unsigned n = c->nr_out + c->nr_in;

		if (!writable && c->nr_in) {
			ksnprintf(err, errlen, "descriptor %u: readable after a writable one", i);
			return bad(q);
		}
		if (n == VIRTQ_SEGS_MAX) {
			ksnprintf(err, errlen, "chain at head %u has more than %u buffers", head,
				  VIRTQ_SEGS_MAX);
			return bad(q);
		}
		if (!guest_mem_ok(m, d.addr, d.len)) {
			ksnprintf(err, errlen, "descriptor %u: buffer 0x%llx+%u is outside guest RAM", i,
				  (unsigned long long)d.addr, d.len);
			return bad(q);
		}
		c->seg[n] = (struct virtq_seg){ d.addr, d.len };
		if (writable) {
			c->nr_in++;
			c->in_bytes += d.len;
		} else {
			c->nr_out++;
			c->out_bytes += d.len;
		}
		if (!(d.flags & VIRTQ_DESC_F_NEXT))
			return VIRTQ_CHAIN;
		i = d.next;
	}
}

enum virtq_result virtq_pop(struct virtq *q, const struct guest_mem *m,
			    const struct virtq_features *f, struct virtq_chain *c, char *err,
			    size_t errlen)
{
	uint16_t avail_idx, head;
	enum virtq_result r;

	if (q->broken)
		return VIRTQ_BROKEN;
	if (!read16(m, q->avail + AVAIL_IDX, &avail_idx)) {
		ksnprintf(err, errlen, "available ring at 0x%llx is outside guest RAM",
			  (unsigned long long)q->avail);
		return bad(q);
	}
	uint16_t pending = (uint16_t)(avail_idx - q->last_avail);
	if (!pending)
		return VIRTQ_EMPTY;
	if (pending > q->size) {
		ksnprintf(err, errlen, "available idx %u is %u entries past %u, the queue holds %u",
			  avail_idx, pending, q->last_avail, q->size);
		return bad(q);
	}
	if (!read16(m, q->avail + AVAIL_RING + 2ull * (q->last_avail % q->size), &head)) {
		ksnprintf(err, errlen, "available ring at 0x%llx is outside guest RAM",
			  (unsigned long long)q->avail);
		return bad(q);
	}
	r = walk(q, m, f, head, c, err, errlen);
	if (r != VIRTQ_CHAIN)
		return r;
	q->last_avail++;
	/* Tell the driver which entry the device wants a notification at. */
	if (f->event_idx &&
	    !guest_mem_write(m, q->used + virtq_used_bytes(q->size) - 2, &q->last_avail, 2)) {
		ksnprintf(err, errlen, "used ring at 0x%llx is outside guest RAM",
			  (unsigned long long)q->used);
		return bad(q);
	}
	return VIRTQ_CHAIN;
}

bool virtq_push(struct virtq *q, const struct guest_mem *m, uint16_t head, uint32_t written,
		char *err, size_t errlen)
{
	uint32_t elem[2] = { head, written };
	uint16_t idx = (uint16_t)(q->used_idx + 1);

	if (q->broken)
		return false;
	if (!guest_mem_write(m, q->used + USED_RING + (uint64_t)USED_ELEM * (q->used_idx % q->size),
			     elem, sizeof(elem)) ||
	    !guest_mem_write(m, q->used + USED_IDX, &idx, sizeof(idx))) {
		ksnprintf(err, errlen, "used ring at 0x%llx is outside guest RAM",
			  (unsigned long long)q->used);
		q->broken = true;
		return false;
	}
	q->used_idx = idx;
	return true;
}

bool virtq_need_interrupt(struct virtq *q, const struct guest_mem *m,
			  const struct virtq_features *f)
{
	uint16_t old = q->signalled_used, now = q->used_idx, v;

	if (old == now)
		return false;
	q->signalled_used = now;
	if (f->event_idx) {
		/* vring_need_event: used_event lies in [old, now) */
		if (!read16(m, q->avail + virtq_avail_bytes(q->size) - 2, &v))
			return true;
		return (uint16_t)(now - v - 1) < (uint16_t)(now - old);
	}
	if (!read16(m, q->avail, &v))
		return true;
	return !(v & VIRTQ_AVAIL_F_NO_INTERRUPT);
}

/* Copy between buf and the bytes [at, at + len) of segments seg[0..n). */
static bool chain_copy(const struct guest_mem *m, const struct virtq_seg *seg, unsigned n,
		       uint64_t at, uint8_t *buf, uint64_t len, bool to_guest)
{
	for (unsigned i = 0; i < n && len; i++) {
		if (at >= seg[i].len) {
			at -= seg[i].len;
			continue;
		}
		uint32_t k = (uint32_t)(seg[i].len - at < len ? seg[i].len - at : len);
		bool ok = to_guest ? guest_mem_write(m, seg[i].gpa + at, buf, k)
				   : guest_mem_read(m, seg[i].gpa + at, buf, k);

		if (!ok)
			return false;
		buf += k;
		len -= k;
		at = 0;
	}
	return !len;
}

bool virtq_chain_read(const struct guest_mem *m, const struct virtq_chain *c, uint64_t at,
		      void *buf, uint64_t len)
{
	return chain_copy(m, c->seg, c->nr_out, at, buf, len, false);
}

bool virtq_chain_write(const struct guest_mem *m, const struct virtq_chain *c, uint64_t at,
		       const void *buf, uint64_t len)
{
	return chain_copy(m, c->seg + c->nr_out, c->nr_in, at, (uint8_t *)(uintptr_t)buf, len, true);
}
