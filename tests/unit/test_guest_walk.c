/* The guest page-table walker (virt/guest_walk.c): tables built in a fake
 * guest memory for every paging mode, translations of each page size, and
 * each #PF cause with its exact error code. */
#include <string.h>
#include "check.h"
#include "arch/x86/msr.h"
#include "arch/x86/regs.h"
#include "virt/guest_walk.h"

#define RAM_SIZE (1u << 20) /* guest RAM: [0, 1 MiB); tables and code live here */

#define P (1ull << 0)
#define RW (1ull << 1)
#define US (1ull << 2)
#define PS (1ull << 7)
#define XD (1ull << 63)
#define CR4_PSE (1ull << 4)

static uint8_t ram[RAM_SIZE];
static uint64_t next_table;
static unsigned reads;

static bool ram_read(void *ctx, uint64_t gpa, void *buf, unsigned len)
{
	(void)ctx;
	reads++;
	if (gpa >= RAM_SIZE || len > RAM_SIZE - gpa)
		return false;
	memcpy(buf, ram + gpa, len);
	return true;
}

static struct gwalk_mem mem = { ram_read, NULL, 46 };

static void reset(void)
{
	memset(ram, 0, sizeof(ram));
	next_table = 0x1000;
	mem.phys_bits = 46;
}

static uint64_t alloc_table(void)
{
	uint64_t t = next_table;

	next_table += 0x1000;
	return t;
}

static uint64_t get64(uint64_t gpa)
{
	uint64_t v;

	memcpy(&v, ram + gpa, 8);
	return v;
}

static void put64(uint64_t gpa, uint64_t v) { memcpy(ram + gpa, &v, 8); }
static void put32(uint64_t gpa, uint32_t v) { memcpy(ram + gpa, &v, 4); }

/* Map linear to target in the 64-bit-entry tables at root: levels 5, 4 or
 * 3 (PAE, whose PDPTEs take only P), the leaf at leaf_level (1: 4 KiB,
 * 2: 2 MiB, 3: 1 GiB) with leaf_flags; tables in between are P|RW|US so
 * that the leaf's flags decide. Returns the leaf entry's address. */
static uint64_t map64(uint64_t root, unsigned levels, uint64_t linear, uint64_t target,
		      unsigned leaf_level, uint64_t leaf_flags)
{
	uint64_t table = root;

	for (unsigned level = levels;; level--) {
		unsigned shift = 12 + 9 * (level - 1);
		uint64_t at = table + ((linear >> shift) & 0x1ff) * 8, e = get64(at);

		if (level == leaf_level) {
			put64(at, target | leaf_flags | (level > 1 ? PS : 0));
			return at;
		}
		if (!(e & P)) {
			bool pae_pdpte = levels == 3 && level == 3;

			e = alloc_table() | (pae_pdpte ? P : P | RW | US);
			put64(at, e);
		}
		table = e & 0xffffffffff000ull;
	}
}

/* 32-bit paging: a 4 KiB page, or a 4 MiB one (PDE with PS and PSE-36 bits). */
static uint64_t map32(uint64_t root, uint32_t linear, uint64_t target, bool big, uint32_t flags)
{
	uint64_t pde_at = root + (linear >> 22) * 4;
	uint32_t pde;

	if (big) {
		put32(pde_at, (uint32_t)(target & 0xffc00000u) |
				      (uint32_t)(((target >> 32) & 0xff) << 13) | flags | (uint32_t)PS);
		return pde_at;
	}
	memcpy(&pde, ram + pde_at, 4);
	if (!(pde & P)) {
		pde = (uint32_t)alloc_table() | (uint32_t)(P | RW | US);
		put32(pde_at, pde);
	}
	put32((pde & 0xfffff000u) + ((linear >> 12) & 0x3ff) * 4,
	      (uint32_t)target | flags);
	return (pde & 0xfffff000u) + ((linear >> 12) & 0x3ff) * 4;
}

