/* The checks of snapshot images and VM states (virt/state_check.c,
 * svm/saved_state.c, vmx/saved_state.c): a flat starting state passes, and
 * each broken field is refused with its own reason. */
#include "check.h"
#include "flat_state.h"
#include "arch/x86/cpu.h"
#include "arch/x86/regs.h"
#include "svm/saved_state.h"
#include "virt/state_check.h"
#include <stdlib.h>
#include <string.h>

#define AREA 832

static const struct svm_state_limits svm_lim = {
	.phys_bits = 48, .cr4_allowed = CR4_BASE_BITS | CR4_OSXSAVE | CR4_FSGSBASE,
	.efer_allowed = EFER_SCE | EFER_LME | EFER_LMA | EFER_NXE, .va_bits = 48,
};

/* Bochs' corei7_skylake_x: CR0 fixed-0 PE NE PG, CR4 fixed-0 VMXE; HLT,
 * shutdown and wait-for-SIPI activity states. */
static const struct vmx_state_limits vmx_lim = {
	.phys_bits = 40, .cr0_fixed0 = 0x80000021, .cr0_fixed1 = 0xffffffff,
	.cr4_fixed0 = 0x2000, .cr4_fixed1 = 0x3767ff, .cr4_allowed = CR4_BASE_BITS | CR4_OSXSAVE,
	.efer_allowed = EFER_SCE | EFER_LME | EFER_LMA | EFER_NXE, .misc = 0x1c0, .va_bits = 48,
};

static const struct fpu_limits fpu_lim = {
	.xsave = true, .area_bytes = AREA, .xcr0_allowed = 7, .mxcsr_mask = 0xffff,
};

static const struct apic_limits apic_lim = { .phys_bits = 46, .apic_id = 0 };

static char err[160];

static bool svm_ok(const struct vmcb_save *s, const struct vcpu_regs *r)
{
	err[0] = 0;
	return svm_saved_state_check(s, r, &svm_lim, err, sizeof(err));
}

static bool vmx_ok(const struct vmx_saved_state *s, const struct vcpu_regs *r)
{
	err[0] = 0;
	return vmx_saved_state_check(s, r, &vmx_lim, err, sizeof(err));
}

static const struct vcpu_regs flat_regs = { .rip = 0x100000, .rflags = RFLAGS_FIXED };

TEST(svm_state_flat_and_long_mode_pass)
{
	struct vmcb_save s;
	struct vcpu_regs r = flat_regs;

	flat_svm_state(&s);
	CHECK(svm_ok(&s, &r));
	s.cr0 |= CR0_PG;
	s.cr4 |= CR4_PAE;
	s.efer |= EFER_LME | EFER_LMA;
	s.cs.attrib = 0xa9b; /* L */
	r.rip = 0xffffffff80001000ull;
	CHECK(svm_ok(&s, &r));
}

/* Case i: break one field; its reason; NULL past the last. */
static const char *break_svm(unsigned i, struct vmcb_save *s, struct vcpu_regs *r)
{
	switch (i) {
	case 0: s->cr0 |= CR0_NW; return "CR0.NW set without CR0.CD";
	case 1: s->cr0 |= 1ull << 32; return "CR0 bits 63:32";
	case 2: s->cr0 = CR0_PG; return "CR0.PG set without CR0.PE";
	case 3: s->cr4 |= CR4_PKE; return "CR4 bits this CPU lacks";
	case 4: s->cr3 = 1ull << 40; return "CR3 bits beyond";
	case 5: s->dr6 |= 1ull << 40; return "DR6 bits 63:32";
	case 6: s->dr7 |= 1ull << 40; return "DR7 bits 63:32";
	case 7: s->efer |= 1ull << 15; return "EFER bits a guest may not set";
	case 8: s->efer |= EFER_LMA; return "EFER.LMA differs";
	case 9: s->efer |= EFER_LME | EFER_LMA; s->cr0 |= CR0_PG; return "long mode without CR4.PAE";
	case 10: s->efer |= EFER_LME | EFER_LMA; s->cr0 |= CR0_PG; s->cr4 |= CR4_PAE; s->cs.attrib = 0xe9b; return "CS.L and CS.D";
	case 11: s->g_pat = 0x02; return "G_PAT";
	case 12: r->rflags |= 1ull << 22; return "reserved RFLAGS";
	case 13: r->rflags = 0; return "reserved RFLAGS";
	case 14: r->rip = 1ull << 32; return "RIP outside";
	case 15: s->fs.base = 1ull << 47; return "non-canonical";
	case 16: s->lstar = 0x8000000000000000ull; return "non-canonical";
	case 17: s->idtr.limit = 0x10000; return "GDTR or IDTR limit";
	case 18: s->cpl = 4; return "CPL above 3";
	}
	(void)r;
	return NULL;
}

