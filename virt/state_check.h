/* Checks of what a snapshot image or a clone hands to a new VM, made before
 * any of it reaches the CPU or sprig's own structures: the image header
 * against the blob, the records of the state (virt/state_record.h), and the
 * record types of the VM's and vCPUs' own state (the vCPU count, COM1's
 * line, the lost ranges; each vCPU's XCR0, XSAVE area and run-loop flags).
 * The backend's architectural state is checked by svm/saved_state.c or
 * vmx/saved_state.c, each device's by its model. Pure code, built for the
 * host and fuzzed (tests/fuzz). */
#pragma once
#include "virt/snapshot.h"

/* What this machine's FPU switching accepts. */
struct fpu_limits {
	bool xsave;            /* areas are XSAVE images (with a header), else FXSAVE */
	uint32_t area_bytes;   /* a vCPU's area */
	uint64_t xcr0_allowed; /* XCR0 bits a guest may set; XCR0 during XRSTOR */
	uint32_t mxcsr_mask;   /* MXCSR bits the CPU implements */
};

/* The largest memory a snapshot may describe (vm create's mem= limit). */
#define SNAPSHOT_MEM_MAX (3ull << 30)

/* The most a VM's state may take: VM_VCPUS_MAX vCPUs' records (their XSAVE
 * areas the largest part) and the chipset's. */
#define SNAPSHOT_STATE_MAX (2u << 20)

/* The header of an image blob of size bytes: magic, version, the vCPU
 * count, sizes and offsets inside the blob. False with a reason. */
bool snapshot_header_check(const void *blob, uint64_t size, char *err, size_t errlen);
/* Every record of a VM state of len bytes (virt/state_record.h): known ids,
 * versions and lengths, the VM's record first, each per-vCPU record once for
 * each of its vCPUs, nothing twice, each record's own check passed against
 * limits (the vCPU count from the VM's record). *nr_vcpus: the count. False
 * with a reason naming the record and the field. */
bool vm_records_check(const void *state, uint32_t len, const struct record_limits *limits,
		      unsigned *nr_vcpus, char *err, size_t errlen);
/* The record type of that id this build reads, or NULL. */
const struct record_type *record_type_of(uint32_t id);
/* XCR0 as XSETBV accepts it (SDM vol. 1, 13.3): x87 set, AVX with SSE,
 * AVX-512 whole and with AVX, nothing outside allowed. */
bool xcr0_valid(uint64_t xcr0, uint64_t allowed);
