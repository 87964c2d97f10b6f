/* virt/state_check.c, svm/saved_state.c and vmx/saved_state.c: what sprig
 * checks of a snapshot image before any of it is used. Two input forms:
 *  - a whole image blob (it starts with the magic "SPRIGSNP"): the header is
 *    checked, then the VM state it points at, for both backends;
 *  - otherwise, patches to a valid flat state of two vCPUs, the AP waiting
 *    for its start-up IPI (tests/unit/flat_state.c): byte 0 picks the
 *    backend, then records [u16 offset][u8 len][bytes] overwrite the struct
 *    vm_saved_state, so that mutations reach the register checks instead of
 *    dying at the magic.
 * A state that passes must be one sprig can load without reaching outside
 * its buffers: the properties below are what vm_state_load relies on. An
 * accepted APIC state is also loaded into the model (dev/lapic.c) and run a
 * little: it must still pass afterwards, as every state the model reaches
 * must. */
#include "arch/x86/regs.h"
#include "svm/saved_state.h"
#include "tests/fuzz/fuzz.h"
#include "tests/unit/flat_state.h"
#include "virt/state_check.h"
#include <stdint.h>
#include <string.h>

#define AREA 832

static const struct fpu_limits fpu_lim = {
	.xsave = true, .area_bytes = AREA, .xcr0_allowed = 7, .mxcsr_mask = 0xffff,
};
#define PHYS_BITS 48
#define PATCHED_VCPUS 2
static const struct svm_state_limits svm_lim = {
	.phys_bits = 48, .cr4_allowed = CR4_BASE_BITS | CR4_OSXSAVE | CR4_FSGSBASE,
	.efer_allowed = (1u << 0) | (1u << 8) | (1u << 10) | (1u << 11), .va_bits = 57,
};
static const struct vmx_state_limits vmx_lim = {
	.phys_bits = 40, .cr0_fixed0 = 0x80000021, .cr0_fixed1 = 0xffffffff,
	.cr4_fixed0 = 0x2000, .cr4_fixed1 = 0x3767ff, .cr4_allowed = CR4_BASE_BITS | CR4_OSXSAVE,
	.efer_allowed = (1u << 0) | (1u << 8) | (1u << 10) | (1u << 11), .misc = 0x1c0, .va_bits = 48,
};

/* Load an accepted APIC state, let its timer run, take its interrupts, read
 * every register: the model stays inside what lapic_state_check accepts. */
static void run_apic(const struct lapic_state *s, unsigned index)
{
	static struct lapic a;
	struct lapic_state after;
	char err[160];
	uint64_t now, v;
	int vector;

	lapic_init(&a, NULL, index, index == 0, 2000000);
	lapic_state_load(&a, s);
	lapic_state_save(&a, &after);
	FUZZ_ASSERT(memcmp(s, &after, sizeof(after)) == 0);
	now = lapic_timer_next(&a);
	if (!now)
		now = s->timer_base + 100000;
	for (int i = 0; i < 3; i++) {
		lapic_timer_update(&a, now);
		if ((vector = lapic_pending_irq(&a)) >= 0) {
			FUZZ_ASSERT(vector >= 16);
			lapic_ack_irq(&a, (uint8_t)vector);
		}
		for (uint32_t msr = LAPIC_X2APIC_MSR_FIRST; msr <= LAPIC_X2APIC_MSR_LAST; msr++)
			lapic_msr_read(&a, msr, &v, now);
		for (unsigned off = 0; off < 0x400; off += 16)
			lapic_mmio_read(&a, off, 4, now);
		lapic_msr_write(&a, 0x80b, 0, now); /* EOI */
		lapic_mmio_write(&a, LAPIC_REG_EOI, 4, 0, now);
		now = lapic_timer_next(&a) ? lapic_timer_next(&a) : now + 1;
	}
	lapic_state_save(&a, &after);
	if (!lapic_state_check(&after, PHYS_BITS, err, sizeof(err))) {
		fprintf(stderr, "run_apic: the model left an accepted state for a refused one: %s\n", err);
		FUZZ_ASSERT(0);
	}
}

/* One vCPU of a state the VM checks accepted, or any bytes for the backend
 * checks. */
