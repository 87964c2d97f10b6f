/* The guest-visible MSR policy (virt/msr_policy.c): which MSRs exist, and
 * which writes raise #GP, the same for SVM and VMX. */
#include "check.h"
#include <stdlib.h>
#include <string.h>
#include "arch/x86/msr.h"
#include "arch/x86/regs.h"
#include "virt/msr_policy.h"
#include "virt/kvm_pv.h"
#include "virt/pvclock.h"

/* A guest in long mode with paging, as the test guests run, on an AMD CPU
 * with RDTSCP. */
static const struct msr_guest long_mode = {
	.cr0 = CR0_PE | CR0_PG,
	.efer = EFER_LME | EFER_LMA,
	.nx = true,
	.va_bits = 48,
	.tsc_aux = true,
	.misc_enable = MISC_ENABLE_RESET,
};

/* Protected mode, paging off: LME may change. */
static const struct msr_guest flat = {
	.cr0 = CR0_PE,
	.efer = 0,
	.nx = false,
	.va_bits = 48,
};

static bool ok(uint32_t msr, uint64_t val, const struct msr_guest *g)
{
	uint64_t store;

	return msr_check_write(msr, val, g, &store) == NULL;
}

static uint64_t stored(uint32_t msr, uint64_t val, const struct msr_guest *g)
{
	uint64_t store = 0xdeadull;

	CHECK(msr_check_write(msr, val, g, &store) == NULL);
	return store;
}

TEST(msr_homes)
{
	const uint32_t backend[] = { MSR_EFER, MSR_STAR, MSR_LSTAR, MSR_CSTAR, MSR_SFMASK,
				     MSR_FS_BASE, MSR_GS_BASE, MSR_KERNEL_GS_BASE,
				     MSR_SYSENTER_CS, MSR_SYSENTER_ESP, MSR_SYSENTER_EIP,
				     MSR_PAT };
	const uint32_t virt[] = { MSR_TSC, MSR_MISC_ENABLE, MSR_MTRRCAP, MSR_MTRR_DEF_TYPE,
				  MSR_TSC_AUX, MSR_K8_INT_PENDING_MSG, MSR_UCODE_REV, MSR_KVM_SYSTEM_TIME_NEW,
				  MSR_KVM_WALL_CLOCK_NEW, MSR_KVM_STEAL_TIME, MSR_KVM_PV_EOI_EN };
	const uint32_t apic[] = { MSR_APIC_BASE, MSR_TSC_DEADLINE, MSR_X2APIC_BASE, 0x830,
				  MSR_X2APIC_LAST };
	const uint32_t none[] = { 0x2, MSR_FEATURE_CONTROL, MSR_ARCH_CAPABILITIES, MSR_VMX_BASIC,
				  MSR_VM_CR, MSR_VM_HSAVE_PA, MSR_X2APIC_BASE - 1, MSR_X2APIC_LAST + 1,
				  0xc0000104, 0xffffffff, 0x40000000 };
	uint64_t v;

	for (unsigned i = 0; i < sizeof(backend) / sizeof(backend[0]); i++)
		CHECK(msr_home(backend[i]) == MSR_HOME_BACKEND);
	for (unsigned i = 0; i < sizeof(virt) / sizeof(virt[0]); i++)
		CHECK(msr_home(virt[i]) == MSR_HOME_VIRT);
	for (unsigned i = 0; i < sizeof(apic) / sizeof(apic[0]); i++)
		CHECK(msr_home(apic[i]) == MSR_HOME_APIC);
	for (unsigned i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		CHECK(msr_home(none[i]) == MSR_HOME_NONE);
		CHECK(!ok(none[i], 0, &long_mode));
	}
	CHECK(!msr_fixed_value(MSR_MISC_ENABLE, &v));
	CHECK(msr_fixed_value(MSR_MTRRCAP, &v) && v == 0);
	CHECK(msr_fixed_value(MSR_K8_INT_PENDING_MSG, &v) && v == 0);
	CHECK(msr_fixed_value(MSR_UCODE_REV, &v) && v == 1ull << 32);
	CHECK(!msr_fixed_value(MSR_TSC, &v));
	CHECK(!msr_fixed_value(MSR_PAT, &v));
}

