/* The AP trampoline (arch/x86/trampoline.h). The part from trampoline_start to
 * trampoline_end is data to the kernel: the BSP copies it to a page below
 * 1 MiB, where the AP runs it from the STARTUP IPI in real mode:
 *
 * real mode -> protected mode (the trampoline's own GDT, CR0 written whole:
 * INIT leaves CD and NW set) -> long mode through the boot page tables of
 * boot/entry.S (the first 4 GiB identity-mapped and executable, since the
 * kernel's own tables map this low page no-execute) -> ap_long_mode in the
 * kernel's text, which loads the kernel's CR3 and stack and calls ap_main.
 *
 * EBX holds the page's address throughout: the parameters are read from it. */

#include "arch/x86/msr.h"
#include "arch/x86/trampoline.h"

#define CR0_PE (1 << 0)
#define CR4_PAE (1 << 5)

	.section .rodata
	.balign 16
	.globl trampoline_start, trampoline_pm32, trampoline_end
	.code16
trampoline_start:
	jmp real_mode
	.org trampoline_start + TRAMPOLINE_PARAMS
	.skip TRAMPOLINE_PARAMS_END - TRAMPOLINE_PARAMS
	.org trampoline_start + TRAMPOLINE_GDT
	.quad 0
	.quad 0x00cf9a000000ffff	/* 0x08: 32-bit code */
	.quad 0x00cf92000000ffff	/* 0x10: data */
	.quad 0x00af9a000000ffff	/* 0x18: 64-bit code */

real_mode:
	cli
	cld
	mov %cs, %ax
	mov %ax, %ds
	xor %ebx, %ebx
	mov %ax, %bx
	shl $4, %ebx
	lgdtl TP_GDTR
	mov $CR0_PE, %eax
	mov %eax, %cr0
	ljmpl *TP_PM32

	.code32
trampoline_pm32:
	mov $TRAMPOLINE_SEL_DATA, %ax
	mov %ax, %ds
	mov %ax, %es
	mov %ax, %ss
	mov $CR4_PAE, %eax
	mov %eax, %cr4
	mov $boot_pml4, %eax
	mov %eax, %cr3
	mov $MSR_EFER, %ecx
	rdmsr
	or TP_EFER(%ebx), %eax
	wrmsr
	mov TP_CR0(%ebx), %eax		/* paging on: long mode, still in this page */
	mov %eax, %cr0
	ljmp $TRAMPOLINE_SEL_CODE64, $ap_long_mode
trampoline_end:

	.text
	.code64
ap_long_mode:
	mov %ebx, %ebx			/* the upper halves are undefined after 32-bit code */
	mov TP_CR3(%rbx), %rax
	mov %rax, %cr3
	mov TP_STACK(%rbx), %rsp
	mov TP_PERCPU(%rbx), %rdi
	xor %ebp, %ebp			/* end of the frame-pointer chain */
	call ap_main
1:	cli
	hlt
	jmp 1b
