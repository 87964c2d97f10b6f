/* Architectural register bits (SDM vol. 3A 2.5, APM vol. 2 3.1) and the
 * canonical-address rule: what the checks of a guest state name. Pure
 * definitions, shared by the host build. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#define CR0_PE (1ull << 0)
#define CR0_MP (1ull << 1)
#define CR0_EM (1ull << 2)
#define CR0_TS (1ull << 3)
#define CR0_ET (1ull << 4)
#define CR0_NE (1ull << 5)
#define CR0_WP (1ull << 16)
#define CR0_AM (1ull << 18)
#define CR0_NW (1ull << 29)
#define CR0_CD (1ull << 30)
#define CR0_PG (1ull << 31)

#define CR4_PAE (1ull << 5)
#define CR4_OSFXSR (1ull << 9)
#define CR4_OSXMMEXCPT (1ull << 10)
#define CR4_UMIP (1ull << 11)
#define CR4_LA57 (1ull << 12)
#define CR4_VMXE (1ull << 13)
#define CR4_FSGSBASE (1ull << 16)
#define CR4_PCIDE (1ull << 17)
#define CR4_OSXSAVE (1ull << 18)
#define CR4_SMEP (1ull << 20)
#define CR4_SMAP (1ull << 21)
#define CR4_PKE (1ull << 22)
#define CR4_CET (1ull << 23)
#define CR4_PKS (1ull << 24)
#define CR4_LAM_SUP (1ull << 28)
/* VME PVI TSD DE PSE PAE MCE PGE PCE OSFXSR OSXMMEXCPT: every x86-64 CPU. */
#define CR4_BASE_BITS 0x7ffull

/* XCR0 components (SDM vol. 1, 13.1). */
#define XCR0_X87 (1ull << 0)
#define XCR0_SSE (1ull << 1)
#define XCR0_AVX (1ull << 2)
#define XCR0_OPMASK (1ull << 5)
#define XCR0_ZMM_HI256 (1ull << 6)
#define XCR0_HI16_ZMM (1ull << 7)
#define XCR0_PKRU (1ull << 9)
#define XCR0_AVX512 (XCR0_OPMASK | XCR0_ZMM_HI256 | XCR0_HI16_ZMM)

#define RFLAGS_FIXED (1ull << 1)
#define RFLAGS_TF (1ull << 8)
#define RFLAGS_IF (1ull << 9)
#define RFLAGS_RF (1ull << 16)
#define RFLAGS_AC (1ull << 18)
#define RFLAGS_VM (1ull << 17)
/* Bits 63:22, 15, 5 and 3 are reserved (zero); bit 1 reads as one. */
#define RFLAGS_RESERVED (~0x3fffffull | (1ull << 15) | (1ull << 5) | (1ull << 3))

/* Exception vectors sprig raises in guests or checks by name. */
#define X86_VEC_DE 0
#define X86_VEC_DB 1
#define X86_VEC_NMI 2
#define X86_VEC_BP 3
#define X86_VEC_OF 4
#define X86_VEC_UD 6
#define X86_VEC_NP 11
#define X86_VEC_SS 12
#define X86_VEC_GP 13
#define X86_VEC_MC 18

/* Whether an exception pushes an error code (in protected mode; real mode
 * never does): #DF, #TS, #NP, #SS, #GP, #PF, #AC, #CP. */
static inline bool x86_vector_has_error_code(unsigned vector)
{
	return vector == 8 || (vector >= 10 && vector <= 14) || vector == 17 || vector == 21;
}

/* A fault-class exception (SDM vol. 3A table 6-1: not #DB, #BP or #OF,
 * traps; not #DF or #MC, aborts; not NMI): its delivery pushes RFLAGS with
 * RF set (SDM vol. 3A, "Instruction-Breakpoint Exception Condition"), so
 * that the IRET back to the faulting instruction does not stop at an
 * instruction breakpoint on it again. An injected exception pushes RF as
 * the entry loads it, whatever the event (SDM vol. 3C, "Details of
 * Vectored-Event Injection"; SVM's EVENTINJ alike): the hypervisor sets it
 * for a fault, as KVM does (inject_pending_event). */
static inline bool x86_vector_is_fault(unsigned vector)
{
	return vector < 32 && !((1u << X86_VEC_DB | 1u << X86_VEC_NMI | 1u << X86_VEC_BP |
				 1u << X86_VEC_OF | 1u << 8 /* #DF */ | 1u << X86_VEC_MC) >>
				vector & 1);
}

/* The linear-address width that a CR4 (or a set of CR4 bits a CPU allows)
 * gives canonical checks: 57 bits with LA57, else 48. */
static inline unsigned x86_va_bits(uint64_t cr4)
{
	return cr4 & CR4_LA57 ? 57 : 48;
}

/* An address whose bits above the implemented width copy the top one. */
static inline bool x86_canonical(uint64_t va, unsigned width)
{
	return (uint64_t)(((int64_t)(va << (64 - width))) >> (64 - width)) == va;
}

/* IA32_PAT: each of the eight bytes a memory type 0, 1, 4, 5, 6 or 7. */
static inline bool x86_pat_valid(uint64_t pat)
{
	for (int i = 0; i < 8; i++) {
		unsigned type = (pat >> (8 * i)) & 0xff;
		if (type == 2 || type == 3 || type > 7)
			return false;
	}
	return true;
}