static const struct guest_mode long4 = {
	.cr0 = CR0_PE | CR0_PG | CR0_WP,
	.cr3 = 0x1000,
	.cr4 = CR4_PAE,
	.efer = EFER_LME | EFER_LMA | EFER_NXE,
	.cpl = 0,
	.code_bits = 64,
};

/* Translate, expecting success. */
static uint64_t xlate(const struct guest_mode *m, uint64_t linear, unsigned access)
{
	uint64_t gpa = ~0ull;
	uint32_t ec = 0xdead;
	enum gwalk_status st = guest_walk(m, linear, access, &mem, &gpa, &ec);

	CHECK_EQ_U64(st, GWALK_OK);
	return gpa;
}

/* Translate, expecting a #PF: returns its error code (or 0xdead). */
static uint32_t fault(const struct guest_mode *m, uint64_t linear, unsigned access)
{
	uint64_t gpa = 0;
	uint32_t ec = 0xdead;
	enum gwalk_status st = guest_walk(m, linear, access, &mem, &gpa, &ec);

	CHECK_EQ_U64(st, GWALK_FAULT);
	return st == GWALK_FAULT ? ec : 0xdead;
}

TEST(gwalk_no_paging)
{
	struct guest_mode m = { .cr0 = CR0_PE, .cr4 = CR4_PAE, .cpl = 0, .code_bits = 32 };

	reset();
	reads = 0;
	CHECK_EQ_U64(xlate(&m, 0x12345678, GWALK_W), 0x12345678);
	/* Outside long mode linear addresses are 32 bits. */
	CHECK_EQ_U64(xlate(&m, 0x1fffff000ull, 0), 0xfffff000);
	CHECK_EQ_U64(reads, 0);
}

TEST(gwalk_32bit)
{
	struct guest_mode m = { .cr0 = CR0_PE | CR0_PG | CR0_WP, .cr3 = 0x1000, .cr4 = 0 };

	reset();
	alloc_table(); /* the page directory at 0x1000 */
	map32(0x1000, 0x00401000, 0x7000, false, (uint32_t)(P | RW));
	map32(0x1000, 0x00402000, 0x8000, false, (uint32_t)(P | US));
	CHECK_EQ_U64(xlate(&m, 0x00401abc, GWALK_W), 0x7abc);
	CHECK_EQ_U64(xlate(&m, 0x00402fff, GWALK_U), 0x8fff);
	/* Not present PTE, not present PDE. */
	CHECK_EQ_U64(fault(&m, 0x00403000, GWALK_W | GWALK_U), PFEC_W | PFEC_U);
	CHECK_EQ_U64(fault(&m, 0x00800000, 0), 0);
	/* Rights. */
	CHECK_EQ_U64(fault(&m, 0x00401000, GWALK_U), PFEC_P | PFEC_U);
	CHECK_EQ_U64(fault(&m, 0x00402000, GWALK_U | GWALK_W), PFEC_P | PFEC_W | PFEC_U);
	CHECK_EQ_U64(fault(&m, 0x00402000, GWALK_W), PFEC_P | PFEC_W);
	m.cr0 &= ~CR0_WP;
	CHECK_EQ_U64(xlate(&m, 0x00402000, GWALK_W), 0x8000);
	/* No XD in 32-bit paging, even with EFER.NXE: a fetch faults only
	 * for not-present, and I/D is set only with SMEP. */
	m.efer = EFER_NXE;
	CHECK_EQ_U64(xlate(&m, 0x00401000, GWALK_F), 0x7000);
	CHECK_EQ_U64(fault(&m, 0x00403000, GWALK_F), 0);
	m.cr4 |= CR4_SMEP;
	CHECK_EQ_U64(fault(&m, 0x00403000, GWALK_F), PFEC_I);
	CHECK_EQ_U64(fault(&m, 0x00402000, GWALK_F), PFEC_P | PFEC_I);
	/* Linear addresses are 32 bits. */
	CHECK_EQ_U64(xlate(&m, 0x100401004ull, 0), 0x7004);
}

