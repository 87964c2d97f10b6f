/* The guest's CPUID (virt/cpuid_policy.c) computed from recorded hosts: an
 * Intel Skylake-X (Core i9-7900X) and an AMD Zen (EPYC 7601). */
#include <string.h>
#include "check.h"
#include "arch/x86/regs.h"
#include "virt/cpuid_policy.h"

#define ANY 0xffffffffu /* an entry for every subleaf */
#define POISON 0xdeadbeefu

struct raw_leaf {
	uint32_t leaf, sub;
	struct cpuid_leaf r;
};

static const struct raw_leaf skylake_x[] = {
	{ 0x0, ANY, { 0x16, 0x756e6547, 0x6c65746e, 0x49656e69 } },
	{ 0x1, ANY, { 0x00050654, 0x0a200800, 0x7ffefbff, 0xbfebfbff } },
	{ 0x2, ANY, { 0x76036301, 0x00f0b5ff, 0x00000000, 0x00c30000 } },
	{ 0x4, 0, { 0x3c004121, 0x01c0003f, 0x0000003f, 0x00000000 } },
	{ 0x4, 1, { 0x3c004122, 0x01c0003f, 0x0000003f, 0x00000000 } },
	{ 0x4, 2, { 0x3c004143, 0x03c0003f, 0x000003ff, 0x00000000 } },
	{ 0x4, 3, { 0x3c07c163, 0x0280003f, 0x00002fff, 0x00000004 } },
	{ 0x4, 4, { 0, 0, 0, 0 } },
	{ 0x5, ANY, { 0x00000040, 0x00000040, 0x00000003, 0x00002020 } },
	{ 0x6, ANY, { 0x00000077, 0x00000002, 0x00000009, 0x00000000 } },
	{ 0x7, 0, { 0x00000000, 0xd39ffffb, 0x00000018, 0xbc000400 } },
	{ 0x7, 1, { 0, 0, 0, 0 } },
	{ 0xa, ANY, { 0x07300404, 0x00000000, 0x00000000, 0x00000603 } },
	{ 0xb, 0, { 0x00000001, 0x00000002, 0x00000100, 0x0000000a } },
	{ 0xb, 1, { 0x00000005, 0x00000014, 0x00000201, 0x0000000a } },
	{ 0xd, 0, { 0x000002ff, 0x00000a88, 0x00000a88, 0x00000000 } },
	{ 0xd, 1, { 0x0000000f, 0x00000a08, 0x00000100, 0x00000000 } },
	{ 0xd, 2, { 0x00000100, 0x00000240, 0, 0 } },
	{ 0xd, 3, { 0x00000040, 0x000003c0, 0, 0 } },
	{ 0xd, 4, { 0x00000040, 0x00000400, 0, 0 } },
	{ 0xd, 5, { 0x00000040, 0x00000440, 0, 0 } },
	{ 0xd, 6, { 0x00000200, 0x00000480, 0, 0 } },
	{ 0xd, 7, { 0x00000400, 0x00000680, 0, 0 } },
	{ 0xd, 8, { 0x00000080, 0x00000000, 1, 0 } },
	{ 0xd, 9, { 0x00000008, 0x00000a80, 0, 0 } },
	{ 0x15, ANY, { 0x00000002, 0x000000a8, 0x00000000, 0x00000000 } },
	{ 0x16, ANY, { 0x00000d48, 0x00001068, 0x00000064, 0x00000000 } },
	{ 0x80000000, ANY, { 0x80000008, 0, 0, 0 } },
	{ 0x80000001, ANY, { 0, 0, 0x00000121, 0x2c100800 } },
	{ 0x80000002, ANY, { 0x65746e49, 0x2952286c, 0x726f4320, 0x4d542865 } },
	{ 0x80000003, ANY, { 0x39692029, 0x3039372d, 0x43205830, 0x40205550 } },
	{ 0x80000004, ANY, { 0x332e3320, 0x7a484730, 0x00000000, 0x00000000 } },
	{ 0x80000006, ANY, { 0, 0, 0x04008040, 0 } },
	{ 0x80000007, ANY, { 0, 0, 0, 0x00000100 } },
	{ 0x80000008, ANY, { 0x0000302e, 0, 0, 0 } },
	{ 0, 0, { 0, 0, 0, 0 } }, /* end */
};

static const struct raw_leaf zen[] = {
	{ 0x0, ANY, { 0x0d, 0x68747541, 0x444d4163, 0x69746e65 } },
	{ 0x1, ANY, { 0x00800f12, 0x00400800, 0x7ed8320b, 0x178bfbff } },
	{ 0x5, ANY, { 0x00000040, 0x00000040, 0x00000003, 0x00000011 } },
	{ 0x6, ANY, { 0x00000004, 0x00000000, 0x00000001, 0x00000000 } },
	{ 0x7, 0, { 0x00000000, 0x209c01a9, 0x00000000, 0x00000000 } },
	{ 0xd, 0, { 0x00000007, 0x00000340, 0x00000340, 0x00000000 } },
	{ 0xd, 1, { 0x0000000f, 0x00000340, 0x00000000, 0x00000000 } },
	{ 0xd, 2, { 0x00000100, 0x00000240, 0, 0 } },
	{ 0x80000000, ANY, { 0x8000001f, 0x68747541, 0x444d4163, 0x69746e65 } },
	{ 0x80000001, ANY, { 0x00800f12, 0x40000000, 0x35c233ff, 0x2fd3fbff } },
	{ 0x80000005, ANY, { 0xff40ff40, 0xff40ff40, 0x20080140, 0x40040140 } },
	{ 0x80000006, ANY, { 0x26006400, 0x66006400, 0x02006140, 0x00808140 } },
	{ 0x80000007, ANY, { 0, 0x0000001b, 0, 0x00006799 } },
	{ 0x80000008, ANY, { 0x00003030, 0x00000007, 0x0000703f, 0x00000000 } },
	{ 0x8000000a, ANY, { 0x00000001, 0x00008000, 0x00000000, 0x0001bcff } },
	{ 0x8000001f, ANY, { 0x00000007, 0x0000016f, 0x0000000f, 0x00000000 } },
	{ 0, 0, { 0, 0, 0, 0 } },
};

