/* The final host page tables, built from the memory map before the frame
 * allocator exists, so their pages come from a static pool.
 *
 * Memory-mapped I/O below 4 GiB (local APIC, PCI holes) is mapped write-back
 * here like RAM; the firmware's MTRRs mark those ranges uncacheable and an
 * MTRR UC type wins over a PAT WB one (SDM vol. 3A, 12.5.2.2), so the
 * effective type is UC. */
#include "boot/paging.h"
#include "arch/x86/cpu.h"
#include "boot/multiboot2.h"
#include "lib/print.h"
#include "lib/string.h"

#define PTE_P (1ull << 0)
#define PTE_RW (1ull << 1)
#define PTE_PS (1ull << 7)
#define PTE_NX (1ull << 63)
#define SIZE_2M (1ull << 21)
#define SIZE_1G (1ull << 30)
/* 64 pages: with 1 GiB pages up to 512 GiB; with only 2 MiB pages, ~60 GiB. */
#define POOL_PAGES 64

static uint64_t pool[POOL_PAGES][512] __attribute__((aligned(4096)));
static unsigned pool_used;
static uint64_t nx_bit;

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

uint64_t paging_init(const struct boot_info *bi)
{
	bool has_1g = cpuid(0x80000001, 0).edx & (1u << 26);
	uint64_t top = 4 * SIZE_1G;
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
		if (has_1g && !(pa & (SIZE_1G - 1)) && !in_image(pa, pa + SIZE_1G)) {
			if (!(t = table_for(pml4, pa, 3)))
				break;
			t[(pa >> 30) & 511] = pa | PTE_P | PTE_RW | PTE_PS | nx_bit;
			pa += SIZE_1G;
		} else if (!(pa & (SIZE_2M - 1)) && !in_image(pa, pa + SIZE_2M)) {
			if (!(t = table_for(pml4, pa, 2)))
				break;
			t[(pa >> 21) & 511] = pa | PTE_P | PTE_RW | PTE_PS | nx_bit;
			pa += SIZE_2M;
		} else {
			if (!(t = table_for(pml4, pa, 1)))
				break;
			t[(pa >> 12) & 511] = pa | image_page_flags(pa);
			pa += 4096;
		}
	}
	if (pa < top) {
		kprintf("paging: table pool exhausted; memory above %llu MiB is not mapped\n",
			(unsigned long long)(pa >> 20));
		top = pa & ~(SIZE_2M - 1);
	}
	write_cr3((uint64_t)pml4);
	return top;
}