TEST(gwalk_32bit_4m_pse36)
{
	struct guest_mode m = { .cr0 = CR0_PE | CR0_PG, .cr3 = 0x1000, .cr4 = CR4_PSE };
	uint64_t pde;

	reset();
	alloc_table();
	pde = map32(0x1000, 0x80000000u, 0x3c00000ull | (0x5ull << 32), true, (uint32_t)(P | RW));
	CHECK_EQ_U64(xlate(&m, 0x80123456u, GWALK_W), 0x503d23456ull);
	/* PDE bit 21 is reserved. */
	put32(pde, (uint32_t)get64(pde) | (1u << 21));
	CHECK_EQ_U64(fault(&m, 0x80000000u, GWALK_W), PFEC_P | PFEC_W | PFEC_RSVD);
	/* MAXPHYADDR 36: physical bits 39:36 (PDE bits 20:17) are reserved. */
	pde = map32(0x1000, 0x80000000u, 0x10ull << 32, true, (uint32_t)P);
	mem.phys_bits = 36;
	CHECK_EQ_U64(fault(&m, 0x80000000u, 0), PFEC_P | PFEC_RSVD);
	mem.phys_bits = 40;
	CHECK_EQ_U64(xlate(&m, 0x80000000u, 0), 0x10ull << 32);
	/* Without CR4.PSE the PS bit is ignored: the PDE points to a page
	 * table (here the page at 0, empty: not present). */
	put32(pde, (uint32_t)(P | RW | PS));
	m.cr4 = 0;
	CHECK_EQ_U64(fault(&m, 0x80000000u, 0), 0);
	put32(0x000, 0x9000 | (uint32_t)P);
	CHECK_EQ_U64(xlate(&m, 0x80000123u, 0), 0x9123);
}

TEST(gwalk_pae)
{
	struct guest_mode m = {
		.cr0 = CR0_PE | CR0_PG | CR0_WP,
		.cr3 = 0x1000,
		.cr4 = CR4_PAE,
		.efer = EFER_NXE,
	};
	uint64_t pte, pde, pdpte = 0x1000 + 3 * 8;

	reset();
	alloc_table();
	pte = map64(0x1000, 3, 0xc0001000u, 0x123456000ull, 1, P | RW | XD);
	pde = map64(0x1000, 3, 0xc0200000u, 0x40000000ull, 2, P | US);
	CHECK_EQ_U64(get64(pdpte) & 0xfff, P);
	CHECK_EQ_U64(xlate(&m, 0xc0001234u, GWALK_W), 0x123456234ull);
	CHECK_EQ_U64(xlate(&m, 0xc03fffffu, GWALK_U), 0x401fffffull);
	/* XD with NXE: a fetch faults with I/D. */
	CHECK_EQ_U64(fault(&m, 0xc0001000u, GWALK_F), PFEC_P | PFEC_I);
	CHECK_EQ_U64(xlate(&m, 0xc0200000u, GWALK_F | GWALK_U), 0x40000000ull);
	/* Without NXE, bit 63 is reserved, and fetches do not set I/D. */
	m.efer = 0;
	CHECK_EQ_U64(fault(&m, 0xc0001000u, GWALK_F), PFEC_P | PFEC_RSVD);
	CHECK_EQ_U64(fault(&m, 0xc0400000u, GWALK_F), 0);
	m.efer = EFER_NXE;
	/* PAE entries reserve bits 62:MAXPHYADDR. */
	put64(pte, get64(pte) | (1ull << 60));
	CHECK_EQ_U64(fault(&m, 0xc0001000u, 0), PFEC_P | PFEC_RSVD);
	put64(pte, get64(pte) & ~(1ull << 60));
	put64(pte, get64(pte) | (1ull << 46));
	CHECK_EQ_U64(fault(&m, 0xc0001000u, GWALK_W), PFEC_P | PFEC_W | PFEC_RSVD);
	put64(pte, get64(pte) & ~(1ull << 46));
	/* 2 MiB PDE: bits 20:13 are reserved. */
	put64(pde, get64(pde) | (1ull << 13));
	CHECK_EQ_U64(fault(&m, 0xc0200000u, GWALK_U), PFEC_P | PFEC_U | PFEC_RSVD);
	put64(pde, get64(pde) & ~(1ull << 13));
	/* PDPTE: R/W is reserved there (no rights in PDPTEs), and XD. */
	put64(pdpte, get64(pdpte) | RW);
	CHECK_EQ_U64(fault(&m, 0xc0200000u, 0), PFEC_P | PFEC_RSVD);
	put64(pdpte, (get64(pdpte) & ~RW) | XD);
	CHECK_EQ_U64(fault(&m, 0xc0200000u, 0), PFEC_P | PFEC_RSVD);
	put64(pdpte, get64(pdpte) & ~XD);
	CHECK_EQ_U64(xlate(&m, 0xc0200000u, GWALK_U), 0x40000000ull);
	/* An accessed bit, as QEMU's walker sets it, is taken. */
	put64(pdpte, get64(pdpte) | (1ull << 5));
	CHECK_EQ_U64(xlate(&m, 0xc0200000u, GWALK_U), 0x40000000ull);
	put64(pdpte, get64(pdpte) & ~(1ull << 5));
	/* A PDPTE not present. */
	CHECK_EQ_U64(fault(&m, 0x00000000u, GWALK_W | GWALK_U), PFEC_W | PFEC_U);
	/* CR3 holds the 32-byte aligned PDPT: bits 4:0 ignored. */
	m.cr3 = 0x1000 | 0x18;
	CHECK_EQ_U64(xlate(&m, 0xc0001000u, 0), 0x123456000ull);
}

