/* Multiboot (version 1) header and 32-bit entry of every test guest.
 * The loader (QEMU's -kernel, or sprig's guest loader) enters _start in
 * protected mode with paging off, EAX = 0x2BADB002 and EBX = the multiboot
 * information. We identity-map the first 4 GiB with 2 MiB pages (executable:
 * EFER.NXE stays clear), enable SSE, enter long mode and call rt_start(info).
 *
 * Built twice: plain, the header asks for the ELF program headers to be used
 * (the image is converted to ELF32, which QEMU requires); with
 * RT_AOUT_KLUDGE, the header carries the load addresses itself (flag 16) and
 * the image stays ELF64, so a loader must honour the flag to load it. */

#include "arch/x86/msr.h"

#define MB1_HEADER_MAGIC 0x1badb002
#define MB1_BOOT_MAGIC 0x2badb002
#define MB1_PAGE_ALIGN (1 << 0)
#define MB1_MEMORY_INFO (1 << 1)
#define MB1_AOUT_KLUDGE (1 << 16)
#ifdef RT_AOUT_KLUDGE
#define MB1_FLAGS (MB1_PAGE_ALIGN | MB1_MEMORY_INFO | MB1_AOUT_KLUDGE)
#else
#define MB1_FLAGS (MB1_PAGE_ALIGN | MB1_MEMORY_INFO)
#endif

#define CR0_PE (1 << 0)
#define CR0_MP (1 << 1)
#define CR0_EM (1 << 2)
#define CR0_NE (1 << 5)
#define CR0_NW (1 << 29)
#define CR0_CD (1 << 30)
#define CR0_PG (1 << 31)
#define CR4_PAE (1 << 5)
#define CR4_OSFXSR (1 << 9)
#define CR4_OSXMMEXCPT (1 << 10)
#define CPUID_EXT_LM (1 << 29)
#define PTE_P 0x1
#define PTE_RW 0x2
#define PTE_PS 0x80
#define DEBUG_EXIT_PORT 0xf4
#define RT_EXIT_BAD_BOOT 0x7f		/* also in rt.h */

	.section .multiboot, "a"
	.balign 4
mb1_header:
	.long MB1_HEADER_MAGIC
	.long MB1_FLAGS
	.long -(MB1_HEADER_MAGIC + MB1_FLAGS)
#ifdef RT_AOUT_KLUDGE
	.long mb1_header		/* header_addr */
	.long image_start		/* load_addr */
	.long image_load_end		/* load_end_addr */
	.long image_end			/* bss_end_addr */
	.long _start			/* entry_addr */
#endif

	.text
	.code32
	.globl _start
_start:
	cli
	cld
	cmp $MB1_BOOT_MAGIC, %eax
	jne bad_boot
	mov %ebx, %ebp			/* the info pointer, kept until rt_start */

	/* Zero .bss first: the page tables and the stack live there. */
	mov $image_load_end, %edi
	mov $image_end, %ecx
	sub %edi, %ecx
	xor %eax, %eax
	rep stosb
	mov $rt_stack_top, %esp

	mov $0x80000000, %eax
	cpuid
	cmp $0x80000001, %eax
	jb bad_boot
	mov $0x80000001, %eax
	cpuid
	test $CPUID_EXT_LM, %edx
	jz bad_boot

	/* PML4[0] -> PDPT; PDPT[0..3] -> four directories of 2 MiB pages. */
	mov $rt_pdpt + (PTE_P | PTE_RW), %eax
	mov %eax, rt_pml4
	xor %ecx, %ecx
1:	mov %ecx, %eax
	shl $12, %eax
	add $rt_pd + (PTE_P | PTE_RW), %eax
	mov %eax, rt_pdpt(, %ecx, 8)
	inc %ecx
	cmp $4, %ecx
	jne 1b
	xor %ecx, %ecx
2:	mov %ecx, %eax
	shl $21, %eax
	or $(PTE_P | PTE_RW | PTE_PS), %eax
	mov %eax, rt_pd(, %ecx, 8)
	mov %ecx, %eax
	shr $11, %eax			/* bits 32 and up of the page address */
	mov %eax, rt_pd + 4(, %ecx, 8)
	inc %ecx
	cmp $2048, %ecx
	jne 2b

	mov $rt_pml4, %eax
	mov $bsp_long_mode, %esi
	jmp rt_long_mode

/* Every CPU's way into long mode, from protected mode with paging off (the
 * APs come from ap_boot.S): the page tables at EAX, the runtime's GDT, then
 * 64-bit code at ESI with the data segments loaded. */
	.globl rt_long_mode
rt_long_mode:
	mov %eax, %edx
	mov %cr4, %eax
	or $(CR4_PAE | CR4_OSFXSR | CR4_OSXMMEXCPT), %eax
	mov %eax, %cr4
	mov %edx, %cr3
	mov $MSR_EFER, %ecx
	rdmsr
	or $EFER_LME, %eax
	wrmsr
	/* CR0.MP and NE with EM clear: compiler-generated SSE and x87 code runs
	 * natively, and their exceptions are reported as exceptions. INIT
	 * leaves an AP with its caches off (CD, NW). */
	mov %cr0, %eax
	and $~(CR0_EM | CR0_NW | CR0_CD), %eax
	or $(CR0_PE | CR0_MP | CR0_NE | CR0_PG), %eax
	mov %eax, %cr0

	lgdt rt_gdt_ptr
	ljmp $0x08, $long_mode

	/* Not loaded by a multiboot loader, or no long mode: nothing to print
	 * with, so leave through the exit port (sprig emulates it too). */
bad_boot:
	mov $RT_EXIT_BAD_BOOT, %al
	out %al, $DEBUG_EXIT_PORT
3:	hlt
	jmp 3b

	.code64
long_mode:
	mov $0x10, %ax
	mov %ax, %ds
	mov %ax, %es
	mov %ax, %ss
	xor %ax, %ax
	mov %ax, %fs
	mov %ax, %gs
	mov %esi, %esi
	jmp *%rsi

bsp_long_mode:
	mov $rt_stack_top, %rsp
	mov %ebp, %edi
	xor %ebp, %ebp			/* end of the frame-pointer chain */
	call rt_start
4:	cli
	hlt
	jmp 4b

	.section .rodata
	.balign 8
rt_gdt:
	.quad 0
	.quad 0x00af9a000000ffff	/* 0x08: 64-bit code */
	.quad 0x00cf92000000ffff	/* 0x10: data */
	.quad 0x00cf9a000000ffff	/* 0x18: 32-bit code, for the APs' way up */
rt_gdt_end:
rt_gdt_ptr:
	.short rt_gdt_end - rt_gdt - 1
	.long rt_gdt

	.section .bss
	.balign 4096
rt_pml4:	.skip 4096
rt_pdpt:	.skip 4096
rt_pd:		.skip 4 * 4096
rt_stack:	.skip 16384
rt_stack_top:
