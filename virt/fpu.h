/* Guest FPU, SSE and AVX state. sprig itself is built with general registers
 * only, so a CPU's live FPU state belongs to the last vCPU that ran there: it
 * is saved and another vCPU's restored only when a different vCPU enters, or
 * when the CPU stops running the vCPU (fpu_vcpu_put), so that another CPU
 * may run it and snapshots read it. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

struct vcpu;

/* Pick the state components guests may use, then fpu_cpu_init on this CPU
 * (the bootstrap CPU). */
void fpu_init(void);
/* Enable FXSR, SSE exceptions and XSAVE with those components on this CPU. */
void fpu_cpu_init(void);
/* The XCR0 bits a guest may set (x87 alone without XSAVE). */
uint64_t fpu_guest_xcr0_allowed(void);
/* What a vCPU's saved FPU state must satisfy here (state_check.h). */
struct fpu_limits;
void fpu_limits(struct fpu_limits *lim);
/* Bytes of XSAVE area the components of xcr0 need (for CPUID leaf 0xD). */
uint32_t fpu_xsave_size(uint64_t xcr0);
bool fpu_has_xsave(void);

/* A vCPU's area, in the initial state (FCW 0x37f, MXCSR 0x1f80). 0 or -1. */
int fpu_vcpu_init(struct vcpu *v);
void fpu_vcpu_free(struct vcpu *v);
/* Bytes of a vCPU's area. */
uint32_t fpu_vcpu_area_bytes(void);
/* This CPU stops running v: its state, if live here, goes to its area, which
 * is then up to date for snapshots and for another CPU. */
void fpu_vcpu_put(struct vcpu *v);
/* Around each guest entry: make v's state live, and its XCR0. */
void fpu_enter(struct vcpu *v);
void fpu_exit(struct vcpu *v);
/* The guest's XSETBV: false if it must get #GP. */
bool fpu_guest_xsetbv(struct vcpu *v, uint32_t index, uint64_t value);
/* The guest's XMM register reg (16 bytes) or MMX register reg (8 bytes, the
 * rest zero), for instruction emulation: through v's area, its state taken
 * off this CPU first. Touching an MMX register is an MMX instruction's:
 * x87 TOP becomes 0 and every tag valid. */
void fpu_guest_vec_read(struct vcpu *v, bool mmx, unsigned reg, uint8_t val[16]);
void fpu_guest_vec_write(struct vcpu *v, bool mmx, unsigned reg, const uint8_t val[16]);
