/* Checks of snapshot images and vCPU states (state_check.h). */
#include "virt/state_check.h"
#include "arch/x86/regs.h"
#include "lib/print.h"
#include "lib/string.h"

/* The legacy region and XSAVE header (SDM vol. 1, 13.4). */
#define FXSAVE_MXCSR 24
#define XSAVE_HEADER 512
#define XSAVE_HEADER_BYTES 64

bool snapshot_header_check(const void *blob, uint64_t size, const struct vm_saved_state **state,
			   char *err, size_t errlen)
{
	const struct snapshot_header *h = blob;
	const struct vm_saved_state *st;

	if (size < sizeof(*h) || memcmp(h->magic, SNAPSHOT_MAGIC, sizeof(h->magic)) != 0) {
		ksnprintf(err, errlen, "not a snapshot image (no %s header)", SNAPSHOT_MAGIC);
		return false;
	}
	if (h->version != SNAPSHOT_VERSION) {
		ksnprintf(err, errlen, "image version %u, this sprig reads %u", h->version,
			  SNAPSHOT_VERSION);
		return false;
	}
	if (h->vcpu_bytes != sizeof(struct vcpu_state)) {
		ksnprintf(err, errlen, "vCPU state of %u bytes, this sprig's is %zu", h->vcpu_bytes,
			  sizeof(struct vcpu_state));
		return false;
	}
	if (h->vcpus < 1 || h->vcpus > VM_VCPUS_MAX) {
		ksnprintf(err, errlen, "%u vCPUs (1 to %d)", h->vcpus, VM_VCPUS_MAX);
		return false;
	}
	if (h->state_bytes != vm_saved_state_bytes(h->vcpus)) {
		ksnprintf(err, errlen, "VM state of %u bytes, %zu for %u vCPUs", h->state_bytes,
			  vm_saved_state_bytes(h->vcpus), h->vcpus);
		return false;
	}
	if ((h->state_offset & 7) || h->state_offset < sizeof(*h) || h->state_offset > size ||
	    size - h->state_offset < h->state_bytes) {
		ksnprintf(err, errlen, "VM state at 0x%llx is unaligned or outside the %llu-byte image",
			  (unsigned long long)h->state_offset, (unsigned long long)size);
		return false;
	}
	if (!h->mem_bytes || (h->mem_bytes & (PAGE_SIZE - 1)) || h->mem_bytes > SNAPSHOT_MEM_MAX) {
		ksnprintf(err, errlen, "memory size 0x%llx is not whole pages up to 3 GiB",
			  (unsigned long long)h->mem_bytes);
		return false;
	}
	if ((h->memory_offset & (PAGE_SIZE - 1)) || h->memory_offset < sizeof(*h) ||
	    h->memory_offset > size || size - h->memory_offset < h->mem_bytes) {
		ksnprintf(err, errlen, "memory at 0x%llx is unaligned or outside the %llu-byte image",
			  (unsigned long long)h->memory_offset, (unsigned long long)size);
		return false;
	}
	if (h->state_offset < h->memory_offset + h->mem_bytes &&
	    h->memory_offset < h->state_offset + h->state_bytes) {
		ksnprintf(err, errlen, "VM state and memory overlap");
		return false;
	}
	st = (const void *)((const char *)blob + h->state_offset);
	if (st->nr_vcpus != h->vcpus) {
		ksnprintf(err, errlen, "the VM state holds %u vCPUs, the header says %u", st->nr_vcpus,
			  h->vcpus);
		return false;
	}
	*state = st;
	return true;
}

bool xcr0_valid(uint64_t xcr0, uint64_t allowed)
{
	if (!(xcr0 & XCR0_X87) || (xcr0 & ~allowed))
		return false;
	if ((xcr0 & XCR0_AVX) && !(xcr0 & XCR0_SSE))
		return false;
	if ((xcr0 & XCR0_AVX512) && ((xcr0 & XCR0_AVX512) != XCR0_AVX512 || !(xcr0 & XCR0_AVX)))
		return false;
	return true;
}

static uint64_t read_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* What XRSTOR (or FXRSTOR) of the area would fault on. */
static bool fpu_area_check(const struct vcpu_state *st, const struct fpu_limits *lim, char *err,
			   size_t errlen)
{
	uint32_t mxcsr;

	memcpy(&mxcsr, st->xsave + FXSAVE_MXCSR, sizeof(mxcsr));
	if (mxcsr & ~lim->mxcsr_mask) {
		ksnprintf(err, errlen, "MXCSR 0x%x sets bits outside its mask 0x%x", mxcsr,
			  lim->mxcsr_mask);
		return false;
	}
	if (!lim->xsave)
		return true;
	uint64_t xstate_bv = read_u64(st->xsave + XSAVE_HEADER);
	uint64_t xcomp_bv = read_u64(st->xsave + XSAVE_HEADER + 8);
	if (xstate_bv & ~lim->xcr0_allowed) {
		ksnprintf(err, errlen, "XSTATE_BV 0x%llx names components outside XCR0 0x%llx",
			  (unsigned long long)xstate_bv, (unsigned long long)lim->xcr0_allowed);
		return false;
	}
	/* sprig saves in the standard form: XCOMP_BV and the rest are zero. */
	for (unsigned i = 8; i < XSAVE_HEADER_BYTES; i++) {
		if (st->xsave[XSAVE_HEADER + i]) {
			ksnprintf(err, errlen, "XSAVE header byte %u is not zero (XCOMP_BV 0x%llx)", i,
				  (unsigned long long)xcomp_bv);
			return false;
		}
	}
	return true;
}

