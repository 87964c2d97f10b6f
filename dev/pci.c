/* PCI configuration mechanism 1 and the pc machine's bus-0 functions; the
 * choices are in pci.h. */
#include "dev/pci.h"
#include "lib/print.h"
#include "lib/string.h"

#define DEVFN(d, f) ((uint8_t)((d) << 3 | (f)))
#define DEVFN_HOST DEVFN(0, 0)
#define DEVFN_ISA DEVFN(1, 0)
#define DEVFN_PM DEVFN(1, 3)

static void set16(uint8_t *c, unsigned off, uint16_t v)
{
	c[off] = (uint8_t)v;
	c[off + 1] = (uint8_t)(v >> 8);
}

static void set32(uint8_t *c, unsigned off, uint32_t v)
{
	set16(c, off, (uint16_t)v);
	set16(c, off + 2, (uint16_t)(v >> 16));
}

static void header(struct pci_function *f, uint8_t devfn, uint16_t device, uint8_t rev,
		   uint32_t class, uint8_t htype)
{
	memset(f, 0, sizeof(*f));
	f->devfn = devfn;
	set16(f->cfg, 0x00, 0x8086);
	set16(f->cfg, 0x02, device);
	f->cfg[0x08] = rev;
	f->cfg[0x09] = (uint8_t)class;         /* programming interface */
	f->cfg[0x0a] = (uint8_t)(class >> 8);  /* subclass */
	f->cfg[0x0b] = (uint8_t)(class >> 16); /* base class */
	f->cfg[0x0e] = htype;
	set16(f->cfg, 0x2c, 0x1af4); /* subsystem vendor: Red Hat/Qumranet */
	set16(f->cfg, 0x2e, 0x1100); /* subsystem: QEMU */
	/* QEMU's default writable bits */
	set16(f->wmask, 0x04, 0x0547);
	f->wmask[0x0c] = 0xff; /* cache line size */
	f->wmask[0x3c] = 0xff; /* interrupt line */
	memset(f->wmask + 0x40, 0xff, 0xc0);
}

void pci_init(struct pci *p)
{
	struct pci_function *f;

	p->addr = 0;
	p->nr_extra = 0;

	f = &p->fn[0];
	header(f, DEVFN_HOST, 0x1237, 0x02, 0x060000, 0x00);
	f->cfg[0x72] = 0x02; /* SMRAM: C_BASE_SEG as the 440FX resets it */

	f = &p->fn[1];
	header(f, DEVFN_ISA, 0x7000, 0x00, 0x060100, 0x80);
	set16(f->cfg, 0x04, 0x0007); /* I/O, memory, bus master */
	set16(f->cfg, 0x06, 0x0200); /* DEVSEL medium */
	f->cfg[0x4c] = 0x4d;
	f->cfg[0x4e] = 0x03;
	f->cfg[0x60] = 10; /* PIRQA-D as SeaBIOS routes them */
	f->cfg[0x61] = 10;
	f->cfg[0x62] = 11;
	f->cfg[0x63] = 11;
	f->cfg[0x69] = 0x02;
	f->cfg[0x70] = 0x80;
	f->cfg[0x76] = 0x0c;
	f->cfg[0x77] = 0x0c;
	f->cfg[0x78] = 0x02;

	f = &p->fn[2];
	header(f, DEVFN_PM, 0x7113, 0x03, 0x068000, 0x00);
	set16(f->cfg, 0x06, 0x0280); /* fast back-to-back, DEVSEL medium */
	f->cfg[0x3c] = 9;            /* SCI */
	f->cfg[0x3d] = 1;            /* INTA# */
	set32(f->cfg, 0x40, 0x0601); /* PMBA: 0x600, I/O space indicator */
	f->cfg[0x80] = 0x01;         /* PMREGMISC: PM I/O enabled */
	set32(f->cfg, 0x90, 0xb101); /* SMBBA */
	f->cfg[0xd2] = 0x09;         /* SMBHSTCFG: enabled, SMI-less */
	memset(f->wmask + 0x40, 0, 4);
	f->wmask[0x80] = 0;
	memset(f->wmask + 0x90, 0, 4);
	f->wmask[0xd2] = 0;
}

bool pci_add_function(struct pci *p, struct pci_function *fn, void (*written)(void *ctx), void *ctx)
{
	if (p->nr_extra == PCI_EXTRA_MAX)
		return false;
	p->extra[p->nr_extra++] = (struct pci_extra){ fn, written, ctx };
	return true;
}

/* Index of the function at devfn, or -1: p->fn's, then the device models'
 * (PCI_NFUNCS + their index in p->extra). */
static int find(const struct pci *p, uint8_t devfn)
{
	for (int i = 0; i < PCI_NFUNCS; i++)
		if (p->fn[i].devfn == devfn)
			return i;
	for (unsigned i = 0; i < p->nr_extra; i++)
		if (p->extra[i].fn->devfn == devfn)
			return PCI_NFUNCS + (int)i;
	return -1;
}

#define FN(p, i) ((i) < PCI_NFUNCS ? &(p)->fn[i] : (p)->extra[(i) - PCI_NFUNCS].fn)

