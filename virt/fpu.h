/* Guest FPU, SSE and AVX state. sprig itself is built with general registers
 * only, so the live FPU state always belongs to the last guest that ran: it is
 * saved and another vCPU's restored only when a different vCPU enters. */
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
/* Bytes of a vCPU's area, and the area brought up to date with the registers
 * (the state stays live in them until another vCPU enters): for snapshots. */
uint32_t fpu_vcpu_area_bytes(void);
void fpu_vcpu_sync(struct vcpu *v);
/* Around each guest entry: make v's state live, and its XCR0. */
void fpu_enter(struct vcpu *v);
void fpu_exit(struct vcpu *v);
/* The guest's XSETBV: false if it must get #GP. */
bool fpu_guest_xsetbv(struct vcpu *v, uint32_t index, uint64_t value);
