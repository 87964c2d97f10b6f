/* dev/pci.c: configuration mechanism 1 and the pc machine's bus-0 functions. */
#include "check.h"
#include "dev/pci.h"
#include <string.h>

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

/* ---- the saved state (pci_record) ---- */

static const struct record_limits one_vcpu = { .nr_vcpus = 1, .mem_bytes = 64 << 20 };

/* A bus as a kernel leaves it: command bits, PIRQ routes, the host bridge's
 * PAM registers, the ACPI function's interrupt line, an address latched. */
static void programmed(struct pci *p)
{
	pci_init(p);
	wr(p, 0, 0, 0x59, 1, 0x30); /* PAM0 */
	wr(p, 0, 0, 4, 2, 0x0106);
	wr(p, 1, 0, 0x60, 4, 0x0b0a0b80);
	wr(p, 1, 3, 0x3c, 1, 11);
	wr(p, 1, 3, 0xd0, 4, 0xcafe0001); /* device-specific, writable */
	pci_port_write(p, 0xcf8, 4, cfg_addr(0, 1, 0, 0x60));
}

static uint32_t save(struct pci *p, uint8_t *buf, uint32_t len)
{
	struct field_io io = field_saver(buf, len);

	pci_record.fields(p, &io);
	CHECK(!io.overrun);
	return io.pos;
}

TEST(pci_record_round_trip)
{
	static struct pci a, b;
	static uint8_t buf[1024];
	uint32_t n;
	struct field_io io;
	char err[160] = "";

	programmed(&a);
	n = save(&a, buf, sizeof buf);
	CHECK_EQ_U64(n, 4 + PCI_NFUNCS * 256);
	pci_init(&b);
	io = field_loader(buf, n);
	pci_record.fields(&b, &io);
	CHECK(!io.overrun && !io.bad);
	CHECK(pci_record.check(&b, &one_vcpu, err, sizeof err));
	/* The latched address reads back and selects the same register. */
	CHECK_EQ_U64(pci_port_read(&b, 0xcf8, 4), pci_port_read(&a, 0xcf8, 4));
	CHECK_EQ_U64(pci_port_read(&b, 0xcfc, 4), 0x0b0a0b80);
	for (unsigned i = 0; i < 4; i++)
		CHECK_EQ_U64(pci_piix3_pirq(&b, i), pci_piix3_pirq(&a, i));
	/* Every config register of every device reads the same ... */
	for (unsigned dev = 0; dev < 3; dev++)
		for (unsigned fn = 0; fn < 8; fn++)
			for (unsigned reg = 0; reg < 256; reg += 4)
				if (rd(&a, dev, fn, reg, 4) != rd(&b, dev, fn, reg, 4))
					CHECK_EQ_U64(dev << 16 | fn << 8 | reg, ~0u); /* names it */
	/* ... and the write masks are still in force after the load. */
	wr(&a, 0, 0, 0, 4, 0);
	wr(&b, 0, 0, 0, 4, 0);
	wr(&a, 1, 3, 0x40, 4, 0);
	wr(&b, 1, 3, 0x40, 4, 0);
	CHECK_EQ_U64(rd(&b, 0, 0, 0, 4), 0x12378086);
	CHECK_EQ_U64(rd(&b, 1, 3, 0x40, 4), rd(&a, 1, 3, 0x40, 4));
	CHECK_EQ_U64(rd(&b, 1, 3, 0x40, 4), 0x601);
}

TEST(pci_record_check_passes_model_states)
{
	static struct pci p, l;
	static uint8_t buf[1024];
	char err[160] = "";
	uint32_t n;
	struct field_io io;

	pci_init(&p);
	/* every write a guest can make, at every offset, all ones then zeros */
	for (unsigned dev = 0; dev < 2; dev++)
		for (unsigned fn = 0; fn < 4; fn++)
			for (unsigned reg = 0; reg < 256; reg += 4)
				wr(&p, dev, fn, reg, 4, reg & 4 ? 0 : 0xffffffff);
	pci_port_write(&p, 0xcf8, 4, 0x7fffffff);
	for (int k = 0; k < 2; k++) {
		n = save(&p, buf, sizeof buf);
		memset(&l, 0, sizeof l);
		io = field_loader(buf, n);
		pci_record.fields(&l, &io);
		CHECK(pci_record.check(&l, &one_vcpu, err, sizeof err));
		if (err[0])
			fprintf(stderr, "  refused: %s\n", err);
		pci_init(&p);
	}
}

TEST(pci_record_check_refuses)
{
	static const struct {
		unsigned fn, off;
		uint8_t xor;
		const char *reason;
	} cases[] = {
		{ 0, 0x00, 0x01, "fn[0].cfg[0x00] 0x87 changes read-only bits 0x01 (00:00.0 holds 0x86)" },
		{ 1, 0x0e, 0x80, "fn[1].cfg[0x0e] 0x00 changes read-only bits 0x80" },
		{ 2, 0x04, 0x08, "fn[2].cfg[0x04] 0x08 changes read-only bits 0x08" },
		{ 2, 0x40, 0x40, "fn[2].cfg[0x40] 0x41 changes read-only bits 0x40 (00:01.3 holds 0x01)" },
		{ 2, 0x10, 0x01, "fn[2].cfg[0x10]" },
		{ 1, 0xff, 0x00, NULL },  /* writable: any value */
	};
	static struct pci p, bad;
	char err[160];

	programmed(&p);
	for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		bad = p;
		bad.fn[cases[i].fn].cfg[cases[i].off] ^= cases[i].xor ? cases[i].xor : 0xff;
		err[0] = 0;
		CHECK(pci_record.check(&bad, &one_vcpu, err, sizeof err) == !cases[i].reason);
		if (cases[i].reason && !strstr(err, cases[i].reason))
			fprintf(stderr, "  case %u: '%s' lacks '%s'\n", i, err, cases[i].reason);
		CHECK(!cases[i].reason || strstr(err, cases[i].reason) != NULL);
	}
}