static uint32_t ones(unsigned size)
{
	return size >= 4 ? 0xffffffffu : (1u << (8 * size)) - 1;
}

uint32_t pci_config_read(const struct pci *p, uint8_t devfn, uint8_t off, unsigned size)
{
	int i_fn = find(p, devfn);
	const struct pci_function *f = i_fn >= 0 ? FN(p, i_fn) : NULL;
	uint32_t v = 0;

	if (size > 4)
		size = 4;
	for (unsigned i = 0; i < size; i++) {
		uint8_t b = f && off + i < 256 ? f->cfg[off + i] : 0xff;
		v |= (uint32_t)b << (8 * i);
	}
	return v;
}

/* The index of the function CONFIG_ADDRESS selects, or -1 (disabled, other
 * bus, absent). */
static int selected(const struct pci *p)
{
	if (!(p->addr & PCI_ADDR_ENABLE) || ((p->addr >> 16) & 0xff) != 0)
		return -1;
	return find(p, (uint8_t)(p->addr >> 8));
}

uint32_t pci_port_read(struct pci *p, uint16_t port, unsigned size)
{
	if (size != 1 && size != 2 && size != 4)
		return 0xffffffffu;
	if (port >= PCI_PORT_ADDR && port < PCI_PORT_ADDR + 4)
		return p->addr & ones(size);
	if (port < PCI_PORT_DATA || port > PCI_PORT_DATA + 3 || selected(p) < 0)
		return ones(size);
	unsigned at = port - PCI_PORT_DATA;
	uint32_t v = 0;
	for (unsigned i = 0; i < size; i++) {
		uint32_t b = at + i < 4 ? pci_config_read(p, (uint8_t)(p->addr >> 8),
							  (uint8_t)((p->addr & 0xfc) + at + i), 1)
					: 0xff;
		v |= b << (8 * i);
	}
	return v;
}

void pci_port_write(struct pci *p, uint16_t port, unsigned size, uint32_t val)
{
	if (port == PCI_PORT_ADDR && size == 4) {
		p->addr = val;
		return;
	}
	if (port < PCI_PORT_DATA || port > PCI_PORT_DATA + 3 || (size != 1 && size != 2 && size != 4))
		return;
	int i_fn = selected(p);
	if (i_fn < 0)
		return;
	struct pci_function *f = FN(p, i_fn);
	unsigned at = port - PCI_PORT_DATA;
	for (unsigned i = 0; i < size && at + i < 4; i++) {
		unsigned off = (p->addr & 0xfc) + at + i;
		uint8_t b = (uint8_t)(val >> (8 * i));
		f->cfg[off] = (uint8_t)((f->cfg[off] & ~f->wmask[off]) | (b & f->wmask[off]));
	}
	if (i_fn >= PCI_NFUNCS && p->extra[i_fn - PCI_NFUNCS].written)
		p->extra[i_fn - PCI_NFUNCS].written(p->extra[i_fn - PCI_NFUNCS].ctx);
}

uint8_t pci_piix3_pirq(const struct pci *p, unsigned n)
{
	return n < 4 ? p->fn[1].cfg[0x60 + n] : 0x80;
}

/* Saved: CONFIG_ADDRESS and the 256 configuration bytes of each function, in
 * pci_init's order. Not saved: which function sits where and the write
 * masks, pci_init's and the same in every VM. Checked: the bits no write
 * reaches (IDs, class, status, BARs, the PM and SMBus bases) hold their
 * pci_init values, so a loaded function is still the device it says it is
 * and no port moves; CONFIG_ADDRESS takes any value a 32-bit OUT writes. */
static void pci_fields(void *model, struct field_io *io)
{
	struct pci *p = model;

	FIELD(io, p->addr);
	for (unsigned i = 0; i < PCI_NFUNCS; i++)
		FIELD(io, p->fn[i].cfg);
}

static bool pci_state_check(const void *model, const struct record_limits *lim, char *err,
			    size_t errlen)
{
	const struct pci *p = model;
	struct pci ref;

	(void)lim;
	pci_init(&ref);
	for (unsigned i = 0; i < PCI_NFUNCS; i++) {
		const struct pci_function *want = &ref.fn[i];

		for (unsigned off = 0; off < sizeof want->cfg; off++) {
			uint8_t fixed = (uint8_t)~want->wmask[off];
			uint8_t diff = (p->fn[i].cfg[off] ^ want->cfg[off]) & fixed;

			if (!diff)
				continue;
			ksnprintf(err, errlen,
				  "fn[%u].cfg[0x%02x] 0x%02x changes read-only bits 0x%02x (00:%02x.%u holds 0x%02x)",
				  i, off, p->fn[i].cfg[off], diff, want->devfn >> 3, want->devfn & 7,
				  want->cfg[off]);
			return false;
		}
	}
	return true;
}

const struct record_type pci_record = {
	.id = REC_PCI,
	.version = 1,
	.name = "pci",
	.model_bytes = sizeof(struct pci),
	.fields = pci_fields,
	.check = pci_state_check,
};
