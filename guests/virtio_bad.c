/* The virtio_bad guest: drives the virtio-blk disk at 00:03.0 as a virtio
 * 1.x driver does over the modern PCI transport (virtio 1.2, 3.1.1 and 4.1),
 * then hands it bad rings, one at a time, for tests/e2e/e2e_virtio.py.
 *
 * Arguments: crc=N (the CRC-32 of the disk's sector 0) and sectors=N (its
 * capacity). Each case initialises the device from a reset, puts one
 * request for sector 0 in queue 0 (header, 512-byte buffer, status byte) and
 * notifies:
 *   good-read      the request served: used ring entry, status OK, the
 *                  sector's CRC, nothing else written
 *   mmio-buffer    the data buffer in the device's own BAR
 *   past-ram       the data buffer across the end of RAM
 *   loop           the status descriptor chains back to the data buffer
 *   next-past-queue  a descriptor's next is past the queue's 8 entries
 *   avail-past-queue the available index 1000 entries ahead of the device
 *   no-status      a request of its header alone
 * A bad case passes when the device status shows DEVICE_NEEDS_RESET, the ISR
 * a configuration change, the used ring has not moved and not a byte of
 * the guest's ring area or of the last bytes of its RAM changed; NAME/recovered
 * when, after a reset and a new initialisation, a good read works again.
 * Lines PASS/FAIL per case, "virtio_bad: N passed, ..." and exit status 0
 * when nothing failed. */
#include "guests/rt/cpu.h"
#include "guests/rt/report.h"
#include "guests/rt/rt.h"

#define PCI_DEV 3 /* 00:03.0 */
#define PCI_CAP_VENDOR 0x09
enum { CAP_COMMON = 1, CAP_NOTIFY, CAP_ISR, CAP_DEVICE, CAP_TYPES };

/* common configuration (4.1.4.3) */
enum {
	CC_DFSELECT = 0x00, CC_DF = 0x04, CC_GFSELECT = 0x08, CC_GF = 0x0c,
	CC_STATUS = 0x14, CC_Q_SELECT = 0x16, CC_Q_SIZE = 0x18, CC_Q_ENABLE = 0x1c,
	CC_Q_NOFF = 0x1e, CC_Q_DESC = 0x20, CC_Q_AVAIL = 0x28, CC_Q_USED = 0x30,
	CC_BYTES = 0x38,
};

/* device status (2.1) */
#define ST_ACK 0x01
#define ST_DRIVER 0x02
#define ST_DRIVER_OK 0x04
#define ST_FEATURES_OK 0x08
#define ST_NEEDS_RESET 0x40
#define ST_READY (ST_ACK | ST_DRIVER | ST_FEATURES_OK | ST_DRIVER_OK)

#define ISR_QUEUE 1
#define ISR_CONFIG 2

#define DESC_F_NEXT 1
#define DESC_F_WRITE 2

#define SECTOR 512
#define QSIZE 8
#define POLLS 1000000	/* reads of the used ring in memory */
#define REG_POLLS 10000	/* reads of a register: each is an exit under sprig */

/* The ring area: guard bytes round the rings and the request, all owned by
 * this guest; the device may write only the used ring, the data buffer and
 * the status byte, and only for a good request. */
#define AREA GUEST_PLAYGROUND
#define AREA_BYTES 0x4000
#define DESC (AREA + 0x1000)
#define AVAIL (AREA + 0x1400)
#define USED (AREA + 0x1800)
#define HDR (AREA + 0x2000)
#define DATA (AREA + 0x2200)
#define STATUS (AREA + 0x2400)
#define AVAIL_BYTES (4 + 2 * QSIZE + 2)
#define USED_BYTES (4 + 8 * QSIZE + 2)
#define PATTERN 0xa5
#define TAIL 256 /* the last bytes of RAM, watched too */

struct desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};

struct blk_req {
	uint32_t type; /* 0: IN */
	uint32_t reserved;
	uint64_t sector;
};

enum bad {
	GOOD, MMIO_BUFFER, PAST_RAM, LOOP, NEXT_PAST_QUEUE, AVAIL_PAST_QUEUE, NO_STATUS, CASES
};
static const char *const case_names[CASES] = {
	"good-read", "mmio-buffer", "past-ram", "loop", "next-past-queue", "avail-past-queue",
	"no-status",
};