TEST(msr_pat)
{
	CHECK(ok(MSR_PAT, PAT_DEFAULT, &long_mode));
	CHECK(ok(MSR_PAT, 0, &long_mode));
	CHECK(ok(MSR_PAT, 0x0706050401000706ull, &long_mode));
	CHECK(!ok(MSR_PAT, ~0ull, &long_mode));
	/* Each byte on its own: types 2, 3 and 8 and up are reserved. */
	for (int byte = 0; byte < 8; byte++) {
		for (unsigned type = 0; type < 256; type++) {
			uint64_t pat = (PAT_DEFAULT & ~(0xffull << (8 * byte))) |
				       ((uint64_t)type << (8 * byte));
			bool valid = type <= 7 && type != 2 && type != 3;
			CHECK(ok(MSR_PAT, pat, &long_mode) == valid);
		}
	}
	CHECK_EQ_U64(stored(MSR_PAT, PAT_DEFAULT, &long_mode), PAT_DEFAULT);
}

TEST(msr_canonical)
{
	const uint32_t addr_msrs[] = { MSR_FS_BASE, MSR_GS_BASE, MSR_KERNEL_GS_BASE, MSR_LSTAR,
				       MSR_CSTAR, MSR_SYSENTER_ESP, MSR_SYSENTER_EIP };
	struct msr_guest la57 = long_mode;

	la57.va_bits = 57;
	for (unsigned i = 0; i < sizeof(addr_msrs) / sizeof(addr_msrs[0]); i++) {
		uint32_t m = addr_msrs[i];

		CHECK(ok(m, 0, &long_mode));
		CHECK(ok(m, 0x00007fffffffffffull, &long_mode));
		CHECK(ok(m, 0xffff800000000000ull, &long_mode));
		CHECK(ok(m, ~0ull, &long_mode));
		CHECK(!ok(m, 0x0000800000000000ull, &long_mode));
		CHECK(!ok(m, 0x8000000000000000ull, &long_mode));
		CHECK(!ok(m, 0x7fffffffffffffffull, &long_mode));
		CHECK(!ok(m, 0xfffe800000000000ull, &long_mode));
		/* With LA57 in CPUID, 57 bits. */
		CHECK(ok(m, 0x0000800000000000ull, &la57));
		CHECK(ok(m, 0x00ffffffffffffffull, &la57));
		CHECK(ok(m, 0xff00000000000000ull, &la57));
		CHECK(!ok(m, 0x0100000000000000ull, &la57));
		CHECK(!ok(m, 0x8000000000000000ull, &la57));
		CHECK_EQ_U64(stored(m, 0xffff800000001000ull, &long_mode), 0xffff800000001000ull);
	}
	/* Not addresses: any value. */
	CHECK(ok(MSR_STAR, ~0ull, &long_mode));
	CHECK_EQ_U64(stored(MSR_STAR, 0x8000000000000001ull, &long_mode), 0x8000000000000001ull);
	CHECK_EQ_U64(stored(MSR_SFMASK, ~0ull, &long_mode), 0xffffffffull);
	CHECK_EQ_U64(stored(MSR_SYSENTER_CS, 0x1234567800000010ull, &long_mode), 0x10);
	CHECK(ok(MSR_TSC, ~0ull, &long_mode));
}

