#include "arch/x86/gdt.h"
#include "arch/x86/percpu.h"
#include "lib/string.h"

struct descriptor_ptr {
	uint16_t limit;
	uint64_t base;
} __attribute__((packed));

void gdt_init(void)
{
	struct percpu *pc = this_cpu();
	struct tss *tss = &pc->tss;
	uint64_t *gdt = pc->gdt;
	uint64_t base = (uint64_t)tss;
	uint64_t limit = sizeof(*tss) - 1;

	memset(tss, 0, sizeof(*tss));
	for (int i = 0; i < IST_STACKS; i++)
		tss->ist[i] = (uint64_t)&pc->ist_stacks[i][IST_STACK_SIZE];
	tss->iomap_base = sizeof(*tss); /* no I/O permission bitmap */

	gdt[0] = 0;
	gdt[1] = 0x00af9a000000ffffull; /* 64-bit code, DPL 0 */
	gdt[2] = 0x00cf92000000ffffull; /* data */
	/* 16-byte available 64-bit TSS descriptor (type 9, present). */
	gdt[3] = (limit & 0xffff) | ((base & 0xffffff) << 16) | (0x89ull << 40) |
		 (((limit >> 16) & 0xf) << 48) | (((base >> 24) & 0xff) << 56);
	gdt[4] = base >> 32;

	struct descriptor_ptr ptr = { sizeof(pc->gdt) - 1, (uint64_t)gdt };
	__asm__ volatile("lgdt %0\n\t"
			 "mov %1, %%ds\n\t"
			 "mov %1, %%es\n\t"
			 "mov %1, %%ss\n\t"
			 "pushq %2\n\t"
			 "leaq 1f(%%rip), %%rax\n\t"
			 "pushq %%rax\n\t"
			 "lretq\n"
			 "1:\n\t"
			 "ltr %w3"
			 :
			 : "m"(ptr), "r"((uint64_t)SEL_KDATA), "i"(SEL_KCODE), "r"(SEL_TSS)
			 : "rax", "memory");
}