static uint64_t bar, ram_end;
static uint32_t cap_off[CAP_TYPES], cap_len[CAP_TYPES], notify_mult;
static uint32_t want_crc;
static uint64_t want_sectors;
static uint8_t shadow[AREA_BYTES];

static uint32_t pci_read32(unsigned reg)
{
	outl(0xcf8, 0x80000000u | PCI_DEV << 11 | (reg & 0xfc));
	return inl(0xcfc);
}

static uint8_t pci_read8(unsigned reg)
{
	return (uint8_t)(pci_read32(reg) >> (8 * (reg & 3)));
}

static void pci_write32(unsigned reg, uint32_t v)
{
	outl(0xcf8, 0x80000000u | PCI_DEV << 11 | (reg & 0xfc));
	outl(0xcfc, v);
}

/* Registers in BAR 0, each accessed at its own width (4.1.3.1). */
static volatile void *reg(unsigned cap, unsigned off)
{
	return (volatile void *)(uintptr_t)(bar + cap_off[cap] + off);
}

static uint8_t cc_read8(unsigned off)
{
	return *(volatile uint8_t *)reg(CAP_COMMON, off);
}

static uint16_t cc_read16(unsigned off)
{
	return *(volatile uint16_t *)reg(CAP_COMMON, off);
}

static uint32_t cc_read32(unsigned off)
{
	return *(volatile uint32_t *)reg(CAP_COMMON, off);
}

static void cc_write8(unsigned off, uint8_t v)
{
	*(volatile uint8_t *)reg(CAP_COMMON, off) = v;
}

static void cc_write16(unsigned off, uint16_t v)
{
	*(volatile uint16_t *)reg(CAP_COMMON, off) = v;
}

static void cc_write32(unsigned off, uint32_t v)
{
	*(volatile uint32_t *)reg(CAP_COMMON, off) = v;
}

/* A 64-bit field as two 32-bit halves, low first (4.1.3.1 allows it). */
static void cc_write64(unsigned off, uint64_t v)
{
	cc_write32(off, (uint32_t)v);
	cc_write32(off + 4, (uint32_t)(v >> 32));
}

static uint8_t isr_read(void)
{
	return *(volatile uint8_t *)reg(CAP_ISR, 0);
}

static uint32_t crc32(const uint8_t *p, unsigned len)
{
	uint32_t c = 0xffffffffu;

	while (len--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = c >> 1 ^ (0xedb88320u & -(c & 1));
	}
	return ~c;
}

/* The end of the RAM range holding the ring area. */
static uint64_t find_ram_end(const struct mb1_info *mbi)
{
	for (unsigned i = 0; i < mbi->mmap_count; i++) {
		const struct mb1_mmap_entry *e = &mbi->mmap[i];

		if (e->type == 1 && e->addr <= AREA && e->addr + e->len >= AREA + AREA_BYTES)
			return e->addr + e->len;
	}
	return mbi->has_mem ? MIB + mbi->mem_upper * KIB : 0;
}

/* BAR n's address: memory, 32 or 64 bits (0 for an I/O BAR). */
static uint64_t bar_address(unsigned n)
{
	uint32_t b = pci_read32(0x10 + 4 * n);

	if (b & 1)
		return 0;
	return (b & ~0xfull) | ((b >> 1 & 3) == 2 && n < 5 ? (uint64_t)pci_read32(0x14 + 4 * n) << 32 : 0);
}

/* 00:03.0 a modern virtio-blk (4.1.2), its four structures in one memory
 * BAR (4.1.4; sprig's BAR 0, QEMU's BAR 4) below 4 GiB. */
