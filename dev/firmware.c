/* The firmware's start state (firmware.h). */
#include "dev/firmware.h"

/* ICW1 with ICW4 to follow, cascade, edge (8259A datasheet), as pic_setup. */
#define ICW1_INIT 0x11
#define ICW4_8086 0x01

void firmware_pic(struct pic *p)
{
	static const struct {
		uint16_t port;
		uint8_t val;
	} seq[] = {
		{ PIC_MASTER_CMD, ICW1_INIT },
		{ PIC_SLAVE_CMD, ICW1_INIT },
		{ PIC_MASTER_DATA, FW_PIC_MASTER_BASE },
		{ PIC_SLAVE_DATA, FW_PIC_SLAVE_BASE },
		{ PIC_MASTER_DATA, 1u << PIC_CASCADE_IRQ }, /* ICW3: the slave on IR2 */
		{ PIC_SLAVE_DATA, PIC_CASCADE_IRQ },         /* ICW3: its cascade identity */
		{ PIC_MASTER_DATA, ICW4_8086 },
		{ PIC_SLAVE_DATA, ICW4_8086 },
		{ PIC_MASTER_DATA, FW_PIC_MASTER_IMR },
		{ PIC_SLAVE_DATA, FW_PIC_SLAVE_IMR },
		{ PIC_ELCR_MASTER, FW_PIC_ELCR_MASTER },
		{ PIC_ELCR_SLAVE, FW_PIC_ELCR_SLAVE },
	};

	for (unsigned i = 0; i < sizeof(seq) / sizeof(seq[0]); i++)
		pic_port_write(p, seq[i].port, seq[i].val);
}

void firmware_pit(struct pit *p, uint64_t now)
{
	pit_port_write(p, PIT_PORT_CMD, 0 << 6 | PIT_RW_LOHI << 4 | 2 << 1, now);
	pit_port_write(p, PIT_PORT_CH0, 0, now);
	pit_port_write(p, PIT_PORT_CH0, 0, now);
}

void firmware_bsp_apic(struct lapic *a, uint64_t now)
{
	uint64_t svr = lapic_mmio_read(a, LAPIC_REG_SVR, 4, now);

	lapic_mmio_write(a, LAPIC_REG_SVR, 4, svr | LAPIC_SVR_ENABLE, now);
	lapic_mmio_write(a, LAPIC_REG_LVT_LINT0, 4, LAPIC_LVT_LEVEL | LAPIC_DM_EXTINT << 8, now);
	lapic_mmio_write(a, LAPIC_REG_LVT_LINT1, 4, LAPIC_LVT_LEVEL | LAPIC_DM_NMI << 8, now);
}

/* Offsets of the handlers in firmware_stubs. */
#define STUB_IRET 0x00
#define STUB_HWPIC1 0x01
#define STUB_HWPIC2 0x08

const uint8_t firmware_stubs[] = {
	0xcf,                                     /* iret */
	0x50, 0xb0, 0x20, 0xe6, 0x20, 0x58, 0xcf, /* push ax; mov al,0x20; out 0x20,al; pop ax; iret */
	0x50, 0xb0, 0x20, 0xe6, 0xa0, 0xe6, 0x20, /* push ax; mov al,0x20; out 0xa0,al; out 0x20,al; */
	0x58, 0xcf,                               /* pop ax; iret */
};
const unsigned firmware_stubs_len = sizeof(firmware_stubs);

void firmware_ivt(uint32_t ivt[FW_IVT_VECTORS])
{
	uint32_t stubs = (uint32_t)FW_STUBS_SEG << 16 | FW_STUBS_OFF;

	for (unsigned v = 0; v < FW_IVT_VECTORS; v++)
		ivt[v] = stubs + STUB_IRET;
	for (unsigned i = 0; i < 8; i++) {
		ivt[FW_PIC_MASTER_BASE + i] = stubs + STUB_HWPIC1;
		ivt[FW_PIC_SLAVE_BASE + i] = stubs + STUB_HWPIC2;
	}
}
