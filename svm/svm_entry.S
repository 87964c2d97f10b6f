/* svm_enter(vmcb_pa, regs, host_vmcb_pa): run the guest until its next #VMEXIT.
 *
 * The guest's RAX, RSP, RIP and RFLAGS live in the VMCB; the other general
 * registers are loaded from and saved to struct vcpu_regs here. VMRUN saves
 * and restores only part of the host state, so VMSAVE/VMLOAD around it keep
 * sprig's FS, GS, TR and LDTR hidden state, KernelGSBase and the STAR, LSTAR,
 * CSTAR, SFMASK and SYSENTER MSRs from ever holding the guest's values.
 *
 * The guest runs as CLGI; STI; VMRUN; CLI; STGI: with GIF clear nothing can
 * interrupt the switch, and with the host's IF set at VMRUN a physical
 * interrupt makes an INTR exit (QEMU only recognises it then). It stays
 * pending until the caller opens an interrupt window. */

#define REG_RBX 8
#define REG_RCX 16
#define REG_RDX 24
#define REG_RSI 32
#define REG_RDI 40
#define REG_RBP 48
#define REG_R8 56
#define REG_R9 64
#define REG_R10 72
#define REG_R11 80
#define REG_R12 88
#define REG_R13 96
#define REG_R14 104
#define REG_R15 112

	.text
	.code64
	.globl svm_enter
svm_enter:
	push %rbp
	push %rbx
	push %r12
	push %r13
	push %r14
	push %r15
	push %rsi			/* regs */
	push %rdi			/* vmcb_pa */
	push %rdx			/* host_vmcb_pa */

	clgi
	mov %rdx, %rax
	vmsave %rax			/* sprig's FS/GS/TR/LDTR and syscall MSRs */
	mov 8(%rsp), %rax
	vmload %rax			/* the guest's */

	mov REG_RBX(%rsi), %rbx
	mov REG_RCX(%rsi), %rcx
	mov REG_RDX(%rsi), %rdx
	mov REG_RDI(%rsi), %rdi
	mov REG_RBP(%rsi), %rbp
	mov REG_R8(%rsi), %r8
	mov REG_R9(%rsi), %r9
	mov REG_R10(%rsi), %r10
	mov REG_R11(%rsi), %r11
	mov REG_R12(%rsi), %r12
	mov REG_R13(%rsi), %r13
	mov REG_R14(%rsi), %r14
	mov REG_R15(%rsi), %r15
	mov REG_RSI(%rsi), %rsi

	sti
	vmrun %rax
	cli

	push %rsi			/* the guest's RSI; regs is at 24(%rsp) now */
	mov 24(%rsp), %rsi
	mov %rbx, REG_RBX(%rsi)
	mov %rcx, REG_RCX(%rsi)
	mov %rdx, REG_RDX(%rsi)
	mov %rdi, REG_RDI(%rsi)
	mov %rbp, REG_RBP(%rsi)
	mov %r8, REG_R8(%rsi)
	mov %r9, REG_R9(%rsi)
	mov %r10, REG_R10(%rsi)
	mov %r11, REG_R11(%rsi)
	mov %r12, REG_R12(%rsi)
	mov %r13, REG_R13(%rsi)
	mov %r14, REG_R14(%rsi)
	mov %r15, REG_R15(%rsi)
	pop %rax
	mov %rax, REG_RSI(%rsi)

	mov 8(%rsp), %rax
	vmsave %rax			/* the guest's FS/GS/TR/LDTR and syscall MSRs */
	mov (%rsp), %rax
	vmload %rax			/* sprig's back */
	stgi

	add $24, %rsp
	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %rbx
	pop %rbp
	ret