/* A recorded host, with overrides of single leaves (for hosts that differ
 * from the recording in a bit or two). */
struct fake {
	const struct raw_leaf *table;
	struct raw_leaf patch[4];
	unsigned patches;
	unsigned out_of_range; /* queries beyond the host's ranges */
};

static const struct raw_leaf *lookup(const struct raw_leaf *t, uint32_t leaf, uint32_t sub)
{
	for (unsigned i = 0; t[i].leaf || i == 0; i++)
		if (t[i].leaf == leaf && (t[i].sub == ANY || t[i].sub == sub))
			return &t[i];
	return NULL;
}

static void fake_raw(void *ctx, uint32_t leaf, uint32_t sub, struct cpuid_leaf *out)
{
	struct fake *f = ctx;
	const struct raw_leaf *e = NULL;
	uint32_t max = lookup(f->table, 0, 0)->r.eax;
	const struct raw_leaf *ext = lookup(f->table, 0x80000000, 0);

	for (unsigned i = 0; i < f->patches; i++)
		if (f->patch[i].leaf == leaf && (f->patch[i].sub == ANY || f->patch[i].sub == sub))
			e = &f->patch[i];
	if (!e)
		e = lookup(f->table, leaf, sub);
	if (leaf < 0x80000000 ? leaf > max : leaf > ext->r.eax)
		f->out_of_range++;
	/* A leaf the recording lacks returns poison: the policy must not
	 * pass it through. */
	*out = e ? e->r : (struct cpuid_leaf){ POISON, POISON, POISON, POISON };
}

static void patch(struct fake *f, uint32_t leaf, uint32_t sub, struct cpuid_leaf r)
{
	f->patch[f->patches++] = (struct raw_leaf){ leaf, sub, r };
}

/* sprig on that host: XSAVE with x87, SSE, AVX and AVX-512 switched. */
static struct cpuid_host host_of(struct fake *f)
{
	const struct raw_leaf *d0 = lookup(f->table, 0xd, 0);
	uint64_t switched = XCR0_X87 | XCR0_SSE | XCR0_AVX | XCR0_AVX512;

	return (struct cpuid_host){
		.raw = fake_raw,
		.ctx = f,
		.tsc_khz = 2993000,
		.xsave = true,
		.xcr0_allowed = d0->r.eax & switched,
		.guest_xcr0 = XCR0_X87 | XCR0_SSE,
		.guest_cr4 = CR4_PAE,
		.apic_id = 0,
		.vcpu_count = 1,
		.hv_signature = "sprig-hv\0\0\0\0",
	};
}

static struct cpuid_leaf q(const struct cpuid_host *h, uint32_t leaf, uint32_t sub)
{
	struct cpuid_leaf r = { POISON, POISON, POISON, POISON };

	cpuid_guest(h, leaf, sub, &r);
	return r;
}

static bool zero(struct cpuid_leaf r)
{
	return !r.eax && !r.ebx && !r.ecx && !r.edx;
}

TEST(cpuid_vendor_and_max_leaf)
{
	struct fake fi = { .table = skylake_x }, fa = { .table = zen };
	struct cpuid_host hi = host_of(&fi), ha = host_of(&fa);
	struct cpuid_leaf r;

	r = q(&hi, 0, 0);
	CHECK_EQ_U64(r.eax, 0x16);
	CHECK(r.ebx == 0x756e6547 && r.edx == 0x49656e69 && r.ecx == 0x6c65746e);
	/* Zen stops at 0xD: raised to 0x16 to state the TSC rate... */
	r = q(&ha, 0, 0);
	CHECK_EQ_U64(r.eax, 0x16);
	CHECK(r.ebx == 0x68747541 && r.edx == 0x69746e65 && r.ecx == 0x444d4163);
	/* ...and the leaves between read zero (the host's are not asked). */
	CHECK(zero(q(&ha, 0xe, 0)));
	CHECK(zero(q(&ha, 0x14, 0)));
	CHECK(!zero(q(&ha, 0x15, 0)));
	/* Not raised when the rate is unknown. */
	ha.tsc_khz = 0;
	CHECK_EQ_U64(q(&ha, 0, 0).eax, 0xd);
	CHECK(zero(q(&ha, 0x15, 0)));
	/* Extended leaves: up to 0x80000008. */
	CHECK_EQ_U64(q(&hi, 0x80000000, 0).eax, 0x80000008);
	r = q(&ha, 0x80000000, 0);
	CHECK_EQ_U64(r.eax, 0x80000008);
	CHECK_EQ_U64(r.ebx, 0x68747541);
	CHECK_EQ_U64(fi.out_of_range, 0);
	CHECK_EQ_U64(fa.out_of_range, 0);
}

