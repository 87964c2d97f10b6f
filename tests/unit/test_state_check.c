/* The checks of snapshot images and VM states (virt/state_check.c,
 * svm/saved_state.c, vmx/saved_state.c): a flat starting state passes, and
 * each broken field is refused with its own reason. */
#include "check.h"
#include "flat_state.h"
#include "arch/x86/cpu.h"
#include "arch/x86/regs.h"
#include "lib/print.h"
#include "svm/saved_state.h"
#include "virt/state_check.h"
#include "vmx/vmcs.h"
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

static char err[160];

static bool svm_ok(const struct svm_saved_state *s, const struct vcpu_regs *r)
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
	struct svm_saved_state s;
	struct vcpu_regs r = flat_regs;

	flat_svm_state(&s);
	CHECK(svm_ok(&s, &r));
	s.save.cr0 |= CR0_PG;
	s.save.cr4 |= CR4_PAE;
	s.save.efer |= EFER_LME | EFER_LMA;
	s.save.cs.attrib = 0xa9b; /* L */
	r.rip = 0xffffffff80001000ull;
	CHECK(svm_ok(&s, &r));
	/* Paused with an event on its way in, in a shadow, in an NMI handler. */
	s.event_inject = 0x30 | EVENT_INJECT_INTR | EVENT_INJECT_VALID;
	s.int_state = INT_STATE_SHADOW;
	s.nmi_masked = 1;
	CHECK(svm_ok(&s, &r));
	s.event_inject = 14 | EVENT_INJECT_EXCEPTION | EVENT_INJECT_ERROR_VALID |
			 EVENT_INJECT_VALID | 6ull << 32;
	CHECK(svm_ok(&s, &r));
}

/* Case i: break one field; its reason; NULL past the last. */
static const char *break_svm(unsigned i, struct svm_saved_state *st, struct vcpu_regs *r)
{
	struct vmcb_save *s = &st->save;

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
	case 19: st->int_state = 2; return "interrupt state bits beside the shadow";
	case 20: st->nmi_masked = 2; return "NMI mask neither 0 nor 1";
	case 21: st->event_inject = 0x30; return "EVENTINJ bits without its valid bit";
	case 22: st->event_inject = EVENT_INJECT_VALID | 1u << 20; return "reserved EVENTINJ bits";
	case 23: st->event_inject = EVENT_INJECT_VALID | 5u << 8; return "a reserved EVENTINJ type";
	case 24: st->event_inject = EVENT_INJECT_VALID | EVENT_INJECT_NMI | 3; return "an NMI not on vector 2";
	case 25: st->event_inject = EVENT_INJECT_VALID | EVENT_INJECT_EXCEPTION | 2; return "an exception on vector 2";
	case 26: st->event_inject = EVENT_INJECT_VALID | EVENT_INJECT_INTR | EVENT_INJECT_ERROR_VALID | 0x30; return "an error code on an event that has none";
	case 27: st->event_inject = EVENT_INJECT_VALID | EVENT_INJECT_EXCEPTION | 6 | 1ull << 32; return "an error code on an event that has none";
	}
	(void)r;
	return NULL;
}

