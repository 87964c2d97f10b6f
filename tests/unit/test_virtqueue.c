/* dev/virtqueue.c and dev/guest_mem.c: split virtqueues in a host buffer
 * standing for guest RAM, well-formed and hostile rings. */
#include "check.h"
#include "dev/virtqueue.h"
#include <stdlib.h>
#include <string.h>

#define MEM_BYTES (2ull << 20) /* RAM 0-0x9fc00 and 1 MiB-2 MiB (pc_e820) */
#define DESC 0x1000ull
#define AVAIL 0x2000ull
#define USED 0x3000ull
#define BUF 0x10000ull

struct vm_mem {
	uint8_t *ram;
	struct guest_mem gm;
	unsigned copies; /* copies the window let through */
};

static bool copy_from(void *ctx, uint64_t gpa, void *buf, uint32_t len)
{
	struct vm_mem *v = ctx;

	v->copies++;
	memcpy(buf, v->ram + gpa, len);
	return true;
}

static bool copy_to(void *ctx, uint64_t gpa, const void *buf, uint32_t len)
{
	struct vm_mem *v = ctx;

	v->copies++;
	memcpy(v->ram + gpa, buf, len);
	return true;
}

static struct vm_mem *mem_new(void)
{
	struct vm_mem *v = calloc(1, sizeof(*v));

	v->ram = calloc(1, MEM_BYTES);
	guest_mem_init_pc(&v->gm, MEM_BYTES);
	v->gm.copy_from = copy_from;
	v->gm.copy_to = copy_to;
	v->gm.ctx = v;
	return v;
}

static void mem_free(struct vm_mem *v)
{
	free(v->ram);
	free(v);
}

static void put16(struct vm_mem *v, uint64_t gpa, uint16_t x)
{
	memcpy(v->ram + gpa, &x, 2);
}

static uint16_t get16(struct vm_mem *v, uint64_t gpa)
{
	uint16_t x;

	memcpy(&x, v->ram + gpa, 2);
	return x;
}

static uint32_t get32(struct vm_mem *v, uint64_t gpa)
{
	uint32_t x;

	memcpy(&x, v->ram + gpa, 4);
	return x;
}

static void desc_at(struct vm_mem *v, uint64_t table, unsigned i, uint64_t addr, uint32_t len,
		    uint16_t flags, uint16_t next)
{
	uint8_t *d = v->ram + table + 16ull * i;

	memcpy(d, &addr, 8);
	memcpy(d + 8, &len, 4);
	memcpy(d + 12, &flags, 2);
	memcpy(d + 14, &next, 2);
}

static void desc(struct vm_mem *v, unsigned i, uint64_t addr, uint32_t len, uint16_t flags,
		 uint16_t next)
{
	desc_at(v, DESC, i, addr, len, flags, next);
}

/* Make head the driver's next available entry (at ring slot idx % size). */
static void offer(struct vm_mem *v, struct virtq *q, uint16_t head)
{
	uint16_t idx = get16(v, AVAIL + 2);

	put16(v, AVAIL + 4 + 2ull * (idx % q->size), head);
	put16(v, AVAIL + 2, (uint16_t)(idx + 1));
}

static void queue(struct virtq *q, uint16_t size)
{
	virtq_reset(q, VIRTQ_SIZE_MAX);
	q->size = size;
	q->desc = DESC;
	q->avail = AVAIL;
	q->used = USED;
	q->enabled = true;
}

static const struct virtq_features plain = { false, false };
static const struct virtq_features indirect = { true, false };
static const struct virtq_features event = { false, true };

static enum virtq_result pop(struct vm_mem *v, struct virtq *q, const struct virtq_features *f,
			     struct virtq_chain *c)
{
	char err[160] = "";

	return virtq_pop(q, &v->gm, f, c, err, sizeof err);
}