TEST(gwalk_long_pages)
{
	struct guest_mode m = long4;
	uint64_t leaf;

	reset();
	alloc_table();
	map64(0x1000, 4, 0x00007f0000001000ull, 0x5000, 1, P | RW);
	map64(0x1000, 4, 0xffff800000200000ull, 0x3fe00000ull, 2, P | RW | XD);
	leaf = map64(0x1000, 4, 0x0000004000000000ull, 0x2c0000000ull, 3, P | US);
	CHECK_EQ_U64(xlate(&m, 0x00007f0000001008ull, GWALK_W), 0x5008);
	CHECK_EQ_U64(xlate(&m, 0xffff8000002abcdeull, 0), 0x3feabcdeull);
	CHECK_EQ_U64(xlate(&m, 0x000000403fffffffull, GWALK_U), 0x2ffffffffull);
	/* 1 GiB page: bits 29:13 reserved. */
	put64(leaf, get64(leaf) | (1ull << 29));
	CHECK_EQ_U64(fault(&m, 0x0000004000000000ull, GWALK_U), PFEC_P | PFEC_U | PFEC_RSVD);
	put64(leaf, get64(leaf) & ~(1ull << 29));
	/* Above MAXPHYADDR (46 here): reserved. */
	put64(leaf, get64(leaf) | (1ull << 47));
	CHECK_EQ_U64(fault(&m, 0x0000004000000000ull, 0), PFEC_P | PFEC_RSVD);
	mem.phys_bits = 52;
	CHECK_EQ_U64(xlate(&m, 0x0000004000000000ull, 0), (1ull << 47) | 0x2c0000000ull);
	mem.phys_bits = 46;
	put64(leaf, get64(leaf) & ~(1ull << 47));
	/* PS in a PML4E is reserved. */
	put64(0x1000, get64(0x1000) | PS);
	CHECK_EQ_U64(fault(&m, 0x0000004000000000ull, GWALK_W), PFEC_P | PFEC_W | PFEC_RSVD);
	put64(0x1000, get64(0x1000) & ~PS);
	/* Bits 62:52 are ignored in long mode (not reserved as in PAE). */
	put64(leaf, get64(leaf) | (1ull << 60));
	CHECK_EQ_U64(xlate(&m, 0x0000004000000000ull, 0), 0x2c0000000ull);
	/* Not present at each level. */
	CHECK_EQ_U64(fault(&m, 0x0000008000000000ull, 0), 0);          /* PML4E */
	CHECK_EQ_U64(fault(&m, 0x00007f4000000000ull, GWALK_W), PFEC_W); /* PDPTE */
	CHECK_EQ_U64(fault(&m, 0x00007f0040000000ull, 0), 0);          /* PDE */
	CHECK_EQ_U64(fault(&m, 0x00007f0000002000ull, GWALK_U), PFEC_U); /* PTE */
	/* A non-canonical address is not a #PF. */
	{
		uint64_t gpa;
		uint32_t ec;

		CHECK_EQ_U64(guest_walk(&m, 0x0000800000000000ull, 0, &mem, &gpa, &ec),
			     GWALK_NONCANONICAL);
	}
}