static bool find_device(void)
{
	const char *name = "find-device";
	uint32_t id = pci_read32(0x00);
	unsigned p, hops = 0, bar_nr = 6;

	if (id != (0x1042u << 16 | 0x1af4)) {
		fail(name, "00:03.0 is 0x%x, not 1af4:1042", id);
		return false;
	}
	if (!(pci_read32(0x04) >> 16 & 0x10)) {
		fail(name, "no capability list");
		return false;
	}
	for (p = pci_read8(0x34) & 0xfc; p && hops < 48; p = pci_read8(p + 1) & 0xfc, hops++) {
		unsigned type = pci_read8(p + 3), n = pci_read8(p + 4);

		/* the first structure of each type (4.1.4: others may follow) */
		if (pci_read8(p) != PCI_CAP_VENDOR || type >= CAP_TYPES || !type ||
		    cap_len[type] || n > 5 || (bar_nr < 6 && n != bar_nr))
			continue;
		bar_nr = n;
		cap_off[type] = pci_read32(p + 8);
		cap_len[type] = pci_read32(p + 12);
		if (type == CAP_NOTIFY)
			notify_mult = pci_read32(p + 16);
	}
	if (cap_len[CAP_COMMON] < CC_BYTES || cap_len[CAP_NOTIFY] < 2 || !cap_len[CAP_ISR] ||
	    cap_len[CAP_DEVICE] < 8) {
		fail(name, "capabilities: common %u, notify %u, ISR %u, device %u bytes",
		     cap_len[CAP_COMMON], cap_len[CAP_NOTIFY], cap_len[CAP_ISR],
		     cap_len[CAP_DEVICE]);
		return false;
	}
	bar = bar_address(bar_nr);
	if (!bar || bar >= (4ull << 30)) {
		fail(name, "BAR %u at 0x%llx", bar_nr, (unsigned long long)bar);
		return false;
	}
	pci_write32(0x04, (pci_read32(0x04) & 0xffff) | 0x6); /* memory, bus master */
	set_uncached(bar);
	printf("info: virtio-blk BAR %u at 0x%llx, notify multiplier %u\n", bar_nr,
	       (unsigned long long)bar, notify_mult);
	pass(name);
	return true;
}

static bool reset_device(const char *name)
{
	cc_write8(CC_STATUS, 0);
	/* 4.1.4.3.2: the reset is done once status reads back 0 */
	for (int i = 0; i < REG_POLLS; i++)
		if (!cc_read8(CC_STATUS))
			return true;
	fail(name, "status 0x%x after a reset", cc_read8(CC_STATUS));
	return false;
}

/* Fill the area with the pattern, zero the rings, write the request for
 * case k into the descriptor table and the available ring (its index
 * still 0); the RAM's tail too; a shadow copy to compare with. */
static void prepare(enum bad k)
{
	volatile uint8_t *a = (volatile uint8_t *)AREA;
	struct desc *d = (struct desc *)DESC;
	uint16_t *avail = (uint16_t *)AVAIL;
	struct blk_req *r = (struct blk_req *)HDR;

	for (unsigned i = 0; i < AREA_BYTES; i++)
		a[i] = PATTERN;
	for (unsigned i = 0; i < TAIL; i++)
		((volatile uint8_t *)(ram_end - TAIL))[i] = PATTERN;
	for (unsigned i = 0; i < 16 * QSIZE; i++)
		((uint8_t *)DESC)[i] = 0;
	for (unsigned i = 0; i < AVAIL_BYTES; i++)
		((uint8_t *)AVAIL)[i] = 0;
	for (unsigned i = 0; i < USED_BYTES; i++)
		((uint8_t *)USED)[i] = 0;
	*r = (struct blk_req){ .type = 0, .sector = 0 };
	d[0] = (struct desc){ HDR, sizeof(*r), DESC_F_NEXT, 1 };
	d[1] = (struct desc){ DATA, SECTOR, DESC_F_WRITE | DESC_F_NEXT, 2 };
	d[2] = (struct desc){ STATUS, 1, DESC_F_WRITE, 0 };
	switch (k) {
	case MMIO_BUFFER:
		d[1].addr = bar;
		break;
	case PAST_RAM:
		d[1].addr = ram_end - TAIL;
		break;
	case LOOP:
		d[2].flags |= DESC_F_NEXT;
		d[2].next = 1;
		break;
	case NEXT_PAST_QUEUE:
		d[1].next = 200;
		break;
	case NO_STATUS:
		d[0].flags = 0;
		break;
	default:
		break;
	}
	avail[2] = 0; /* ring[0]: the chain at descriptor 0 */
	for (unsigned i = 0; i < AREA_BYTES; i++)
		shadow[i] = a[i];
}