TEST(cpuid_leaf1_intel)
{
	struct fake f = { .table = skylake_x };
	struct cpuid_host h = host_of(&f);
	struct cpuid_leaf r = q(&h, 1, 0);
	uint32_t hidden_ecx = CPUID_1_ECX_DTES64 | CPUID_1_ECX_MONITOR | CPUID_1_ECX_DS_CPL |
			      CPUID_1_ECX_VMX | CPUID_1_ECX_SMX | CPUID_1_ECX_EIST |
			      CPUID_1_ECX_TM2 | CPUID_1_ECX_CNXT_ID | CPUID_1_ECX_SDBG |
			      CPUID_1_ECX_XTPR | CPUID_1_ECX_PDCM | CPUID_1_ECX_DCA;
	uint32_t kept_ecx = CPUID_1_ECX_SSE3 | CPUID_1_ECX_PCLMULQDQ | CPUID_1_ECX_SSSE3 |
			    CPUID_1_ECX_FMA | CPUID_1_ECX_CMPXCHG16B | CPUID_1_ECX_PCID |
			    CPUID_1_ECX_SSE4_1 | CPUID_1_ECX_SSE4_2 | CPUID_1_ECX_X2APIC |
			    CPUID_1_ECX_MOVBE | CPUID_1_ECX_POPCNT | CPUID_1_ECX_TSC_DEADLINE |
			    CPUID_1_ECX_AES | CPUID_1_ECX_XSAVE | CPUID_1_ECX_AVX |
			    CPUID_1_ECX_F16C | CPUID_1_ECX_RDRAND | CPUID_1_ECX_HYPERVISOR;
	uint32_t hidden_edx = CPUID_1_EDX_MCA | CPUID_1_EDX_PSN | CPUID_1_EDX_DS |
			      CPUID_1_EDX_ACPI | CPUID_1_EDX_HTT | CPUID_1_EDX_TM | CPUID_1_EDX_PBE;

	CHECK_EQ_U64(r.eax, 0x00050654);
	CHECK_EQ_U64(r.ecx, kept_ecx); /* OSXSAVE off: the guest's CR4 lacks it */
	CHECK_EQ_U64(r.ecx & hidden_ecx, 0);
	CHECK_EQ_U64(r.edx & hidden_edx, 0);
	CHECK_EQ_U64(r.edx, 0xbfebfbff & ~hidden_edx);
	CHECK(r.edx & CPUID_1_EDX_APIC);
	CHECK(r.edx & CPUID_1_EDX_MTRR);
	CHECK(r.edx & CPUID_1_EDX_PAT);
	CHECK(r.edx & CPUID_1_EDX_PSE36);
	/* EBX: CLFLUSH size kept, one logical processor, APIC ID. */
	CHECK_EQ_U64(r.ebx, 0x00010800);
	h.apic_id = 0x2a;
	CHECK_EQ_U64(q(&h, 1, 0).ebx >> 24, 0x2a);
}

TEST(cpuid_apic_x2apic_deadline_without_host_x2apic)
{
	struct fake f = { .table = zen };
	struct cpuid_host h = host_of(&f);
	struct cpuid_leaf r = q(&h, 1, 0);

	/* The Zen recording has none of x2APIC, TSC-deadline, hypervisor. */
	CHECK_EQ_U64(zen[1].r.ecx & (CPUID_1_ECX_X2APIC | CPUID_1_ECX_TSC_DEADLINE), 0);
	CHECK(r.ecx & CPUID_1_ECX_X2APIC);
	CHECK(r.ecx & CPUID_1_ECX_TSC_DEADLINE);
	CHECK(r.ecx & CPUID_1_ECX_HYPERVISOR);
	CHECK(r.edx & CPUID_1_EDX_APIC);
	CHECK(!(r.ecx & CPUID_1_ECX_MONITOR));
	/* Even if the host's APIC bit were clear. */
	patch(&f, 1, ANY, (struct cpuid_leaf){ 0x00800f12, 0, 0, 0 });
	r = q(&h, 1, 0);
	CHECK_EQ_U64(r.edx, CPUID_1_EDX_APIC);
	CHECK_EQ_U64(r.ecx, CPUID_1_ECX_X2APIC | CPUID_1_ECX_TSC_DEADLINE | CPUID_1_ECX_HYPERVISOR);
	/* ARAT: the virtual APIC timer always runs. */
	CHECK_EQ_U64(q(&h, 6, 0).eax, CPUID_6_EAX_ARAT);
	r = q(&h, 6, 0);
	CHECK(!r.ebx && !r.ecx && !r.edx);
}