TEST(msr_efer)
{
	struct msr_guest g = long_mode;
	uint64_t cur = long_mode.efer;

	/* The value it has, with SCE and NXE toggled. */
	CHECK(ok(MSR_EFER, cur, &g));
	CHECK(ok(MSR_EFER, cur | EFER_SCE, &g));
	CHECK(ok(MSR_EFER, cur | EFER_NXE, &g));
	CHECK(ok(MSR_EFER, cur | EFER_SCE | EFER_NXE, &g));
	CHECK_EQ_U64(stored(MSR_EFER, cur | EFER_SCE, &g), cur | EFER_SCE);
	/* LME cleared or LMA cleared while paging; LMA alone. */
	CHECK(!ok(MSR_EFER, cur & ~(uint64_t)EFER_LME, &g));
	CHECK(!ok(MSR_EFER, cur & ~(uint64_t)EFER_LMA, &g));
	CHECK(!ok(MSR_EFER, 0, &g));
	/* SVME, reserved and high bits never. */
	CHECK(!ok(MSR_EFER, cur | EFER_SVME, &g));
	CHECK(!ok(MSR_EFER, cur | (1ull << 1), &g));
	CHECK(!ok(MSR_EFER, cur | (1ull << 9), &g));
	CHECK(!ok(MSR_EFER, cur | (1ull << 14), &g));
	CHECK(!ok(MSR_EFER, cur | (1ull << 63), &g));
	CHECK(!ok(MSR_EFER, ~0ull, &g));
	/* NXE only with NX. */
	g.nx = false;
	CHECK(!ok(MSR_EFER, cur | EFER_NXE, &g));
	CHECK(ok(MSR_EFER, cur | EFER_SCE, &g));

	/* Paging off: LME may change, LMA still may not. */
	CHECK(ok(MSR_EFER, EFER_LME, &flat));
	CHECK(ok(MSR_EFER, 0, &flat));
	CHECK(!ok(MSR_EFER, EFER_LME | EFER_LMA, &flat));
	CHECK(!ok(MSR_EFER, EFER_LMA, &flat));
	CHECK(!ok(MSR_EFER, EFER_NXE, &flat)); /* flat has no NX */
	/* Paging on, outside long mode: LME may not be set. */
	g = flat;
	g.cr0 |= CR0_PG;
	CHECK(!ok(MSR_EFER, EFER_LME, &g));
	CHECK(ok(MSR_EFER, EFER_SCE, &g));
}

/* MISC_ENABLE as kvm_set_msr_common keeps it without a vPMU: BTS and PEBS
 * unavailable for good, EMON as it was, the rest as written. */
TEST(msr_misc_enable)
{
	struct msr_guest g = long_mode;
	const uint64_t ro = MISC_ENABLE_BTS_UNAVAIL | MISC_ENABLE_PEBS_UNAVAIL;

	CHECK_EQ_U64(stored(MSR_MISC_ENABLE, MISC_ENABLE_RESET, &g), MISC_ENABLE_RESET);
	/* kvm-unit-tests' msr: 0x400c50809 around the read-only 0x1880. */
	CHECK_EQ_U64(stored(MSR_MISC_ENABLE, 0x400c50009ull | ro, &g), 0x400c50009ull | ro);
	CHECK_EQ_U64(stored(MSR_MISC_ENABLE, ro, &g), ro); /* fast strings off */
	CHECK_EQ_U64(stored(MSR_MISC_ENABLE, ~0ull, &g), ~MISC_ENABLE_EMON);
	CHECK(!ok(MSR_MISC_ENABLE, 0, &g));
	CHECK(!ok(MSR_MISC_ENABLE, MISC_ENABLE_FAST_STRINGS, &g));
	CHECK(!ok(MSR_MISC_ENABLE, MISC_ENABLE_RESET & ~MISC_ENABLE_BTS_UNAVAIL, &g));
	CHECK(!ok(MSR_MISC_ENABLE, MISC_ENABLE_RESET & ~MISC_ENABLE_PEBS_UNAVAIL, &g));
	/* EMON reads as it was, set or clear. */
	g.misc_enable = MISC_ENABLE_RESET | MISC_ENABLE_EMON;
	CHECK_EQ_U64(stored(MSR_MISC_ENABLE, MISC_ENABLE_RESET, &g),
		     MISC_ENABLE_RESET | MISC_ENABLE_EMON);
}

