/* QEMU's pc-testdev as a pure model (dev/testdev.h). Every access is cut into
 * byte lanes, lane i being port (or offset) start + i and bits 8i..8i+7 of
 * the value: QEMU splits unaligned and over-wide accesses the same way, so the
 * bytes that land are the same. */
#include "dev/testdev.h"
#include "lib/string.h"

#define SCRATCH_END (TESTDEV_PORT_SCRATCH + 4u)
#define FLUSH_END (TESTDEV_PORT_FLUSH + 4u)
#define BYTES_END (TESTDEV_PORT_BYTES + 4u)
#define IRQ_END (TESTDEV_PORT_IRQ + TESTDEV_IRQS)
#define PAGE_MASK_4K 0xfffull

void testdev_init(struct testdev *t, uint8_t *iomem, const struct testdev_ops *ops)
{
	memset(t, 0, sizeof(*t));
	t->iomem = iomem;
	if (ops)
		t->ops = *ops;
}

static bool ours(uint16_t port, unsigned size)
{
	if (size != 1 && size != 2 && size != 4)
		return false;
	return (port >= TESTDEV_PORT_SCRATCH && port < BYTES_END) ||
	       (port >= TESTDEV_PORT_IRQ && port < IRQ_END);
}

/* The scratch register byte behind port p, or -1. */
static int scratch_byte(unsigned p)
{
	if (p >= TESTDEV_PORT_SCRATCH && p < SCRATCH_END)
		return (int)(p - TESTDEV_PORT_SCRATCH);
	if (p >= TESTDEV_PORT_BYTES && p < BYTES_END)
		return (int)(p - TESTDEV_PORT_BYTES);
	return -1;
}

bool testdev_port_read(struct testdev *t, uint16_t port, unsigned size, uint32_t *val)
{
	uint32_t v = 0;

	if (!ours(port, size))
		return false;
	for (unsigned i = 0; i < size; i++) {
		int b = scratch_byte(port + i);
		uint32_t lane = b < 0 ? 0xffu : (t->scratch32 >> (8 * b)) & 0xffu;

		v |= lane << (8 * i);
	}
	*val = v;
	return true;
}

bool testdev_port_write(struct testdev *t, uint16_t port, unsigned size, uint32_t val)
{
	if (!ours(port, size))
		return false;
	if (port == TESTDEV_PORT_FLUSH) {
		if (size == 4 && t->ops.flush_page)
			t->ops.flush_page(t->ops.ctx, val & ~PAGE_MASK_4K);
		return true;
	}
	for (unsigned i = 0; i < size; i++) {
		unsigned p = port + i;
		uint8_t lane = (uint8_t)(val >> (8 * i));
		int b = scratch_byte(p);

		if (b >= 0) {
			t->scratch32 &= ~(0xffu << (8 * b));
			t->scratch32 |= (uint32_t)lane << (8 * b);
		} else if (p >= TESTDEV_PORT_IRQ && p < IRQ_END && t->ops.set_irq) {
			t->ops.set_irq(t->ops.ctx, p - TESTDEV_PORT_IRQ, lane != 0);
		}
		/* Lanes in 0xe4-0xe7 (a split access, not a 4-byte write at 0xe4)
		 * and past the windows are dropped. */
	}
	return true;
}

uint64_t testdev_mmio_read(struct testdev *t, unsigned offset, unsigned size)
{
	uint64_t v = 0;

	if (size > 8)
		size = 8;
	for (unsigned i = 0; i < size; i++) {
		uint64_t at = (uint64_t)offset + i;
		uint64_t lane = at < TESTDEV_MMIO_SIZE ? t->iomem[at] : 0xffu;

		v |= lane << (8 * i);
	}
	return v;
}

void testdev_mmio_write(struct testdev *t, unsigned offset, unsigned size, uint64_t val)
{
	if (size > 8)
		size = 8;
	for (unsigned i = 0; i < size; i++) {
		uint64_t at = (uint64_t)offset + i;

		if (at < TESTDEV_MMIO_SIZE)
			t->iomem[at] = (uint8_t)(val >> (8 * i));
	}
}

/* Saved: the scratch register and the 64 KiB iomem window's bytes (the
 * integrator's memory, which a model being checked does not have). Not
 * saved: the callbacks. A guest can write any value to either, so there is
 * nothing to refuse. */
static void testdev_fields(void *model, struct field_io *io)
{
	struct testdev *t = model;

	FIELD(io, t->scratch32);
	field_memory(io, t->iomem, TESTDEV_MMIO_SIZE);
}

static bool testdev_state_check(const void *model, const struct record_limits *lim, char *err,
				size_t errlen)
{
	(void)model, (void)lim, (void)err, (void)errlen;
	return true;
}

const struct record_type testdev_record = {
	.id = REC_TESTDEV,
	.version = 2,
	.name = "testdev",
	.model_bytes = sizeof(struct testdev),
	.fields = testdev_fields,
	.check = testdev_state_check,
};
