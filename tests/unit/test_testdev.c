/* dev/testdev.c: QEMU's pc-testdev model, register by register and access
 * size by access size, with the IRQ-line and flush-page callbacks recorded. */
#include "check.h"
#include "dev/testdev.h"
#include <stdlib.h>
#include <string.h>

struct events {
	int irq_calls, flush_calls;
	unsigned last_irq;
	bool level[TESTDEV_IRQS];
	uint64_t last_gpa;
};

static void rec_irq(void *ctx, unsigned irq, bool level)
{
	struct events *ev = ctx;

	ev->irq_calls++;
	ev->last_irq = irq;
	if (irq < TESTDEV_IRQS)
		ev->level[irq] = level;
}

static void rec_flush(void *ctx, uint64_t gpa)
{
	struct events *ev = ctx;

	ev->flush_calls++;
	ev->last_gpa = gpa;
}

static uint8_t *setup(struct testdev *t, struct events *ev)
{
	uint8_t *iomem = calloc(1, TESTDEV_MMIO_SIZE);
	struct testdev_ops ops = { rec_irq, rec_flush, ev };

	memset(ev, 0, sizeof(*ev));
	testdev_init(t, iomem, &ops);
	return iomem;
}

static uint32_t in(struct testdev *t, uint16_t port, unsigned size)
{
	uint32_t v = 0xdeadbeef;

	CHECK(testdev_port_read(t, port, size, &v));
	return v;
}

static void out(struct testdev *t, uint16_t port, unsigned size, uint32_t v)
{
	CHECK(testdev_port_write(t, port, size, v));
}

TEST(testdev_scratch_sizes)
{
	struct testdev t;
	struct events ev;
	uint8_t *iomem = setup(&t, &ev);

	CHECK_EQ_U64(in(&t, 0xe0, 4), 0);
	out(&t, 0xe0, 4, 0x12345678);
	CHECK_EQ_U64(t.scratch32, 0x12345678);
	CHECK_EQ_U64(in(&t, 0xe0, 4), 0x12345678);
	/* Bytes and words at their offsets (QEMU: (addr & 3) * 8 shift). */
	CHECK_EQ_U64(in(&t, 0xe0, 1), 0x78);
	CHECK_EQ_U64(in(&t, 0xe1, 1), 0x56);
	CHECK_EQ_U64(in(&t, 0xe2, 1), 0x34);
	CHECK_EQ_U64(in(&t, 0xe3, 1), 0x12);
	CHECK_EQ_U64(in(&t, 0xe0, 2), 0x5678);
	CHECK_EQ_U64(in(&t, 0xe2, 2), 0x1234);
	out(&t, 0xe1, 1, 0xab);
	CHECK_EQ_U64(t.scratch32, 0x1234ab78);
	out(&t, 0xe2, 2, 0xcdef);
	CHECK_EQ_U64(t.scratch32, 0xcdefab78);
	out(&t, 0xe0, 2, 0x0102);
	CHECK_EQ_U64(in(&t, 0xe0, 4), 0xcdef0102);
	/* A byte write carries only its byte. */
	out(&t, 0xe3, 1, 0xffffff11);
	CHECK_EQ_U64(t.scratch32, 0x11ef0102);
	/* Unaligned: the lanes inside 0xe0-0xe3 land, those past 0xe3 (the
	 * flush port, write-only) are dropped and read as 0xff. */
	out(&t, 0xe2, 4, 0xa1b2c3d4);
	CHECK_EQ_U64(t.scratch32, 0xc3d40102);
	CHECK_EQ_U64(in(&t, 0xe3, 2), 0xffc3);
	CHECK_EQ_U64(in(&t, 0xe1, 2), 0xd401);
	CHECK_EQ_U64(ev.flush_calls, 0);
	CHECK_EQ_U64(ev.irq_calls, 0);
	free(iomem);
}