TEST(cpuid_osxsave_tracks_guest_cr4)
{
	struct fake f = { .table = skylake_x };
	struct cpuid_host h = host_of(&f);

	CHECK(!(q(&h, 1, 0).ecx & CPUID_1_ECX_OSXSAVE));
	h.guest_cr4 |= CR4_OSXSAVE;
	CHECK(q(&h, 1, 0).ecx & CPUID_1_ECX_OSXSAVE);
	/* Without XSAVE in sprig: no XSAVE, OSXSAVE, AVX and kin, leaf 0xD zero. */
	h.xsave = false;
	h.xcr0_allowed = XCR0_X87;
	CHECK_EQ_U64(q(&h, 1, 0).ecx &
			     (CPUID_1_ECX_XSAVE | CPUID_1_ECX_OSXSAVE | CPUID_1_ECX_AVX |
			      CPUID_1_ECX_FMA | CPUID_1_ECX_F16C),
		     0);
	CHECK_EQ_U64(q(&h, 7, 0).ebx & (CPUID_7_EBX_AVX2 | CPUID_7_EBX_AVX512F), 0);
	CHECK(zero(q(&h, 0xd, 0)));
	CHECK(zero(q(&h, 0xd, 1)));
	CHECK(zero(q(&h, 0xd, 2)));
}

TEST(cpuid_avx_follows_switched_state)
{
	struct fake f = { .table = skylake_x };
	struct cpuid_host h = host_of(&f);
	struct cpuid_leaf r;

	r = q(&h, 7, 0);
	CHECK(r.ebx & CPUID_7_EBX_AVX2);
	CHECK(r.ebx & CPUID_7_EBX_AVX512F);
	CHECK(r.ebx & CPUID_7_EBX_AVX512VL);
	/* AVX but no AVX-512 state. */
	h.xcr0_allowed = XCR0_X87 | XCR0_SSE | XCR0_AVX;
	r = q(&h, 7, 0);
	CHECK(r.ebx & CPUID_7_EBX_AVX2);
	CHECK_EQ_U64(r.ebx & (CPUID_7_EBX_AVX512F | CPUID_7_EBX_AVX512DQ | CPUID_7_EBX_AVX512CD |
			      CPUID_7_EBX_AVX512BW | CPUID_7_EBX_AVX512VL),
		     0);
	CHECK(q(&h, 1, 0).ecx & CPUID_1_ECX_AVX);
	/* SSE alone. */
	h.xcr0_allowed = XCR0_X87 | XCR0_SSE;
	CHECK_EQ_U64(q(&h, 1, 0).ecx & (CPUID_1_ECX_AVX | CPUID_1_ECX_FMA | CPUID_1_ECX_F16C), 0);
	CHECK(q(&h, 1, 0).ecx & CPUID_1_ECX_XSAVE);
	CHECK_EQ_U64(q(&h, 7, 0).ebx & CPUID_7_EBX_AVX2, 0);
}

TEST(cpuid_leaf7_whitelist)
{
	struct fake f = { .table = skylake_x };
	struct cpuid_host h = host_of(&f);
	struct cpuid_leaf r = q(&h, 7, 0);
	uint32_t hidden_ebx = CPUID_7_EBX_TSC_ADJUST | CPUID_7_EBX_RDT_M | CPUID_7_EBX_MPX |
			      CPUID_7_EBX_RDT_A | CPUID_7_EBX_PT;

	CHECK_EQ_U64(r.eax, 0);
	CHECK_EQ_U64(r.ebx, 0xd39ffffb & ~hidden_ebx);
	CHECK(r.ebx & CPUID_7_EBX_SMEP);
	CHECK(r.ebx & CPUID_7_EBX_SMAP);
	CHECK(r.ebx & CPUID_7_EBX_INVPCID);
	/* PKU: PKRU is not switched. */
	CHECK_EQ_U64(r.ecx, 0);
	/* Speculation-control MSRs and ARCH_CAPABILITIES are not offered. */
	CHECK_EQ_U64(r.edx, CPUID_7_EDX_MD_CLEAR);
	/* Subleaf 1 and beyond. */
	CHECK(zero(q(&h, 7, 1)));
	CHECK(zero(q(&h, 7, 2)));

	/* Once PKRU is switched: PKU, and OSPKE following the guest's CR4. */
	h.xcr0_allowed |= 1ull << 9;
	CHECK_EQ_U64(q(&h, 7, 0).ecx, CPUID_7_ECX_PKU);
	h.guest_cr4 |= CR4_PKE;
	CHECK_EQ_U64(q(&h, 7, 0).ecx, CPUID_7_ECX_PKU | CPUID_7_ECX_OSPKE);
	/* A host OSPKE (sprig's CR4) never leaks. */
	h.guest_cr4 &= ~CR4_PKE;
	CHECK_EQ_U64(q(&h, 7, 0).ecx, CPUID_7_ECX_PKU);
}