static void check_vcpu(const struct vcpu_state *st, unsigned index, bool accepted)
{
	char err[160];
	bool svm = strncmp(st->backend, "svm", sizeof(st->backend)) == 0;

	if (accepted) {
		FUZZ_ASSERT(st->xsave_bytes == AREA && st->arch_bytes <= VCPU_ARCH_STATE_MAX);
		FUZZ_ASSERT(xcr0_valid(st->xcr0, fpu_lim.xcr0_allowed));
		uint64_t xstate_bv;
		memcpy(&xstate_bv, st->xsave + 512, 8);
		FUZZ_ASSERT(!(xstate_bv & ~fpu_lim.xcr0_allowed));
		FUZZ_ASSERT(st->apic.initial_id == index && !(st->apic.apic_base >> PHYS_BITS));
		FUZZ_ASSERT(!(st->apic.apic_base & LAPIC_BASE_BSP) == (index != 0));
		FUZZ_ASSERT(st->halted + st->wait_sipi <= 1 && !(st->wait_sipi && index == 0));
		FUZZ_ASSERT(!(st->apic.isr[0] & 0xffff) && !(st->apic.irr[0] & 0xffff));
		run_apic(&st->apic, index);
	}
	/* The backend checks run on any bytes: they must never read past the
	 * state or misbehave, whatever the common part said. */
	if (svm) {
		struct vmcb_save s;
		memcpy(&s, st->arch, sizeof(s));
		if (svm_saved_state_check(&s, &st->regs, &svm_lim, err, sizeof(err))) {
			FUZZ_ASSERT(!(s.cr0 >> 32) && !(s.dr7 >> 32) && x86_pat_valid(s.g_pat));
			FUZZ_ASSERT(!(st->regs.rflags & RFLAGS_RESERVED));
		}
	} else {
		struct vmx_saved_state s;
		memcpy(&s, st->arch, sizeof(s));
		if (vmx_saved_state_check(&s, &st->regs, &vmx_lim, err, sizeof(err))) {
			FUZZ_ASSERT((s.cr0 & 0x20) && (s.cr4 & 0x2000) && x86_pat_valid(s.pat));
			FUZZ_ASSERT(!(st->regs.rflags & RFLAGS_RESERVED) && s.activity <= 3);
		}
	}
}

/* st is vm_saved_state_bytes(n) long, n as its header or the patch form says. */
static void check_state(const struct vm_saved_state *st, unsigned n)
{
	char err[160] = "";
	bool svm = strncmp(st->vcpu[0].backend, "svm", sizeof(st->vcpu[0].backend)) == 0;
	bool ok = st->nr_vcpus == n &&
		  vm_state_check_common(st, svm ? "svm" : "vmx", &fpu_lim, PHYS_BITS, err, sizeof(err));

	if (ok) {
		FUZZ_ASSERT(st->nr_vcpus >= 1 && st->nr_vcpus <= VM_VCPUS_MAX);
		FUZZ_ASSERT(st->uart.len < sizeof(st->uart.line) && st->lost.count <= VM_LOST_MAX);
	} else {
		FUZZ_ASSERT(st->nr_vcpus != n || err[0]);
	}
	for (unsigned i = 0; i < n; i++)
		check_vcpu(&st->vcpu[i], i, ok);
	if (fuzz_verbose())
		printf("state %s, %u vCPUs: %s\n", st->vcpu[0].backend, n, ok ? "accepted" : err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static union {
		struct vm_saved_state st;
		uint8_t bytes[sizeof(struct vm_saved_state) + PATCHED_VCPUS * sizeof(struct vcpu_state)];
	} u;

	if (size >= 8 && memcmp(data, SNAPSHOT_MAGIC, 8) == 0) {
		/* A blob of exactly the input's size, 8-byte aligned as modules are. */
		uint8_t *blob = aligned_alloc(4096, (size + 4095) & ~(size_t)4095);
		const struct vm_saved_state *state;
		char err[160];

		memcpy(blob, data, size);
		if (snapshot_header_check(blob, size, &state, err, sizeof(err))) {
			const struct snapshot_header *h = (const void *)blob;
			FUZZ_ASSERT(h->vcpus >= 1 && h->vcpus <= VM_VCPUS_MAX);
			FUZZ_ASSERT(state->nr_vcpus == h->vcpus);
			FUZZ_ASSERT(h->state_offset + vm_saved_state_bytes(h->vcpus) <= size);
			FUZZ_ASSERT(h->memory_offset + h->mem_bytes <= size);
			FUZZ_ASSERT(h->mem_bytes <= SNAPSHOT_MEM_MAX && h->mem_bytes);
			check_state(state, h->vcpus);
		} else if (fuzz_verbose()) {
			printf("image: %s\n", err);
		}
		free(blob);
		return 0;
	}
	flat_vm_state(&u.st, PATCHED_VCPUS, size && (data[0] & 1) ? "vmx" : "svm", AREA, 0x100000);
	for (size_t i = 1; i + 3 <= size;) {
		size_t off = (data[i] | (size_t)data[i + 1] << 8) % sizeof(u), len = data[i + 2];
		i += 3;
		if (len > size - i)
			len = size - i;
		if (len > sizeof(u) - off)
			len = sizeof(u) - off;
		memcpy(u.bytes + off, data + i, len);
		i += len;
	}
	check_state(&u.st, PATCHED_VCPUS);
	return 0;
}