TEST(gwalk_rights)
{
	struct guest_mode m = long4;
	uint64_t sup_ro, user_rw, user_ro;

	reset();
	alloc_table();
	sup_ro = map64(0x1000, 4, 0x1000, 0x11000, 1, P);
	user_rw = map64(0x1000, 4, 0x2000, 0x12000, 1, P | RW | US);
	user_ro = map64(0x1000, 4, 0x3000, 0x13000, 1, P | US | XD);
	(void)sup_ro, (void)user_rw, (void)user_ro;

	/* U/S: user access to a supervisor page. */
	CHECK_EQ_U64(fault(&m, 0x1000, GWALK_U), PFEC_P | PFEC_U);
	CHECK_EQ_U64(fault(&m, 0x1000, GWALK_U | GWALK_F), PFEC_P | PFEC_U | PFEC_I);
	/* R/W: user writes always need it, supervisor writes with CR0.WP. */
	CHECK_EQ_U64(fault(&m, 0x3000, GWALK_U | GWALK_W), PFEC_P | PFEC_W | PFEC_U);
	CHECK_EQ_U64(xlate(&m, 0x2000, GWALK_U | GWALK_W), 0x12000);
	CHECK_EQ_U64(fault(&m, 0x1000, GWALK_W), PFEC_P | PFEC_W);
	m.cr0 &= ~CR0_WP;
	CHECK_EQ_U64(xlate(&m, 0x1000, GWALK_W), 0x11000);
	CHECK_EQ_U64(fault(&m, 0x3000, GWALK_U | GWALK_W), PFEC_P | PFEC_W | PFEC_U);
	m.cr0 |= CR0_WP;
	/* A read-only table above a writable leaf makes the page read-only. */
	{
		uint64_t pdpt = get64(0x1000) & 0xffffffffff000ull;

		put64(pdpt, get64(pdpt) & ~RW);
		CHECK_EQ_U64(fault(&m, 0x2000, GWALK_U | GWALK_W), PFEC_P | PFEC_W | PFEC_U);
		put64(pdpt, get64(pdpt) | RW);
	}
	/* NX: fetches from XD pages, user or supervisor. */
	CHECK_EQ_U64(fault(&m, 0x3000, GWALK_U | GWALK_F), PFEC_P | PFEC_U | PFEC_I);
	CHECK_EQ_U64(xlate(&m, 0x2000, GWALK_U | GWALK_F), 0x12000);
	CHECK_EQ_U64(xlate(&m, 0x2000, GWALK_F), 0x12000); /* SMEP off */
	/* XD in a table entry covers every page under it. */
	{
		uint64_t pml4e = get64(0x1000);

		put64(0x1000, pml4e | XD);
		CHECK_EQ_U64(fault(&m, 0x2000, GWALK_F), PFEC_P | PFEC_I);
		put64(0x1000, pml4e);
	}
	/* SMEP: supervisor fetches from user pages. */
	m.cr4 |= CR4_SMEP;
	CHECK_EQ_U64(fault(&m, 0x2000, GWALK_F), PFEC_P | PFEC_I);
	CHECK_EQ_U64(xlate(&m, 0x2000, GWALK_U | GWALK_F), 0x12000);
	CHECK_EQ_U64(xlate(&m, 0x2000, 0), 0x12000); /* data: SMAP is off */
	/* SMAP: supervisor data accesses to user pages, unless RFLAGS.AC. */
	m.cr4 |= CR4_SMAP;
	CHECK_EQ_U64(fault(&m, 0x2000, 0), PFEC_P);
	CHECK_EQ_U64(fault(&m, 0x2000, GWALK_W), PFEC_P | PFEC_W);
	CHECK_EQ_U64(xlate(&m, 0x2000, GWALK_AC | GWALK_W), 0x12000);
	CHECK_EQ_U64(xlate(&m, 0x2000, GWALK_U | GWALK_W), 0x12000);
	CHECK_EQ_U64(xlate(&m, 0x1000, 0), 0x11000);
	/* Without NXE or SMEP, a fetch fault does not set I/D. */
	m.cr4 &= ~(CR4_SMEP | CR4_SMAP);
	m.efer &= ~EFER_NXE;
	CHECK_EQ_U64(fault(&m, 0x4000, GWALK_F), 0);
	CHECK_EQ_U64(fault(&m, 0x1000, GWALK_F | GWALK_U), PFEC_P | PFEC_U);
}

