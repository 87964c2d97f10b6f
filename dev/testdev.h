/* QEMU's pc-testdev (hw/misc/pc-testdev.c, "-device pc-testdev"), the ISA
 * device kvm-unit-tests drive, as a pure model: no VM, no MMU, no locking; the
 * integrator routes port and MMIO accesses here and acts on two callbacks.
 *
 *   ports 0xe0-0xe3  "ioport": a 32-bit scratch register, little-endian;
 *                    an access of 1, 2 or 4 bytes at port 0xe0 + k reads or
 *                    writes bytes k.. of it (QEMU: mask/shift by (addr & 3)).
 *   port  0xe4       "flush-page": a 4-byte write of v asks the integrator to
 *                    drop the second-level mapping of the page holding gpa
 *                    v & ~0xfff and flush (QEMU mprotects the host page
 *                    PROT_NONE and back, which makes KVM zap it). Other sizes
 *                    are dropped (QEMU: valid access size 4 only).
 *   ports 0xe8-0xeb  "ioport-byte": the same 32-bit register as 0xe0-0xe3
 *                    (QEMU backs both regions with one ioport_data), where
 *                    QEMU splits every access into byte accesses: the same
 *                    bytes result.
 *   ports 0x2000-0x2017  "irq-line": a byte write of v to 0x2000 + n sets ISA
 *                    IRQ n's line to v != 0 (ops.set_irq, called on every
 *                    write, level unchanged or not). QEMU accepts byte accesses
 *                    only and splits wider ones, so a 2- or 4-byte write sets
 *                    consecutive lines from its bytes.
 *   MMIO 0xff000000-0xff00ffff  "iomem": 64 KiB of scratch memory, accesses of
 *                    any size at any offset (little-endian bytes).
 *
 * Byte lanes of an access that run past the end of a window (port 0xec,
 * 0x2018, or MMIO offset 0x10000 onwards) reach no device here: they read as
 * 0xff and their writes are dropped, as sprig does for unassigned ports and
 * MMIO. Ports 0xe4-0xe7 and the IRQ lines read as all ones (QEMU gives them
 * no read handler). The whole model is dispatched on the access's first port.
 *
 * Difference from QEMU: QEMU's iomem_buf is part of the device; here the 64
 * KiB buffer belongs to the integrator (frame-backed, kept out of struct vm),
 * and testdev_init does not clear it. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "virt/state_record.h"

#define TESTDEV_MMIO_BASE 0xff000000ull
#define TESTDEV_MMIO_SIZE 0x10000u

#define TESTDEV_PORT_SCRATCH 0xe0u /* 4 ports */
#define TESTDEV_PORT_FLUSH 0xe4u   /* 4 ports, a 4-byte write */
#define TESTDEV_PORT_BYTES 0xe8u   /* 4 ports, the scratch register again */
#define TESTDEV_PORT_IRQ 0x2000u   /* TESTDEV_IRQS ports, one per ISA IRQ line */
#define TESTDEV_IRQS 24u

struct testdev_ops {
	void (*set_irq)(void *ctx, unsigned irq, bool level); /* irq < TESTDEV_IRQS */
	void (*flush_page)(void *ctx, uint64_t gpa);          /* gpa page-aligned */
	void *ctx;
};

struct testdev {
	uint32_t scratch32;  /* ports 0xe0-0xe3 and 0xe8-0xeb */
	uint8_t *iomem;      /* TESTDEV_MMIO_SIZE bytes, the integrator's */
	struct testdev_ops ops; /* NULL callbacks: the event is dropped */
};

/* scratch32 = 0; iomem is used as it is (the integrator zeroes it if it wants
 * QEMU's initial contents: QEMU's buffer starts zeroed). ops may be NULL. */
void testdev_init(struct testdev *t, uint8_t *iomem, const struct testdev_ops *ops);

/* Ports 0xe0-0xeb and 0x2000-0x2017 (the access's first port), size 1, 2 or 4:
 * true, the access done. Any other port or size: false, nothing done. */
bool testdev_port_read(struct testdev *t, uint16_t port, unsigned size, uint32_t *val);
bool testdev_port_write(struct testdev *t, uint16_t port, unsigned size, uint32_t val);

/* offset from TESTDEV_MMIO_BASE (below TESTDEV_MMIO_SIZE for a hit), size 1
 * to 8 bytes; little-endian. Bytes past the window read 0xff / are dropped. */
uint64_t testdev_mmio_read(struct testdev *t, unsigned offset, unsigned size);
void testdev_mmio_write(struct testdev *t, unsigned offset, unsigned size, uint64_t val);

/* The saved state (REC_TESTDEV): the scratch register. */
extern const struct record_type testdev_record;
