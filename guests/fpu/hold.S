/* void fpu_hold(const struct fpu_state *in, struct fpu_state *out,
 *               unsigned long loops, bool avx)
 * Loads every x87, SSE (and, with avx, AVX) register and the control words
 * from *in, spins for loops iterations with a CPUID (which exits to any
 * hypervisor) every 4096 of them, then stores the registers to *out. Nothing
 * between the loads and the stores touches those registers, so any change is
 * the host's doing. The layout matches struct fpu_state in fpu.c. */

#define FPU_VEC 0		/* 16 registers of 32 bytes */
#define FPU_X87 512		/* 8 signed 64-bit integers */
#define FPU_MXCSR 576
#define FPU_FCW 580
#define CPUID_EVERY 0xfff

	.text
	.globl fpu_hold
fpu_hold:
	push %rbx			/* CPUID clobbers it; callee-saved */
	mov %rdx, %r8			/* and RCX, RDX too */
	mov %ecx, %r9d

	fninit
	fldcw FPU_FCW(%rdi)
	.irp i, 0, 1, 2, 3, 4, 5, 6, 7
	fildq FPU_X87 + 8 * \i(%rdi)
	.endr
	ldmxcsr FPU_MXCSR(%rdi)
	test %r9d, %r9d
	jz 1f
	.irp i, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
	vmovdqu FPU_VEC + 32 * \i(%rdi), %ymm\i
	.endr
	jmp 2f
1:
	.irp i, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
	movdqu FPU_VEC + 32 * \i(%rdi), %xmm\i
	.endr

2:	test $CPUID_EVERY, %r8
	jnz 3f
	xor %eax, %eax
	xor %ecx, %ecx
	cpuid
3:	dec %r8
	jnz 2b

	test %r9d, %r9d
	jz 4f
	.irp i, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
	vmovdqu %ymm\i, FPU_VEC + 32 * \i(%rsi)
	.endr
	vzeroupper
	jmp 5f
4:
	.irp i, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
	movdqu %xmm\i, FPU_VEC + 32 * \i(%rsi)
	.endr
5:	stmxcsr FPU_MXCSR(%rsi)
	fnstcw FPU_FCW(%rsi)
	/* The last value loaded is on top of the x87 stack. */
	.irp i, 7, 6, 5, 4, 3, 2, 1, 0
	fistpq FPU_X87 + 8 * \i(%rsi)
	.endr
	pop %rbx
	ret