TEST(cpuid_leaf7_newer_host)
{
	/* An Ice Lake-like leaf 7: UMIP, RDPID, LA57, WAITPKG, CET, subleaf 1. */
	struct fake f = { .table = skylake_x };
	struct cpuid_host h = host_of(&f);
	struct cpuid_leaf r;
	uint32_t ecx = CPUID_7_ECX_AVX512_VBMI | CPUID_7_ECX_UMIP | CPUID_7_ECX_PKU |
		       CPUID_7_ECX_OSPKE | CPUID_7_ECX_WAITPKG | CPUID_7_ECX_CET_SS |
		       CPUID_7_ECX_GFNI | CPUID_7_ECX_VAES | CPUID_7_ECX_LA57 |
		       CPUID_7_ECX_RDPID | CPUID_7_ECX_SGX_LC | (3u << 17);

	patch(&f, 7, 0, (struct cpuid_leaf){ 2, 0, ecx, CPUID_7_EDX_FSRM | CPUID_7_EDX_CET_IBT |
							     CPUID_7_EDX_SERIALIZE | CPUID_7_EDX_HYBRID });
	patch(&f, 7, 1, (struct cpuid_leaf){ CPUID_7_1_EAX_AVX_VNNI | CPUID_7_1_EAX_AVX512_BF16 |
						     CPUID_7_1_EAX_FSRS | CPUID_7_1_EAX_LAM |
						     CPUID_7_1_EAX_HRESET,
					     5, 6, 7 });
	r = q(&h, 7, 0);
	CHECK_EQ_U64(r.eax, 1);
	CHECK_EQ_U64(r.ecx, CPUID_7_ECX_AVX512_VBMI | CPUID_7_ECX_UMIP | CPUID_7_ECX_GFNI |
				    CPUID_7_ECX_VAES | CPUID_7_ECX_LA57 | CPUID_7_ECX_RDPID);
	CHECK_EQ_U64(r.edx, CPUID_7_EDX_FSRM | CPUID_7_EDX_SERIALIZE);
	r = q(&h, 7, 1);
	CHECK_EQ_U64(r.eax, CPUID_7_1_EAX_AVX_VNNI | CPUID_7_1_EAX_AVX512_BF16 | CPUID_7_1_EAX_FSRS);
	CHECK(!r.ebx && !r.ecx && !r.edx);
	CHECK(zero(q(&h, 7, 2)));
}

TEST(cpuid_la57_passthrough)
{
	struct fake f = { .table = skylake_x };
	struct cpuid_host h = host_of(&f);

	CHECK(!(q(&h, 7, 0).ecx & CPUID_7_ECX_LA57));
	patch(&f, 7, 0, (struct cpuid_leaf){ 0, 0, CPUID_7_ECX_LA57, 0 });
	CHECK_EQ_U64(q(&h, 7, 0).ecx, CPUID_7_ECX_LA57);
}

TEST(cpuid_xsave_leaf)
{
	struct fake f = { .table = skylake_x };
	struct cpuid_host h = host_of(&f);
	uint64_t allowed = XCR0_X87 | XCR0_SSE | XCR0_AVX | XCR0_AVX512;
	struct cpuid_leaf r;

	CHECK_EQ_U64(h.xcr0_allowed, allowed);
	r = q(&h, 0xd, 0);
	CHECK_EQ_U64(r.eax, allowed);
	CHECK_EQ_U64(r.edx, 0);
	CHECK_EQ_U64(r.ebx, 576);  /* the guest's XCR0: x87 and SSE */
	CHECK_EQ_U64(r.ecx, 0xa80); /* everything allowed: up to the end of Hi16_ZMM */
	h.guest_xcr0 = XCR0_X87 | XCR0_SSE | XCR0_AVX;
	CHECK_EQ_U64(q(&h, 0xd, 0).ebx, 0x340);
	/* Subleaf 1: no XSAVES; EBX the compacted size for the guest's XCR0. */
	r = q(&h, 0xd, 1);
	CHECK_EQ_U64(r.eax, CPUID_D_1_EAX_XSAVEOPT | CPUID_D_1_EAX_XSAVEC | CPUID_D_1_EAX_XGETBV_ECX1);
	CHECK_EQ_U64(r.ebx, 0x340); /* x87, SSE, AVX: 576 + 256 */
	CHECK(!r.ecx && !r.edx);
	h.guest_xcr0 = allowed; /* + opmask 64, ZMM_Hi256 512, Hi16_ZMM 1024: Linux's 2432 */
	CHECK_EQ_U64(q(&h, 0xd, 1).ebx, 2432);
	h.guest_xcr0 = XCR0_X87 | XCR0_SSE;
	CHECK_EQ_U64(q(&h, 0xd, 1).ebx, 576);
	/* Components: the allowed ones as the host's, the others zero. */
	r = q(&h, 0xd, 2);
	CHECK(r.eax == 0x100 && r.ebx == 0x240);
	r = q(&h, 0xd, 7);
	CHECK(r.eax == 0x400 && r.ebx == 0x680);
	CHECK(zero(q(&h, 0xd, 3))); /* MPX */
	CHECK(zero(q(&h, 0xd, 8))); /* PT (supervisor) */
	CHECK(zero(q(&h, 0xd, 9))); /* PKRU */
	CHECK(zero(q(&h, 0xd, 63)));
	CHECK(zero(q(&h, 0xd, 64)));
}

/* TSC Hz as leaf 0x15 states it, and as Linux computes it (32-bit kHz). */
static void check_tsc(struct cpuid_host *h, uint64_t khz, uint64_t max_err_hz)
{
	struct cpuid_leaf r;
	uint64_t hz, linux_khz;

	h->tsc_khz = khz;
	r = q(h, 0x15, 0);
	REQUIRE(r.eax && r.ebx);
	CHECK_EQ_U64(r.ecx, 1000000000u);
	CHECK_EQ_U64(r.edx, 0);
	hz = (uint64_t)r.ecx * r.ebx / r.eax;
	CHECK(hz + max_err_hz >= khz * 1000 && hz <= khz * 1000 + max_err_hz);
	CHECK((uint64_t)(r.ecx / 1000) * r.ebx <= 0xffffffffull);
	linux_khz = (uint32_t)((r.ecx / 1000) * r.ebx) / r.eax;
	CHECK(linux_khz + 1 + max_err_hz / 1000 >= khz && linux_khz <= khz + max_err_hz / 1000);
}

