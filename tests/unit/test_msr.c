/* The guest-visible MSR policy (virt/msr_policy.c): which MSRs exist, and
 * which writes raise #GP, the same for SVM and VMX. */
#include "check.h"
#include "arch/x86/msr.h"
#include "arch/x86/regs.h"
#include "virt/msr_policy.h"
#include "virt/pvclock.h"

/* A guest in long mode with paging, as the test guests run. */
static const struct msr_guest long_mode = {
	.cr0 = CR0_PE | CR0_PG,
	.efer = EFER_LME | EFER_LMA,
	.nx = true,
	.va_bits = 48,
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
				  MSR_KVM_WALL_CLOCK_NEW };
	const uint32_t apic[] = { MSR_APIC_BASE, MSR_TSC_DEADLINE, MSR_X2APIC_BASE, 0x830,
				  MSR_X2APIC_LAST };
	const uint32_t none[] = { 0, MSR_FEATURE_CONTROL, MSR_ARCH_CAPABILITIES, MSR_VMX_BASIC,
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
	CHECK(msr_fixed_value(MSR_MISC_ENABLE, &v) && v == MISC_ENABLE_FAST_STRINGS);
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

TEST(msr_fixed_ones)
{
	CHECK(ok(MSR_MISC_ENABLE, MISC_ENABLE_FAST_STRINGS, &long_mode));
	CHECK(!ok(MSR_MISC_ENABLE, 0, &long_mode));
	CHECK(!ok(MSR_MISC_ENABLE, ~0ull, &long_mode));
	CHECK(!ok(MSR_MTRRCAP, 0, &long_mode));
	CHECK(ok(MSR_K8_INT_PENDING_MSG, 0, &long_mode));
	CHECK(ok(MSR_UCODE_REV, 0, &long_mode));
	CHECK(ok(MSR_UCODE_REV, ~0ull, &long_mode));
	CHECK(ok(MSR_KVM_SYSTEM_TIME_NEW, 0x1234001, &long_mode));
	CHECK(ok(MSR_KVM_SYSTEM_TIME_NEW, 0, &long_mode));
	CHECK(!ok(MSR_KVM_SYSTEM_TIME_NEW, 0x1234003, &long_mode));
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
	CHECK(ok(MSR_TSC_AUX, 0xffffffffull, &long_mode));
	CHECK(!ok(MSR_TSC_AUX, 0x100000000ull, &long_mode));
}