TEST(gwalk_la57)
{
	struct guest_mode m = long4;
	uint64_t va = 0x0012345678901000ull; /* PML5 index 0x12 */
	uint64_t pml5e = 0x1000 + 0x12 * 8;

	reset();
	alloc_table();
	m.cr4 |= CR4_LA57;
	map64(0x1000, 5, va, 0x77000, 1, P | RW);
	map64(0x1000, 5, 0xff00000000200000ull, 0x600000, 2, P);
	CHECK_EQ_U64(xlate(&m, va + 0x10, GWALK_W), 0x77010);
	CHECK_EQ_U64(xlate(&m, 0xff000000002abcdeull, 0), 0x6abcde);
	/* Canonical at 57 bits, not at 48. */
	{
		uint64_t gpa;
		uint32_t ec;

		CHECK_EQ_U64(guest_walk(&m, 0x0100000000000000ull, 0, &mem, &gpa, &ec),
			     GWALK_NONCANONICAL);
		m.cr4 &= ~CR4_LA57;
		CHECK_EQ_U64(guest_walk(&m, va, 0, &mem, &gpa, &ec), GWALK_NONCANONICAL);
		m.cr4 |= CR4_LA57;
	}
	/* PS in a PML5E is reserved. */
	put64(pml5e, get64(pml5e) | PS);
	CHECK_EQ_U64(fault(&m, va, 0), PFEC_P | PFEC_RSVD);
	put64(pml5e, get64(pml5e) & ~PS);
	CHECK_EQ_U64(xlate(&m, va, 0), 0x77000);
	CHECK_EQ_U64(fault(&m, 0x0000000000001000ull, GWALK_W), PFEC_W);
}

TEST(gwalk_bad_gpa)
{
	struct guest_mode m = long4;
	uint64_t gpa = 0;
	uint32_t ec = 0;

	reset();
	alloc_table();
	map64(0x1000, 4, 0x1000, 0x5000, 1, P | RW);
	/* The PDPT lies outside guest RAM. */
	put64(0x1000, 0x40000000ull | P | RW);
	CHECK_EQ_U64(guest_walk(&m, 0x1000, 0, &mem, &gpa, &ec), GWALK_BAD_GPA);
	CHECK_EQ_U64(gpa, 0x40000000ull);
	/* The root itself. */
	m.cr3 = 0x7fff0000ull;
	CHECK_EQ_U64(guest_walk(&m, 0x1000, 0, &mem, &gpa, &ec), GWALK_BAD_GPA);
	CHECK_EQ_U64(gpa, 0x7fff0000ull);
	/* 32-bit paging too. */
	m = (struct guest_mode){ .cr0 = CR0_PE | CR0_PG, .cr3 = 0x80000000u };
	CHECK_EQ_U64(guest_walk(&m, 0x1000, 0, &mem, &gpa, &ec), GWALK_BAD_GPA);
}

