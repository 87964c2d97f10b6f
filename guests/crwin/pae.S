/* crwin's CR0 writer (main.c): from long mode down to legacy PAE paging, then
 * MOV to CR0 toggling CR0.NE for ever, counting each write. NE is one of the
 * bits VMX forces (IA32_VMX_CR0_FIXED0), so under sprig on VMX every write
 * exits and is emulated, PDPTEs and all (SDM vol. 3A, 4.4.1). Interrupts stay
 * off: the runtime's IDT is a long-mode one. */
#include "arch/x86/msr.h"

#define CR0_NE (1 << 5)
#define CR0_PG (1 << 31)
#define SEL_DATA 0x10
#define SEL_CODE32 0x18

	.text
	.code64
/* pae_cr0_loop(pdpt, count): EDI = the PDPT (below 4 GiB, 32-byte aligned),
 * ESI = the counter; never returns. The code, stack and counter are
 * identity-mapped below 1 GiB, as the PDPT maps them. */
	.globl pae_cr0_loop
pae_cr0_loop:
	cli
	pushq $SEL_CODE32
	lea compat(%rip), %rax
	pushq %rax
	lretq

	.code32
compat:
	mov $SEL_DATA, %ax
	mov %ax, %ds
	mov %ax, %es
	mov %ax, %ss
	/* Paging off leaves IA-32e mode (SDM vol. 3A, 10.8.5.4), then LME off. */
	mov %cr0, %eax
	and $~CR0_PG, %eax
	mov %eax, %cr0
	mov $MSR_EFER, %ecx
	rdmsr
	and $~EFER_LME, %eax
	wrmsr
	/* CR4.PAE is still set: paging on again is legacy PAE paging. */
	mov %edi, %cr3
	mov %cr0, %eax
	or $CR0_PG, %eax
	mov %eax, %cr0
1:	mov %cr0, %eax
	xor $CR0_NE, %eax
	mov %eax, %cr0
	lock incl (%esi)
	jmp 1b

	.section .note.GNU-stack, "", @progbits