TEST(svm_state_each_broken_field_refused)
{
	const char *reason;

	for (unsigned i = 0;; i++) {
		struct svm_saved_state s;
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
	/* Paused with an event on its way in: an interrupt, a #PF with its
	 * error code, an NMI, a requeued INT n; an old one without its valid bit. */
	r = flat_regs;
	r.rflags |= RFLAGS_IF;
	flat_vmx_state(&s);
	s.entry_intr_info = INTR_INFO_VALID | 0x30;
	CHECK(vmx_ok(&s, &r));
	s.entry_intr_info = INTR_INFO_VALID | INTR_INFO_DELIVER_CODE | 3u << 8 | 14;
	s.entry_error_code = 6;
	CHECK(vmx_ok(&s, &r));
	s.entry_intr_info = INTR_INFO_VALID | 2u << 8 | 2;
	CHECK(vmx_ok(&s, &r));
	s.entry_intr_info = INTR_INFO_VALID | 4u << 8 | 0x80;
	s.entry_insn_len = 2;
	CHECK(vmx_ok(&s, &r));
	s.entry_intr_info = 0x12345;
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
	case 42: s->entry_intr_info = INTR_INFO_VALID | 1u << 20; r->rflags |= RFLAGS_IF; return "reserved event-injection bits";
	case 43: s->entry_intr_info = INTR_INFO_VALID | 1u << 8; return "an event type sprig never injects";
	case 44: s->entry_intr_info = INTR_INFO_VALID | 2u << 8 | 3; return "an NMI not on vector 2";
	case 45: s->entry_intr_info = INTR_INFO_VALID | 3u << 8 | 32; return "a hardware exception above vector 31";
	case 46: s->entry_intr_info = INTR_INFO_VALID | 3u << 8 | 13; return "none where it has one";
	case 47: s->entry_intr_info = INTR_INFO_VALID | INTR_INFO_DELIVER_CODE | 3u << 8 | 6; return "an error code where the event has none";
	case 48: s->entry_intr_info = INTR_INFO_VALID | INTR_INFO_DELIVER_CODE | 3u << 8 | 13; s->entry_error_code = 1u << 16; return "error code bits 31:16";
	case 49: s->entry_intr_info = INTR_INFO_VALID | 4u << 8 | 0x80; return "instruction length outside 1-15";
	case 50: s->entry_intr_info = INTR_INFO_VALID | 0x30; return "an external interrupt the guest blocks";
	case 51: s->entry_intr_info = INTR_INFO_VALID | 0x30; s->interruptibility = 2; r->rflags |= RFLAGS_IF; return "an external interrupt the guest blocks";
	case 52: s->entry_intr_info = INTR_INFO_VALID | 2u << 8 | 2; s->interruptibility = 8; return "an NMI the guest blocks";
	case 53: s->entry_intr_info = INTR_INFO_VALID | INTR_INFO_DELIVER_CODE | 3u << 8 | 13; s->activity = 1; return "an event HLT activity cannot take";
	case 54: s->entry_intr_info = INTR_INFO_VALID | 0x30; s->activity = 2; r->rflags |= RFLAGS_IF; return "an event shutdown activity cannot take";
	case 55: s->entry_intr_info = INTR_INFO_VALID | 2u << 8 | 2; s->activity = 3; return "an event in wait-for-SIPI activity";
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

static bool svm_arch_check(const void *arch, size_t len, const struct vcpu_regs *regs, char *e,
			   size_t elen)
{
	struct svm_saved_state st;

	if (len != sizeof(st)) {
		ksnprintf(e, elen, "SVM state of %zu bytes", len);
		return false;
	}
	memcpy(&st, arch, sizeof(st));
	return svm_saved_state_check(&st, regs, &svm_lim, e, elen);
}

static const struct record_limits rec_lim = {
	.phys_bits = 46, .fpu = &fpu_lim, .backend = "svm", .arch_check = svm_arch_check,
};

#define VM_VCPUS 3
static struct flat_vm fv;
static uint8_t recs[VM_VCPUS * 10240 + 4096] __attribute__((aligned(8)));
static uint32_t recs_len;

static bool state_ok(const struct record_limits *lim)
{
	unsigned n = 0;

	err[0] = 0;
	return vm_records_check(recs, recs_len, lim, &n, err, sizeof(err)) && n == fv.nr_vcpus;
}

/* fv's records, checked as this test's machine would. */
static bool vm_ok(void)
{
	recs_len = flat_vm_records(&fv, recs, sizeof(recs));
	return recs_len && state_ok(&rec_lim);
}

static void reset(void)
{
	flat_vm(&fv, VM_VCPUS, "svm", AREA, 0x100000, 2 << 20);
}

enum part { P_VM, P_CPU, P_APIC };
struct field_case {
	const char *reason;
	enum part part;
	unsigned vcpu;
	size_t offset; /* where to write value in that part's model */
	unsigned width;
	uint64_t value;
};

static void refuse_each(const struct field_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct field_case *c = &cases[i];
		void *model = c->part == P_VM ? (void *)&fv.vm
			      : c->part == P_CPU ? (void *)&fv.cpu[c->vcpu] : (void *)&fv.apic[c->vcpu];

		reset();
		memcpy((char *)model + c->offset, &c->value, c->width);
		CHECK(!vm_ok());
		if (!strstr(err, c->reason))
			fprintf(stderr, "  case %zu: '%s' lacks '%s'\n", i, err, c->reason);
		CHECK(strstr(err, c->reason) != NULL);
	}
}

#define CPU(f) P_CPU, 0, offsetof(struct vcpu_state, f)
#define APIC(f) P_APIC, 0, offsetof(struct lapic, f)
TEST(vcpu_state_common_fields)
{
	reset();
	CHECK(vm_ok());
	fv.cpu[0].xcr0 = 7;
	memcpy(fv.cpu[0].xsave + 512, &(uint64_t){ 7 }, 8);
	CHECK(vm_ok());

	const struct field_case cases[] = {
		{ "record cpu 0: the state is from the", CPU(backend), 8, 0x7878787878787878ull },
		{ "backend", CPU(backend), 4, 0x00786d76 /* "vmx" */ },
		{ "backend state of", CPU(arch_bytes), 4, 4096 },
		{ "the FPU area is", CPU(xsave_bytes), 4, 4096 },
		{ "XCR0 0x0", CPU(xcr0), 8, 0 },
		{ "XCR0 0x5", CPU(xcr0), 8, 5 },
		{ "XCR0 0xe7", CPU(xcr0), 8, 0xe7 },
		{ "MXCSR", CPU(xsave) + 24, 4, 0x10000 },
		{ "XSTATE_BV", CPU(xsave) + 512, 8, 1ull << 9 },
		{ "XSAVE header byte 15", CPU(xsave) + 520, 8, 1ull << 63 },
		{ "XSAVE header byte 63", CPU(xsave) + 575, 1, 1 },
		{ "run flags halted 2", CPU(halted), 1, 2 },
		{ "wait_sipi 7", CPU(wait_sipi), 1, 7 },
		{ "reserved 0x100", CPU(reserved), 2, 0x100 },
		{ "the BSP waits for a start-up IPI", CPU(wait_sipi), 1, 1 },
		{ "halted and waiting", CPU(halted), 2, 0x101 },
		{ "the BSP flag belongs to APIC ID 0 alone", APIC(apic_base), 8, 0xfee00800 },
		{ "record lapic 0: APIC initial ID 0x1, this vCPU's is 0x0", APIC(initial_id), 4, 1 },
		{ "APIC base 0xfee00901 sets reserved bits", APIC(apic_base), 8, 0xfee00901 },
		{ "APIC base 0x4000fee00900 sets reserved bits (MAXPHYADDR 46)", APIC(apic_base), 8,
		  0x4000fee00900ull },
		{ "x2APIC mode (EXTD) without EN", APIC(apic_base), 8, 0xfee00500 },
		{ "xAPIC ID 0x1 sets bits 23:0", APIC(id), 4, 1 },
		{ "LVT LINT1 0x0 is unmasked", APIC(lvt[LAPIC_LVT_LINT1]), 4, 0 },
		{ "IRR holds vector 2", APIC(irr), 4, 4 },
		{ "TSC deadline 0x10 armed outside", APIC(tsc_deadline), 8, 16 },
		{ "timer_armed is not 0 or 1", APIC(timer_armed), 1, 3 },
	};
	refuse_each(cases, sizeof(cases) / sizeof(cases[0]));
	/* Without XSAVE the area is FXSAVE's and XCR0 can only be x87. */
	struct fpu_limits fx = { .xsave = false, .area_bytes = 512, .mxcsr_mask = 0xffbf };
	struct record_limits fx_lim = rec_lim;
	fx_lim.fpu = &fx;
	flat_vm(&fv, VM_VCPUS, "svm", 512, 0x100000, 2 << 20);
	recs_len = flat_vm_records(&fv, recs, sizeof(recs));
	CHECK(state_ok(&fx_lim));
	fv.cpu[0].xcr0 = 3;
	recs_len = flat_vm_records(&fv, recs, sizeof(recs));
	CHECK(!state_ok(&fx_lim));
	CHECK(xcr0_valid(0xe7, 0xe7) && !xcr0_valid(0x67, 0xe7) && !xcr0_valid(0xe3, 0xe7));
}

/* The flat state's APIC is lapic_init's, saved; an APIC in use passes too. */
TEST(vcpu_state_apic)
{
	struct lapic a;
	struct record_limits narrow = rec_lim;

	lapic_init(&a, NULL, 0, true, 2000000);
	reset();
	CHECK(vm_ok());
	/* x2APIC mode, software-enabled, a periodic timer running, an IRQ pending */
	CHECK(lapic_set_base_msr(&a, LAPIC_DEFAULT_BASE | LAPIC_BASE_EN | LAPIC_BASE_EXTD, 46));
	CHECK(lapic_msr_write(&a, 0x80f, 0x1ff, 0));
	CHECK(lapic_msr_write(&a, 0x832, (LAPIC_TIMER_PERIODIC << LAPIC_TIMER_MODE_SHIFT) | 0x30, 0));
	CHECK(lapic_msr_write(&a, 0x838, 100000, 10));
	lapic_set_irq(&a, 0x80, false);
	fv.apic[0] = a;
	CHECK(vm_ok());
	/* on a CPU with fewer address bits, a base above them is refused */
	fv.apic[0].apic_base = (1ull << 45) | LAPIC_BASE_EN | LAPIC_BASE_EXTD | LAPIC_BASE_BSP;
	CHECK(vm_ok());
	narrow.phys_bits = 40;
	CHECK(!state_ok(&narrow));
	CHECK(strstr(err, "MAXPHYADDR 40") != NULL);
}

/* An AP's state as vm_create leaves it (lapic_init, then INIT's wait for a
 * start-up IPI) passes, as an AP of its own APIC ID. */
TEST(vcpu_state_ap_waiting_for_sipi)
{
	struct lapic a;

	reset();
	lapic_init(&a, NULL, 2, false, 2000000);
	fv.apic[2] = a;
	CHECK(fv.cpu[2].wait_sipi && !fv.cpu[2].halted);
	CHECK(vm_ok());
	lapic_init(&a, NULL, 1, false, 2000000);
	fv.apic[2] = a;
	CHECK(!vm_ok());
	CHECK(strstr(err, "record lapic 2: APIC initial ID 0x1, this vCPU's is 0x2") != NULL);
	reset();
	fv.apic[2].apic_base |= LAPIC_BASE_BSP;
	CHECK(!vm_ok());
	CHECK(strstr(err, "the BSP flag belongs to APIC ID 0 alone") != NULL);
}

/* A VM's fields, and each vCPU's checked as its index's. */
TEST(vm_state_fields)
{
	reset();
	CHECK(vm_ok());
	const struct field_case cases[] = {
		{ "record vm: 0 vCPUs (1 to 128)", P_VM, 0, offsetof(struct vm_saved, nr_vcpus), 4, 0 },
		{ "129 vCPUs (1 to 128)", P_VM, 0, offsetof(struct vm_saved, nr_vcpus), 4, 129 },
		{ "reserved 0x1", P_VM, 0, offsetof(struct vm_saved, reserved), 4, 1 },
		{ "UART line length", P_VM, 0, offsetof(struct vm_saved, uart.len), 4, 160 },
		{ "65 lost ranges", P_VM, 0, offsetof(struct vm_saved, lost.count), 4, 65 },
		{ "record vm: st->lost.overflow is not 0 or 1", P_VM, 0,
		  offsetof(struct vm_saved, lost.overflow), 1, 2 },
		{ "record cpu 0: the BSP waits", P_CPU, 0, offsetof(struct vcpu_state, wait_sipi), 1, 1 },
		{ "record lapic 1: APIC initial ID 0x2, this vCPU's is 0x1", P_APIC, 1,
		  offsetof(struct lapic, initial_id), 4, 2 },
		{ "record lapic 1: APIC base 0xfee00900: the BSP flag", P_APIC, 1,
		  offsetof(struct lapic, apic_base), 8, 0xfee00900 },
		{ "record cpu 2: halted and waiting", P_CPU, 2, offsetof(struct vcpu_state, halted), 1, 1 },
		{ "record cpu 2: XCR0 0x0", P_CPU, 2, offsetof(struct vcpu_state, xcr0), 8, 0 },
		{ "record cpu 1: DR6 0x1ffff0ff0: bits 63:32 set", P_CPU, 1,
		  offsetof(struct vcpu_state, dr6), 8, 0x1ffff0ff0ull },
		{ "record cpu 2: the state is from the 'vmx' backend", P_CPU, 2,
		  offsetof(struct vcpu_state, backend), 4, 0x00786d76 },
		{ "record cpu 1: SVM state: reserved RFLAGS", P_CPU, 1, offsetof(struct vcpu_state, regs.rflags), 8, 0 },
	};
	refuse_each(cases, sizeof(cases) / sizeof(cases[0]));
	/* a VM of fewer vCPUs than its records: a record of vCPU 2 in a VM of 2 */
	reset();
	fv.vm.nr_vcpus = 2;
	CHECK(!vm_ok());
	CHECK(strstr(err, "record cpu of vCPU 2 in a VM of 2") != NULL);
	/* The steal-time MSR: its record 64-byte aligned, as WRMSR takes it. */
	reset();
	fv.msrs[1].steal_time_msr = 0x10041;
	CHECK(vm_ok());
	fv.msrs[1].steal_time_msr = 0x10021;
	CHECK(!vm_ok());
	CHECK(strstr(err, "steal-time MSR 0x10021: record not 64-byte aligned") != NULL);
	/* The PV EOI MSR: its word 4-byte aligned, as WRMSR takes it. */
	reset();
	fv.msrs[1].pv_eoi_msr = 0x10045;
	CHECK(vm_ok());
	fv.msrs[1].pv_eoi_msr = 0x10047;
	CHECK(!vm_ok());
	CHECK(strstr(err, "PV EOI MSR 0x10047: word not 4-byte aligned") != NULL);
	/* An AP halted (after HLT, not INIT) with its APIC in use passes. */
	reset();
	fv.cpu[1].wait_sipi = 0;
	fv.cpu[1].halted = 1;
	fv.apic[1].svr = 0x1ff;
	CHECK(vm_ok());
}

/* The record stream itself: ids, versions, lengths, order, each once. */
TEST(vm_state_records)
{
	struct record_header *first = (void *)recs;
	/* vCPU 0's CPU record follows the VM's */
	struct record_header *cpu0 = (void *)(recs + sizeof(*first) + record_padded(first->length));
	reset();
	CHECK(vm_ok());
	cpu0 = (void *)(recs + sizeof(*first) + record_padded(first->length));
	CHECK(first->id == REC_VM && cpu0->id == REC_CPU && cpu0->instance == 0);
#define REFUSED(stmt, reason) do { reset(); CHECK(vm_ok()); stmt; CHECK(!state_ok(&rec_lim)); \
		if (!strstr(err, reason)) fprintf(stderr, "  '%s' lacks '%s'\n", err, reason);      \
		CHECK(strstr(err, reason) != NULL); } while (0)
	REFUSED(cpu0->id = 999, "unknown record id 999");
	REFUSED(cpu0->version = 7, "record cpu 0: version 7, this sprig reads 3");
	REFUSED(first->version = 0, "record vm: version 0");
	REFUSED(cpu0->length -= 8, "record cpu 0: ");
	REFUSED(cpu0->length = 0xfffffff0u, "run past the");
	REFUSED(cpu0->reserved = 1, "reserved bits set");
	REFUSED(cpu0->instance = 5, "record cpu of vCPU 5 in a VM of 3");
	REFUSED(cpu0->instance = 1, "record cpu 1 twice");
	REFUSED(first->id = REC_CPU, "record cpu before the VM's");
	REFUSED(first->instance = 1, "record vm of vCPU 1");
	REFUSED(recs_len -= 4, "run past");
	REFUSED(recs_len = 0, "no VM record");
	/* the last vCPU's MSR record taken out: its vCPU lacks one */
	reset();
	recs_len = flat_vm_records(&fv, recs, sizeof(recs));
	for (uint32_t pos = 0; pos < recs_len;) {
		struct record_header *r = (void *)(recs + pos);
		uint32_t bytes = (uint32_t)sizeof(*r) + record_padded(r->length);

		if (r->id == REC_MSRS && r->instance == 2) {
			memmove(recs + pos, recs + pos + bytes, recs_len - pos - bytes);
			recs_len -= bytes;
			break;
		}
		pos += bytes;
	}
	CHECK(!state_ok(&rec_lim));
	CHECK(strstr(err, "no record msrs for vCPU 2") != NULL);
#undef REFUSED
}