TEST(virtq_guest_mem_bounds)
{
	struct vm_mem *v = mem_new();
	const struct guest_mem *m = &v->gm;
	uint8_t b[8];

	CHECK(guest_mem_ok(m, 0, 0x9fc00));
	CHECK(!guest_mem_ok(m, 0, 0x9fc01));      /* runs into the EBDA */
	CHECK(!guest_mem_ok(m, 0xa0000, 1));      /* VGA hole */
	CHECK(!guest_mem_ok(m, 0xf0000, 4));      /* BIOS area */
	CHECK(guest_mem_ok(m, 0x100000, MEM_BYTES - 0x100000));
	CHECK(!guest_mem_ok(m, MEM_BYTES - 4, 8)); /* past the end */
	CHECK(!guest_mem_ok(m, 0xfec00000, 4));    /* I/O APIC */
	CHECK(!guest_mem_ok(m, 0xfffffffffffffff8ull, 16)); /* wraps */
	CHECK(!guest_mem_ok(m, 0x100000, ~0ull));
	v->copies = 0;
	CHECK(!guest_mem_read(m, 0xfee00000, b, 4));
	CHECK(!guest_mem_write(m, MEM_BYTES, b, 1));
	CHECK_EQ_U64(v->copies, 0); /* refused before any copy */
	mem_free(v);
}

TEST(virtq_layout_checks)
{
	struct vm_mem *v = mem_new();
	struct virtq q;
	char err[160];

	queue(&q, 16);
	CHECK(virtq_layout_ok(&q, &v->gm, err, sizeof err));
	q.size = 12; /* not a power of two */
	CHECK(!virtq_layout_ok(&q, &v->gm, err, sizeof err));
	q.size = 0;
	CHECK(!virtq_layout_ok(&q, &v->gm, err, sizeof err));
	q.size = 256; /* over what the device offers */
	CHECK(!virtq_layout_ok(&q, &v->gm, err, sizeof err));
	queue(&q, 16);
	q.desc = DESC + 8; /* 16-byte alignment */
	CHECK(!virtq_layout_ok(&q, &v->gm, err, sizeof err));
	queue(&q, 16);
	q.used = USED + 2; /* 4-byte alignment */
	CHECK(!virtq_layout_ok(&q, &v->gm, err, sizeof err));
	queue(&q, 16);
	q.used = 0x9fc00 - 64; /* runs into the EBDA */
	CHECK(!virtq_layout_ok(&q, &v->gm, err, sizeof err));
	queue(&q, 16);
	q.desc = 0xfec00000; /* MMIO */
	CHECK(!virtq_layout_ok(&q, &v->gm, err, sizeof err));
	mem_free(v);
}

TEST(virtq_chain_and_used_ring)
{
	struct vm_mem *v = mem_new();
	struct virtq q;
	struct virtq_chain c;
	char err[160];

	queue(&q, 8);
	CHECK(pop(v, &q, &plain, &c) == VIRTQ_EMPTY);
	desc(v, 5, BUF, 16, VIRTQ_DESC_F_NEXT, 2);
	desc(v, 2, BUF + 0x100, 512, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 7);
	desc(v, 7, BUF + 0x400, 1, VIRTQ_DESC_F_WRITE, 0);
	offer(v, &q, 5);
	REQUIRE(pop(v, &q, &plain, &c) == VIRTQ_CHAIN);
	CHECK_EQ_U64(c.head, 5);
	CHECK_EQ_U64(c.nr_out, 1);
	CHECK_EQ_U64(c.nr_in, 2);
	CHECK_EQ_U64(c.out_bytes, 16);
	CHECK_EQ_U64(c.in_bytes, 513);
	CHECK_EQ_U64(c.seg[1].gpa, BUF + 0x100);
	CHECK_EQ_U64(c.seg[2].len, 1);
	CHECK(pop(v, &q, &plain, &c) == VIRTQ_EMPTY);
	CHECK(virtq_push(&q, &v->gm, 5, 513, err, sizeof err));
	CHECK_EQ_U64(get16(v, USED + 2), 1);
	CHECK_EQ_U64(get32(v, USED + 4), 5);
	CHECK_EQ_U64(get32(v, USED + 8), 513);
	CHECK(virtq_need_interrupt(&q, &v->gm, &plain));
	CHECK(!virtq_need_interrupt(&q, &v->gm, &plain)); /* nothing new */
	mem_free(v);
}

/* Bad rings: each breaks the queue once (VIRTQ_BAD), consumes nothing, and
 * later pops read nothing (VIRTQ_BROKEN) until a reset. */
