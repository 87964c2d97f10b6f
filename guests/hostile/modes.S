/* The hostile guest's trip through the processor modes and back:
 *   long mode -> compatibility mode -> protected mode, paging off (EFER.LME
 *   cleared) -> 32-bit paging (4 MiB pages, when trip_pd32 is set) and off
 *   -> PAE paging and off -> 16-bit protected mode -> real mode ->
 *   protected mode -> long mode again (LME set, paging on).
 * With paging on in the 32-bit and PAE modes it writes CR0 (WP, toggled
 * trip_cr0_writes times), CR3 (reloaded) and CR4 (PGE toggled, when
 * trip_pge is CR4.PGE) and bumps trip_paged: the paging modes a VMM must
 * follow between long and real mode (PAE's PDPTEs come from memory at every
 * such write). The tables are trip_pd32 and trip_pdpt (hostile/trip.c).
 * In real mode it writes all ones to IA32_PAT, which must raise #GP through
 * the interrupt vector table, and reads CPUID leaf 0x40000000; with
 * rm_triple set it instead empties the IVT and executes int3 there: a triple
 * fault in real mode. Each stage prints a line to COM1 (not with trip_quiet
set) and bumps trip_stage. One CPU at a time (hostile/trip.c).
 *
 * The real-mode part runs below 1 MiB: hostile.c copies rm_start .. rm_end
 * to RM_BASE first (RM() names an address in that copy). */
#include "arch/x86/msr.h"

#define CR0_PE 0x1
#define CR0_WP 0x10000
#define CR0_PG 0x80000000
#define CR4_PSE 0x10
#define CR4_PAE 0x20
#define COM1 0x3f8
#define RM_BASE 0x8000		/* also in hostile.c */
#define RM_STACK 0x7000
#define RM(sym) (RM_BASE + (sym) - rm_start)
#define SEL_CODE64 0x08
#define SEL_DATA 0x10
#define SEL_CODE32 0x18
#define SEL_CODE16 0x20
#define SEL_DATA16 0x28

	.data
	.balign 16
trip_gdt:
	.quad 0
	.quad 0x00af9a000000ffff	/* 0x08: 64-bit code */
	.quad 0x00cf92000000ffff	/* 0x10: flat data */
	.quad 0x00cf9a000000ffff	/* 0x18: 32-bit code */
	.quad 0x00009a000000ffff	/* 0x20: 16-bit code, base 0, 64 KiB */
	.quad 0x000092000000ffff	/* 0x28: 16-bit data, base 0, 64 KiB */
trip_gdt_end:
	.balign 8
trip_gdt_ptr:
	.short trip_gdt_end - trip_gdt - 1
	.quad trip_gdt
	.balign 8
saved_gdt:
	.short 0
	.quad 0
	.balign 8
saved_idt:
	.short 0
	.quad 0
	.balign 8
rm_ivt_ptr:
	.short 0x3ff
	.long 0
	.balign 8
saved_rsp:
	.quad 0
saved_cr3:
	.long 0
saved_cr4:
	.long 0
	.globl trip_stage, trip_rm_gp, trip_rm_sig, trip_paged, trip_quiet
	.globl trip_pd32, trip_pdpt, trip_pge, trip_cr0_writes
trip_paged:
	.long 0
trip_quiet:
	.long 0
trip_pd32:
	.long 0
trip_pdpt:
	.long 0
trip_pge:
	.long 0
trip_cr0_writes:
	.long 0
trip_stage:
	.long 0
trip_rm_gp:
	.long 0
trip_rm_sig:
	.long 0

	.text
	.code64
/* int hostile_mode_trip(void): the stage reached, 6 when back in long mode. */
	.globl hostile_mode_trip
hostile_mode_trip:
	pushq %rbx
	pushq %rbp
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	movq %rsp, saved_rsp(%rip)
	movq %cr3, %rax
	movl %eax, saved_cr3(%rip)
	movq %cr4, %rax
	movl %eax, saved_cr4(%rip)
	sgdt saved_gdt(%rip)
	sidt saved_idt(%rip)
	lgdt trip_gdt_ptr(%rip)
	movl $1, trip_stage(%rip)
	pushq $SEL_CODE32
	leaq trip_compat(%rip), %rax
	pushq %rax
	lretq

	.code32
trip_compat:
	/* Compatibility mode. Paging off leaves long mode (EFER.LMA clears),
	 * then LME may be cleared too. */
	movl $2, trip_stage
	movl %cr0, %eax
	andl $~CR0_PG, %eax
	movl %eax, %cr0
	movl $MSR_EFER, %ecx
	rdmsr
	andl $~EFER_LME, %eax
	wrmsr
	movw $SEL_DATA, %ax
	movw %ax, %ds
	movw %ax, %es
	movw %ax, %ss
	movl $3, trip_stage
	movl $msg_pm32, %esi
	call puts32
	/* 32-bit paging: PSE on, PAE off. */
	movl trip_pd32, %edx
	testl %edx, %edx
	jz 1f
	movl saved_cr4, %eax
	andl $~CR4_PAE, %eax
	orl $CR4_PSE, %eax
	movl %eax, %cr4
	movl %edx, %cr3
	call trip_paging
	movl $msg_paging32, %esi
	call puts32
1:	/* PAE paging. */
	movl saved_cr4, %eax
	movl %eax, %cr4
	movl trip_pdpt, %eax
	movl %eax, %cr3
	call trip_paging
	movl $msg_pae, %esi
	call puts32
	movl saved_cr3, %eax
	movl %eax, %cr3
	/* Real mode, by way of 16-bit protected mode. */
	lidt rm_ivt_ptr
	ljmp $SEL_CODE16, $RM(rm_start)