TEST(testdev_byte_window)
{
	struct testdev t;
	struct events ev;
	uint8_t *iomem = setup(&t, &ev);

	/* 0xe8-0xeb is QEMU's "ioport-byte": the same register, byte-wise. */
	out(&t, 0xe0, 4, 0x11223344);
	CHECK_EQ_U64(in(&t, 0xe8, 4), 0x11223344);
	CHECK_EQ_U64(in(&t, 0xe9, 1), 0x33);
	CHECK_EQ_U64(in(&t, 0xea, 2), 0x1122);
	out(&t, 0xe8, 4, 0xaabbccdd);
	CHECK_EQ_U64(in(&t, 0xe0, 4), 0xaabbccdd);
	out(&t, 0xeb, 1, 0x5a);
	CHECK_EQ_U64(in(&t, 0xe0, 4), 0x5abbccdd);
	out(&t, 0xe9, 2, 0x0102);
	CHECK_EQ_U64(in(&t, 0xe8, 4), 0x5a0102dd);
	/* Past 0xeb: nothing; reads 0xff. */
	CHECK_EQ_U64(in(&t, 0xea, 4), 0xffff5a01);
	out(&t, 0xeb, 4, 0x00000077);
	CHECK_EQ_U64(in(&t, 0xe8, 4), 0x770102dd);
	free(iomem);
}

TEST(testdev_ports_not_ours)
{
	struct testdev t;
	struct events ev;
	uint8_t *iomem = setup(&t, &ev);
	static const uint16_t others[] = { 0xdf, 0xec, 0xf4, 0x3f8, 0x1fff, 0x2018, 0xffff };
	uint32_t v = 0x5a5a5a5a;

	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		CHECK(!testdev_port_read(&t, others[i], 1, &v));
		CHECK(!testdev_port_write(&t, others[i], 4, 1));
	}
	CHECK_EQ_U64(v, 0x5a5a5a5a);
	/* Sizes other than 1, 2 and 4 are not port accesses. */
	CHECK(!testdev_port_read(&t, 0xe0, 3, &v));
	CHECK(!testdev_port_write(&t, 0xe0, 8, 1));
	CHECK(!testdev_port_write(&t, 0xe0, 0, 1));
	CHECK_EQ_U64(t.scratch32, 0);
	CHECK_EQ_U64(ev.irq_calls + ev.flush_calls, 0);
	free(iomem);
}

TEST(testdev_irq_lines)
{
	struct testdev t;
	struct events ev;
	uint8_t *iomem = setup(&t, &ev);

	for (unsigned n = 0; n < TESTDEV_IRQS; n++) {
		out(&t, (uint16_t)(0x2000 + n), 1, 1);
		CHECK_EQ_U64(ev.last_irq, n);
		CHECK(ev.level[n]);
	}
	CHECK_EQ_U64(ev.irq_calls, TESTDEV_IRQS);
	/* Any non-zero byte raises, zero lowers; every write calls back. */
	out(&t, 0x2004, 1, 0x80);
	CHECK(ev.level[4]);
	out(&t, 0x2004, 1, 0);
	CHECK(!ev.level[4]);
	out(&t, 0x2004, 1, 0);
	CHECK_EQ_U64(ev.irq_calls, TESTDEV_IRQS + 3);
	/* Only the low byte of a byte write counts. */
	out(&t, 0x2005, 1, 0x100);
	CHECK(!ev.level[5]);
	/* Wider writes split into byte writes to consecutive lines, as QEMU
	 * splits them (valid access size 1). */
	memset(&ev, 0, sizeof(ev));
	out(&t, 0x2008, 2, 0x0100);
	CHECK_EQ_U64(ev.irq_calls, 2);
	CHECK(!ev.level[8]);
	CHECK(ev.level[9]);
	out(&t, 0x200c, 4, 0x01000200);
	CHECK_EQ_U64(ev.irq_calls, 6);
	CHECK(ev.level[12] == false && ev.level[13] && !ev.level[14] && ev.level[15]);
	/* The last line, and lanes past it dropped. */
	memset(&ev, 0, sizeof(ev));
	out(&t, 0x2016, 4, 0x01010101);
	CHECK_EQ_U64(ev.irq_calls, 2);
	CHECK(ev.level[22] && ev.level[23]);
	/* The lines read as all ones and reading them raises nothing. */
	CHECK_EQ_U64(in(&t, 0x2000, 1), 0xff);
	CHECK_EQ_U64(in(&t, 0x2010, 4), 0xffffffff);
	CHECK_EQ_U64(ev.irq_calls, 2);
	/* No callback given: the write is taken and dropped. */
	testdev_init(&t, iomem, NULL);
	out(&t, 0x2001, 1, 1);
	out(&t, 0xe4, 4, 0x1000);
	free(iomem);
}