static void expect_bad(struct vm_mem *v, struct virtq *q, const struct virtq_features *f)
{
	struct virtq_chain c;
	uint16_t before = q->last_avail;
	unsigned copies = v->copies;

	CHECK(pop(v, q, f, &c) == VIRTQ_BAD);
	/* bounded: the avail idx and head, then at most a table's descriptors
	 * (the queue's, and an indirect one of up to 3 here) */
	CHECK(v->copies - copies <= 2u + q->size + 1 + 3);
	CHECK(q->broken);
	CHECK_EQ_U64(q->last_avail, before);
	copies = v->copies;
	CHECK(pop(v, q, f, &c) == VIRTQ_BROKEN);
	CHECK_EQ_U64(v->copies, copies);
}

TEST(virtq_loop_is_refused)
{
	struct vm_mem *v = mem_new();
	struct virtq q;

	queue(&q, 8);
	desc(v, 0, BUF, 8, VIRTQ_DESC_F_NEXT, 1);
	desc(v, 1, BUF, 8, VIRTQ_DESC_F_NEXT, 0);
	offer(v, &q, 0);
	expect_bad(v, &q, &plain);
	/* a descriptor chained to itself */
	memset(v->ram, 0, 0x4000);
	queue(&q, 8);
	desc(v, 3, BUF, 8, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 3);
	offer(v, &q, 3);
	expect_bad(v, &q, &plain);
	mem_free(v);
}

TEST(virtq_chain_of_queue_size_passes_longer_refused)
{
	struct vm_mem *v = mem_new();
	struct virtq q;
	struct virtq_chain c;

	queue(&q, 8);
	for (unsigned i = 0; i < 8; i++)
		desc(v, i, BUF + 16 * i, 16, i < 7 ? VIRTQ_DESC_F_NEXT : 0, (uint16_t)(i + 1));
	offer(v, &q, 0);
	REQUIRE(pop(v, &q, &plain, &c) == VIRTQ_CHAIN);
	CHECK_EQ_U64(c.nr_out, 8);
	/* the same with the last descriptor pointing back at the first */
	desc(v, 7, BUF, 16, VIRTQ_DESC_F_NEXT, 0);
	offer(v, &q, 0);
	expect_bad(v, &q, &plain);
	mem_free(v);
}

TEST(virtq_indices_out_of_range)
{
	struct vm_mem *v = mem_new();
	struct virtq q;

	queue(&q, 8);
	offer(v, &q, 8); /* head past the table */
	expect_bad(v, &q, &plain);

	memset(v->ram, 0, 0x4000);
	queue(&q, 8);
	desc(v, 0, BUF, 8, VIRTQ_DESC_F_NEXT, 0xffff); /* next past the table */
	offer(v, &q, 0);
	expect_bad(v, &q, &plain);

	memset(v->ram, 0, 0x4000);
	queue(&q, 8);
	put16(v, AVAIL + 2, 9); /* 9 entries offered in a queue of 8 */
	expect_bad(v, &q, &plain);
	mem_free(v);
}

TEST(virtq_buffers_outside_ram)
{
	const uint64_t where[][2] = {
		{ MEM_BYTES - 8, 16 },          /* past the end of RAM */
		{ 0xa0000, 16 },                /* VGA hole */
		{ 0x9fc00 - 8, 16 },            /* into the EBDA */
		{ 0xfee00000, 4 },              /* local APIC */
		{ 0xfffffffffffffff0ull, 0x20 }, /* wraps */
	};

	for (unsigned k = 0; k < sizeof where / sizeof where[0]; k++) {
		struct vm_mem *v = mem_new();
		struct virtq q;

		queue(&q, 8);
		desc(v, 0, BUF, 8, VIRTQ_DESC_F_NEXT, 1);
		desc(v, 1, where[k][0], (uint32_t)where[k][1], VIRTQ_DESC_F_WRITE, 0);
		offer(v, &q, 0);
		expect_bad(v, &q, &plain);
		mem_free(v);
	}
	/* the rings themselves moved out of RAM after enable */
	struct vm_mem *v = mem_new();
	struct virtq q;
	char err[160];

	queue(&q, 8);
	q.avail = 0xfec00000;
	expect_bad(v, &q, &plain);
	queue(&q, 8);
	desc(v, 0, BUF, 8, 0, 0);
	offer(v, &q, 0);
	q.used = MEM_BYTES;
	struct virtq_chain c;
	CHECK(pop(v, &q, &plain, &c) == VIRTQ_CHAIN);
	CHECK(!virtq_push(&q, &v->gm, 0, 0, err, sizeof err));
	CHECK(q.broken);
	mem_free(v);
}