TEST(svm_state_each_broken_field_refused)
{
	const char *reason;

	for (unsigned i = 0;; i++) {
		struct vmcb_save s;
		struct vcpu_regs r = flat_regs;

		flat_svm_state(&s);
		if (!(reason = break_svm(i, &s, &r)))
			break;
		CHECK(!svm_ok(&s, &r));
		if (!strstr(err, reason))
			fprintf(stderr, "  case %u: '%s' lacks '%s'\n", i, err, reason);
		CHECK(strstr(err, reason) != NULL);
	}
}

TEST(vmx_state_flat_real_and_long_mode_pass)
{
	struct vmx_saved_state s;
	struct vcpu_regs r = flat_regs;

	flat_vmx_state(&s);
	CHECK(vmx_ok(&s, &r));
	/* Real mode, as an unrestricted guest may run it. */
	s.cr0 = CR0_ET | CR0_NE;
	for (int i = VMX_ES; i <= VMX_GS; i++) {
		s.selector[i] = 0x1000;
		s.base[i] = 0x10000;
		s.limit[i] = 0xffff;
		s.access[i] = 0x93;
	}
	s.access[VMX_CS] = 0x9b;
	r.rip = 0x7c00;
	CHECK(vmx_ok(&s, &r));
	/* 64-bit mode. */
	flat_vmx_state(&s);
	s.cr0 |= CR0_PG;
	s.cr4 |= CR4_PAE;
	s.efer = EFER_LME | EFER_LMA;
	s.access[VMX_CS] = 0xa09b;
	r.rip = 0xffffffff80001000ull;
	CHECK(vmx_ok(&s, &r));
	/* Halted, with an STI shadow elsewhere. */
	r = flat_regs;
	flat_vmx_state(&s);
	s.activity = 1;
	CHECK(vmx_ok(&s, &r));
	flat_vmx_state(&s);
	s.interruptibility = 1;
	r.rflags |= RFLAGS_IF;
	CHECK(vmx_ok(&s, &r));
}