TEST(testdev_flush_page)
{
	struct testdev t;
	struct events ev;
	uint8_t *iomem = setup(&t, &ev);

	out(&t, 0xe4, 4, 0x00345678);
	CHECK_EQ_U64(ev.flush_calls, 1);
	CHECK_EQ_U64(ev.last_gpa, 0x00345000);
	out(&t, 0xe4, 4, 0xfffff000);
	CHECK_EQ_U64(ev.flush_calls, 2);
	CHECK_EQ_U64(ev.last_gpa, 0xfffff000);
	/* Only a 4-byte write at 0xe4 (QEMU: valid size 4 only). */
	out(&t, 0xe4, 2, 0x1000);
	out(&t, 0xe4, 1, 0x10);
	out(&t, 0xe5, 1, 0x10);
	out(&t, 0xe6, 2, 0x10);
	out(&t, 0xe2, 4, 0x10000000);
	CHECK_EQ_U64(ev.flush_calls, 2);
	/* Write-only: reads all ones, no call. */
	CHECK_EQ_U64(in(&t, 0xe4, 4), 0xffffffff);
	CHECK_EQ_U64(in(&t, 0xe6, 1), 0xff);
	CHECK_EQ_U64(ev.flush_calls, 2);
	/* The scratch register is untouched by flush writes. */
	CHECK_EQ_U64(t.scratch32 & 0xffff, 0);
	free(iomem);
}

TEST(testdev_iomem)
{
	struct testdev t;
	struct events ev;
	uint8_t *iomem = setup(&t, &ev);

	CHECK_EQ_U64(TESTDEV_MMIO_BASE, 0xff000000ull);
	CHECK_EQ_U64(testdev_mmio_read(&t, 0, 8), 0);
	for (unsigned size = 1; size <= 8; size *= 2) {
		uint64_t v = 0x8877665544332211ull;
		uint64_t mask = size == 8 ? ~0ull : (1ull << (8 * size)) - 1;
		unsigned off = 0x100 * size + 3; /* unaligned too */

		testdev_mmio_write(&t, off, size, v);
		CHECK_EQ_U64(testdev_mmio_read(&t, off, size), v & mask);
		CHECK_EQ_U64(iomem[off], 0x11);
		CHECK_EQ_U64(iomem[off + size - 1], (v >> (8 * (size - 1))) & 0xff);
		CHECK_EQ_U64(iomem[off + size], 0);
		testdev_mmio_write(&t, off - 3, size, v);
		CHECK_EQ_U64(testdev_mmio_read(&t, off - 3, size), v & mask);
	}
	/* Little-endian: a dword is its bytes. */
	testdev_mmio_write(&t, 0x40, 4, 0xdeadbeef);
	CHECK_EQ_U64(testdev_mmio_read(&t, 0x40, 1), 0xef);
	CHECK_EQ_U64(testdev_mmio_read(&t, 0x42, 2), 0xdead);
	testdev_mmio_write(&t, 0x41, 1, 0x00);
	CHECK_EQ_U64(testdev_mmio_read(&t, 0x40, 4), 0xdead00ef);
	/* Every offset of the 64 KiB, first and last. */
	testdev_mmio_write(&t, 0, 1, 0xa5);
	testdev_mmio_write(&t, TESTDEV_MMIO_SIZE - 1, 1, 0x5a);
	CHECK_EQ_U64(iomem[0], 0xa5);
	CHECK_EQ_U64(iomem[TESTDEV_MMIO_SIZE - 1], 0x5a);
	testdev_mmio_write(&t, TESTDEV_MMIO_SIZE - 8, 8, 0x0102030405060708ull);
	CHECK_EQ_U64(testdev_mmio_read(&t, TESTDEV_MMIO_SIZE - 8, 8), 0x0102030405060708ull);
	/* Straddling the end: the lanes past it read 0xff and are dropped. */
	testdev_mmio_write(&t, TESTDEV_MMIO_SIZE - 2, 4, 0xccddeeffu);
	CHECK_EQ_U64(testdev_mmio_read(&t, TESTDEV_MMIO_SIZE - 2, 4), 0xffffeeffu);
	CHECK_EQ_U64(testdev_mmio_read(&t, TESTDEV_MMIO_SIZE, 4), 0xffffffffu);
	testdev_mmio_write(&t, TESTDEV_MMIO_SIZE + 4, 8, 0); /* nothing to write */
	/* The iomem and the port registers are separate. */
	CHECK_EQ_U64(t.scratch32, 0);
	CHECK_EQ_U64(ev.irq_calls + ev.flush_calls, 0);
	free(iomem);
}