TEST(msr_fixed_ones)
{
	CHECK(!ok(MSR_MTRRCAP, 0, &long_mode));
	CHECK(ok(MSR_K8_INT_PENDING_MSG, 0, &long_mode));
	CHECK(ok(MSR_UCODE_REV, 0, &long_mode));
	CHECK(ok(MSR_UCODE_REV, ~0ull, &long_mode));
	CHECK(ok(MSR_KVM_SYSTEM_TIME_NEW, 0x1234001, &long_mode));
	CHECK(ok(MSR_KVM_SYSTEM_TIME_NEW, 0, &long_mode));
	CHECK(!ok(MSR_KVM_SYSTEM_TIME_NEW, 0x1234003, &long_mode));
	/* Steal time: 64-byte aligned (bits 5:1 reserved), bit 0 enables. */
	CHECK(ok(MSR_KVM_STEAL_TIME, 0x1234041, &long_mode));
	CHECK(ok(MSR_KVM_STEAL_TIME, 0x1234040, &long_mode));
	for (unsigned bit = 1; bit < 6; bit++)
		CHECK(!ok(MSR_KVM_STEAL_TIME, 0x1234041 | 1u << bit, &long_mode));
	/* PV EOI: a 4-byte aligned word (bit 1 reserved), bit 0 enables. */
	CHECK(ok(MSR_KVM_PV_EOI_EN, 0x1234005, &long_mode));
	CHECK(ok(MSR_KVM_PV_EOI_EN, 0x1234004, &long_mode));
	CHECK(ok(MSR_KVM_PV_EOI_EN, 0, &long_mode));
	CHECK(!ok(MSR_KVM_PV_EOI_EN, 0x1234007, &long_mode));
	CHECK(!ok(MSR_KVM_PV_EOI_EN, 0x1234002, &long_mode));
	CHECK(ok(MSR_KVM_WALL_CLOCK_NEW, 0x1234004, &long_mode));
	CHECK(!ok(MSR_KVM_WALL_CLOCK_NEW, 0x1234002, &long_mode));
	CHECK(!ok(MSR_K8_INT_PENDING_MSG, 1, &long_mode));
	CHECK(ok(MSR_MTRR_DEF_TYPE, 0, &long_mode));
	CHECK(ok(MSR_MTRR_DEF_TYPE, 0xc06, &long_mode)); /* enabled, WB */
	CHECK(ok(MSR_MTRR_DEF_TYPE, 0x805, &long_mode)); /* WP */
	CHECK(!ok(MSR_MTRR_DEF_TYPE, 0x807, &long_mode)); /* UC- is PAT only */
	CHECK(!ok(MSR_MTRR_DEF_TYPE, 0x802, &long_mode));
	CHECK(!ok(MSR_MTRR_DEF_TYPE, 0x1006, &long_mode));
	CHECK(!ok(MSR_MTRR_DEF_TYPE, 0x106, &long_mode));
}

/* TSC_AUX as KVM has it: only with RDTSCP or RDPID; bits 63:32 reserved on
 * Intel, dropped on AMD. */
TEST(msr_tsc_aux)
{
	struct msr_guest intel = long_mode, none = long_mode;
	uint64_t v;

	intel.intel = true;
	none.tsc_aux = false;
	CHECK_EQ_U64(stored(MSR_TSC_AUX, 0xffffffffull, &long_mode), 0xffffffffull);
	CHECK_EQ_U64(stored(MSR_TSC_AUX, 10, &intel), 10);
	CHECK_EQ_U64(stored(MSR_TSC_AUX, 0x100000010ull, &long_mode), 0x10);
	CHECK(!ok(MSR_TSC_AUX, 0x100000000ull, &intel));
	CHECK(!ok(MSR_TSC_AUX, 0, &none));
	/* The guest's own value, not a fixed one. */
	CHECK(msr_home(MSR_TSC_AUX) == MSR_HOME_VIRT);
	CHECK(!msr_fixed_value(MSR_TSC_AUX, &v));
}

/* IA32_PKRS (SDM vol. 3A 4.6.2): the guest's own 32 bits with PKS, #GP
 * for bits 63:32 and without PKS. */
TEST(msr_pkrs)
{
	struct msr_guest pks = long_mode;
	uint64_t v;

	pks.pks = true;
	CHECK_EQ_U64(stored(MSR_PKRS, 0xfffffffcull, &pks), 0xfffffffcull);
	CHECK_EQ_U64(stored(MSR_PKRS, 0x30, &pks), 0x30);
	CHECK(!ok(MSR_PKRS, 1ull << 32, &pks));
	CHECK(!ok(MSR_PKRS, 0, &long_mode));
	CHECK(msr_home(MSR_PKRS) == MSR_HOME_VIRT);
	CHECK(!msr_fixed_value(MSR_PKRS, &v));
}

/* The machine-check MSRs as KVM's set_msr_mce takes them, and what
 * kvm-unit-tests' msr test checks: MCG_CAP read-only, MCG_CTL and each
 * bank's CTL 0 or all ones, STATUS only 0, ADDR and MISC anything; the
 * banks past MCG_CAP's count raise #GP. */
