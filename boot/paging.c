/* The final host page tables, built from the memory map before the frame
 * allocator exists, so their pages come from a static pool.
 *
 * Only what the memory map calls RAM (usable, ACPI, NVS, bad) is mapped
 * write-back; everything else (device memory, the PCI hole, the local APIC,
 * ranges the map leaves out or calls reserved) is mapped uncached through
 * PAT entry 3 (PCD and PWT), UC at reset and kept so on every CPU
 * (arch/x86/percpu.c). The firmware's MTRRs usually say UC there too, but
 * nothing guarantees they cover every device a lab machine has, and a WB
 * mapping of device memory lets the CPU read it speculatively. A huge page
 * is used only where its whole range is of one kind. */
#include "boot/paging.h"
#include "arch/x86/cpu.h"
#include "boot/multiboot2.h"
#include "lib/print.h"
#include "lib/string.h"

#define PTE_P (1ull << 0)
#define PTE_RW (1ull << 1)
#define PTE_PWT (1ull << 3)
#define PTE_PCD (1ull << 4)
#define PTE_UC (PTE_PCD | PTE_PWT) /* PAT entry 3 */
#define PTE_PS (1ull << 7)
#define PTE_NX (1ull << 63)
#define SIZE_2M (1ull << 21)
#define SIZE_1G (1ull << 30)
/* 64 pages: with 1 GiB pages up to 512 GiB; with only 2 MiB pages, ~60 GiB. */
#define POOL_PAGES 64

static uint64_t pool[POOL_PAGES][512] __attribute__((aligned(4096)));
static unsigned pool_used;
static uint64_t nx_bit;

enum range_kind { RANGE_RAM, RANGE_DEVICE, RANGE_MIXED };

static bool is_ram(const struct boot_mmap_entry *e)
{
	return e->type != MEM_RESERVED;
}

/* The entries may overlap and come in any order: follow RAM entries from
 * start while one covers the cursor, and look for any RAM at all. */
static enum range_kind range_kind(const struct boot_info *bi, uint64_t start, uint64_t end)
{
	uint64_t cursor = start;
	bool any = false, moved = true;

	while (cursor < end && moved) {
		moved = false;
		for (size_t i = 0; i < bi->n_mmap; i++) {
			const struct boot_mmap_entry *e = &bi->mmap[i];
			if (is_ram(e) && e->start <= cursor && e->start + e->len > cursor) {
				cursor = e->start + e->len;
				moved = true;
			}
		}
	}
	if (cursor >= end)
		return RANGE_RAM;
	for (size_t i = 0; i < bi->n_mmap && !any; i++)
		any = is_ram(&bi->mmap[i]) && bi->mmap[i].start < end &&
		      bi->mmap[i].start + bi->mmap[i].len > start;
	return any ? RANGE_MIXED : RANGE_DEVICE;
}

/* The kind of [pa, pa + size): the local APIC's page is device memory
 * whatever the memory map says. */
static enum range_kind kind_of(const struct boot_info *bi, uint64_t pa, uint64_t size,
			       uint64_t apic_page)
{
	enum range_kind k = range_kind(bi, pa, pa + size);

	if (apic_page >= pa && apic_page < pa + size)
		return size == 4096 ? RANGE_DEVICE : RANGE_MIXED;
	return k;
}

static uint64_t *table_alloc(void)
{
	if (pool_used == POOL_PAGES)
		return NULL;
	return pool[pool_used++];
}

/* Walk from the root to the table at `level` (1 = PT, 2 = PD, 3 = PDPT) that
 * maps va, creating tables on the way. */
static uint64_t *table_for(uint64_t *pml4, uint64_t va, int level)
{
	uint64_t *t = pml4;
	for (int l = 4; l > level; l--) {
		uint64_t *e = &t[(va >> (12 + 9 * (l - 1))) & 511];
		if (!(*e & PTE_P)) {
			uint64_t *next = table_alloc();
			if (!next)
				return NULL;
			*e = (uint64_t)next | PTE_P | PTE_RW;
		}
		t = (uint64_t *)(*e & 0x000ffffffffff000ull);
	}
	return t;
}

