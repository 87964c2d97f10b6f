/* The APs' way up (smp.c): real mode -> protected mode -> long mode.
 * smp_start() copies ap_trampoline .. ap_trampoline_end to a page below
 * 1 MiB, stores its own GDTR (the runtime's GDT, entry.S) at ap_gdtr in the
 * copy, and sends the SIPI with that page's number: the AP starts at
 * CS:IP = page:0 in real mode, loads that GDT (through DS = CS) and jumps to
 * ap_protected, in the image, linked below 4 GiB. From there it takes the
 * BSP's way (rt_long_mode) into long mode on the page tables at ap_boot_cr3
 * (the BSP's) and takes its CPU index from ap_boot_slot, leaving 0 there: an
 * AP that finds 0 was not asked for (or was given up on) and halts. Index
 * i > 0 has the stack below ap_stacks + i * SMP_AP_STACK; smp_ap_entry(i)
 * does the rest. */
#include "guests/rt/smp.h"

#define CR0_PE (1 << 0)
#define SEL_DATA 0x10
#define SEL_CODE32 0x18

	.text
	.code16
	.globl ap_trampoline, ap_trampoline_end, ap_gdtr
ap_trampoline:
	cli
	cld
	mov %cs, %ax
	mov %ax, %ds
	lgdtl ap_gdtr - ap_trampoline
	mov %cr0, %eax
	or $CR0_PE, %eax
	mov %eax, %cr0
	ljmpl $SEL_CODE32, $ap_protected
	.balign 16
ap_gdtr:	.skip 10		/* as SGDT stores it in 64-bit mode */
ap_trampoline_end:

	.code32
ap_protected:
	mov $SEL_DATA, %ax
	mov %ax, %ds
	mov ap_boot_cr3, %eax
	mov $ap_long_mode, %esi
	jmp rt_long_mode

	.code64
ap_long_mode:
	xor %eax, %eax
	xchg %eax, ap_boot_slot(%rip)
	test %eax, %eax
	jz ap_park
	mov %eax, %edi
	imul $SMP_AP_STACK, %rax, %rax
	lea ap_stacks(%rip), %rsp
	add %rax, %rsp
	xor %ebp, %ebp			/* end of the frame-pointer chain */
	call smp_ap_entry
ap_park:
	cli
	hlt
	jmp ap_park

	.section .bss
	.balign 4096
ap_stacks:	.skip (SMP_CPU_MAX - 1) * SMP_AP_STACK

	.section .note.GNU-stack, "", @progbits