TEST(msr_mce)
{
	const uint64_t noncanonical = 0xaaaaaaaaaaaaaaaaull;
	struct mce_msrs m;
	uint64_t v;

	CHECK(msr_fixed_value(MSR_MCG_CAP, &v) && (v & 0xff) == MCE_BANKS && (v & MCG_CTL_P));
	CHECK(!ok(MSR_MCG_CAP, v, &long_mode));
	CHECK(ok(MSR_MCG_STATUS, 5, &long_mode));
	CHECK(ok(MSR_MCG_CTL, 0, &long_mode) && ok(MSR_MCG_CTL, ~0ull, &long_mode));
	CHECK(!ok(MSR_MCG_CTL, 1, &long_mode));
	for (uint32_t b = 0; b < MCE_BANKS; b++) {
		uint32_t ctl = MSR_MC0_CTL + 4 * b;

		CHECK(ok(ctl, 0, &long_mode) && ok(ctl, ~0ull, &long_mode));
		CHECK(ok(ctl, ~(1ull << 10), &long_mode) && ok(ctl, ~1ull, &long_mode));
		CHECK(!ok(ctl, noncanonical, &long_mode));
		CHECK(ok(ctl + 1, 0, &long_mode) && !ok(ctl + 1, 1, &long_mode));
		CHECK(ok(ctl + 2, ~0ull, &long_mode) && ok(ctl + 2, noncanonical, &long_mode));
		CHECK(ok(ctl + 3, ~0ull, &long_mode) && ok(ctl + 3, noncanonical, &long_mode));
		CHECK(msr_home(ctl) == MSR_HOME_VIRT && msr_home(ctl + 3) == MSR_HOME_VIRT);
	}
	for (uint32_t msr = MSR_MC0_CTL + 4 * MCE_BANKS; msr < 0x480; msr++)
		CHECK(msr_home(msr) == MSR_HOME_NONE);
	/* Reset: banks and MCG_CTL enabled, and each MSR its own slot. */
	mce_msrs_reset(&m);
	CHECK_EQ_U64(*mce_msr_slot(&m, MSR_MCG_CTL), ~0ull);
	CHECK_EQ_U64(*mce_msr_slot(&m, MSR_MC0_CTL + 4), ~0ull);
	CHECK_EQ_U64(*mce_msr_slot(&m, MSR_MC0_CTL + 5), 0);
	CHECK(mce_msr_slot(&m, MSR_MC0_CTL + 4 * MCE_BANKS - 1) == &m.bank[4 * MCE_BANKS - 1]);
	CHECK(!mce_msr_slot(&m, MSR_MCG_CAP) && !mce_msr_slot(&m, MSR_MC0_CTL + 4 * MCE_BANKS));
}

/* The legacy performance counters without a vPMU, as KVM answers them: read
 * 0, every write dropped; the F15H ones raise #GP. */
TEST(msr_perf_counters)
{
	const uint32_t legacy[] = { 0xc0010000, 0xc0010003, 0xc0010004, 0xc0010007,
				    MSR_P6_PERFCTR0, MSR_P6_PERFCTR1, MSR_P6_EVNTSEL0,
				    MSR_P6_EVNTSEL1 };
	uint64_t v;

	for (unsigned i = 0; i < sizeof(legacy) / sizeof(legacy[0]); i++) {
		v = 1;
		CHECK(msr_home(legacy[i]) == MSR_HOME_VIRT);
		CHECK(msr_fixed_value(legacy[i], &v) && v == 0);
		CHECK(ok(legacy[i], 0, &long_mode));
		CHECK(ok(legacy[i], 0x530076, &long_mode));
		CHECK(ok(legacy[i], ~0ull, &long_mode));
	}
	for (uint32_t m = MSR_F15H_PERF_CTL0; m <= MSR_F15H_PERF_CTR5; m++) {
		CHECK(msr_home(m) == MSR_HOME_NONE);
		CHECK(!ok(m, 0, &long_mode));
	}
	CHECK(msr_home(0xc0010008) == MSR_HOME_NONE);
	CHECK(msr_home(0xc0) == MSR_HOME_NONE && msr_home(0xc3) == MSR_HOME_NONE);
	CHECK(msr_home(0x185) == MSR_HOME_NONE && msr_home(0x188) == MSR_HOME_NONE);
}

/* docs/msr.md's table, row by row, against the policy; and every MSR the
 * policy knows has a row there. */
struct doc_row {
	uint32_t first, last;
	char home[16], read[32], write[16];
};

static void trim(char *s)
{
	size_t n = strlen(s), i = 0;

	while (n && (s[n - 1] == ' ' || s[n - 1] == '\n'))
		s[--n] = 0;
	while (s[i] == ' ')
		i++;
	memmove(s, s + i, n - i + 1);
}