TEST(cpuid_tsc_leaves)
{
	struct fake f = { .table = skylake_x };
	struct cpuid_host h = host_of(&f);
	struct cpuid_leaf r;

	/* Bochs: a 200 MHz TSC (the host says 3.5 GHz in 0x16). */
	check_tsc(&h, 200000, 1000);
	r = q(&h, 0x15, 0);
	CHECK(r.eax == 5 && r.ebx == 1);
	r = q(&h, 0x16, 0);
	CHECK(r.eax == 200 && r.ebx == 200 && r.ecx == 1000 && r.edx == 0);

	check_tsc(&h, 2993000, 1000);
	r = q(&h, 0x15, 0);
	CHECK(r.eax == 1000 && r.ebx == 2993);
	r = q(&h, 0x16, 0);
	CHECK(r.eax == 2993 && r.ebx == 2993 && r.ecx == 1000);

	check_tsc(&h, 1000, 1000);       /* 1 MHz */
	check_tsc(&h, 4294000, 1000);    /* the largest whole-MHz rate stated exactly */
	check_tsc(&h, 2893124, 1000);
	/* Any rate from 100 MHz to 6 GHz within 110 ppm, Linux-safe. */
	for (uint64_t khz = 100000; khz <= 6000000; khz += 997)
		check_tsc(&h, khz, khz * 110 / 1000);

	/* Unknown rate: both leaves zero. */
	h.tsc_khz = 0;
	CHECK(zero(q(&h, 0x15, 0)));
	CHECK(zero(q(&h, 0x16, 0)));
}

TEST(cpuid_unknown_leaves_zero)
{
	struct fake fi = { .table = skylake_x }, fa = { .table = zen };
	struct cpuid_host hi = host_of(&fi), ha = host_of(&fa);
	/* Recorded (5: MONITOR, 0xA: PMU) or not (the fake then answers poison). */
	static const uint32_t basic[] = { 3, 5, 8, 9, 0xa, 0xc, 0xe, 0xf, 0x10, 0x11, 0x12, 0x13, 0x14 };

	for (unsigned i = 0; i < sizeof(basic) / sizeof(basic[0]); i++) {
		CHECK(zero(q(&hi, basic[i], 0)));
		CHECK(zero(q(&ha, basic[i], 0)));
	}
	CHECK(zero(q(&ha, 0x8000000a, 0))); /* SVM: beyond 0x80000008, AMD: zero */
	CHECK(zero(q(&ha, 0x8000001f, 0)));
	CHECK(zero(q(&ha, 0x17, 0)));
	CHECK(zero(q(&ha, 0x40000001, 0)));
	CHECK(zero(q(&ha, 0x4fffffff, 0)));
	CHECK(zero(q(&ha, 0xc0000000, 0)));
	/* Intel answers a leaf beyond its range with the highest basic leaf. */
	{
		struct cpuid_leaf top = q(&hi, 0x16, 0);

		CHECK(!zero(top));
		struct cpuid_leaf r = q(&hi, 0x17, 0);
		CHECK(r.eax == top.eax && r.ebx == top.ebx && r.ecx == top.ecx);
		r = q(&hi, 0x80000009, 0);
		CHECK(r.eax == top.eax && r.ebx == top.ebx && r.ecx == top.ecx);
	}
	CHECK_EQ_U64(fi.out_of_range, 0);
	CHECK_EQ_U64(fa.out_of_range, 0);
}

/* With IA32_APIC_BASE.EN clear, leaf 1 hides the APIC (KVM's
 * kvm_update_cpuid_runtime; kvm-unit-tests' apic_disable checks it). */
TEST(cpuid_apic_disabled)
{
	struct fake f = { .table = zen };
	struct cpuid_host h = host_of(&f);

	CHECK(q(&h, 1, 0).edx & CPUID_1_EDX_APIC);
	h.apic_disabled = true;
	CHECK(!(q(&h, 1, 0).edx & CPUID_1_EDX_APIC));
}

TEST(cpuid_hypervisor_leaf)
{
	struct fake f = { .table = skylake_x };
	struct cpuid_host h = host_of(&f);
	struct cpuid_leaf r = q(&h, 0x40000000, 0);
	char sig[12];

	CHECK_EQ_U64(r.eax, 0x40000000);
	memcpy(sig, &r.ebx, 4);
	memcpy(sig + 4, &r.ecx, 4);
	memcpy(sig + 8, &r.edx, 4);
	CHECK(!memcmp(sig, "sprig-hv\0\0\0\0", 12));
	CHECK(q(&h, 1, 0).ecx & CPUID_1_ECX_HYPERVISOR);
}

/* KVM's leaves at 0x40000100 (where Linux's scan in steps of 0x100 finds
 * them), only with a known TSC rate: the clock and the paravirtual features
 * sprig implements, by their numbers in Linux's uapi kvm_para.h; the leaves
 * around read zero. */