trip_pm32_back:
	movw $SEL_DATA, %ax
	movw %ax, %ds
	movw %ax, %es
	movw %ax, %ss
	movw %ax, %fs
	movw %ax, %gs
	movl saved_rsp, %esp
	movl $5, trip_stage
	movzwl RM(rm_gp_count), %eax
	movl %eax, trip_rm_gp
	movl RM(rm_sig), %eax
	movl %eax, trip_rm_sig
	movl $msg_pm32_back, %esi
	call puts32
	/* Long mode: CR4.PAE and CR3 still hold the runtime's tables. */
	movl $MSR_EFER, %ecx
	rdmsr
	orl $EFER_LME, %eax
	wrmsr
	movl %cr0, %eax
	orl $CR0_PG, %eax
	movl %eax, %cr0
	ljmp $SEL_CODE64, $trip_long_back

/* trip_paging: paging on with the CR3 and CR4 loaded, then CR0, CR3 and
 * CR4 writes, and paging off again. */
trip_paging:
	movl %cr0, %eax
	orl $CR0_PG, %eax
	movl %eax, %cr0
	incl trip_paged			/* through the new tables */
	movl trip_cr0_writes, %ecx
	testl %ecx, %ecx
	jz 2f
1:	movl %cr0, %eax
	xorl $CR0_WP, %eax
	movl %eax, %cr0
	movl %cr3, %eax
	movl %eax, %cr3
	movl %cr4, %eax
	xorl trip_pge, %eax
	movl %eax, %cr4
	xorl trip_pge, %eax
	movl %eax, %cr4
	decl %ecx
	jnz 1b
2:	movl %cr0, %eax
	andl $~CR0_PG, %eax
	movl %eax, %cr0
	ret

/* puts32: the NUL-terminated string at ESI to COM1 (always ready under
 * sprig and QEMU), unless trip_quiet. */
puts32:
	cmpl $0, trip_quiet
	jne 2f
	movw $COM1, %dx
1:	lodsb
	testb %al, %al
	jz 2f
	outb %al, %dx
	jmp 1b
2:	ret

	.code64
trip_long_back:
	movw $SEL_DATA, %ax
	movw %ax, %ds
	movw %ax, %es
	movw %ax, %ss
	xorw %ax, %ax
	movw %ax, %fs
	movw %ax, %gs
	movq saved_rsp(%rip), %rsp
	lgdt saved_gdt(%rip)
	lidt saved_idt(%rip)
	movl $6, trip_stage(%rip)
	movl trip_stage(%rip), %eax
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbp
	popq %rbx
	ret

	.section .rodata
msg_pm32:
	.asciz "modes: protected mode, paging off\n"
msg_pm32_back:
	.asciz "modes: protected mode again\n"
msg_paging32:
	.asciz "modes: 32-bit paging and off\n"
msg_pae:
	.asciz "modes: PAE paging and off\n"

/* Copied to RM_BASE. */
	.balign 16
	.code16
	.globl rm_start, rm_end, rm_triple, rm_quiet
rm_start:
	/* 16-bit protected mode: CS 0x20 with base 0. */
	movw $SEL_DATA16, %ax
	movw %ax, %ds
	movw %ax, %es
	movw %ax, %ss
	movw %ax, %fs
	movw %ax, %gs
	movl %cr0, %eax
	andl $~CR0_PE, %eax
	movl %eax, %cr0
	ljmp $0, $RM(rm_entry)
rm_entry:
	xorw %ax, %ax
	movw %ax, %ds
	movw %ax, %es
	movw %ax, %ss
	movw %ax, %fs
	movw %ax, %gs
	movw $RM_STACK, %sp
	movw $RM(msg_real), %si
	call rm_puts
	cmpb $0, RM(rm_triple)
	jne rm_triple_fault
	/* #GP through the IVT: its handler counts and skips the WRMSR. */
	movw $RM(rm_gp), 13 * 4
	movw $0, 13 * 4 + 2
	movl $MSR_PAT, %ecx
	movl $0xffffffff, %eax
	movl $0xffffffff, %edx
	wrmsr
	movl $0x40000000, %eax
	cpuid
	movl %ebx, RM(rm_sig)
	/* Back to protected mode, into 32-bit code in the image. */
	lgdtl RM(rm_gdt_ptr)
	movl %cr0, %eax
	orl $CR0_PE, %eax
	movl %eax, %cr0
	ljmpl $SEL_CODE32, $trip_pm32_back
rm_triple_fault:
	movw $RM(msg_triple), %si
	call rm_puts
	lidt RM(rm_null_idt)
	int3
	hlt
rm_gp:
	pushw %bp
	movw %sp, %bp
	addw $2, 2(%bp)
	incw RM(rm_gp_count)
	popw %bp
	iret
rm_puts:
	cmpb $0, RM(rm_quiet)
	jne 2f
	movw $COM1, %dx
1:	lodsb
	testb %al, %al
	jz 2f
	outb %al, %dx
	jmp 1b
2:	ret
	.balign 4
rm_sig:
	.long 0
rm_gp_count:
	.word 0
rm_triple:
	.byte 0
rm_quiet:
	.byte 0
	.balign 2
rm_gdt_ptr:
	.short trip_gdt_end - trip_gdt - 1
	.long trip_gdt
rm_null_idt:
	.short 0
	.long 0
msg_real:
	.asciz "modes: real mode\n"
msg_triple:
	.asciz "modes: real mode, int3 with an empty IVT\n"
rm_end:

	.section .note.GNU-stack, "", @progbits