/* "| MSR | name | home | read | write | KVM |" with MSR "0xN" or "0xN-0xM". */
static bool parse_row(const char *line, struct doc_row *r)
{
	char buf[512], *col[7], *save = NULL;
	int n = 0;

	if (strncmp(line, "| 0x", 4) != 0 || strlen(line) >= sizeof(buf))
		return false;
	strcpy(buf, line + 1);
	for (char *t = strtok_r(buf, "|", &save); t && n < 7; t = strtok_r(NULL, "|", &save))
		col[n++] = t;
	if (n < 6)
		return false;
	for (int i = 0; i < n; i++)
		trim(col[i]);
	char *dash = strchr(col[0], '-');
	r->first = (uint32_t)strtoul(col[0], NULL, 16);
	r->last = dash ? (uint32_t)strtoul(dash + 1, NULL, 16) : r->first;
	snprintf(r->home, sizeof(r->home), "%s", col[2]);
	snprintf(r->read, sizeof(r->read), "%s", col[3]);
	snprintf(r->write, sizeof(r->write), "%s", col[4]);
	return true;
}

static enum msr_home home_named(const char *s)
{
	return !strcmp(s, "backend") ? MSR_HOME_BACKEND : !strcmp(s, "virt") ? MSR_HOME_VIRT :
	       !strcmp(s, "apic") ? MSR_HOME_APIC : MSR_HOME_NONE;
}

static void check_row(const struct doc_row *r)
{
	for (uint64_t m = r->first; m <= r->last; m++) {
		uint32_t msr = (uint32_t)m;
		enum msr_home home = msr_home(msr);
		uint64_t fixed = 0;
		bool has_fixed = msr_fixed_value(msr, &fixed);
		bool checked = !strcmp(r->write, "checked");

		CHECK(home == home_named(r->home));
		if (!strcmp(r->read, "#GP")) {
			CHECK(home == MSR_HOME_NONE);
		} else if (!strcmp(r->read, "state")) {
			CHECK(home != MSR_HOME_NONE && !has_fixed);
		} else {
			CHECK(has_fixed);
			CHECK_EQ_U64(fixed, strtoull(r->read, NULL, 16));
		}
		if (!strcmp(r->write, "any")) {
			CHECK(ok(msr, 0, &long_mode) && ok(msr, 1, &long_mode));
			CHECK(ok(msr, 0xffffffffull, &long_mode) && ok(msr, ~0ull, &long_mode));
		} else if (!strcmp(r->write, "read-only")) {
			CHECK(has_fixed && ok(msr, fixed, &long_mode));
			CHECK(!ok(msr, fixed ^ 1, &long_mode) && !ok(msr, ~fixed, &long_mode));
		} else if (!strcmp(r->write, "#GP")) {
			CHECK(!ok(msr, 0, &long_mode) && !ok(msr, fixed, &long_mode));
			CHECK(!ok(msr, 1, &long_mode));
		} else {
			CHECK(checked && home != MSR_HOME_NONE);
		}
	}
}

TEST(msr_doc_table)
{
	static struct doc_row rows[128];
	const uint32_t spans[][2] = { { 0, 0x2000 }, { 0xc0000000, 0xc0002000 },
				      { 0xc0010000, 0xc0012000 }, { 0x4b564d00, 0x4b564e00 } };
	char line[512];
	unsigned n = 0;
	FILE *f = fopen("docs/msr.md", "r");

	REQUIRE(f);
	while (fgets(line, sizeof(line), f) && n < 128)
		if (parse_row(line, &rows[n]))
			check_row(&rows[n++]);
	fclose(f);
	CHECK(n >= 20);
	for (unsigned s = 0; s < sizeof(spans) / sizeof(spans[0]); s++) {
		for (uint32_t m = spans[s][0]; m < spans[s][1]; m++) {
			bool listed = false;

			if (msr_home(m) == MSR_HOME_NONE)
				continue;
			for (unsigned i = 0; i < n && !listed; i++)
				listed = m >= rows[i].first && m <= rows[i].last;
			if (!listed) {
				char msg[64];

				snprintf(msg, sizeof(msg), "MSR 0x%x has no row in docs/msr.md", m);
				unit_fail(__FILE__, __LINE__, msg);
			}
		}
	}
}
