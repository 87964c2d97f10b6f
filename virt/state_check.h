/* Checks of what a snapshot image or a clone hands to a new VM, made before
 * any of it reaches the CPU or sprig's own structures: the image header
 * against the blob, and the vendor-neutral part of a struct vm_saved_state (the
 * vCPU count, the emulated UART, the lost ranges; each vCPU's XCR0, XSAVE
 * area, local APIC and run-loop flags). The backend's architectural
 * state is checked by svm/saved_state.c or vmx/saved_state.c. Pure code,
 * built for the host and fuzzed (tests/fuzz). */
#pragma once
#include "virt/snapshot.h"

/* What this machine's FPU switching accepts. */
struct fpu_limits {
	bool xsave;            /* areas are XSAVE images (with a header), else FXSAVE */
	uint32_t area_bytes;   /* a vCPU's area */
	uint64_t xcr0_allowed; /* XCR0 bits a guest may set; XCR0 during XRSTOR */
	uint32_t mxcsr_mask;   /* MXCSR bits the CPU implements */
};

/* What the loading vCPU's local APIC takes (lapic_state_check). */
struct apic_limits {
	unsigned phys_bits; /* MAXPHYADDR: the APIC base lies below it */
	uint32_t apic_id;   /* the vCPU's own APIC ID: the saved initial ID */
};

/* The largest memory a snapshot may describe (vm create's mem= limit). */
#define SNAPSHOT_MEM_MAX (3ull << 30)

/* The header of a blob of size bytes: magic, version, the vCPU count, sizes
 * and offsets inside the blob. On success *state points at its VM state
 * (8-byte aligned, vm_saved_state_bytes(its nr_vcpus) long, the header's count).
 * False with a reason. */
bool snapshot_header_check(const void *blob, uint64_t size, const struct vm_saved_state **state,
			   char *err, size_t errlen);
/* The vendor-neutral fields of one vCPU's state, for a machine whose
 * backend is backend_name (st->backend must name it), the local APIC and
 * the run loop's flags included. False with a reason. */
bool vcpu_state_check_common(const struct vcpu_state *st, const char *backend_name,
			     const struct fpu_limits *lim, const struct apic_limits *apic,
			     char *err, size_t errlen);
/* The same for a VM's: its count (1 to VM_VCPUS_MAX: st must be that long),
 * UART and lost ranges, then each vCPU's, vCPU i with APIC ID i. */
bool vm_state_check_common(const struct vm_saved_state *st, const char *backend_name,
			   const struct fpu_limits *lim, unsigned phys_bits, char *err,
			   size_t errlen);
/* XCR0 as XSETBV accepts it (SDM vol. 1, 13.3): x87 set, AVX with SSE,
 * AVX-512 whole and with AVX, nothing outside allowed. */
bool xcr0_valid(uint64_t xcr0, uint64_t allowed);