TEST(cpuid_kvm_clock_leaves)
{
	struct fake f = { .table = zen };
	struct cpuid_host h = host_of(&f);
	struct cpuid_leaf r = q(&h, 0x40000100, 0);
	char sig[12];

	CHECK_EQ_U64(r.eax, 0x40000101);
	memcpy(sig, &r.ebx, 4);
	memcpy(sig + 4, &r.ecx, 4);
	memcpy(sig + 8, &r.edx, 4);
	CHECK(!memcmp(sig, "KVMKVMKVM\0\0\0", 12));
	r = q(&h, 0x40000101, 0);
	/* CLOCKSOURCE2, STEAL_TIME, PV_EOI, PV_UNHALT, PV_TLB_FLUSH, PV_SEND_IPI,
	 * PV_SCHED_YIELD, STABLE_BIT */
	CHECK_EQ_U64(r.eax, (1u << 3) | (1u << 5) | (1u << 6) | (1u << 7) | (1u << 9) | (1u << 11) |
				    (1u << 13) | (1u << 24));
	CHECK(r.ebx == 0 && r.ecx == 0 && r.edx == 0);
	/* pv=off: the clock alone (CLOCKSOURCE2, STABLE_BIT). */
	h.no_kvm_pv = true;
	CHECK_EQ_U64(q(&h, 0x40000101, 0).eax, (1u << 3) | (1u << 24));
	h.no_kvm_pv = false;
	r = q(&h, 0x40000102, 0);
	CHECK(r.eax == 0 && r.ebx == 0 && r.ecx == 0 && r.edx == 0);
	h.tsc_khz = 0;
	r = q(&h, 0x40000100, 0);
	CHECK(r.eax == 0 && r.ebx == 0 && r.ecx == 0 && r.edx == 0);
	CHECK_EQ_U64(q(&h, 0x40000101, 0).eax, 0);
}

TEST(cpuid_extended_leaves)
{
	struct fake fi = { .table = skylake_x }, fa = { .table = zen };
	struct cpuid_host hi = host_of(&fi), ha = host_of(&fa);
	struct cpuid_leaf r;

	r = q(&hi, 0x80000001, 0);
	CHECK_EQ_U64(r.ecx, CPUID_81_ECX_LAHF_LM | CPUID_81_ECX_ABM | CPUID_81_ECX_3DNOWPREFETCH);
	CHECK_EQ_U64(r.edx, CPUID_81_EDX_SYSCALL | CPUID_81_EDX_NX | CPUID_81_EDX_PAGE1GB |
				    CPUID_81_EDX_RDTSCP | CPUID_81_EDX_LM);
	r = q(&ha, 0x80000001, 0);
	CHECK_EQ_U64(r.eax, 0x00800f12);
	CHECK_EQ_U64(r.ecx, CPUID_81_ECX_LAHF_LM | CPUID_81_ECX_ABM | CPUID_81_ECX_SSE4A |
				    CPUID_81_ECX_MISALIGNSSE | CPUID_81_ECX_3DNOWPREFETCH);
	CHECK_EQ_U64(r.ecx & (CPUID_81_ECX_SVM | CPUID_81_ECX_CMP_LEGACY | CPUID_81_ECX_EXTAPIC |
			      CPUID_81_ECX_PERFCTR_CORE | CPUID_81_ECX_TOPOEXT | CPUID_81_ECX_MWAITX),
		     0);
	CHECK_EQ_U64(r.edx, 0x2fd3fbff & ~(CPUID_81_EDX_FFXSR | CPUID_1_EDX_MCA));
	/* Brand string and cache leaves as the host's. */
	CHECK_EQ_U64(q(&hi, 0x80000002, 0).eax, 0x65746e49);
	CHECK_EQ_U64(q(&ha, 0x80000006, 0).ecx, 0x02006140);
	/* 0x80000007: the invariant TSC only. */
	r = q(&ha, 0x80000007, 0);
	CHECK(!r.eax && !r.ebx && !r.ecx && r.edx == CPUID_87_EDX_INVARIANT_TSC);
	CHECK_EQ_U64(q(&hi, 0x80000007, 0).edx, CPUID_87_EDX_INVARIANT_TSC);
	/* 0x80000008: address sizes; no perf or speculation bits; one core. */
	r = q(&ha, 0x80000008, 0);
	CHECK_EQ_U64(r.eax, 0x3030);
	CHECK_EQ_U64(r.ebx, CPUID_88_EBX_CLZERO | CPUID_88_EBX_RSTR_FP_ERR_PTRS);
	CHECK(!r.ecx && !r.edx);
	CHECK_EQ_U64(q(&hi, 0x80000008, 0).eax, 0x302e);
}

TEST(cpuid_topology)
{
	struct fake fi = { .table = skylake_x }, fa = { .table = zen };
	struct cpuid_host hi = host_of(&fi), ha = host_of(&fa);
	struct cpuid_leaf r;

	/* One vCPU: one thread, one core. */
	r = q(&hi, 0xb, 0);
	CHECK(r.eax == 0 && r.ebx == 1 && r.ecx == 0x100 && r.edx == 0);
	r = q(&hi, 0xb, 1);
	CHECK(r.eax == 0 && r.ebx == 1 && r.ecx == 0x201 && r.edx == 0);
	r = q(&hi, 0xb, 2);
	CHECK(r.eax == 0 && r.ebx == 0 && r.ecx == 2 && r.edx == 0);
	CHECK_EQ_U64(q(&hi, 4, 3).eax, 0x00000163); /* L3: no sharing, one core */
	CHECK_EQ_U64(q(&hi, 4, 4).eax, 0);

	/* Three vCPUs, this one APIC ID 2: two ID bits. */
	hi.vcpu_count = 3;
	hi.apic_id = 2;
	r = q(&hi, 0xb, 1);
	CHECK(r.eax == 2 && r.ebx == 3 && r.ecx == 0x201 && r.edx == 2);
	CHECK_EQ_U64(q(&hi, 0xb, 0).edx, 2);
	r = q(&hi, 1, 0);
	CHECK_EQ_U64(r.ebx >> 16, 0x0204);
	CHECK(r.edx & CPUID_1_EDX_HTT);
	CHECK_EQ_U64(q(&hi, 4, 0).eax, (3u << 26) | 0x121);
	ha.vcpu_count = 3;
	CHECK_EQ_U64(q(&ha, 0x80000008, 0).ecx, 2 | (2 << 12));
	CHECK_EQ_U64(q(&hi, 0x80000008, 0).ecx, 0);
}

