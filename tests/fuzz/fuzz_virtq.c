/* dev/virtqueue.c: a split virtqueue in hostile guest memory. The input's
 * first 8 bytes pick the queue (size 2^(b0 & 7), the features from b1, the
 * ring offsets from b2-b7); the rest fills guest RAM, two 32 KiB ranges with
 * a hole between them (the hole and everything past the second range stand
 * for MMIO). The device takes chains and hands them back until the ring is
 * empty or broken. Properties checked, besides the sanitizers:
 *   - no copy touches anything but RAM, and the device writes nothing but its
 *     used ring (the element, idx and avail_event);
 *   - every chain has 1 to VIRTQ_SEGS_MAX buffers, each whole in RAM, a head
 *     below the size, and the byte counts add up;
 *   - a pop reads at most the avail idx and head, a table's descriptors and
 *     an indirect table's, and writes avail_event once;
 *   - VIRTQ_BAD leaves the queue broken, and a broken queue reads nothing. */
#include "dev/virtqueue.h"
#include "tests/fuzz/fuzz.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define RANGE 0x8000u
#define HIGH 0x10000u /* the second range; [RANGE, HIGH) is a hole */
#define MEM_END (HIGH + RANGE)

struct fuzz_mem {
	uint8_t ram[MEM_END];
	uint64_t used, used_bytes;
	unsigned copies;
};

static bool in_ram(uint64_t gpa, uint64_t len)
{
	return (gpa < RANGE && len <= RANGE - gpa) ||
	       (gpa >= HIGH && gpa < MEM_END && len <= MEM_END - gpa);
}

static bool copy_from(void *ctx, uint64_t gpa, void *buf, uint32_t len)
{
	struct fuzz_mem *f = ctx;

	FUZZ_ASSERT(in_ram(gpa, len));
	f->copies++;
	memcpy(buf, f->ram + gpa, len);
	return true;
}

static bool copy_to(void *ctx, uint64_t gpa, const void *buf, uint32_t len)
{
	struct fuzz_mem *f = ctx;

	FUZZ_ASSERT(in_ram(gpa, len));
	FUZZ_ASSERT(gpa >= f->used && gpa - f->used + len <= f->used_bytes);
	f->copies++;
	memcpy(f->ram + gpa, buf, len);
	return true;
}

/* A ring offset from two input bytes: anywhere in RAM, the hole or past it. */
static uint64_t where(const uint8_t *b)
{
	return ((uint64_t)b[0] | (uint64_t)b[1] << 8) * 2;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fuzz_mem mem;
	struct guest_mem gm = { .nr_ram = 2, .copy_from = copy_from, .copy_to = copy_to, .ctx = &mem };
	struct virtq_features feat;
	static struct virtq_chain c;
	struct virtq q;
	char err[160];

	if (size < 8)
		return 0;
	gm.ram[0].base = 0;
	gm.ram[0].len = RANGE;
	gm.ram[1].base = HIGH;
	gm.ram[1].len = RANGE;
	memset(mem.ram, 0, sizeof(mem.ram));
	memcpy(mem.ram, data + 8, size - 8 < MEM_END ? size - 8 : MEM_END);
	virtq_reset(&q, VIRTQ_SIZE_MAX);
	q.size = (uint16_t)(1u << (data[0] & 7));
	feat.indirect = data[1] & 1;
	feat.event_idx = data[1] & 2;
	q.desc = where(data + 2) & ~15ull;
	q.avail = where(data + 4);
	q.used = where(data + 6) & ~3ull;
	if (!virtq_layout_ok(&q, &gm, err, sizeof err))
		return 0;
	mem.used = q.used;
	mem.used_bytes = virtq_used_bytes(q.size);
	q.enabled = true;

	for (unsigned round = 0; round < 4u * q.size + 4; round++) {
		unsigned before = mem.copies;
		enum virtq_result r = virtq_pop(&q, &gm, &feat, &c, err, sizeof err);

		FUZZ_ASSERT(mem.copies - before <= 2u + q.size + VIRTQ_SEGS_MAX + 1);
		if (r == VIRTQ_EMPTY)
			break;
		if (r == VIRTQ_BAD) {
			FUZZ_ASSERT(q.broken);
			before = mem.copies;
			FUZZ_ASSERT(virtq_pop(&q, &gm, &feat, &c, err, sizeof err) == VIRTQ_BROKEN);
			FUZZ_ASSERT(mem.copies == before);
			if (fuzz_verbose())
				printf("bad ring: %s\n", err);
			break;
		}
		FUZZ_ASSERT(r == VIRTQ_CHAIN);
		unsigned n = c.nr_out + c.nr_in;
		uint64_t out = 0, in = 0;

		FUZZ_ASSERT(n >= 1 && n <= VIRTQ_SEGS_MAX);
		FUZZ_ASSERT(c.head < q.size);
		for (unsigned i = 0; i < n; i++) {
			FUZZ_ASSERT(in_ram(c.seg[i].gpa, c.seg[i].len));
			*(i < c.nr_out ? &out : &in) += c.seg[i].len;
		}
		FUZZ_ASSERT(out == c.out_bytes && in == c.in_bytes);
		virtq_push(&q, &gm, c.head, (uint32_t)c.in_bytes, err, sizeof err);
		virtq_need_interrupt(&q, &gm, &feat);
	}
	return 0;
}
