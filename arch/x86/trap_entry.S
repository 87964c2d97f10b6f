/* Interrupt and exception entry stubs. Every vector pushes a uniform frame
 * (struct trap_frame in arch/x86/trap.h): a zero error code where the CPU pushes
 * none, the vector number, then the general registers; trap_dispatch() gets a
 * pointer to it. */

/* Vectors for which the CPU pushes an error code. */
#define HAS_ERROR_CODE(v) ((v) == 8 || ((v) >= 10 && (v) <= 14) || (v) == 17 || (v) == 21 || (v) == 29 || (v) == 30)

	.text
	.code64

.macro trap_stub vector
	.balign 16
trap_stub_\vector:
	.if !HAS_ERROR_CODE(\vector)
	pushq $0
	.endif
	pushq $\vector
	jmp trap_common
.endm

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
	mov %rsp, %rdi
	mov %rsp, %rbx			/* keep the frame; align the stack for C */
	and $-16, %rsp
	cld
	call trap_dispatch
	mov %rbx, %rsp
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
	add $16, %rsp			/* vector and error code */
	iretq

.altmacro
.macro trap_stubs from, to
	trap_stub %(\from)
	.if \to - \from
	trap_stubs %(\from + 1), \to
	.endif
.endm
	trap_stubs 0, 63
	trap_stubs 64, 127
	trap_stubs 128, 191
	trap_stubs 192, 255

.macro trap_stub_addr vector
	.quad trap_stub_\vector
.endm
.macro trap_stub_addrs from, to
	trap_stub_addr %(\from)
	.if \to - \from
	trap_stub_addrs %(\from + 1), \to
	.endif
.endm
	.section .rodata
	.balign 8
	.globl trap_stub_table
trap_stub_table:
	trap_stub_addrs 0, 63
	trap_stub_addrs 64, 127
	trap_stub_addrs 128, 191
	trap_stub_addrs 192, 255
