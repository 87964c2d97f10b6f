/* virt/state_check.c, virt/state_record.c, the device models' record checks,
 * svm/saved_state.c and vmx/saved_state.c: what sprig checks of a snapshot
 * image before any of it is used. Two input forms:
 *  - a whole image blob (it starts with the magic "SPRIGSNP"): the header is
 *    checked, then the records it points at;
 *  - otherwise, patches to the records of a valid flat VM of two vCPUs, the
 *    AP waiting for its start-up IPI (tests/unit/flat_state.c): byte 0 picks
 *    the backend, then records [u16 offset][u8 len][bytes] overwrite the
 *    records' bytes, so that mutations reach the checks of each record
 *    instead of dying at the magic.
 * A state that passes must be one sprig can load without reaching outside
 * its buffers: each accepted record is loaded into a fresh model of its type,
 * saved again (the same bytes), and an accepted local APIC is run a little:
 * it must still pass afterwards, as every state the model reaches must. */
#include "arch/x86/regs.h"
#include "svm/saved_state.h"
#include "tests/fuzz/fuzz.h"
#include "dev/testdev.h"
#include "tests/unit/flat_state.h"
#include "virt/state_check.h"
#include <stdint.h>
#include <string.h>

#define AREA 832
#define PHYS_BITS 48
#define PATCHED_VCPUS 2

static const struct fpu_limits fpu_lim = {
	.xsave = true, .area_bytes = AREA, .xcr0_allowed = 7, .mxcsr_mask = 0xffff,
};
static const struct svm_state_limits svm_lim = {
	.phys_bits = 48, .cr4_allowed = CR4_BASE_BITS | CR4_OSXSAVE | CR4_FSGSBASE,
	.efer_allowed = (1u << 0) | (1u << 8) | (1u << 10) | (1u << 11), .va_bits = 57,
};
static const struct vmx_state_limits vmx_lim = {
	.phys_bits = 40, .cr0_fixed0 = 0x80000021, .cr0_fixed1 = 0xffffffff,
	.cr4_fixed0 = 0x2000, .cr4_fixed1 = 0x3767ff, .cr4_allowed = CR4_BASE_BITS | CR4_OSXSAVE,
	.efer_allowed = (1u << 0) | (1u << 8) | (1u << 10) | (1u << 11), .misc = 0x1c0, .va_bits = 48,
};

/* The backend checks run on any bytes the common part passed. */
static bool svm_check(const void *arch, size_t len, const struct vcpu_regs *regs, char *err,
		      size_t errlen)
{
	struct svm_saved_state s;

	if (len != sizeof(s))
		return false;
	memcpy(&s, arch, sizeof(s));
	if (!svm_saved_state_check(&s, regs, &svm_lim, err, errlen))
		return false;
	FUZZ_ASSERT(!(s.save.cr0 >> 32) && !(s.save.dr7 >> 32) && x86_pat_valid(s.save.g_pat));
	FUZZ_ASSERT(s.nmi_masked <= 1 && !(s.int_state & ~INT_STATE_SHADOW));
	FUZZ_ASSERT(!(regs->rflags & RFLAGS_RESERVED));
	return true;
}

static bool vmx_check(const void *arch, size_t len, const struct vcpu_regs *regs, char *err,
		      size_t errlen)
{
	struct vmx_saved_state s;

	if (len != sizeof(s))
		return false;
	memcpy(&s, arch, sizeof(s));
	if (!vmx_saved_state_check(&s, regs, &vmx_lim, err, errlen))
		return false;
	FUZZ_ASSERT((s.cr0 & 0x20) && (s.cr4 & 0x2000) && x86_pat_valid(s.pat));
	FUZZ_ASSERT(!(regs->rflags & RFLAGS_RESERVED) && s.activity <= 3);
	return true;
}

/* Let an accepted APIC's timer run, take its interrupts, read every register:
 * the model stays inside what its record's check accepts. */
static void run_apic(struct lapic *a, const struct record_limits *lim)
{
	static uint8_t rec[4096];
	struct field_io io;
	const void *model;
	char err[160];
	uint64_t now = lapic_timer_next(a) ? lapic_timer_next(a) : a->timer_base + 100000, v;
	int vector;

	for (int i = 0; i < 3; i++) {
		lapic_timer_update(a, now);
		if ((vector = lapic_pending_irq(a)) >= 0) {
			FUZZ_ASSERT(vector >= 16);
			lapic_ack_irq(a, (uint8_t)vector);
		}
		for (uint32_t msr = LAPIC_X2APIC_MSR_FIRST; msr <= LAPIC_X2APIC_MSR_LAST; msr++)
			lapic_msr_read(a, msr, &v, now);
		for (unsigned off = 0; off < 0x400; off += 16)
			lapic_mmio_read(a, off, 4, now);
		lapic_msr_write(a, 0x80b, 0, now); /* EOI */
		lapic_mmio_write(a, LAPIC_REG_EOI, 4, 0, now);
		now = lapic_timer_next(a) ? lapic_timer_next(a) : now + 1;
	}
	io = field_saver(rec, sizeof(rec));
	lapic_record.fields(a, &io);
	struct record_header h = { .id = REC_LAPIC, .version = lapic_record.version,
				   .instance = (uint16_t)lim->instance, .length = io.pos };
	if (!record_check(&lapic_record, &h, rec, lim, &model, err, sizeof(err))) {
		fprintf(stderr, "run_apic: the model left an accepted state for a refused one: %s\n", err);
		FUZZ_ASSERT(0);
	}
}

