/* dev/pci.c: configuration mechanism 1 and the pc machine's bus-0 functions. */
#include "check.h"
#include "dev/pci.h"

static uint32_t cfg_addr(unsigned bus, unsigned dev, unsigned fn, unsigned reg)
{
	return PCI_ADDR_ENABLE | bus << 16 | dev << 11 | fn << 8 | reg;
}

static uint32_t rd(struct pci *p, unsigned dev, unsigned fn, unsigned reg, unsigned size)
{
	pci_port_write(p, 0xcf8, 4, cfg_addr(0, dev, fn, reg & 0xfc));
	return pci_port_read(p, (uint16_t)(0xcfc + (reg & 3)), size);
}

static void wr(struct pci *p, unsigned dev, unsigned fn, unsigned reg, unsigned size, uint32_t v)
{
	pci_port_write(p, 0xcf8, 4, cfg_addr(0, dev, fn, reg & 0xfc));
	pci_port_write(p, (uint16_t)(0xcfc + (reg & 3)), size, v);
}

TEST(pci_host_bridge_ids)
{
	static struct pci p;
	pci_init(&p);
	CHECK_EQ_U64(rd(&p, 0, 0, 0, 4), 0x12378086);
	CHECK_EQ_U64(rd(&p, 0, 0, 8, 4), 0x06000002);
	CHECK_EQ_U64(rd(&p, 0, 0, 0xe, 1), 0x00);
	CHECK_EQ_U64(rd(&p, 0, 0, 0x2c, 4), 0x11001af4);
	/* byte and word reads at every offset of the data window */
	CHECK_EQ_U64(rd(&p, 0, 0, 1, 1), 0x80);
	CHECK_EQ_U64(rd(&p, 0, 0, 2, 2), 0x1237);
	CHECK_EQ_U64(rd(&p, 0, 0, 3, 1), 0x12);
}

TEST(pci_piix_functions)
{
	static struct pci p;
	pci_init(&p);
	CHECK_EQ_U64(rd(&p, 1, 0, 0, 4), 0x70008086);
	CHECK_EQ_U64(rd(&p, 1, 0, 8, 4) >> 8, 0x060100);
	CHECK_EQ_U64(rd(&p, 1, 0, 0xe, 1), 0x80); /* multifunction */
	CHECK_EQ_U64(rd(&p, 1, 0, 4, 4), 0x02000007);
	CHECK_EQ_U64(rd(&p, 1, 3, 0, 4), 0x71138086);
	CHECK_EQ_U64(rd(&p, 1, 3, 8, 4), 0x06800003);
	CHECK_EQ_U64(rd(&p, 1, 3, 0x3c, 2), 0x0109);
	CHECK_EQ_U64(rd(&p, 1, 3, 0x40, 4), 0x601);
	CHECK_EQ_U64(pci_piix3_pirq(&p, 0), 10);
	CHECK_EQ_U64(pci_piix3_pirq(&p, 3), 11);
	/* absent functions and devices */
	CHECK_EQ_U64(rd(&p, 1, 1, 0, 4), 0xffffffff);
	CHECK_EQ_U64(rd(&p, 2, 0, 0, 4), 0xffffffff);
	CHECK_EQ_U64(rd(&p, 31, 7, 0, 2), 0xffff);
	CHECK_EQ_U64(rd(&p, 0, 1, 0, 1), 0xff);
}

TEST(pci_scan_finds_three)
{
	static struct pci p;
	unsigned found = 0;
	pci_init(&p);
	for (unsigned dev = 0; dev < 32; dev++)
		for (unsigned fn = 0; fn < 8; fn++)
			if ((rd(&p, dev, fn, 0, 4) & 0xffff) != 0xffff)
				found++;
	CHECK_EQ_U64(found, 3);
	/* another bus: nothing */
	pci_port_write(&p, 0xcf8, 4, cfg_addr(1, 0, 0, 0));
	CHECK_EQ_U64(pci_port_read(&p, 0xcfc, 4), 0xffffffff);
}

