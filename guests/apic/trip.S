/* The apic guest's trips out of 4-level long mode to read and write the
 * local APIC under another paging mode, and back:
 *   long mode -> compatibility mode -> protected mode, paging off (EFER.LME
 *   cleared) -> [the mode under test] -> protected mode, paging off ->
 *   long mode again (the runtime's CR3 and CR4, LME set, paging on).
 * Modes (struct trip.mode, main.c): 0 paging off, 1 32-bit paging (4 MiB
 * pages, CR4.PSE), 2 PAE paging, 4 5-level paging (CR4.LA57, long mode).
 * trip.root is CR3 for modes 1, 2 and 4. In each mode the access reads the
 * version register (0xfee00030), writes 0x30 to the TPR (0xfee00080), reads
 * it back and writes 0 again, each a plain 32-bit MOV. Interrupts stay off;
 * an exception on the way would be a triple fault. */
#include "arch/x86/msr.h"

#define CR0_PG 0x80000000
#define CR4_PSE 0x10
#define CR4_PAE 0x20
#define CR4_LA57 0x1000
#define SEL_CODE64 0x08
#define SEL_DATA 0x10
#define SEL_CODE32 0x18
#define APIC 0xfee00000

/* struct trip */
#define T_MODE 0
#define T_ROOT 4
#define T_VERSION 8
#define T_TPR 12
#define T_DONE 16

	.data
	.balign 16
trip_gdt:
	.quad 0
	.quad 0x00af9a000000ffff	/* 0x08: 64-bit code */
	.quad 0x00cf92000000ffff	/* 0x10: flat data */
	.quad 0x00cf9a000000ffff	/* 0x18: 32-bit code */
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
saved_rsp:	.quad 0
saved_cr3:	.quad 0
saved_cr4:	.quad 0
trip_ptr:	.quad 0

	.text
	.code64
/* void apic_trip(struct trip *t) */
	.globl apic_trip
apic_trip:
	pushq %rbx
	pushq %rbp
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	pushfq
	cli
	movq %rsp, saved_rsp(%rip)
	movq %rdi, trip_ptr(%rip)
	sgdt saved_gdt(%rip)
	movq %cr3, %rax
	movq %rax, saved_cr3(%rip)
	movq %cr4, %rax
	movq %rax, saved_cr4(%rip)
	lgdt trip_gdt_ptr(%rip)
	pushq $SEL_CODE32
	leaq trip_compat(%rip), %rax
	pushq %rax
	lretq

	.code32
trip_compat:
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
	movl trip_ptr, %ebx
	movl T_MODE(%ebx), %eax
	cmpl $0, %eax
	je mode_none
	cmpl $1, %eax
	je mode_32
	cmpl $2, %eax
	je mode_pae
	cmpl $4, %eax
	je mode_la57
	jmp trip_back

mode_none:
	call access32
	jmp trip_back

mode_32:
	movl %cr4, %eax
	andl $~(CR4_PAE | CR4_LA57), %eax
	orl $CR4_PSE, %eax
	movl %eax, %cr4
	movl T_ROOT(%ebx), %eax
	movl %eax, %cr3
	movl %cr0, %eax
	orl $CR0_PG, %eax
	movl %eax, %cr0
	call access32
	movl %cr0, %eax
	andl $~CR0_PG, %eax
	movl %eax, %cr0
	jmp trip_back

mode_pae:
	movl %cr4, %eax
	andl $~CR4_LA57, %eax
	orl $CR4_PAE, %eax
	movl %eax, %cr4
	movl T_ROOT(%ebx), %eax
	movl %eax, %cr3
	movl %cr0, %eax
	orl $CR0_PG, %eax
	movl %eax, %cr0
	call access32
	movl %cr0, %eax
	andl $~CR0_PG, %eax
	movl %eax, %cr0
	jmp trip_back

mode_la57:
	movl %cr4, %eax
	orl $(CR4_PAE | CR4_LA57), %eax
	movl %eax, %cr4
	movl T_ROOT(%ebx), %eax
	movl %eax, %cr3
	movl $MSR_EFER, %ecx
	rdmsr
	orl $EFER_LME, %eax
	wrmsr
	movl %cr0, %eax
	orl $CR0_PG, %eax
	movl %eax, %cr0
	ljmp $SEL_CODE64, $la57_long

	.code64
la57_long:
	movq saved_rsp(%rip), %rsp
	movq trip_ptr(%rip), %rbx
	movl $APIC, %esi
	movl 0x30(%rsi), %eax
	movl %eax, T_VERSION(%rbx)
	movl $0x30, 0x80(%rsi)
	movl 0x80(%rsi), %eax
	movl %eax, T_TPR(%rbx)
	movl $0, 0x80(%rsi)
	movl $1, T_DONE(%rbx)
	pushq $SEL_CODE32
	leaq la57_compat(%rip), %rax
	pushq %rax
	lretq

	.code32
la57_compat:
	movl %cr0, %eax
	andl $~CR0_PG, %eax
	movl %eax, %cr0
	jmp trip_back

/* Paging off, LME in any state: back to the runtime's long mode. */
trip_back:
	movl saved_cr4, %eax
	movl %eax, %cr4
	movl saved_cr3, %eax
	movl %eax, %cr3
	movl $MSR_EFER, %ecx
	rdmsr
	orl $EFER_LME, %eax
	wrmsr
	movl %cr0, %eax
	orl $CR0_PG, %eax
	movl %eax, %cr0
	ljmp $SEL_CODE64, $trip_long_back

access32:
	movl $APIC, %esi
	movl 0x30(%esi), %eax
	movl %eax, T_VERSION(%ebx)
	movl $0x30, 0x80(%esi)
	movl 0x80(%esi), %eax
	movl %eax, T_TPR(%ebx)
	movl $0, 0x80(%esi)
	movl $1, T_DONE(%ebx)
	ret

	.code64
trip_long_back:
	movw $SEL_DATA, %ax
	movw %ax, %ds
	movw %ax, %es
	movw %ax, %ss
	movq saved_rsp(%rip), %rsp
	lgdt saved_gdt(%rip)
	popfq
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbp
	popq %rbx
	ret

	.section .note.GNU-stack, "", @progbits