TEST(virtq_readable_after_writable)
{
	struct vm_mem *v = mem_new();
	struct virtq q;

	queue(&q, 8);
	desc(v, 0, BUF, 8, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 1);
	desc(v, 1, BUF + 8, 8, 0, 0);
	offer(v, &q, 0);
	expect_bad(v, &q, &plain);
	mem_free(v);
}

TEST(virtq_indirect)
{
	const uint64_t table = 0x8000;
	struct vm_mem *v = mem_new();
	struct virtq q;
	struct virtq_chain c;

	queue(&q, 4);
	desc(v, 1, table, 3 * 16, VIRTQ_DESC_F_INDIRECT, 0);
	desc_at(v, table, 0, BUF, 16, VIRTQ_DESC_F_NEXT, 2);
	desc_at(v, table, 2, BUF + 16, 4096, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 1);
	desc_at(v, table, 1, BUF + 8192, 1, VIRTQ_DESC_F_WRITE, 0);
	offer(v, &q, 1);
	REQUIRE(pop(v, &q, &indirect, &c) == VIRTQ_CHAIN);
	CHECK_EQ_U64(c.head, 1);
	CHECK_EQ_U64(c.nr_out, 1);
	CHECK_EQ_U64(c.nr_in, 2);
	CHECK_EQ_U64(c.in_bytes, 4097);

	/* not negotiated */
	offer(v, &q, 1);
	expect_bad(v, &q, &plain);

	/* a loop inside the table */
	queue(&q, 4);
	q.last_avail = 1;
	desc_at(v, table, 1, BUF + 8192, 1, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 2);
	expect_bad(v, &q, &indirect);
	desc_at(v, table, 1, BUF + 8192, 1, VIRTQ_DESC_F_WRITE, 0);

	/* nested, chained on, not a whole number of descriptors, too big, outside RAM */
	const struct {
		uint64_t addr;
		uint32_t len;
		uint16_t flags;
		bool nest;
	} cases[] = {
		{ table, 48, VIRTQ_DESC_F_INDIRECT, true },
		{ table, 48, VIRTQ_DESC_F_INDIRECT | VIRTQ_DESC_F_NEXT, false },
		{ table, 40, VIRTQ_DESC_F_INDIRECT, false },
		{ table, 0, VIRTQ_DESC_F_INDIRECT, false },
		{ table, 16 * (VIRTQ_SEGS_MAX + 1), VIRTQ_DESC_F_INDIRECT, false },
		{ 0xf0000, 48, VIRTQ_DESC_F_INDIRECT, false },
	};
	for (unsigned k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		queue(&q, 4);
		q.last_avail = 1;
		desc(v, 1, cases[k].addr, cases[k].len, cases[k].flags, 0);
		if (cases[k].nest)
			desc_at(v, table, 0, table, 48, VIRTQ_DESC_F_INDIRECT, 0);
		expect_bad(v, &q, &indirect);
		desc_at(v, table, 0, BUF, 16, VIRTQ_DESC_F_NEXT, 2);
	}
	mem_free(v);
}

TEST(virtq_indirect_table_of_segs_max)
{
	const uint64_t table = 0x100000;
	struct vm_mem *v = mem_new();
	struct virtq q;
	struct virtq_chain c;

	queue(&q, 2);
	for (unsigned i = 0; i < VIRTQ_SEGS_MAX; i++)
		desc_at(v, table, i, BUF, 1,
			(i + 1 < VIRTQ_SEGS_MAX ? VIRTQ_DESC_F_NEXT : 0) | VIRTQ_DESC_F_WRITE,
			(uint16_t)(i + 1));
	desc(v, 0, table, 16 * VIRTQ_SEGS_MAX, VIRTQ_DESC_F_INDIRECT, 0);
	offer(v, &q, 0);
	REQUIRE(pop(v, &q, &indirect, &c) == VIRTQ_CHAIN);
	CHECK_EQ_U64(c.nr_in, VIRTQ_SEGS_MAX);
	mem_free(v);
}