TEST(pci_address_register)
{
	static struct pci p;
	pci_init(&p);
	pci_port_write(&p, 0xcf8, 4, 0x80001234);
	CHECK_EQ_U64(pci_port_read(&p, 0xcf8, 4), 0x80001234);
	/* byte/word writes are not the address register */
	pci_port_write(&p, 0xcf8, 1, 0x55);
	pci_port_write(&p, 0xcf8, 2, 0x5555);
	pci_port_write(&p, 0xcfa, 2, 0x5555);
	pci_port_write(&p, 0xcfb, 1, 0x00);
	CHECK_EQ_U64(pci_port_read(&p, 0xcf8, 4), 0x80001234);
	/* narrow reads return the low bytes whatever the offset (as QEMU) */
	CHECK_EQ_U64(pci_port_read(&p, 0xcf8, 1), 0x34);
	CHECK_EQ_U64(pci_port_read(&p, 0xcfa, 2), 0x1234);
	/* enable bit clear: data reads all ones, writes dropped */
	pci_port_write(&p, 0xcf8, 4, 0x00000004);
	CHECK_EQ_U64(pci_port_read(&p, 0xcfc, 4), 0xffffffff);
	pci_port_write(&p, 0xcfc, 2, 0x0000);
	CHECK_EQ_U64(rd(&p, 1, 0, 4, 2), 0x0007);
	/* other ports */
	CHECK_EQ_U64(pci_port_read(&p, 0xcf7, 1), 0xff);
}

TEST(pci_writes_follow_mask)
{
	static struct pci p;
	pci_init(&p);
	/* IDs, class, header type: read-only */
	wr(&p, 0, 0, 0, 4, 0);
	wr(&p, 0, 0, 8, 4, 0);
	wr(&p, 0, 0, 0xe, 1, 0x80);
	CHECK_EQ_U64(rd(&p, 0, 0, 0, 4), 0x12378086);
	CHECK_EQ_U64(rd(&p, 0, 0, 8, 4), 0x06000002);
	CHECK_EQ_U64(rd(&p, 0, 0, 0xe, 1), 0);
	/* command: writable bits only; status read-only */
	wr(&p, 0, 0, 4, 4, 0xffffffff);
	CHECK_EQ_U64(rd(&p, 0, 0, 4, 4), 0x00000547);
	wr(&p, 0, 0, 4, 2, 0x0002);
	CHECK_EQ_U64(rd(&p, 0, 0, 4, 2), 0x0002);
	/* byte write at an odd data port lands on reg + 1 */
	wr(&p, 0, 0, 5, 1, 0x04);
	CHECK_EQ_U64(rd(&p, 0, 0, 4, 2), 0x0402);
	/* interrupt line writable, pin not */
	wr(&p, 1, 3, 0x3c, 2, 0x0505);
	CHECK_EQ_U64(rd(&p, 1, 3, 0x3c, 2), 0x0105);
	/* PMBA fixed, scratch register writable */
	wr(&p, 1, 3, 0x40, 4, 0xb001);
	CHECK_EQ_U64(rd(&p, 1, 3, 0x40, 4), 0x601);
	wr(&p, 1, 0, 0x60, 1, 0x0b);
	CHECK_EQ_U64(pci_piix3_pirq(&p, 0), 0x0b);
	/* BAR area: read-only zero */
	wr(&p, 1, 3, 0x10, 4, 0xffffffff);
	CHECK_EQ_U64(rd(&p, 1, 3, 0x10, 4), 0);
	/* absent function: writes go nowhere */
	wr(&p, 5, 0, 0x40, 4, 0x12345678);
	CHECK_EQ_U64(rd(&p, 5, 0, 0x40, 4), 0xffffffff);
	/* a word at 0xcff runs past the window: high byte reads ones */
	pci_port_write(&p, 0xcf8, 4, cfg_addr(0, 0, 0, 0));
	CHECK_EQ_U64(pci_port_read(&p, 0xcff, 2), 0xff12);
}