/* Load each record of an accepted state into a fresh model: it saves back
 * to the same bytes. */
static void reload(const uint8_t *state, uint32_t len, const struct record_limits *base)
{
	static uint8_t model[RECORD_MODEL_MAX] __attribute__((aligned(64)));
	static uint8_t again[RECORD_MODEL_MAX + TESTDEV_MMIO_SIZE];
	static uint8_t testdev_window[TESTDEV_MMIO_SIZE];
	const struct record_header *h;
	const void *payload;
	uint32_t pos = 0;
	char err[160];

	while (record_next(state, len, &pos, &h, &payload, err, sizeof(err))) {
		const struct record_type *t = record_type_of(h->id);
		struct record_limits lim = *base;
		struct field_io io = field_saver(again, sizeof(again));

		FUZZ_ASSERT(t && h->length <= sizeof(again));
		memset(model, 0, t->model_bytes);
		if (h->id == REC_LAPIC)
			lapic_init((struct lapic *)model, NULL, h->instance, !h->instance, 2000000);
		if (h->id == REC_TESTDEV)
			((struct testdev *)model)->iomem = testdev_window;
		record_load(t, payload, h->length, model);
		t->fields(model, &io);
		FUZZ_ASSERT(io.pos == h->length && memcmp(again, payload, h->length) == 0);
		if (h->id == REC_LAPIC) {
			lim.instance = h->instance;
			run_apic((struct lapic *)model, &lim);
		}
	}
}

static void check_state(const uint8_t *state, uint32_t len, bool svm)
{
	struct record_limits lim = {
		.mem_bytes = 2 << 20, .phys_bits = PHYS_BITS, .fpu = &fpu_lim,
		.backend = svm ? "svm" : "vmx", .arch_check = svm ? svm_check : vmx_check,
	};
	char err[160] = "";
	unsigned n = 0;
	bool ok = vm_records_check(state, len, &lim, &n, err, sizeof(err));

	if (ok) {
		FUZZ_ASSERT(n >= 1 && n <= VM_VCPUS_MAX);
		lim.nr_vcpus = n;
		reload(state, len, &lim);
	} else {
		FUZZ_ASSERT(err[0]);
	}
	if (fuzz_verbose())
		printf("state %s, %u vCPUs: %s\n", lim.backend, n, ok ? "accepted" : err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct flat_vm f;
	static uint8_t recs[PATCHED_VCPUS * 10240 + 16384] __attribute__((aligned(8)));
	uint32_t len;

	if (size >= 8 && memcmp(data, SNAPSHOT_MAGIC, 8) == 0) {
		/* A blob of exactly the input's size, page-aligned as modules are. */
		uint8_t *blob = aligned_alloc(4096, (size + 4095) & ~(size_t)4095);
		char err[160];

		memcpy(blob, data, size);
		if (snapshot_header_check(blob, size, err, sizeof(err))) {
			const struct snapshot_header *h = (const void *)blob;

			FUZZ_ASSERT(h->vcpus >= 1 && h->vcpus <= VM_VCPUS_MAX);
			FUZZ_ASSERT(h->state_offset + h->state_bytes <= size && !(h->state_offset & 7));
			FUZZ_ASSERT(h->memory_offset + h->mem_bytes <= size);
			FUZZ_ASSERT(h->mem_bytes <= SNAPSHOT_MEM_MAX && h->mem_bytes);
			check_state(blob + h->state_offset, h->state_bytes, true);
			check_state(blob + h->state_offset, h->state_bytes, false);
		} else if (fuzz_verbose()) {
			printf("image: %s\n", err);
		}
		free(blob);
		return 0;
	}
	flat_vm(&f, PATCHED_VCPUS, size && (data[0] & 1) ? "vmx" : "svm", AREA, 0x100000, 2 << 20);
	len = flat_vm_records(&f, recs, sizeof(recs));
	FUZZ_ASSERT(len);
	for (size_t i = 1; i + 3 <= size;) {
		size_t off = (data[i] | (size_t)data[i + 1] << 8) % len, n = data[i + 2];
		i += 3;
		if (n > size - i)
			n = size - i;
		if (n > len - off)
			n = len - off;
		memcpy(recs + off, data + i, n);
		i += n;
	}
	check_state(recs, len, !(size && (data[0] & 1)));
	return 0;
}