/* Case i: break one field; its reason; NULL past the last. */
static const char *break_vmx(unsigned i, struct vmx_saved_state *s, struct vcpu_regs *r)
{
	switch (i) {
	case 0: s->cr0 &= ~CR0_NE; return "CR0 against the VMX fixed bits";
	case 1: s->cr0 |= 1ull << 32; return "CR0 against the VMX fixed bits";
	case 2: s->cr0 = CR0_PG | CR0_NE; return "CR0.PG set without CR0.PE";
	case 3: s->cr4 = 0; return "CR4 against the VMX fixed bits";
	case 4: s->cr4 |= CR4_PKE; return "CR4 against the VMX fixed bits";
	case 5: s->efer = EFER_LMA | EFER_LME; return "IA-32e mode without paging";
	case 6: s->cr3 = 1ull << 45; return "CR3 bits beyond";
	case 7: s->debugctl = 1ull << 5; return "IA32_DEBUGCTL";
	case 8: s->dr7 |= 1ull << 33; return "DR7 bits 63:32";
	case 9: s->sysenter_eip = 1ull << 50; return "SYSENTER";
	case 10: s->pat = ~0ull; return "IA32_PAT";
	case 11: s->efer = 1ull << 14; return "EFER bits a guest may not set";
	case 12: s->switched_msr[VMX_LSTAR] = 1ull << 60; return "KERNEL_GS_BASE, LSTAR or CSTAR";
	case 13: s->cr8 = 16; return "CR8 above 15";
	case 14: s->selector[VMX_DS] = 0x10000; return "selector above 0xffff";
	case 15: s->access[VMX_DS] |= 1u << 9; return "reserved access-rights bits";
	case 16: s->limit[VMX_SS] = 0x1000; return "limit and granularity disagree";
	case 17: s->base[VMX_FS] = 1ull << 47; return "base out of range";
	case 18: s->base[VMX_CS] = 1ull << 32; return "base out of range";
	case 19: s->selector[VMX_TR] = 4; return "TR selector points into the LDT";
	case 20: s->access[VMX_CS] = 0xc093 ^ 0x2; return "CS type is not an accessed code segment";
	case 21: s->access[VMX_CS] |= 3 << 5; return "CS DPL differs from SS.DPL";
	case 22: s->access[VMX_SS] = 0xc09b; return "SS type is not read/write data";
	case 23: s->access[VMX_DS] = 0xc092; return "DS type is not accessed";
	case 24: s->access[VMX_GS] = 0xc099; return "GS is an execute-only code segment";
	case 25: s->access[VMX_ES] = 0xc083; return "ES is a system segment";
	case 26: s->access[VMX_TR] = 0x89; return "TR is not a present busy TSS";
	case 27: s->access[VMX_LDTR] = 0x8b; return "LDTR is not a present LDT";
	case 28: s->gdtr_limit = 0x10000; return "GDTR or IDTR limit";
	case 29: s->idtr_base = 1ull << 50; return "non-canonical GDTR or IDTR";
	case 30: r->rip = 1ull << 33; return "RIP outside";
	case 31: r->rflags |= 1ull << 3; return "reserved RFLAGS";
	case 32: r->rflags |= RFLAGS_VM; return "virtual-8086";
	case 33: s->activity = 7; return "unknown activity state";
	case 34: s->activity = 1; s->access[VMX_SS] |= 3 << 5; s->access[VMX_CS] |= 3 << 5; return "HLT activity with SS.DPL not 0";
	case 35: s->interruptibility = 1u << 5; return "reserved interruptibility";
	case 36: s->interruptibility = 3; r->rflags |= RFLAGS_IF; return "blocking by STI and by MOV SS";
	case 37: s->interruptibility = 1; return "blocking by STI with RFLAGS.IF clear";
	case 38: s->interruptibility = 4; return "blocking by SMI";
	case 39: s->pending_dbg = 1u << 5; return "reserved pending-debug";
	case 40: s->interruptibility = 2; s->pending_dbg = 1u << 14; return "pending single step";
	case 41: s->cr0 |= CR0_PG; s->cr4 |= CR4_PAE; s->pdpte[2] = 0x3; return "a present PDPTE with reserved bits";
	}
	(void)r;
	return NULL;
}

TEST(vmx_state_each_broken_field_refused)
{
	const char *reason;

	for (unsigned i = 0;; i++) {
		struct vmx_saved_state s;
		struct vcpu_regs r = flat_regs;

		flat_vmx_state(&s);
		if (!(reason = break_vmx(i, &s, &r)))
			break;
		CHECK(!vmx_ok(&s, &r));
		if (!strstr(err, reason))
			fprintf(stderr, "  case %u: '%s' lacks '%s'\n", i, err, reason);
		CHECK(strstr(err, reason) != NULL);
	}
}

static bool common_ok(const struct vcpu_state *st)
{
	err[0] = 0;
	return vcpu_state_check_common(st, "svm", &fpu_lim, &apic_lim, err, sizeof(err));
}