/* The run loop's flags: a halted vCPU waits for an interrupt, an AP after
 * INIT for a start-up IPI (lapic_accept_start: never the BSP), not both
 * (INIT ends a halt). */
static bool run_flags_check(const struct vcpu_state *st, char *err, size_t errlen)
{
	if (st->halted > 1 || st->wait_sipi > 1 || st->reserved[0] || st->reserved[1]) {
		ksnprintf(err, errlen, "run flags halted %u, wait_sipi %u, reserved 0x%x", st->halted,
			  st->wait_sipi, st->reserved[0] | st->reserved[1] << 8);
		return false;
	}
	if (st->halted && st->wait_sipi) {
		ksnprintf(err, errlen, "halted and waiting for a start-up IPI at once");
		return false;
	}
	if (st->wait_sipi && (st->apic.apic_base & LAPIC_BASE_BSP)) {
		ksnprintf(err, errlen, "the BSP waits for a start-up IPI");
		return false;
	}
	return true;
}

bool vcpu_state_check_common(const struct vcpu_state *st, const char *backend_name,
			     const struct fpu_limits *lim, const struct apic_limits *apic,
			     char *err, size_t errlen)
{
	if (strnlen(st->backend, sizeof(st->backend)) == sizeof(st->backend) ||
	    strcmp(st->backend, backend_name) != 0) {
		ksnprintf(err, errlen, "the state is from the '%.8s' backend, this CPU runs %s",
			  st->backend, backend_name);
		return false;
	}
	if (st->arch_bytes > VCPU_ARCH_STATE_MAX) {
		ksnprintf(err, errlen, "backend state of %u bytes (at most %d)", st->arch_bytes,
			  VCPU_ARCH_STATE_MAX);
		return false;
	}
	if (st->xsave_bytes != lim->area_bytes) {
		ksnprintf(err, errlen, "the FPU area is %u bytes, here %u", st->xsave_bytes,
			  lim->area_bytes);
		return false;
	}
	if (!xcr0_valid(st->xcr0, lim->xsave ? lim->xcr0_allowed : XCR0_X87)) {
		ksnprintf(err, errlen, "XCR0 0x%llx is not one XSETBV accepts here (allowed 0x%llx)",
			  (unsigned long long)st->xcr0, (unsigned long long)lim->xcr0_allowed);
		return false;
	}
	if (!fpu_area_check(st, lim, err, errlen))
		return false;
	if (st->apic.initial_id != apic->apic_id) {
		ksnprintf(err, errlen, "APIC initial ID 0x%x, this vCPU's is 0x%x", st->apic.initial_id,
			  apic->apic_id);
		return false;
	}
	/* IA32_APIC_BASE.BSP is read-only: vCPU 0's APIC alone has it. */
	if (!(st->apic.apic_base & LAPIC_BASE_BSP) != (apic->apic_id != 0)) {
		ksnprintf(err, errlen, "APIC base 0x%llx: the BSP flag belongs to APIC ID 0 alone",
			  (unsigned long long)st->apic.apic_base);
		return false;
	}
	return run_flags_check(st, err, errlen) &&
	       lapic_state_check(&st->apic, apic->phys_bits, err, errlen);
}

bool vm_state_check_common(const struct vm_saved_state *st, const char *backend_name,
			   const struct fpu_limits *lim, unsigned phys_bits, char *err,
			   size_t errlen)
{
	if (st->nr_vcpus < 1 || st->nr_vcpus > VM_VCPUS_MAX || st->reserved) {
		ksnprintf(err, errlen, "%u vCPUs (1 to %d), reserved 0x%x", st->nr_vcpus,
			  VM_VCPUS_MAX, st->reserved);
		return false;
	}
	if (st->uart.len >= sizeof(st->uart.line)) {
		ksnprintf(err, errlen, "UART line length %u beyond its %zu-byte buffer", st->uart.len,
			  sizeof(st->uart.line));
		return false;
	}
	uint8_t overflow;
	memcpy(&overflow, &st->lost.overflow, 1);
	if (st->lost.count > VM_LOST_MAX || overflow > 1) {
		ksnprintf(err, errlen, "%u lost ranges (at most %d), overflow flag %u", st->lost.count,
			  VM_LOST_MAX, overflow);
		return false;
	}
	for (unsigned i = 0; i < st->nr_vcpus; i++) {
		struct apic_limits apic = { .phys_bits = phys_bits, .apic_id = i };
		char why[144];

		if (!vcpu_state_check_common(&st->vcpu[i], backend_name, lim, &apic, why,
					     sizeof(why))) {
			ksnprintf(err, errlen, "vCPU %u: %s", i, why);
			return false;
		}
	}
	return true;
}