/* Make case k's request available and notify: only now, as a device takes
 * what its enabled queues hold once DRIVER_OK is set (QEMU and sprig do). */
static void publish(enum bad k)
{
	uint16_t idx = k == AVAIL_PAST_QUEUE ? 1000 : 1;

	((volatile uint16_t *)AVAIL)[1] = idx;
	shadow[AVAIL - AREA + 2] = (uint8_t)idx;
	shadow[AVAIL - AREA + 3] = (uint8_t)(idx >> 8);
	asm volatile("" ::: "memory");
	*(volatile uint16_t *)reg(CAP_NOTIFY, cc_read16(CC_Q_NOFF) * notify_mult) = 0;
}

/* 3.1.1: reset, ACKNOWLEDGE, DRIVER, VERSION_1 alone, FEATURES_OK, queue 0
 * at the prepared rings, DRIVER_OK. */
static bool init_device(const char *name)
{
	uint32_t hi, cap_lo, cap_hi;

	if (!reset_device(name))
		return false;
	cc_write8(CC_STATUS, ST_ACK);
	cc_write8(CC_STATUS, ST_ACK | ST_DRIVER);
	cc_write32(CC_DFSELECT, 1);
	hi = cc_read32(CC_DF);
	if (!(hi & 1)) {
		fail(name, "VIRTIO_F_VERSION_1 not offered (features 63:32 0x%x)", hi);
		return false;
	}
	cc_write32(CC_GFSELECT, 0);
	cc_write32(CC_GF, 0);
	cc_write32(CC_GFSELECT, 1);
	cc_write32(CC_GF, 1);
	cc_write8(CC_STATUS, ST_ACK | ST_DRIVER | ST_FEATURES_OK);
	if (!(cc_read8(CC_STATUS) & ST_FEATURES_OK)) {
		fail(name, "FEATURES_OK not kept (status 0x%x)", cc_read8(CC_STATUS));
		return false;
	}
	cc_write16(CC_Q_SELECT, 0);
	if (cc_read16(CC_Q_SIZE) < QSIZE || cc_read16(CC_Q_ENABLE)) {
		fail(name, "queue 0: size %u, enabled %u after a reset", cc_read16(CC_Q_SIZE),
		     cc_read16(CC_Q_ENABLE));
		return false;
	}
	cc_write16(CC_Q_SIZE, QSIZE);
	cc_write64(CC_Q_DESC, DESC);
	cc_write64(CC_Q_AVAIL, AVAIL);
	cc_write64(CC_Q_USED, USED);
	cc_write16(CC_Q_ENABLE, 1);
	if (cc_read16(CC_Q_ENABLE) != 1) {
		fail(name, "queue 0 not enabled");
		return false;
	}
	cc_write8(CC_STATUS, ST_READY);
	if (cc_read8(CC_STATUS) != ST_READY) {
		fail(name, "status 0x%x after DRIVER_OK", cc_read8(CC_STATUS));
		return false;
	}
	cap_lo = *(volatile uint32_t *)reg(CAP_DEVICE, 0);
	cap_hi = *(volatile uint32_t *)reg(CAP_DEVICE, 4);
	if (((uint64_t)cap_hi << 32 | cap_lo) != want_sectors) {
		fail(name, "capacity %llu sectors, want %llu",
		     (unsigned long long)cap_hi << 32 | cap_lo, (unsigned long long)want_sectors);
		return false;
	}
	return true;
}

static uint16_t used_idx(void)
{
	return ((volatile uint16_t *)USED)[1];
}

/* The first byte of the area that differs from the shadow outside
 * [skip, skip + len) ranges, or -1; the RAM's tail against the pattern. */
static long changed(const uint64_t (*skip)[2], unsigned nr_skip)
{
	const volatile uint8_t *a = (const volatile uint8_t *)AREA;

	for (unsigned i = 0; i < AREA_BYTES; i++) {
		bool skipped = false;

		for (unsigned s = 0; s < nr_skip; s++)
			skipped |= AREA + i >= skip[s][0] && AREA + i < skip[s][0] + skip[s][1];
		if (!skipped && a[i] != shadow[i])
			return (long)(AREA + i);
	}
	for (unsigned i = 0; i < TAIL; i++)
		if (((const volatile uint8_t *)(ram_end - TAIL))[i] != PATTERN)
			return (long)(ram_end - TAIL + i);
	return -1;
}