/* The 16-bit indices wrap: entries 0xfffe, 0xffff, 0x0000 sit in ring slots
 * 6, 7 and 0 of a queue of 8, and the used idx goes on to 1. */
TEST(virtq_index_wrap)
{
	struct vm_mem *v = mem_new();
	struct virtq q;
	struct virtq_chain c;
	char err[160];

	queue(&q, 8);
	q.last_avail = q.used_idx = q.signalled_used = 0xfffe;
	put16(v, AVAIL + 2, 0xfffe);
	put16(v, USED + 2, 0xfffe);
	for (unsigned i = 0; i < 3; i++) {
		desc(v, i, BUF + 64 * i, 64, VIRTQ_DESC_F_WRITE, 0);
		offer(v, &q, (uint16_t)i);
	}
	CHECK_EQ_U64(get16(v, AVAIL + 2), 1);
	CHECK_EQ_U64(get16(v, AVAIL + 4 + 2 * 0), 2); /* slot 0 holds the third */
	for (unsigned i = 0; i < 3; i++) {
		REQUIRE(pop(v, &q, &plain, &c) == VIRTQ_CHAIN);
		CHECK_EQ_U64(c.head, i);
		CHECK(virtq_push(&q, &v->gm, c.head, 64, err, sizeof err));
	}
	CHECK(pop(v, &q, &plain, &c) == VIRTQ_EMPTY);
	CHECK_EQ_U64(q.last_avail, 1);
	CHECK_EQ_U64(get16(v, USED + 2), 1);
	CHECK_EQ_U64(get32(v, USED + 4 + 8 * 6), 0);
	CHECK_EQ_U64(get32(v, USED + 4 + 8 * 7), 1);
	CHECK_EQ_U64(get32(v, USED + 4 + 8 * 0), 2);
	/* idx 0xfffe -> 1 offers 3 (not 65539): a ring 9 ahead across the wrap is refused */
	put16(v, AVAIL + 2, (uint16_t)(1 + 9));
	expect_bad(v, &q, &plain);
	mem_free(v);
}

TEST(virtq_interrupt_suppression)
{
	struct vm_mem *v = mem_new();
	struct virtq q;
	struct virtq_chain c;
	char err[160];

	queue(&q, 8);
	for (unsigned i = 0; i < 4; i++) {
		desc(v, i, BUF, 8, 0, 0);
		offer(v, &q, (uint16_t)i);
	}
	/* VIRTQ_AVAIL_F_NO_INTERRUPT */
	put16(v, AVAIL, VIRTQ_AVAIL_F_NO_INTERRUPT);
	REQUIRE(pop(v, &q, &plain, &c) == VIRTQ_CHAIN);
	CHECK(virtq_push(&q, &v->gm, c.head, 0, err, sizeof err));
	CHECK(!virtq_need_interrupt(&q, &v->gm, &plain));
	put16(v, AVAIL, 0);

	/* event idx: the device publishes avail_event as it takes entries */
	REQUIRE(pop(v, &q, &event, &c) == VIRTQ_CHAIN);
	CHECK_EQ_U64(get16(v, USED + virtq_used_bytes(8) - 2), 2);
	/* used_event 3: the driver wants an interrupt once entry 3 is used */
	put16(v, AVAIL + virtq_avail_bytes(8) - 2, 3);
	CHECK(virtq_push(&q, &v->gm, c.head, 0, err, sizeof err)); /* used idx 2 */
	CHECK(!virtq_need_interrupt(&q, &v->gm, &event));
	REQUIRE(pop(v, &q, &event, &c) == VIRTQ_CHAIN);
	CHECK(virtq_push(&q, &v->gm, c.head, 0, err, sizeof err)); /* used idx 3 */
	CHECK(!virtq_need_interrupt(&q, &v->gm, &event));
	REQUIRE(pop(v, &q, &event, &c) == VIRTQ_CHAIN);
	CHECK(virtq_push(&q, &v->gm, c.head, 0, err, sizeof err)); /* used idx 4: entry 3 used */
	CHECK(virtq_need_interrupt(&q, &v->gm, &event));
	mem_free(v);
}