/* Every record type this build reads fits the checks' scratch model, and
 * its record fits a VM's state. */
TEST(record_types_fit)
{
	unsigned types = 0;

	for (uint32_t id = 0; id < 64; id++) {
		const struct record_type *t = record_type_of(id);

		if (!t)
			continue;
		types++;
		CHECK(t->id == id && t->name && t->fields && t->check && t->version);
		CHECK(t->model_bytes <= RECORD_MODEL_MAX);
		CHECK(record_type_bytes(t) > 0 && record_type_bytes(t) < SNAPSHOT_STATE_MAX / 4);
	}
	CHECK(types == REC_UART); /* every id up to the last device's */
}

TEST(snapshot_header_sizes_and_offsets)
{
	enum { STATE = 4096, MEMORY = 8192 };
	static uint8_t blob[MEMORY + 4096];
	struct snapshot_header *h = (void *)blob;
	const uint64_t good_state = STATE, good_memory = MEMORY;

#define RESET() do { memset(h, 0, sizeof(*h)); memcpy(h->magic, SNAPSHOT_MAGIC, 8);       \
		h->version = SNAPSHOT_VERSION; h->vcpus = 2; h->state_bytes = 4096;        \
		h->mem_bytes = 4096; h->state_offset = good_state;                         \
		h->memory_offset = good_memory; } while (0)