TEST(gwalk_fetch_across_pages)
{
	struct guest_mode m = long4;
	uint8_t buf[15];
	enum gwalk_status st;
	uint32_t ec = 0;
	size_t n;

	reset();
	alloc_table();
	/* Code at 0x400ffa..: the two pages are not contiguous in RAM. */
	map64(0x1000, 4, 0x400000, 0x20000, 1, P | RW);
	map64(0x1000, 4, 0x401000, 0x10000, 1, P | RW);
	for (unsigned i = 0; i < 6; i++)
		ram[0x20ffa + i] = (uint8_t)(0xa0 + i);
	for (unsigned i = 0; i < 9; i++)
		ram[0x10000 + i] = (uint8_t)(0xb0 + i);
	n = guest_fetch(&m, 0x400ffa, buf, sizeof(buf), &mem, &st, &ec);
	CHECK_EQ_U64(n, 15);
	CHECK_EQ_U64(st, GWALK_OK);
	CHECK_EQ_U64(buf[0], 0xa0);
	CHECK_EQ_U64(buf[5], 0xa5);
	CHECK_EQ_U64(buf[6], 0xb0);
	CHECK_EQ_U64(buf[14], 0xb8);

	/* The second page not present: the first page's bytes, and the #PF
	 * the guest gets should the decoder need more (user fetch, NX on). */
	map64(0x1000, 4, 0x500000, 0x20000, 1, P | RW | US);
	m.cpl = 3;
	n = guest_fetch(&m, 0x500ffa, buf, sizeof(buf), &mem, &st, &ec);
	CHECK_EQ_U64(n, 6);
	CHECK_EQ_U64(st, GWALK_FAULT);
	CHECK_EQ_U64(ec, PFEC_U | PFEC_I);
	CHECK_EQ_U64(buf[5], 0xa5);

	/* The first page faults (a supervisor page at CPL 3): nothing. */
	n = guest_fetch(&m, 0x400ffa, buf, sizeof(buf), &mem, &st, &ec);
	CHECK_EQ_U64(n, 0);
	CHECK_EQ_U64(st, GWALK_FAULT);
	CHECK_EQ_U64(ec, PFEC_P | PFEC_U | PFEC_I);

	/* Bytes outside RAM (MMIO): GWALK_BAD_GPA. */
	m.cpl = 0;
	map64(0x1000, 4, 0x600000, 0xfee00000ull, 1, P | RW);
	n = guest_fetch(&m, 0x600000, buf, 4, &mem, &st, &ec);
	CHECK_EQ_U64(n, 0);
	CHECK_EQ_U64(st, GWALK_BAD_GPA);
}

TEST(gwalk_fetch_wraps_32bit)
{
	/* Paging off, 32-bit: the fetch wraps from 0xffffffff to 0. */
	struct guest_mode m = { .cr0 = CR0_PE, .code_bits = 32 };
	uint8_t buf[4];
	enum gwalk_status st;
	uint32_t ec;
	struct gwalk_mem small = mem;

	reset();
	ram[0] = 0x11;
	ram[1] = 0x22;
	/* 0xfffffffe.. is not RAM here: nothing copied. */
	CHECK_EQ_U64(guest_fetch(&m, 0xfffffffe, buf, 4, &small, &st, &ec), 0);
	CHECK_EQ_U64(st, GWALK_BAD_GPA);
	/* From 0x1_0000_0000 (wrapped to 0). */
	CHECK_EQ_U64(guest_fetch(&m, 0x100000000ull, buf, 2, &small, &st, &ec), 2);
	CHECK_EQ_U64(buf[1], 0x22);
}
