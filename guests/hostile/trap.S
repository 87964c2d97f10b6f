/* The hostile guest's exception entry points: one stub per vector 0-31, each
 * pushing a zero error code where the CPU pushes none and then the vector, so
 * that hostile_trap() (hostile.c) sees one frame layout. */

	.text
	.code64

.macro stub vec, has_error
	.balign 16
trap_stub_\vec:
	.if \has_error == 0
	pushq $0
	.endif
	pushq $\vec
	jmp trap_common
.endm

	stub 0, 0
	stub 1, 0
	stub 2, 0
	stub 3, 0
	stub 4, 0
	stub 5, 0
	stub 6, 0
	stub 7, 0
	stub 8, 1
	stub 9, 0
	stub 10, 1
	stub 11, 1
	stub 12, 1
	stub 13, 1
	stub 14, 1
	stub 15, 0
	stub 16, 0
	stub 17, 1
	stub 18, 0
	stub 19, 0
	stub 20, 0
	stub 21, 1
	stub 22, 0
	stub 23, 0
	stub 24, 0
	stub 25, 0
	stub 26, 0
	stub 27, 0
	stub 28, 0
	stub 29, 1
	stub 30, 1
	stub 31, 0

/* The frame, from the stack pointer up: r15 .. rax, vector, error code, then
 * what the CPU pushed (RIP, CS, RFLAGS, RSP, SS): struct trap_frame. */
trap_common:
	pushq %rax
	pushq %rbx
	pushq %rcx
	pushq %rdx
	pushq %rsi
	pushq %rdi
	pushq %rbp
	pushq %r8
	pushq %r9
	pushq %r10
	pushq %r11
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	cld
	movq %rsp, %rdi
	call hostile_trap
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %r11
	popq %r10
	popq %r9
	popq %r8
	popq %rbp
	popq %rdi
	popq %rsi
	popq %rdx
	popq %rcx
	popq %rbx
	popq %rax
	addq $16, %rsp
	iretq

	.section .rodata
	.balign 8
	.globl trap_stubs
trap_stubs:
	.irp vec, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	.quad trap_stub_\vec
	.endr

	.section .note.GNU-stack, "", @progbits