/* ---- the saved state (testdev_record) ---- */

TEST(testdev_record_round_trip)
{
	struct testdev a, b;
	struct events ev_a, ev_b;
	uint8_t *iomem_a = setup(&a, &ev_a), *iomem_b = setup(&b, &ev_b);
	static uint8_t buf[4 + TESTDEV_MMIO_SIZE];
	struct field_io io = field_saver(buf, sizeof buf);
	struct field_io in_io;
	char err[128] = "";

	out(&a, 0xe0, 4, 0x89abcdef);
	out(&a, 0xe9, 1, 0x11);
	testdev_mmio_write(&a, 0x10, 4, 0x5555);
	testdev_record.fields(&a, &io);
	REQUIRE(!io.overrun);
	CHECK_EQ_U64(io.pos, 4 + TESTDEV_MMIO_SIZE);
	in_io = field_loader(buf, io.pos);
	testdev_record.fields(&b, &in_io);
	CHECK(!in_io.overrun && !in_io.bad);
	CHECK(testdev_record.check(&b, &(struct record_limits){ .nr_vcpus = 1 }, err, sizeof err));
	/* The same reads through both windows, and the same after a write. */
	for (unsigned port = 0xe0; port < 0xec; port++)
		CHECK_EQ_U64(in(&a, (uint16_t)port, 1), in(&b, (uint16_t)port, 1));
	CHECK_EQ_U64(in(&b, 0xe8, 4), 0x89ab11ef);
	out(&a, 0xe2, 2, 0x4242);
	out(&b, 0xe2, 2, 0x4242);
	CHECK_EQ_U64(in(&a, 0xe0, 4), in(&b, 0xe0, 4));
	/* The window's bytes came along into the loading model's own window;
	 * the callbacks stay the loading model's. */
	CHECK(b.iomem == iomem_b && b.ops.ctx == &ev_b);
	CHECK_EQ_U64(testdev_mmio_read(&b, 0x10, 4), 0x5555);
	CHECK(memcmp(iomem_a, iomem_b, TESTDEV_MMIO_SIZE) == 0);
	out(&b, 0x2003, 1, 1);
	CHECK(ev_b.irq_calls == 1 && ev_b.last_irq == 3 && ev_a.irq_calls == 0);
	free(iomem_a);
	free(iomem_b);
}

/* Every scratch value is one a guest writes: the check takes them all; a
 * short record is an overrun and loads nothing. */
TEST(testdev_record_check_and_short_record)
{
	struct testdev t;
	struct events ev;
	uint8_t *iomem = setup(&t, &ev);
	uint8_t buf[4] = { 1, 2, 3, 4 };
	struct field_io io = field_loader(buf, 3);
	char err[128] = "";

	CHECK(testdev_record.check(&t, &(struct record_limits){ .nr_vcpus = 1 }, err, sizeof err));
	t.scratch32 = 0xffffffff;
	CHECK(testdev_record.check(&t, &(struct record_limits){ .nr_vcpus = 1 }, err, sizeof err));
	t.scratch32 = 7;
	testdev_record.fields(&t, &io);
	CHECK(io.overrun);
	CHECK_EQ_U64(t.scratch32, 7);
	CHECK(testdev_record.id == REC_TESTDEV && testdev_record.model_bytes == sizeof t);
	free(iomem);
}

/* A model being checked has no window: its bytes are passed over, and the
 * record's size is the same. */
TEST(testdev_record_without_window)
{
	static uint8_t buf[4 + TESTDEV_MMIO_SIZE];
	struct testdev z = { 0 };
	struct field_io io;

	memset(buf, 0x5a, sizeof buf);
	io = field_loader(buf, sizeof buf);
	testdev_record.fields(&z, &io);
	CHECK(!io.overrun && io.pos == sizeof buf && z.scratch32 == 0x5a5a5a5a && !z.iomem);
	io = field_saver(buf, sizeof buf);
	testdev_record.fields(&z, &io);
	CHECK(!io.overrun && io.pos == sizeof buf && buf[4] == 0 && buf[sizeof buf - 1] == 0);
}