/* One good read of sector 0, the device initialised. */
static bool good_read(const char *name)
{
	static const uint64_t served[][2] = { { USED, USED_BYTES }, { DATA, SECTOR }, { STATUS, 1 } };
	const volatile uint32_t *elem = (const volatile uint32_t *)(USED + 4);
	uint32_t crc;
	long at;
	int i;

	prepare(GOOD);
	if (!init_device(name))
		return false;
	publish(GOOD);
	for (i = 0; i < POLLS && used_idx() != 1; i++)
		;
	if (used_idx() != 1) {
		fail(name, "used idx %u, want 1; status 0x%x", used_idx(), cc_read8(CC_STATUS));
		return false;
	}
	if (elem[0] != 0 || elem[1] != SECTOR + 1 || *(volatile uint8_t *)STATUS != 0) {
		fail(name, "used {id %u, len %u}, status byte %u; want {0, %u}, 0", elem[0], elem[1],
		     *(volatile uint8_t *)STATUS, SECTOR + 1);
		return false;
	}
	crc = crc32((const uint8_t *)DATA, SECTOR);
	if (crc != want_crc) {
		fail(name, "sector 0's CRC-32 0x%08x, want 0x%08x", crc, want_crc);
		return false;
	}
	if ((at = changed(served, 3)) >= 0) {
		fail(name, "byte 0x%lx changed", at);
		return false;
	}
	if (cc_read8(CC_STATUS) != ST_READY || !(isr_read() & ISR_QUEUE)) {
		fail(name, "status 0x%x, ISR without the queue bit", cc_read8(CC_STATUS));
		return false;
	}
	return true;
}

/* Bad ring k: the device needs a reset and wrote nothing. */
static void bad_ring(enum bad k)
{
	const char *name = case_names[k];
	uint8_t st, isr;
	long at;

	prepare(k);
	if (!init_device(name))
		return;
	publish(k);
	/* a device may take the notification later (QEMU's does) */
	for (int i = 0; i < REG_POLLS && !(cc_read8(CC_STATUS) & ST_NEEDS_RESET) && !used_idx(); i++)
		;
	st = cc_read8(CC_STATUS);
	isr = isr_read();
	if (!(st & ST_NEEDS_RESET))
		fail(name, "status 0x%x without DEVICE_NEEDS_RESET", st);
	else if (!(isr & ISR_CONFIG))
		fail(name, "ISR 0x%x without the configuration change bit", isr);
	else if (used_idx())
		fail(name, "used idx %u, want 0", used_idx());
	else if ((at = changed(NULL, 0)) >= 0)
		fail(name, "byte 0x%lx changed", at);
	else
		pass(name);
}

/* "NAME/recovered" into buf. */
static void recovered_name(char *buf, const char *name)
{
	static const char suffix[] = "/recovered";
	unsigned n = 0;

	while (*name)
		buf[n++] = *name++;
	for (unsigned i = 0; i < sizeof suffix; i++)
		buf[n++] = suffix[i];
}

int main(const struct mb1_info *mbi)
{
	char name[40];

	if (!under_sprig())
		serial_setup();
	printf("virtio_bad: bad rings for virtio-blk at 00:03.0%s\n",
	       under_sprig() ? " (under sprig)" : "");
	want_crc = (uint32_t)arg_ulong(mbi, "crc", 0);
	want_sectors = arg_ulong(mbi, "sectors", 0);
	ram_end = find_ram_end(mbi);
	if (!want_sectors || ram_end < AREA + AREA_BYTES + TAIL) {
		fail("arguments", "crc=N sectors=N, RAM above 0x%lx (ends at 0x%llx)",
		     AREA + AREA_BYTES + TAIL, (unsigned long long)ram_end);
		return report_summary("virtio_bad");
	}
	if (!find_device())
		return report_summary("virtio_bad");
	if (good_read(case_names[GOOD]))
		pass(case_names[GOOD]);
	for (enum bad k = GOOD + 1; k < CASES; k++) {
		bad_ring(k);
		recovered_name(name, case_names[k]);
		if (good_read(name))
			pass(name);
	}
	return report_summary("virtio_bad");
}