TEST(vcpu_state_common_fields)
{
	static struct vcpu_state st;

	flat_vcpu_state(&st, "svm", AREA, 0x100000, 0);
	CHECK(common_ok(&st));
	st.xcr0 = 7;
	memcpy(st.xsave + 512, &(uint64_t){ 7 }, 8);
	CHECK(common_ok(&st));

	struct {
		const char *reason;
		size_t offset;  /* where to write value in the state */
		unsigned width;
		uint64_t value;
	} cases[] = {
		{ "backend", offsetof(struct vcpu_state, backend), 8, 0x7878787878787878ull },
		{ "backend", offsetof(struct vcpu_state, backend), 4, 0x00786d76 /* "vmx" */ },
		{ "backend state of", offsetof(struct vcpu_state, arch_bytes), 4, 4096 },
		{ "the FPU area is", offsetof(struct vcpu_state, xsave_bytes), 4, 4096 },
		{ "XCR0 0x0", offsetof(struct vcpu_state, xcr0), 8, 0 },
		{ "XCR0 0x5", offsetof(struct vcpu_state, xcr0), 8, 5 },
		{ "XCR0 0xe7", offsetof(struct vcpu_state, xcr0), 8, 0xe7 },
		{ "MXCSR", offsetof(struct vcpu_state, xsave) + 24, 4, 0x10000 },
		{ "XSTATE_BV", offsetof(struct vcpu_state, xsave) + 512, 8, 1ull << 9 },
		{ "XSAVE header byte 15", offsetof(struct vcpu_state, xsave) + 520, 8, 1ull << 63 },
		{ "XSAVE header byte 63", offsetof(struct vcpu_state, xsave) + 575, 1, 1 },
		{ "run flags halted 2", offsetof(struct vcpu_state, halted), 1, 2 },
		{ "wait_sipi 7", offsetof(struct vcpu_state, wait_sipi), 1, 7 },
		{ "reserved 0x100", offsetof(struct vcpu_state, reserved), 2, 0x100 },
		{ "the BSP waits for a start-up IPI", offsetof(struct vcpu_state, wait_sipi), 1, 1 },
		{ "halted and waiting", offsetof(struct vcpu_state, halted), 2, 0x101 },
		{ "the BSP flag belongs to APIC ID 0 alone", offsetof(struct vcpu_state, apic.apic_base),
		  8, 0xfee00800 },
		{ "APIC initial ID 0x1, this vCPU's is 0x0", offsetof(struct vcpu_state, apic.initial_id), 4, 1 },
		{ "APIC base 0xfee00901 sets reserved bits", offsetof(struct vcpu_state, apic.apic_base), 8,
		  0xfee00901 },
		{ "APIC base 0x4000fee00900 sets reserved bits (MAXPHYADDR 46)",
		  offsetof(struct vcpu_state, apic.apic_base), 8, 0x4000fee00900ull },
		{ "x2APIC mode (EXTD) without EN", offsetof(struct vcpu_state, apic.apic_base), 8, 0xfee00500 },
		{ "xAPIC ID 0x1 sets bits 23:0", offsetof(struct vcpu_state, apic.id), 4, 1 },
		{ "LVT LINT1 0x0 is unmasked", offsetof(struct vcpu_state, apic.lvt[LAPIC_LVT_LINT1]), 4, 0 },
		{ "IRR holds vector 2", offsetof(struct vcpu_state, apic.irr), 4, 4 },
		{ "TSC deadline 0x10 armed outside", offsetof(struct vcpu_state, apic.tsc_deadline), 8, 16 },
		{ "'timer armed' is 3", offsetof(struct vcpu_state, apic.timer_armed), 1, 3 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		flat_vcpu_state(&st, "svm", AREA, 0x100000, 0);
		memcpy((char *)&st + cases[i].offset, &cases[i].value, cases[i].width);
		CHECK(!common_ok(&st));
		if (!strstr(err, cases[i].reason))
			fprintf(stderr, "  case %zu: '%s' lacks '%s'\n", i, err, cases[i].reason);
		CHECK(strstr(err, cases[i].reason) != NULL);
	}
	/* Without XSAVE the area is FXSAVE's and XCR0 can only be x87. */
	struct fpu_limits fx = { .xsave = false, .area_bytes = 512, .mxcsr_mask = 0xffbf };
	flat_vcpu_state(&st, "svm", 512, 0x100000, 0);
	CHECK(vcpu_state_check_common(&st, "svm", &fx, &apic_lim, err, sizeof(err)));
	st.xcr0 = 3;
	CHECK(!vcpu_state_check_common(&st, "svm", &fx, &apic_lim, err, sizeof(err)));
	CHECK(xcr0_valid(0xe7, 0xe7) && !xcr0_valid(0x67, 0xe7) && !xcr0_valid(0xe3, 0xe7));
}

/* The flat state's APIC is lapic_init's, saved; an APIC in use passes too. */
TEST(vcpu_state_apic)
{
	static struct vcpu_state st;
	struct lapic a;
	struct lapic_state s;

	lapic_init(&a, NULL, 0, true, 2000000);
	lapic_state_save(&a, &s);
	flat_vcpu_state(&st, "svm", AREA, 0x100000, 0);
	CHECK(memcmp(&st.apic, &s, sizeof(s)) == 0);
	CHECK(common_ok(&st));
	/* x2APIC mode, software-enabled, a periodic timer running, an IRQ pending */
	CHECK(lapic_set_base_msr(&a, LAPIC_DEFAULT_BASE | LAPIC_BASE_EN | LAPIC_BASE_EXTD, 46));
	CHECK(lapic_msr_write(&a, 0x80f, 0x1ff, 0));
	CHECK(lapic_msr_write(&a, 0x832, (LAPIC_TIMER_PERIODIC << LAPIC_TIMER_MODE_SHIFT) | 0x30, 0));
	CHECK(lapic_msr_write(&a, 0x838, 100000, 10));
	lapic_set_irq(&a, 0x80, false);
	lapic_state_save(&a, &st.apic);
	CHECK(common_ok(&st));
	/* on a CPU with fewer address bits, a base above them is refused */
	st.apic.apic_base = (1ull << 45) | LAPIC_BASE_EN | LAPIC_BASE_EXTD | LAPIC_BASE_BSP;
	CHECK(common_ok(&st));
	const struct apic_limits narrow = { .phys_bits = 40, .apic_id = 0 };
	CHECK(!vcpu_state_check_common(&st, "svm", &fpu_lim, &narrow, err, sizeof(err)));
	CHECK(strstr(err, "MAXPHYADDR 40") != NULL);
	/* another vCPU's APIC */
	const struct apic_limits other = { .phys_bits = 46, .apic_id = 1 };
	CHECK(!vcpu_state_check_common(&st, "svm", &fpu_lim, &other, err, sizeof(err)));
	CHECK(strstr(err, "APIC initial ID 0x0, this vCPU's is 0x1") != NULL);
}

/* An AP's state as vm_create leaves it (lapic_init, then INIT's wait for a
 * start-up IPI) passes, as an AP of its own APIC ID. */
TEST(vcpu_state_ap_waiting_for_sipi)
{
	static struct vcpu_state st;
	const struct apic_limits ap = { .phys_bits = 46, .apic_id = 3 };
	struct lapic a;

	lapic_init(&a, NULL, 3, false, 2000000);
	flat_vcpu_state(&st, "svm", AREA, 0x100000, 3);
	lapic_state_save(&a, &st.apic);
	CHECK(st.wait_sipi && !st.halted);
	CHECK(vcpu_state_check_common(&st, "svm", &fpu_lim, &ap, err, sizeof(err)));
	CHECK(!vcpu_state_check_common(&st, "svm", &fpu_lim, &apic_lim, err, sizeof(err)));
	CHECK(strstr(err, "APIC initial ID 0x3, this vCPU's is 0x0") != NULL);
	st.apic.apic_base |= LAPIC_BASE_BSP;
	CHECK(!vcpu_state_check_common(&st, "svm", &fpu_lim, &ap, err, sizeof(err)));
	CHECK(strstr(err, "the BSP flag belongs to APIC ID 0 alone") != NULL);
}

#define VM_VCPUS 3

static bool vm_ok(const struct vm_saved_state *st)
{
	err[0] = 0;
	return vm_state_check_common(st, "svm", &fpu_lim, 46, err, sizeof(err));
}

/* A VM's fields, and each vCPU's checked as its index's. */
TEST(vm_state_fields)
{
	static union {
		struct vm_saved_state st;
		uint8_t bytes[sizeof(struct vm_saved_state) + VM_VCPUS * sizeof(struct vcpu_state)];
	} u;
	struct vm_saved_state *st = &u.st;
	const size_t v1 = offsetof(struct vm_saved_state, vcpu) + sizeof(struct vcpu_state);
	const size_t v2 = v1 + sizeof(struct vcpu_state);

	flat_vm_state(st, VM_VCPUS, "svm", AREA, 0x100000);
	CHECK(vm_ok(st));
	struct {
		const char *reason;
		size_t offset;
		unsigned width;
		uint64_t value;
	} cases[] = {
		{ "0 vCPUs (1 to 64)", offsetof(struct vm_saved_state, nr_vcpus), 4, 0 },
		{ "65 vCPUs (1 to 64)", offsetof(struct vm_saved_state, nr_vcpus), 4, 65 },
		{ "reserved 0x1", offsetof(struct vm_saved_state, reserved), 4, 1 },
		{ "UART line length", offsetof(struct vm_saved_state, uart.len), 4, 160 },
		{ "65 lost ranges", offsetof(struct vm_saved_state, lost.count), 4, 65 },
		{ "overflow flag 2", offsetof(struct vm_saved_state, lost.overflow), 1, 2 },
		{ "vCPU 0: the BSP waits", offsetof(struct vm_saved_state, vcpu[0].wait_sipi), 1, 1 },
		{ "vCPU 1: APIC initial ID 0x2, this vCPU's is 0x1",
		  v1 + offsetof(struct vcpu_state, apic.initial_id), 4, 2 },
		{ "vCPU 1: APIC base 0xfee00900: the BSP flag",
		  v1 + offsetof(struct vcpu_state, apic.apic_base), 8, 0xfee00900 },
		{ "vCPU 2: halted and waiting", v2 + offsetof(struct vcpu_state, halted), 1, 1 },
		{ "vCPU 2: XCR0 0x0", v2 + offsetof(struct vcpu_state, xcr0), 8, 0 },
		{ "vCPU 2: the state is from the 'vmx' backend",
		  v2 + offsetof(struct vcpu_state, backend), 4, 0x00786d76 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		flat_vm_state(st, VM_VCPUS, "svm", AREA, 0x100000);
		memcpy(u.bytes + cases[i].offset, &cases[i].value, cases[i].width);
		CHECK(!vm_ok(st));
		if (!strstr(err, cases[i].reason))
			fprintf(stderr, "  case %zu: '%s' lacks '%s'\n", i, err, cases[i].reason);
		CHECK(strstr(err, cases[i].reason) != NULL);
	}
	/* An AP halted (after HLT, not INIT) with its APIC in use passes. */
	flat_vm_state(st, VM_VCPUS, "svm", AREA, 0x100000);
	st->vcpu[1].wait_sipi = 0;
	st->vcpu[1].halted = 1;
	st->vcpu[1].apic.svr = 0x1ff;
	CHECK(vm_ok(st));
}

TEST(snapshot_header_sizes_and_offsets)
{
	/* Two vCPUs' state at 4 KiB, then a page of memory. */
	enum { STATE = 4096, MEMORY = STATE + ((sizeof(struct vm_saved_state) +
						2 * sizeof(struct vcpu_state) + 4095) & ~4095) };
	static uint8_t blob[MEMORY + 4096];
	struct snapshot_header *h = (void *)blob;
	struct vm_saved_state *in_blob = (void *)(blob + STATE);
	const struct vm_saved_state *st = NULL;
	const uint64_t good_state = STATE, good_memory = MEMORY;

#define RESET() do { memset(h, 0, sizeof(*h)); memcpy(h->magic, SNAPSHOT_MAGIC, 8);       \
		h->version = SNAPSHOT_VERSION; h->vcpus = 2;                               \
		h->vcpu_bytes = sizeof(struct vcpu_state);                                 \
		h->state_bytes = (uint32_t)vm_saved_state_bytes(2);                        \
		h->mem_bytes = 4096; h->state_offset = good_state;                         \
		h->memory_offset = good_memory; in_blob->nr_vcpus = 2; } while (0)
#define REFUSED(stmt, reason) do { RESET(); stmt; err[0] = 0;                                \
		CHECK(!snapshot_header_check(blob, sizeof(blob), &st, err, sizeof(err)));  \
		CHECK(strstr(err, reason) != NULL); } while (0)
	REQUIRE(good_memory + 4096 <= sizeof(blob));
	RESET();
	CHECK(snapshot_header_check(blob, sizeof(blob), &st, err, sizeof(err)));
	CHECK(st == (const void *)(blob + good_state));
	CHECK(!snapshot_header_check(blob, 10, &st, err, sizeof(err)));
	REFUSED(h->magic[7] = 0, "not a snapshot image");
	REFUSED(h->version = 99, "image version 99");
	REFUSED(h->version = 4, "image version 4, this sprig reads 5"); /* a UART of 8 more bytes */
	REFUSED(h->vcpu_bytes = 1, "vCPU state of 1 bytes");
	REFUSED(h->vcpus = 0, "0 vCPUs (1 to 64)");
	REFUSED(h->vcpus = 65, "65 vCPUs (1 to 64)");
	REFUSED(h->vcpus = 0x80000001u, "2147483649 vCPUs");
	REFUSED(h->state_bytes = (uint32_t)vm_saved_state_bytes(1), "for 2 vCPUs");
	REFUSED((h->vcpus = 3, h->state_bytes = (uint32_t)vm_saved_state_bytes(3)), "outside");
	REFUSED(in_blob->nr_vcpus = 1, "the VM state holds 1 vCPUs, the header says 2");
	REFUSED(h->state_offset = 4097, "unaligned or outside");
	REFUSED(h->state_offset = 0, "unaligned or outside");
	REFUSED(h->state_offset = ~0ull - 7, "unaligned or outside");
	REFUSED(h->mem_bytes = 0, "memory size");
	REFUSED(h->mem_bytes = 100, "memory size");
	REFUSED(h->mem_bytes = 4ull << 30, "memory size");
	REFUSED(h->memory_offset = ~0ull - 4095, "unaligned or outside");
	REFUSED(h->memory_offset = good_memory + 1, "unaligned or outside");
	REFUSED(h->mem_bytes = 8192, "unaligned or outside");
	REFUSED(h->memory_offset = good_state, "overlap");
#undef REFUSED
#undef RESET
}

TEST(names_and_ranges)
{
	uint64_t v = 7;

	CHECK(name_valid("a") && name_valid("abcdefghijklmno") && name_valid("A-z_09"));
	CHECK(!name_valid("") && !name_valid("abcdefghijklmnop") && !name_valid("bad/name") &&
	      !name_valid("a b") && !name_valid("a.b"));
	CHECK(parse_u64_in("5", 1, 5, &v) && v == 5);
	CHECK(!parse_u64_in("6", 1, 5, &v) && v == 5);
	CHECK(!parse_u64_in("0", 1, 5, &v));
	CHECK(!parse_u64_in("18446744073709551616", 0, ~0ull, &v));
	CHECK(parse_size_in("2M", 2u << 20, 3ull << 30, &v) && v == 2u << 20);
	CHECK(!parse_size_in("16E", 0, 3ull << 30, &v));
	CHECK(!parse_size_in("17179869184G", 0, ~0ull, &v)); /* 2^64 bytes */
}