static bool in_image(uint64_t start, uint64_t end)
{
	return start < (uint64_t)__image_end && end > (uint64_t)__image_start;
}

/* The image at 4 KiB: text RX, rodata R, data and bss RW; all but text NX. */
static uint64_t image_page_flags(uint64_t pa)
{
	if (pa >= (uint64_t)__text_start && pa < (uint64_t)__text_end)
		return PTE_P;
	if (pa >= (uint64_t)__rodata_start && pa < (uint64_t)__rodata_end)
		return PTE_P | nx_bit;
	return PTE_P | PTE_RW | nx_bit;
}

uint64_t paging_mapped_top;

uint64_t paging_init(const struct boot_info *bi)
{
	bool has_1g = cpuid(0x80000001, 0).edx & (1u << 26);
	uint64_t top = 4 * SIZE_1G;
	uint64_t apic_page = rdmsr(MSR_APIC_BASE) & 0x000ffffffffff000ull;
	uint64_t uncached = 0;
	nx_bit = (rdmsr(MSR_EFER) & EFER_NXE) ? PTE_NX : 0;

	for (size_t i = 0; i < bi->n_mmap; i++)
		if (bi->mmap[i].start + bi->mmap[i].len > top)
			top = bi->mmap[i].start + bi->mmap[i].len;
	top = (top + SIZE_1G - 1) & ~(SIZE_1G - 1);
	if (top > 512 * SIZE_1G)
		top = 512 * SIZE_1G;

	uint64_t *pml4 = table_alloc();
	uint64_t pa = 0;
	while (pa < top) {
		uint64_t *t;
		enum range_kind k;
		if (has_1g && !(pa & (SIZE_1G - 1)) && !in_image(pa, pa + SIZE_1G) &&
		    (k = kind_of(bi, pa, SIZE_1G, apic_page)) != RANGE_MIXED) {
			if (!(t = table_for(pml4, pa, 3)))
				break;
			t[(pa >> 30) & 511] = pa | PTE_P | PTE_RW | PTE_PS | nx_bit |
					      (k == RANGE_DEVICE ? PTE_UC : 0);
			uncached += k == RANGE_DEVICE ? SIZE_1G : 0;
			pa += SIZE_1G;
		} else if (!(pa & (SIZE_2M - 1)) && !in_image(pa, pa + SIZE_2M) &&
			   (k = kind_of(bi, pa, SIZE_2M, apic_page)) != RANGE_MIXED) {
			if (!(t = table_for(pml4, pa, 2)))
				break;
			t[(pa >> 21) & 511] = pa | PTE_P | PTE_RW | PTE_PS | nx_bit |
					      (k == RANGE_DEVICE ? PTE_UC : 0);
			uncached += k == RANGE_DEVICE ? SIZE_2M : 0;
			pa += SIZE_2M;
		} else {
			if (!(t = table_for(pml4, pa, 1)))
				break;
			if (in_image(pa, pa + 4096)) {
				t[(pa >> 12) & 511] = pa | image_page_flags(pa);
			} else {
				k = kind_of(bi, pa, 4096, apic_page);
				uncached += k != RANGE_RAM ? 4096 : 0;
				t[(pa >> 12) & 511] = pa | PTE_P | PTE_RW | nx_bit |
						      (k != RANGE_RAM ? PTE_UC : 0);
			}
			pa += 4096;
		}
	}
	if (pa < top) {
		kprintf("paging: table pool exhausted; memory above %llu MiB is not mapped\n",
			(unsigned long long)(pa >> 20));
		top = pa & ~(SIZE_2M - 1);
	}
	kprintf("paging: %u table pages, %llu KiB of device memory mapped uncached\n", pool_used,
		(unsigned long long)(uncached >> 10));
	write_cr3((uint64_t)pml4);
	paging_mapped_top = top;
	return top;
}