/* The CR4 bits a MOV to CR4 may set follow the guest's CPUID, not the host's
 * (KVM's __cr4_reserved_bits): what the policy hides is reserved. */
TEST(cpuid_cr4_allowed)
{
	struct fake f = { .table = skylake_x };
	struct cpuid_host h = host_of(&f);
	uint32_t ecx = CPUID_7_ECX_UMIP | CPUID_7_ECX_PKU | CPUID_7_ECX_LA57 | CPUID_7_ECX_PKS |
		       CPUID_7_ECX_CET_SS;
	uint64_t hidden = CR4_VMXE | CR4_PKE | CR4_PKS | CR4_CET | CR4_LAM_SUP, allowed;

	patch(&f, 7, 0, (struct cpuid_leaf){ 1, CPUID_7_EBX_FSGSBASE | CPUID_7_EBX_SMEP |
						     CPUID_7_EBX_SMAP, ecx, CPUID_7_EDX_CET_IBT });
	patch(&f, 7, 1, (struct cpuid_leaf){ CPUID_7_1_EAX_LAM, 0, 0, 0 });
	patch(&f, 1, 0, (struct cpuid_leaf){ 0x50654, 0, CPUID_1_ECX_VMX | CPUID_1_ECX_PCID |
							  CPUID_1_ECX_XSAVE, 0 });
	h.xcr0_allowed &= ~(1ull << 9); /* PKRU not switched: no PKU */
	allowed = cpuid_guest_cr4_allowed(&h);
	CHECK_EQ_U64(allowed, CR4_BASE_BITS | CR4_PCIDE | CR4_OSXSAVE | CR4_FSGSBASE | CR4_SMEP |
				      CR4_SMAP | CR4_UMIP | CR4_LA57);
	CHECK(!(allowed & hidden));

	/* The write rules on top (long mode: EFER.LMA, PAE on). */
	const uint64_t lma = 1u << 10, cr4 = CR4_PAE | CR4_OSFXSR;
	CHECK(cpuid_cr4_write_ok(allowed, cr4, cr4 | CR4_SMEP, lma, 0x1000));
	CHECK(!cpuid_cr4_write_ok(allowed, cr4, cr4 | CR4_PKE, lma, 0x1000));
	CHECK(!cpuid_cr4_write_ok(allowed, cr4, cr4 | CR4_LAM_SUP, lma, 0x1000));
	CHECK(!cpuid_cr4_write_ok(allowed, cr4, 0xffffffff, lma, 0x1000));
	CHECK(!cpuid_cr4_write_ok(allowed, cr4, cr4 | (1ull << 32), lma, 0x1000));
	CHECK(!cpuid_cr4_write_ok(allowed, cr4, CR4_OSFXSR, lma, 0x1000));      /* PAE off */
	CHECK(!cpuid_cr4_write_ok(allowed, cr4, cr4 | CR4_LA57, lma, 0x1000));  /* LA57 changed */
	CHECK(cpuid_cr4_write_ok(allowed, cr4, cr4 | CR4_LA57, 0, 0x1000));     /* not in long mode */
	CHECK(cpuid_cr4_write_ok(allowed, cr4, cr4 | CR4_PCIDE, lma, 0x1000));
	CHECK(!cpuid_cr4_write_ok(allowed, cr4, cr4 | CR4_PCIDE, lma, 0x1001)); /* PCID in CR3 */
	CHECK(!cpuid_cr4_write_ok(allowed, cr4, cr4 | CR4_PCIDE, 0, 0x1000));   /* not long mode */
	CHECK(cpuid_cr4_write_ok(allowed, cr4 | CR4_PCIDE, cr4 | CR4_PCIDE, lma, 0x1001));

	/* PKRU switched (XCR0 bit 9) and IA32_PKRS switched by the backend:
	 * PKU and PKS, and their CR4 bits. */
	h.xcr0_allowed |= XCR0_PKRU;
	h.pks = true;
	CHECK_EQ_U64(q(&h, 7, 0).ecx & (CPUID_7_ECX_PKU | CPUID_7_ECX_PKS),
		     CPUID_7_ECX_PKU | CPUID_7_ECX_PKS);
	allowed = cpuid_guest_cr4_allowed(&h);
	CHECK((allowed & (CR4_PKE | CR4_PKS)) == (CR4_PKE | CR4_PKS));
	/* Not where the host lacks PKS, whatever the backend says. */
	patch(&f, 7, 0, (struct cpuid_leaf){ 1, 0, ecx & ~CPUID_7_ECX_PKS, 0 });
	CHECK(!(q(&h, 7, 0).ecx & CPUID_7_ECX_PKS));
	CHECK(!(cpuid_guest_cr4_allowed(&h) & CR4_PKS));
}
