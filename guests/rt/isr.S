/* The guests' interrupt entry points: one stub per vector 0-255, each pushing
 * a zero error code where the CPU pushes none and then the vector, so that
 * the dispatcher idt_install() was given (idt.c) sees one frame layout
 * (struct frame, idt.h). */

	.text
	.code64

.macro stub vec
	.balign 16
isr_stub_\vec:
	.if (\vec == 8) || (\vec == 10) || (\vec == 11) || (\vec == 12) || (\vec == 13) || (\vec == 14) || (\vec == 17) || (\vec == 21) || (\vec == 29) || (\vec == 30)
	.else
	pushq $0
	.endif
	pushq $\vec
	jmp isr_common
.endm

.altmacro
.macro stubs from, to
	stub %from
	.if \to-\from
	stubs %(\from+1), \to
	.endif
.endm

	stubs 0, 63
	stubs 64, 127
	stubs 128, 191
	stubs 192, 255

/* From the stack pointer up: r15 .. rax, vector, error code, then what the
 * CPU pushed (RIP, CS, RFLAGS, RSP, SS). 22 quadwords plus the CPU's
 * 16-byte alignment: the call below runs with RSP 16-byte aligned. */
isr_common:
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
	call rt_interrupt
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

.macro addr vec
	.quad isr_stub_\vec
.endm
.macro addrs from, to
	addr %from
	.if \to-\from
	addrs %(\from+1), \to
	.endif
.endm

	.section .rodata
	.balign 8
	.globl isr_stubs
isr_stubs:
	addrs 0, 63
	addrs 64, 127
	addrs 128, 191
	addrs 192, 255

	.section .note.GNU-stack, "", @progbits
