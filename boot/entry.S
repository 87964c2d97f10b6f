/* Multiboot2 header and the 32-bit entry: GRUB (BIOS or UEFI, after it exited
 * boot services) jumps here in protected mode with paging off, EAX holding the
 * multiboot2 magic and EBX the boot information. We identity-map the first
 * 4 GiB with 2 MiB pages, enter long mode and call kmain(magic, info);
 * boot/paging.c then replaces these tables with the final ones. */

#include "arch/x86/msr.h"

#define MB2_HEADER_MAGIC 0xe85250d6
#define MB2_ARCH_I386 0
#define CR0_PE (1 << 0)
#define CR0_WP (1 << 16)
#define CR0_PG (1 << 31)
#define CR4_PAE (1 << 5)
#define PTE_P 0x1
#define PTE_RW 0x2
#define PTE_PS 0x80

	.section .multiboot, "a"
	.balign 8
mb2_header:
	.long MB2_HEADER_MAGIC
	.long MB2_ARCH_I386
	.long mb2_header_end - mb2_header
	.long -(MB2_HEADER_MAGIC + MB2_ARCH_I386 + (mb2_header_end - mb2_header))
	/* No framebuffer tag: with one, GRUB under BIOS sets a VBE graphics
	 * mode (whatever the tag's optional flag; it crashed doing so under
	 * Bochs' BIOS), and without one it keeps VGA text, which the console
	 * mirrors to. Under UEFI, which has no VGA text, GRUB sets the GOP
	 * mode and hands the framebuffer over either way. */
	/* end tag */
	.short 0
	.short 0
	.long 8
mb2_header_end:

	.section .boot.text, "ax"
	.code32
	.globl _start
_start:
	cli
	cld
	mov %eax, %esi			/* keep magic and info across the set-up */
	mov %ebx, %ebp

	/* Zero .bss (boot page tables and stacks live there). */
	mov $__bss_start, %edi
	mov $__bss_end, %ecx
	sub %edi, %ecx
	xor %eax, %eax
	rep stosb

	mov $boot_stack_top, %esp

	/* Long mode is required; without it, say so on COM1 and stop. */
	mov $0x80000000, %eax
	cpuid
	cmp $0x80000001, %eax
	jb no_long_mode
	mov $0x80000001, %eax
	cpuid
	test $(1 << 29), %edx
	jz no_long_mode
	mov %edx, %ebx			/* EDX bit 20: NX available */

	/* PML4[0] -> PDPT; PDPT[0..3] -> four page directories of 2 MiB pages. */
	mov $boot_pdpt, %eax
	or $(PTE_P | PTE_RW), %eax
	mov %eax, boot_pml4
	mov $boot_pd, %edi
	mov $0, %ecx
1:	mov %ecx, %eax
	shl $21, %eax
	or $(PTE_P | PTE_RW | PTE_PS), %eax
	mov %eax, (%edi, %ecx, 8)
	mov %ecx, %eax
	shr $11, %eax			/* high dword: bits 32+ of ecx << 21 */
	mov %eax, 4(%edi, %ecx, 8)
	inc %ecx
	cmp $2048, %ecx
	jne 1b
	mov $0, %ecx
2:	mov %ecx, %eax
	shl $12, %eax
	add $boot_pd, %eax
	or $(PTE_P | PTE_RW), %eax
	mov %eax, boot_pdpt(, %ecx, 8)
	inc %ecx
	cmp $4, %ecx
	jne 2b

	mov %cr4, %eax
	or $CR4_PAE, %eax
	mov %eax, %cr4
	mov $boot_pml4, %eax
	mov %eax, %cr3
	mov $MSR_EFER, %ecx
	rdmsr
	or $EFER_LME, %eax
	test $(1 << 20), %ebx
	jz 3f
	or $EFER_NXE, %eax
3:	wrmsr
	mov %cr0, %eax
	or $(CR0_PE | CR0_PG | CR0_WP), %eax
	mov %eax, %cr0

	lgdt boot_gdt_ptr
	ljmp $0x08, $long_mode_entry

no_long_mode:
	mov $msg_no_long_mode, %ebx
4:	movb (%ebx), %al
	test %al, %al
	jz 6f
	mov $0x3fd, %dx			/* wait for the transmitter */
5:	inb %dx, %al
	test $0x20, %al
	jz 5b
	movb (%ebx), %al
	mov $0x3f8, %dx
	outb %al, %dx
	inc %ebx
	jmp 4b
6:	hlt
	jmp 6b

	.code64
long_mode_entry:
	mov $0x10, %ax
	mov %ax, %ds
	mov %ax, %es
	mov %ax, %ss
	xor %ax, %ax
	mov %ax, %fs
	mov %ax, %gs
	mov $boot_stack_top, %rsp
	mov %esi, %edi			/* kmain(magic, info) */
	mov %ebp, %esi
	xor %ebp, %ebp			/* end of the frame-pointer chain */
	call kmain
7:	cli
	hlt
	jmp 7b

	.section .rodata
msg_no_long_mode:
	.asciz "sprig: this CPU has no long mode (x86-64); stopping.\r\n"
	.balign 8
boot_gdt:
	.quad 0
	.quad 0x00af9a000000ffff	/* 0x08: 64-bit code */
	.quad 0x00cf92000000ffff	/* 0x10: data */
boot_gdt_end:
boot_gdt_ptr:
	.short boot_gdt_end - boot_gdt - 1
	.long boot_gdt

	.section .bss
	.balign 4096
	.globl boot_pml4
boot_pml4:	.skip 4096
boot_pdpt:	.skip 4096
boot_pd:	.skip 4 * 4096
	.globl boot_stack_top
boot_stack:	.skip 32768
boot_stack_top:
