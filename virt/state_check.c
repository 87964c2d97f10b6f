/* Checks of snapshot images and vCPU states (state_check.h). */
#include "virt/state_check.h"
#include "arch/x86/msr.h"
#include "arch/x86/regs.h"
#include "dev/acpi_pm.h"
#include "dev/fwcfg.h"
#include "dev/ioapic.h"
#include "dev/pci.h"
#include "dev/pic.h"
#include "dev/pit.h"
#include "dev/rtc.h"
#include "virt/kvm_pv.h"
#include "dev/testdev.h"
#include "dev/uart16550.h"
#include "virt/msr_policy.h"
#include "lib/print.h"
#include "lib/string.h"

/* The legacy region and XSAVE header (SDM vol. 1, 13.4). */
#define FXSAVE_MXCSR 24
#define XSAVE_HEADER 512
#define XSAVE_HEADER_BYTES 64

bool snapshot_header_check(const void *blob, uint64_t size, char *err, size_t errlen)
{
	const struct snapshot_header *h = blob;

	if (size < sizeof(*h) || memcmp(h->magic, SNAPSHOT_MAGIC, sizeof(h->magic)) != 0) {
		ksnprintf(err, errlen, "not a snapshot image (no %s header)", SNAPSHOT_MAGIC);
		return false;
	}
	if (h->version != SNAPSHOT_VERSION) {
		ksnprintf(err, errlen, "image version %u, this sprig reads %u", h->version,
			  SNAPSHOT_VERSION);
		return false;
	}
	if (h->vcpus < 1 || h->vcpus > VM_VCPUS_MAX || h->reserved) {
		ksnprintf(err, errlen, "%u vCPUs (1 to %d), reserved 0x%x", h->vcpus, VM_VCPUS_MAX,
			  h->reserved);
		return false;
	}
	if (!h->state_bytes || h->state_bytes > SNAPSHOT_STATE_MAX || (h->state_offset & 7) ||
	    h->state_offset < sizeof(*h) || h->state_offset > size ||
	    size - h->state_offset < h->state_bytes) {
		ksnprintf(err, errlen, "VM state of %u bytes at 0x%llx is unaligned, over %u bytes or "
			  "outside the %llu-byte image", h->state_bytes,
			  (unsigned long long)h->state_offset, SNAPSHOT_STATE_MAX,
			  (unsigned long long)size);
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
static bool run_flags_check(const struct vcpu_state *st, unsigned index, char *err, size_t errlen)
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
	if (st->wait_sipi && index == 0) {
		ksnprintf(err, errlen, "the BSP waits for a start-up IPI");
		return false;
	}
	return true;
}

static bool cpu_check(const void *model, const struct record_limits *lim, char *err,
		      size_t errlen)
{
	const struct vcpu_state *st = model;
	const struct fpu_limits *fpu = lim->fpu;

	if (strnlen(st->backend, sizeof(st->backend)) == sizeof(st->backend) ||
	    strcmp(st->backend, lim->backend) != 0) {
		ksnprintf(err, errlen, "the state is from the '%.8s' backend, this CPU runs %s",
			  st->backend, lim->backend);
		return false;
	}
	if (st->arch_bytes > VCPU_ARCH_STATE_MAX) {
		ksnprintf(err, errlen, "backend state of %u bytes (at most %d)", st->arch_bytes,
			  VCPU_ARCH_STATE_MAX);
		return false;
	}
	if (st->xsave_bytes != fpu->area_bytes) {
		ksnprintf(err, errlen, "the FPU area is %u bytes, here %u", st->xsave_bytes,
			  fpu->area_bytes);
		return false;
	}
	/* MOV to DR6 raises #GP for bits 63:32 (DR0-DR3 take any address). */
	if (st->dr6 >> 32) {
		ksnprintf(err, errlen, "DR6 0x%llx: bits 63:32 set", (unsigned long long)st->dr6);
		return false;
	}
	if (!xcr0_valid(st->xcr0, fpu->xsave ? fpu->xcr0_allowed : XCR0_X87)) {
		ksnprintf(err, errlen, "XCR0 0x%llx is not one XSETBV accepts here (allowed 0x%llx)",
			  (unsigned long long)st->xcr0, (unsigned long long)fpu->xcr0_allowed);
		return false;
	}
	return fpu_area_check(st, fpu, err, errlen) &&
	       run_flags_check(st, lim->instance, err, errlen) &&
	       lim->arch_check(st->arch, st->arch_bytes, &st->regs, err, errlen);
}

static void cpu_fields(void *model, struct field_io *io)
{
	struct vcpu_state *st = model;

	FIELD(io, st->backend);
	FIELD(io, st->regs);
	FIELD(io, st->xcr0);
	FIELD(io, st->guest_tsc);
	FIELD(io, st->db);
	FIELD(io, st->dr6);
	FIELD(io, st->cr2);
	FIELD(io, st->halted);
	FIELD(io, st->wait_sipi);
	FIELD(io, st->reserved);
	FIELD(io, st->xsave_bytes);
	FIELD(io, st->arch_bytes);
	FIELD(io, st->xsave);
	FIELD(io, st->arch);
}

/* Version 2: each backend's part holds the event on its way into the guest,
 * the interrupt shadow and NMI blocking (svm/ and vmx/saved_state.h).
 * Version 3: DR0-DR3, and VMX's DR6 and CR2, which the control block does
 * not hold (virt/live_regs.h). */
const struct record_type cpu_record = {
	.id = REC_CPU, .version = 3, .per_vcpu = true, .name = "cpu",
	.model_bytes = sizeof(struct vcpu_state), .fields = cpu_fields, .check = cpu_check,
};

static bool vm_saved_check(const void *model, const struct record_limits *lim, char *err,
			   size_t errlen)
{
	const struct vm_saved *st = model;

	(void)lim;
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
	if (st->lost.count > VM_LOST_MAX) {
		ksnprintf(err, errlen, "%u lost ranges (at most %d)", st->lost.count, VM_LOST_MAX);
		return false;
	}
	return true;
}

static void vm_saved_fields(void *model, struct field_io *io)
{
	struct vm_saved *st = model;

	FIELD(io, st->nr_vcpus);
	FIELD(io, st->reserved);
	FIELD(io, st->uart);
	FIELD(io, st->lost.range);
	FIELD(io, st->lost.count);
	FIELD_BOOL(io, st->lost.overflow);
	FIELD(io, st->pvclock_wall_msr);
}

const struct record_type vm_record = {
	.id = REC_VM, .version = 1, .name = "vm", .model_bytes = sizeof(struct vm_saved),
	.fields = vm_saved_fields, .check = vm_saved_check,
};

/* The MSR values are the guest's as WRMSR took them: sprig checks the gpa
 * each time it writes the clock structure, the steal-time record or the PV
 * EOI word, as at the guest's write. Version 2 added MSR_KVM_STEAL_TIME,
 * version 3 MSR_KVM_PV_EOI_EN. */
static bool msrs_check(const void *model, const struct record_limits *lim, char *err,
		       size_t errlen)
{
	const struct vcpu_msrs *m = model;

	(void)lim;
	if ((m->misc_enable ^ MISC_ENABLE_RESET) & (MISC_ENABLE_BTS_UNAVAIL | MISC_ENABLE_PEBS_UNAVAIL)) {
		ksnprintf(err, errlen, "misc_enable 0x%llx changes BTS/PEBS_UNAVAIL",
			  (unsigned long long)m->misc_enable);
		return false;
	}
	if (m->pvclock_msr & 6) {
		ksnprintf(err, errlen, "pvclock MSR 0x%llx: structure not 4-byte aligned",
			  (unsigned long long)m->pvclock_msr);
		return false;
	}
	/* The machine-check MSRs hold only what a guest's WRMSR could leave. */
	for (uint32_t msr = MSR_MCG_CTL; msr < MSR_MC0_CTL + 4 * MCE_BANKS; msr++) {
		struct mce_msrs mce = m->mce;
		const uint64_t *slot = mce_msr_slot(&mce, msr);
		struct msr_guest g = { 0 };
		uint64_t store;
		const char *why;

		if (slot && (why = msr_check_write(msr, *slot, &g, &store))) {
			ksnprintf(err, errlen, "MSR 0x%x = 0x%llx: %s", msr,
				  (unsigned long long)*slot, why);
			return false;
		}
	}
	if (m->steal_time_msr & KVM_STEAL_RESERVED_MASK) {
		ksnprintf(err, errlen, "steal-time MSR 0x%llx: record not 64-byte aligned",
			  (unsigned long long)m->steal_time_msr);
		return false;
	}
	if (m->pv_eoi_msr & KVM_PV_EOI_RESERVED_MASK) {
		ksnprintf(err, errlen, "PV EOI MSR 0x%llx: word not 4-byte aligned",
			  (unsigned long long)m->pv_eoi_msr);
		return false;
	}
	return true;
}

static void msrs_fields(void *model, struct field_io *io)
{
	struct vcpu_msrs *m = model;

	FIELD(io, m->pvclock_msr);
	FIELD(io, m->pvclock_version);
	FIELD(io, m->tsc_aux);
	FIELD(io, m->misc_enable);
	FIELD(io, m->pkrs);
	FIELD(io, m->mce.mcg_status);
	FIELD(io, m->mce.mcg_ctl);
	FIELD(io, m->mce.bank);
	FIELD(io, m->steal_time_msr);
	FIELD(io, m->pv_eoi_msr);
}

const struct record_type msrs_record = {
	.id = REC_MSRS, .version = 3, .per_vcpu = true, .name = "msrs",
	.model_bytes = sizeof(struct vcpu_msrs), .fields = msrs_fields, .check = msrs_check,
};

/* Every record type this build reads, and which of them each vCPU has. */
static const struct record_type *const record_types[] = {
	&vm_record,     &cpu_record,  &lapic_record,  &msrs_record,       &ioapic_record,
	&pic_record,    &pit_record,  &rtc_record,    &acpi_pm_record,    &fwcfg_record,
	&pci_record,    &testdev_record, &uart16550_record,
};
#define RECORD_TYPES (sizeof(record_types) / sizeof(record_types[0]))

const struct record_type *record_type_of(uint32_t id)
{
	for (unsigned i = 0; i < RECORD_TYPES; i++)
		if (record_types[i]->id == id)
			return record_types[i];
	return NULL;
}

bool vm_records_check(const void *state, uint32_t len, const struct record_limits *limits,
		      unsigned *nr_vcpus, char *err, size_t errlen)
{
	struct record_limits lim = *limits;
	uint64_t seen[RECORD_TYPES][VM_VCPUS_MAX / 64] = { { 0 } };
	const struct record_header *h;
	const void *payload, *model;
	uint32_t pos = 0;
	unsigned n = 0;

	while (record_next(state, len, &pos, &h, &payload, err, errlen)) {
		const struct record_type *t = record_type_of(h->id);
		unsigned ti;

		if (!t) {
			ksnprintf(err, errlen, "unknown record id %u", h->id);
			return false;
		}
		for (ti = 0; record_types[ti] != t; ti++)
			;
		if (!n && h->id != REC_VM) {
			ksnprintf(err, errlen, "record %s before the VM's", t->name);
			return false;
		}
		if (t->per_vcpu ? h->instance >= n : h->instance != 0) {
			ksnprintf(err, errlen, "record %s of vCPU %u in a VM of %u", t->name,
				  h->instance, n);
			return false;
		}
		if (seen[ti][h->instance / 64] & (1ull << (h->instance % 64))) {
			ksnprintf(err, errlen, "record %s %u twice", t->name, h->instance);
			return false;
		}
		seen[ti][h->instance / 64] |= 1ull << (h->instance % 64);
		lim.instance = h->instance;
		if (!record_check(t, h, payload, &lim, &model, err, errlen))
			return false;
		if (h->id == REC_VM)
			lim.nr_vcpus = n = ((const struct vm_saved *)model)->nr_vcpus;
	}
	if (err[0])
		return false;
	if (!n) {
		ksnprintf(err, errlen, "no VM record");
		return false;
	}
	for (unsigned ti = 0; ti < RECORD_TYPES; ti++)
		for (unsigned i = 0; record_types[ti]->per_vcpu && i < n; i++)
			if (!(seen[ti][i / 64] & (1ull << (i % 64)))) {
				ksnprintf(err, errlen, "no record %s for vCPU %u", record_types[ti]->name,
					  i);
				return false;
			}
	*nr_vcpus = n;
	return true;
}