#define REFUSED(stmt, reason) do { RESET(); stmt; err[0] = 0;                              \
		CHECK(!snapshot_header_check(blob, sizeof(blob), err, sizeof(err)));       \
		CHECK(strstr(err, reason) != NULL); } while (0)
	RESET();
	CHECK(snapshot_header_check(blob, sizeof(blob), err, sizeof(err)));
	CHECK(!snapshot_header_check(blob, 10, err, sizeof(err)));
	REFUSED(h->magic[7] = 0, "not a snapshot image");
	REFUSED(h->version = 99, "image version 99");
	REFUSED(h->version = 5, "image version 5, this sprig reads 6"); /* structures, not records */
	REFUSED(h->reserved = 1, "reserved 0x1");
	REFUSED(h->vcpus = 0, "0 vCPUs (1 to 128)");
	REFUSED(h->vcpus = 129, "129 vCPUs (1 to 128)");
	REFUSED(h->vcpus = 0x80000001u, "2147483649 vCPUs");
	REFUSED(h->state_bytes = 0, "unaligned, over");
	REFUSED(h->state_bytes = SNAPSHOT_STATE_MAX + 8, "unaligned, over");
	REFUSED(h->state_bytes = 3 * 4096, "outside");
	REFUSED(h->state_offset = 4097, "unaligned, over");
	REFUSED(h->state_offset = 0, "unaligned, over");
	REFUSED(h->state_offset = ~0ull - 7, "unaligned, over");
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
