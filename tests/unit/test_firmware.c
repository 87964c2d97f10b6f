/* The firmware's start state (dev/firmware.c) beyond the PIC and PIT
 * (test_pic.c, test_pit.c): the BSP's APIC as SeaBIOS's smp_scan leaves it,
 * and the real-mode IVT with its handlers, run by a decoder of the few
 * instructions they may use. */
#include "check.h"
#include "dev/firmware.h"
#include <stdint.h>
#include <string.h>

TEST(firmware_bsp_apic)
{
	struct lapic a;

	lapic_init(&a, NULL, 0, true, 2000000);
	CHECK(!lapic_sw_enabled(&a));
	firmware_bsp_apic(&a, 0);
	CHECK(lapic_sw_enabled(&a));
	CHECK_EQ_U64(lapic_mmio_read(&a, LAPIC_REG_SVR, 4, 0), 0x1ff);
	CHECK_EQ_U64(lapic_mmio_read(&a, LAPIC_REG_LVT_LINT0, 4, 0), 0x8700); /* ExtINT, level */
	CHECK_EQ_U64(lapic_mmio_read(&a, LAPIC_REG_LVT_LINT1, 4, 0), 0x8400); /* NMI, level */
	/* the other LVTs stay masked */
	CHECK(lapic_mmio_read(&a, LAPIC_REG_LVT_TIMER, 4, 0) & LAPIC_LVT_MASKED);
	CHECK(lapic_mmio_read(&a, LAPIC_REG_LVT_ERROR, 4, 0) & LAPIC_LVT_MASKED);
}

/* What a handler does: the bytes it writes to which ports, in order. */
struct run {
	bool ok;
	unsigned outs;
	uint8_t port[4], val[4];
};

/* Run the real-mode handler at linear address `at` in the stubs as far as
 * its IRET: only push/pop AX, MOV AL imm8, OUT imm8 AL and IRET. */
static struct run run_handler(uint32_t at)
{
	struct run r = { 0 };
	const uint32_t base = (uint32_t)FW_STUBS_GPA;
	uint8_t al = 0x5a, saved = 0;
	int depth = 0;

	for (uint32_t ip = at; ip >= base && ip < base + firmware_stubs_len;) {
		const uint8_t *b = &firmware_stubs[ip - base];

		switch (b[0]) {
		case 0x50: /* push ax */
			saved = al, depth++, ip += 1;
			break;
		case 0x58: /* pop ax */
			al = saved, depth--, ip += 1;
			break;
		case 0xb0: /* mov al, imm8 */
			al = b[1], ip += 2;
			break;
		case 0xe6: /* out imm8, al */
			if (r.outs == 4)
				return r;
			r.port[r.outs] = b[1];
			r.val[r.outs++] = al;
			ip += 2;
			break;
		case 0xcf: /* iret: AX as the interrupted code left it */
			r.ok = depth == 0 && al == 0x5a;
			return r;
		default:
			return r;
		}
	}
	return r;
}

TEST(firmware_ivt)
{
	uint32_t ivt[FW_IVT_VECTORS];

	REQUIRE(FW_STUBS_GPA + firmware_stubs_len <= 0x100000);
	memset(ivt, 0, sizeof(ivt));
	firmware_ivt(ivt);
	for (unsigned v = 0; v < FW_IVT_VECTORS; v++) {
		uint32_t at = (ivt[v] >> 16) * 16 + (ivt[v] & 0xffff);
		bool master = v >= FW_PIC_MASTER_BASE && v < FW_PIC_MASTER_BASE + 8;
		bool slave = v >= FW_PIC_SLAVE_BASE && v < FW_PIC_SLAVE_BASE + 8;
		struct run r = run_handler(at);

		CHECK(r.ok);
		if (master) {
			/* a non-specific EOI to the master */
			CHECK_EQ_U64(r.outs, 1);
			CHECK_EQ_U64(r.port[0], PIC_MASTER_CMD);
			CHECK_EQ_U64(r.val[0], 0x20);
		} else if (slave) {
			/* to the slave, then the master (its IR2) */
			CHECK_EQ_U64(r.outs, 2);
			CHECK_EQ_U64(r.port[0], PIC_SLAVE_CMD);
			CHECK_EQ_U64(r.port[1], PIC_MASTER_CMD);
			CHECK_EQ_U64(r.val[0], 0x20);
			CHECK_EQ_U64(r.val[1], 0x20);
		} else {
			CHECK_EQ_U64(r.outs, 0);
		}
	}
}
