/* The VM entry and exit path. vmx_enter loads the guest's general registers
 * from struct vcpu_regs (RSP, RIP and RFLAGS live in the VMCS), enters with
 * VMLAUNCH or VMRESUME, and returns:
 *   VMX_ENTER_EXITED        after a VM exit (the CPU resumed at vmx_exit_point
 *                           with the stack vmx_enter left in HOST_RSP), guest
 *                           registers stored back into struct vcpu_regs;
 *   VMX_ENTER_FAIL_INVALID  VMfailInvalid (CF=1): no current VMCS;
 *   VMX_ENTER_FAIL_VALID    VMfailValid (ZF=1): VM_INSTRUCTION_ERROR says why.
 * The caller runs with interrupts disabled; a VM exit leaves RFLAGS = 0x2. */
#include "vmx/vmcs.h"

	.text
	.code64

/* int vmx_enter(struct vcpu_regs *regs, int launched) */
	.globl vmx_enter
	.type vmx_enter, @function
vmx_enter:
	pushq %rbp
	pushq %rbx
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	pushq %rdi			/* regs: found at (%rsp) after the exit */

	/* The stack may differ from one call to the next. */
	movl $VMCS_HOST_RSP, %eax
	vmwrite %rsp, %rax
	jbe .Lentry_failed

	testl %esi, %esi		/* flags survive the moves below */
	movq VCPU_REGS_RAX(%rdi), %rax
	movq VCPU_REGS_RBX(%rdi), %rbx
	movq VCPU_REGS_RCX(%rdi), %rcx
	movq VCPU_REGS_RDX(%rdi), %rdx
	movq VCPU_REGS_RSI(%rdi), %rsi
	movq VCPU_REGS_RBP(%rdi), %rbp
	movq VCPU_REGS_R8(%rdi), %r8
	movq VCPU_REGS_R9(%rdi), %r9
	movq VCPU_REGS_R10(%rdi), %r10
	movq VCPU_REGS_R11(%rdi), %r11
	movq VCPU_REGS_R12(%rdi), %r12
	movq VCPU_REGS_R13(%rdi), %r13
	movq VCPU_REGS_R14(%rdi), %r14
	movq VCPU_REGS_R15(%rdi), %r15
	movq VCPU_REGS_RDI(%rdi), %rdi
	jnz .Lresume
	vmlaunch
	jmp .Lentry_failed
.Lresume:
	vmresume

	/* Only reached when the instruction failed: CF=1 or ZF=1. */
.Lentry_failed:
	movl $VMX_ENTER_FAIL_INVALID, %eax
	jc 1f
	movl $VMX_ENTER_FAIL_VALID, %eax
1:	popq %rdi
	jmp .Lrestore_host
	.size vmx_enter, . - vmx_enter

/* HOST_RIP: every VM exit lands here with RSP = HOST_RSP. */
	.globl vmx_exit_point
	.type vmx_exit_point, @function
vmx_exit_point:
	xchgq %rdi, (%rsp)		/* rdi = regs; the slot keeps the guest's rdi */
	movq %rax, VCPU_REGS_RAX(%rdi)
	movq %rbx, VCPU_REGS_RBX(%rdi)
	movq %rcx, VCPU_REGS_RCX(%rdi)
	movq %rdx, VCPU_REGS_RDX(%rdi)
	movq %rsi, VCPU_REGS_RSI(%rdi)
	movq %rbp, VCPU_REGS_RBP(%rdi)
	movq %r8, VCPU_REGS_R8(%rdi)
	movq %r9, VCPU_REGS_R9(%rdi)
	movq %r10, VCPU_REGS_R10(%rdi)
	movq %r11, VCPU_REGS_R11(%rdi)
	movq %r12, VCPU_REGS_R12(%rdi)
	movq %r13, VCPU_REGS_R13(%rdi)
	movq %r14, VCPU_REGS_R14(%rdi)
	movq %r15, VCPU_REGS_R15(%rdi)
	popq VCPU_REGS_RDI(%rdi)
	movl $VMX_ENTER_EXITED, %eax

.Lrestore_host:
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbx
	popq %rbp
	ret
	.size vmx_exit_point, . - vmx_exit_point

	.section .note.GNU-stack, "", @progbits
