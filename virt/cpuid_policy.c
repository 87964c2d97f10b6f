/* The guest's CPUID computed from the host's (cpuid_policy.h). */
#include "virt/cpuid_policy.h"
#include "arch/x86/msr.h"
#include "arch/x86/regs.h"
#include "lib/string.h"
#include "virt/kvm_pv.h"
#include "virt/pvclock.h"

#define LEAF_HYPERVISOR_FIRST 0x40000000u
#define LEAF_HYPERVISOR_LAST 0x4fffffffu
#define LEAF_EXT 0x80000000u
#define MAX_BASIC 0x1fu        /* the highest basic leaf sprig knows */
#define MAX_BASIC_TSC 0x16u    /* raised to this to state the TSC rate */
#define MAX_EXT 0x80000008u    /* the highest extended leaf sprig knows */

/* Whitelists: the host bits a guest may see (some only when the XSAVE state
 * they use is switched, see the *_AVX and *_AVX512 lists). */

/* Leaf 1 ECX. Not offered: DTES64, DS-CPL, PDCM (debug store and perf
 * capability MSRs), MONITOR (MWAIT raises #UD), VMX, SMX, EIST (PERF_CTL),
 * TM2, CNXT-ID, SDBG, xTPR (MISC_ENABLE bits), DCA. X2APIC, TSC-deadline,
 * the hypervisor bit and OSXSAVE are set by the policy, not passed. */
#define LEAF1_ECX_ALLOWED                                                                  \
	(CPUID_1_ECX_SSE3 | CPUID_1_ECX_PCLMULQDQ | CPUID_1_ECX_SSSE3 |                    \
	 CPUID_1_ECX_CMPXCHG16B | CPUID_1_ECX_PCID | CPUID_1_ECX_SSE4_1 |                  \
	 CPUID_1_ECX_SSE4_2 | CPUID_1_ECX_MOVBE | CPUID_1_ECX_POPCNT | CPUID_1_ECX_AES |   \
	 CPUID_1_ECX_RDRAND)
#define LEAF1_ECX_AVX (CPUID_1_ECX_AVX | CPUID_1_ECX_FMA | CPUID_1_ECX_F16C)

/* Leaf 1 EDX. MTRR: MTRRCAP reads 0 (no fixed or variable ranges) and
 * MTRR_DEF_TYPE exists, so the bit promises nothing more. MCE is exception
 * 18 and CR4.MCE only (SDM table 3-11); MCA would promise the MCG_* and
 * bank MSRs. Not offered: MCA, PSN, DS, ACPI (thermal MSRs), TM, PBE. APIC
 * is set by the policy (the virtual local APIC), HTT with several vCPUs. */
#define LEAF1_EDX_ALLOWED                                                                  \
	(CPUID_1_EDX_FPU | CPUID_1_EDX_VME | CPUID_1_EDX_DE | CPUID_1_EDX_PSE |             \
	 CPUID_1_EDX_TSC | CPUID_1_EDX_MSR | CPUID_1_EDX_PAE | CPUID_1_EDX_MCE |            \
	 CPUID_1_EDX_CX8 | CPUID_1_EDX_SEP | CPUID_1_EDX_MTRR | CPUID_1_EDX_PGE |           \
	 CPUID_1_EDX_CMOV | CPUID_1_EDX_PAT | CPUID_1_EDX_PSE36 | CPUID_1_EDX_CLFSH |       \
	 CPUID_1_EDX_MMX | CPUID_1_EDX_FXSR | CPUID_1_EDX_SSE | CPUID_1_EDX_SSE2 |          \
	 CPUID_1_EDX_SS)

/* Leaf 7.0 EBX. Not offered: TSC_ADJUST (MSR 0x3B), SGX, RDT-M/RDT-A
 * (QoS MSRs), MPX (BNDCFGS, XCR0 bits 3-4), PT (RTIT MSRs). */
#define LEAF7_EBX_ALLOWED                                                                  \
	(CPUID_7_EBX_FSGSBASE | CPUID_7_EBX_BMI1 | CPUID_7_EBX_HLE |                       \
	 CPUID_7_EBX_FDP_EXCPTN_ONLY | CPUID_7_EBX_SMEP | CPUID_7_EBX_BMI2 |               \
	 CPUID_7_EBX_ERMS | CPUID_7_EBX_INVPCID | CPUID_7_EBX_RTM |                        \
	 CPUID_7_EBX_FPU_CSDS_DEPRECATED | CPUID_7_EBX_RDSEED | CPUID_7_EBX_ADX |          \
	 CPUID_7_EBX_SMAP | CPUID_7_EBX_CLFLUSHOPT | CPUID_7_EBX_CLWB | CPUID_7_EBX_SHA)
#define LEAF7_EBX_AVX CPUID_7_EBX_AVX2
#define LEAF7_EBX_AVX512                                                                   \
	(CPUID_7_EBX_AVX512F | CPUID_7_EBX_AVX512DQ | CPUID_7_EBX_AVX512_IFMA |           \
	 CPUID_7_EBX_AVX512PF | CPUID_7_EBX_AVX512ER | CPUID_7_EBX_AVX512CD |              \
	 CPUID_7_EBX_AVX512BW | CPUID_7_EBX_AVX512VL)

/* Leaf 7.0 ECX. LA57: the guest's 5-level tables are the CPU's business
 * under EPT/NPT, and virt/guest_walk.c walks them. RDPID reads TSC_AUX,
 * which msr_policy.h offers. PKU only with PKRU switched (XCR0 bit 9), PKS
 * only where the backend switches IA32_PKRS (msr_policy.h).
 * Not offered: WAITPKG (UMWAIT_CONTROL; #UD without the VMX control),
 * CET_SS (CET MSRs, XSS), TME, KL, ENQCMD (PASID MSR), SGX_LC. */
#define LEAF7_ECX_ALLOWED                                                                  \
	(CPUID_7_ECX_PREFETCHWT1 | CPUID_7_ECX_UMIP | CPUID_7_ECX_GFNI |                   \
	 CPUID_7_ECX_LA57 | CPUID_7_ECX_RDPID | CPUID_7_ECX_CLDEMOTE |                     \
	 CPUID_7_ECX_MOVDIRI | CPUID_7_ECX_MOVDIR64B)
#define LEAF7_ECX_AVX (CPUID_7_ECX_VAES | CPUID_7_ECX_VPCLMULQDQ)
#define LEAF7_ECX_AVX512                                                                   \
	(CPUID_7_ECX_AVX512_VBMI | CPUID_7_ECX_AVX512_VBMI2 | CPUID_7_ECX_AVX512_VNNI |   \
	 CPUID_7_ECX_AVX512_BITALG | CPUID_7_ECX_AVX512_VPOPCNTDQ)

/* Leaf 7.0 EDX. Not offered: UINTR, SRBDS_CTRL, TSX_FORCE_ABORT, HYBRID,
 * PCONFIG, ARCH_LBR, CET_IBT, AMX (XCR0 bits 17-18), and every
 * speculation-control bit (SPEC_CTRL, PRED_CMD, FLUSH_CMD, ARCH_CAPABILITIES,
 * CORE_CAPABILITIES are not in the MSR policy). MD_CLEAR says what VERW
 * does: no MSR. */
#define LEAF7_EDX_ALLOWED                                                                  \
	(CPUID_7_EDX_FSRM | CPUID_7_EDX_MD_CLEAR | CPUID_7_EDX_RTM_ALWAYS_ABORT |          \
	 CPUID_7_EDX_SERIALIZE | CPUID_7_EDX_TSXLDTRK)
#define LEAF7_EDX_AVX512                                                                   \
	(CPUID_7_EDX_AVX512_4VNNIW | CPUID_7_EDX_AVX512_4FMAPS |                          \
	 CPUID_7_EDX_AVX512_VP2INTERSECT | CPUID_7_EDX_AVX512_FP16)

/* Leaf 7.1 EAX: instructions only (not HRESET, LAM). */
#define LEAF7_1_EAX_ALLOWED (CPUID_7_1_EAX_FZLRM | CPUID_7_1_EAX_FSRS | CPUID_7_1_EAX_FSRCS)
#define LEAF7_1_EAX_AVX CPUID_7_1_EAX_AVX_VNNI
#define LEAF7_1_EAX_AVX512 CPUID_7_1_EAX_AVX512_BF16

/* Leaf 0xD.1 EAX: no XSAVES (IA32_XSS), no XFD (its MSRs). */
#define LEAFD_1_EAX_ALLOWED                                                                \
	(CPUID_D_1_EAX_XSAVEOPT | CPUID_D_1_EAX_XSAVEC | CPUID_D_1_EAX_XGETBV_ECX1)

/* Leaf 0x80000001 ECX. Not offered: CmpLegacy (topology), SVM, ExtApicSpace
 * and AltMovCr8 (APIC extensions the virtual APIC lacks), OSVW, IBS,
 * SKINIT, WDT, LWP (XCR0 bit 62), TCE, NodeId, TopologyExtensions, the
 * PERFCTR_* counters, data breakpoint extension, PerfTsc, MONITORX. */
#define LEAF81_ECX_ALLOWED                                                                 \
	(CPUID_81_ECX_LAHF_LM | CPUID_81_ECX_ABM | CPUID_81_ECX_SSE4A |                    \
	 CPUID_81_ECX_MISALIGNSSE | CPUID_81_ECX_3DNOWPREFETCH | CPUID_81_ECX_TBM)
#define LEAF81_ECX_AVX (CPUID_81_ECX_XOP | CPUID_81_ECX_FMA4)

/* Leaf 0x80000001 EDX: AMD repeats leaf 1 EDX in bits 0-17, 23 and 24 (APM
 * vol. 3 E.4.2), under the same rules; bit 9 (APIC) as the host has it
 * (set by AMD, reserved by Intel). FFXSR is out: EFER.FFXSR is not in the
 * MSR policy. */
#define LEAF81_EDX_FROM_LEAF1 0x0183ffffu
#define LEAF81_EDX_ALLOWED                                                                 \
	((LEAF1_EDX_ALLOWED & LEAF81_EDX_FROM_LEAF1) | CPUID_1_EDX_APIC |                  \
	 CPUID_81_EDX_SYSCALL | CPUID_81_EDX_NX | CPUID_81_EDX_MMXEXT |                    \
	 CPUID_81_EDX_PAGE1GB | CPUID_81_EDX_RDTSCP | CPUID_81_EDX_LM |                    \
	 CPUID_81_EDX_3DNOWEXT | CPUID_81_EDX_3DNOW)

/* Leaf 0x80000008 EBX: instructions and FXSAVE behaviour, no
 * speculation-control bits (see leaf 7 EDX). */
#define LEAF88_EBX_ALLOWED                                                                 \
	(CPUID_88_EBX_CLZERO | CPUID_88_EBX_RSTR_FP_ERR_PTRS | CPUID_88_EBX_WBNOINVD)

/* One CPUID query: the host's ranges and what follows from them. */
struct query {
	const struct cpuid_host *h;
	uint32_t host_max, host_max_ext; /* the host's leaf 0 and 0x80000000 EAX */
	uint32_t max, max_ext;           /* the guest's */
	bool intel, amd;
	bool avx, avx512;                /* their XSAVE state is switched */
	unsigned count, id_bits;         /* vCPUs, and the APIC ID bits they need */
};

/* The host's leaf, or zeros beyond the host's range (an Intel CPU would
 * answer with its highest basic leaf). */
static struct cpuid_leaf host(const struct query *q, uint32_t leaf, uint32_t sub)
{
	struct cpuid_leaf r = { 0, 0, 0, 0 };
	bool in_range = leaf < LEAF_EXT ? leaf <= q->host_max
					: (q->host_max_ext >= LEAF_EXT && leaf <= q->host_max_ext);

	if (in_range)
		q->h->raw(q->h->ctx, leaf, sub, &r);
	return r;
}

/* Bytes of the XSAVE area for the components of xcr0: the legacy area and
 * header, then up to the end of the furthest component (SDM vol. 1, 13.4;
 * the same sum as fpu_xsave_size()). */
static uint32_t xsave_size(const struct query *q, uint64_t xcr0)
{
	uint32_t size = 512 + 64;

	for (unsigned i = 2; i < 64; i++) {
		if (!(xcr0 & (1ull << i)))
			continue;
		struct cpuid_leaf c = host(q, 0xd, i);
		if (c.eax + c.ebx > size)
			size = c.eax + c.ebx;
	}
	return size;
}

/* Bytes of the compacted XSAVE area (XSAVEC) for the components of xcr0:
 * each after the previous one, at a 64-byte boundary when its subleaf's
 * ECX bit 1 says so (SDM vol. 1, 13.4.3). */
static uint32_t xsave_compacted_size(const struct query *q, uint64_t xcr0)
{
	uint32_t size = 512 + 64;

	for (unsigned i = 2; i < 64; i++) {
		if (!(xcr0 & (1ull << i)))
			continue;
		struct cpuid_leaf c = host(q, 0xd, i);
		if (c.ecx & 2)
			size = (size + 63) & ~63u;
		size += c.eax;
	}
	return size;
}

/* Best approximation p/q of a/b with q <= qmax (continued fractions with
 * semiconvergents, as Python's Fraction.limit_denominator). */
static void best_ratio(uint64_t a, uint64_t b, uint64_t qmax, uint64_t *p, uint64_t *q)
{
	uint64_t p0 = 0, q0 = 1, p1 = 1, q1 = 0, n = a, d = b, x = a, y = b;

	while (y) { /* gcd: the exact ratio may already fit */
		uint64_t t = x % y;
		x = y;
		y = t;
	}
	n = a / x;
	d = b / x;
	if (d <= qmax) {
		*p = n;
		*q = d;
		return;
	}
	for (;;) {
		uint64_t k = n / d, q2 = q0 + k * q1, t;

		if (q2 > qmax)
			break;
		t = p0 + k * p1;
		p0 = p1;
		q0 = q1;
		p1 = t;
		q1 = q2;
		t = n - k * d;
		n = d;
		d = t;
	}
	/* The semiconvergent below the bound, or the last convergent: the
	 * nearer to a/b (|p/q - a/b| compared as |p*b - a*q| / q). */
	uint64_t k = (qmax - q0) / q1, sp = p0 + k * p1, sq = q0 + k * q1;
	uint64_t e_semi = sp * b > a * sq ? sp * b - a * sq : a * sq - sp * b;
	uint64_t e_conv = p1 * b > a * q1 ? p1 * b - a * q1 : a * q1 - p1 * b;

	if (e_semi * q1 < e_conv * sq) {
		*p = sp;
		*q = sq;
	} else {
		*p = p1;
		*q = q1;
	}
}

/* Leaf 0x15 (SDM vol. 2A CPUID): TSC Hz = ECX * EBX / EAX, ECX the core
 * crystal. The crystal stated is the virtual APIC timer's 1 GHz input, so
 * that a guest learns both rates (Linux takes its APIC timer period from
 * ECX). EBX stays at most CPUID_TSC_RATIO_MAX_NUM (Linux computes
 * crystal_kHz * EBX in 32 bits): the ratio tsc_khz / 10^6 is then exact for
 * any rate in whole MHz up to 4.294 GHz, else the best fraction under that
 * bound, within 110 ppm up to 6 GHz. */
static void leaf_tsc_ratio(const struct query *q, struct cpuid_leaf *r)
{
	uint64_t inv_num, inv_den;

	if (!q->h->tsc_khz)
		return;
	/* Approximate crystal/TSC = 10^6 / tsc_khz with a bounded denominator:
	 * the denominator of the inverse is the numerator (EBX) here. */
	best_ratio(CPUID_APIC_BUS_HZ / 1000u, q->h->tsc_khz, CPUID_TSC_RATIO_MAX_NUM,
		   &inv_num, &inv_den);
	if (inv_num == 0 || inv_num > 0xffffffffull)
		return;
	r->eax = (uint32_t)inv_num;
	r->ebx = (uint32_t)inv_den;
	r->ecx = CPUID_APIC_BUS_HZ;
}

/* Leaf 0x16: base and maximum frequency as the TSC's, bus as the APIC's (MHz). */
static void leaf_freq(const struct query *q, struct cpuid_leaf *r)
{
	uint64_t mhz = (q->h->tsc_khz + 500) / 1000;

	if (!q->h->tsc_khz)
		return;
	r->eax = r->ebx = (uint32_t)(mhz > 0xffff ? 0xffff : mhz);
	r->ecx = CPUID_APIC_BUS_HZ / 1000000u;
}

static void leaf1(const struct query *q, struct cpuid_leaf *r)
{
	const struct cpuid_host *h = q->h;

	/* EBX: brand index and CLFLUSH size as the host's; addressable
	 * logical processor IDs in 23:16; initial APIC ID in 31:24. */
	r->ebx = (r->ebx & 0xffff) | ((1u << q->id_bits) << 16) | ((h->apic_id & 0xff) << 24);
	r->ecx = (r->ecx & (LEAF1_ECX_ALLOWED | (q->avx ? LEAF1_ECX_AVX : 0) |
			    (h->xsave ? CPUID_1_ECX_XSAVE : 0))) |
		 CPUID_1_ECX_X2APIC | CPUID_1_ECX_TSC_DEADLINE | CPUID_1_ECX_HYPERVISOR;
	/* OSXSAVE mirrors the guest's CR4, not sprig's. */
	if ((r->ecx & CPUID_1_ECX_XSAVE) && (h->guest_cr4 & CR4_OSXSAVE))
		r->ecx |= CPUID_1_ECX_OSXSAVE;
	r->edx = (r->edx & LEAF1_EDX_ALLOWED) | (h->apic_disabled ? 0 : CPUID_1_EDX_APIC) |
		 (q->count > 1 ? CPUID_1_EDX_HTT : 0);
}

static void leaf7(const struct query *q, uint32_t sub, struct cpuid_leaf *r)
{
	bool pku = q->h->xsave && (q->h->xcr0_allowed & XCR0_PKRU);

	if (sub == 0) {
		r->eax = r->eax < 1 ? r->eax : 1; /* subleaves 0 and 1 */
		r->ebx &= LEAF7_EBX_ALLOWED | (q->avx ? LEAF7_EBX_AVX : 0) |
			  (q->avx512 ? LEAF7_EBX_AVX512 : 0);
		r->ecx &= LEAF7_ECX_ALLOWED | (q->avx512 ? LEAF7_ECX_AVX512 : 0) |
			  (q->avx ? LEAF7_ECX_AVX : 0) | (pku ? CPUID_7_ECX_PKU : 0) |
			  (q->h->pks ? CPUID_7_ECX_PKS : 0);
		if ((r->ecx & CPUID_7_ECX_PKU) && (q->h->guest_cr4 & CR4_PKE))
			r->ecx |= CPUID_7_ECX_OSPKE;
		r->edx &= LEAF7_EDX_ALLOWED | (q->avx512 ? LEAF7_EDX_AVX512 : 0);
	} else if (sub == 1) {
		r->eax &= LEAF7_1_EAX_ALLOWED | (q->avx ? LEAF7_1_EAX_AVX : 0) |
			  (q->avx512 ? LEAF7_1_EAX_AVX512 : 0);
		r->ebx = r->ecx = r->edx = 0;
	} else {
		*r = (struct cpuid_leaf){ 0, 0, 0, 0 };
	}
}

/* Leaf 0xD as fpu.c switches the state: the components of
 * fpu_guest_xcr0_allowed(), their sizes, no supervisor state. */
static void leaf_xsave(const struct query *q, uint32_t sub, struct cpuid_leaf *r)
{
	uint64_t allowed = q->h->xcr0_allowed;

	if (!q->h->xsave) {
		*r = (struct cpuid_leaf){ 0, 0, 0, 0 };
	} else if (sub == 0) {
		r->eax = (uint32_t)allowed;
		r->edx = (uint32_t)(allowed >> 32);
		r->ebx = xsave_size(q, q->h->guest_xcr0);
		r->ecx = xsave_size(q, allowed);
	} else if (sub == 1) {
		/* EBX: the XSAVEC area for XCR0 | IA32_XSS (always 0 here);
		 * Linux sizes its compacted buffers by it. */
		r->eax &= LEAFD_1_EAX_ALLOWED;
		r->ebx = xsave_compacted_size(q, q->h->guest_xcr0);
		r->ecx = r->edx = 0;
	} else if (sub >= 64 || !(allowed & (1ull << sub))) {
		*r = (struct cpuid_leaf){ 0, 0, 0, 0 };
	}
}

/* Leaves 0xB and 0x1F (SDM vol. 2A, V2 extended topology): each vCPU a
 * core of one package, one thread per core. */
static void leaf_topology(const struct query *q, uint32_t sub, struct cpuid_leaf *r)
{
	*r = (struct cpuid_leaf){ 0, 0, sub & 0xff, q->h->apic_id };
	if (sub == 0) {        /* SMT: one thread */
		r->ebx = 1;
		r->ecx |= 1u << 8;
	} else if (sub == 1) { /* core: every vCPU */
		r->eax = q->id_bits;
		r->ebx = q->count;
		r->ecx |= 2u << 8;
	}
}

/* The answer for a leaf within the guest's ranges. */
static void leaf_in_range(const struct query *q, uint32_t leaf, uint32_t sub,
			  struct cpuid_leaf *r)
{
	*r = (struct cpuid_leaf){ 0, 0, 0, 0 };
	switch (leaf) {
	case 0:
		*r = host(q, 0, 0);
		r->eax = q->max;
		break;
	case 1:
		*r = host(q, 1, 0);
		leaf1(q, r);
		break;
	case 2: /* cache and TLB descriptors */
		*r = host(q, 2, 0);
		break;
	case 4: /* deterministic cache parameters: caches private to a vCPU */
		*r = host(q, 4, sub);
		if (r->eax & 0x1f)
			r->eax = (r->eax & 0x3fff) | (((1u << q->id_bits) - 1) << 26);
		break;
	case 6:
		r->eax = CPUID_6_EAX_ARAT;
		break;
	case 7:
		*r = host(q, 7, sub);
		leaf7(q, sub, r);
		break;
	case 0xb:
	case 0x1f:
		leaf_topology(q, sub, r);
		break;
	case 0xd:
		*r = host(q, 0xd, sub);
		leaf_xsave(q, sub, r);
		break;
	case 0x15:
		leaf_tsc_ratio(q, r);
		break;
	case 0x16:
		leaf_freq(q, r);
		break;
	case 0x80000000:
		*r = host(q, leaf, 0); /* AMD repeats the vendor here */
		r->eax = q->max_ext;
		break;
	case 0x80000001:
		*r = host(q, leaf, 0);
		r->ecx &= LEAF81_ECX_ALLOWED | (q->avx ? LEAF81_ECX_AVX : 0);
		r->edx &= LEAF81_EDX_ALLOWED;
		break;
	case 0x80000002: /* brand string */
	case 0x80000003:
	case 0x80000004:
	case 0x80000005: /* AMD L1 caches and TLBs */
	case 0x80000006: /* L2 (and AMD L3) cache */
		*r = host(q, leaf, 0);
		break;
	case 0x80000007: /* the guest's TSC is the host's plus an offset */
		r->edx = host(q, leaf, 0).edx & CPUID_87_EDX_INVARIANT_TSC;
		break;
	case 0x80000008: {
		struct cpuid_leaf c = host(q, leaf, 0);

		/* Physical and linear address bits; not the guest-physical
		 * size for nested paging (23:16). */
		r->eax = c.eax & 0xffff;
		r->ebx = c.ebx & LEAF88_EBX_ALLOWED;
		if (q->amd && q->count > 1) /* NC: cores - 1, ApicIdCoreIdSize */
			r->ecx = (q->count - 1) | (q->id_bits << 12);
		break;
	}
	default:
		break; /* a leaf sprig does not know: zeros */
	}
}

static unsigned bits_for(unsigned count)
{
	unsigned b = 0;

	while ((1u << b) < count)
		b++;
	return b;
}

uint64_t cpuid_guest_cr4_allowed(const struct cpuid_host *h)
{
	struct cpuid_leaf l1, l7, l7_1;
	uint64_t cr4 = CR4_BASE_BITS;

	cpuid_guest(h, 1, 0, &l1);
	cpuid_guest(h, 7, 0, &l7);
	cpuid_guest(h, 7, 1, &l7_1);
	cr4 |= (l1.ecx & CPUID_1_ECX_PCID ? CR4_PCIDE : 0) |
	       (l1.ecx & CPUID_1_ECX_XSAVE ? CR4_OSXSAVE : 0) |
	       (l1.ecx & CPUID_1_ECX_VMX ? CR4_VMXE : 0) |
	       (l7.ebx & CPUID_7_EBX_FSGSBASE ? CR4_FSGSBASE : 0) |
	       (l7.ebx & CPUID_7_EBX_SMEP ? CR4_SMEP : 0) |
	       (l7.ebx & CPUID_7_EBX_SMAP ? CR4_SMAP : 0) |
	       (l7.ecx & CPUID_7_ECX_UMIP ? CR4_UMIP : 0) |
	       (l7.ecx & CPUID_7_ECX_PKU ? CR4_PKE : 0) |
	       (l7.ecx & CPUID_7_ECX_LA57 ? CR4_LA57 : 0) |
	       (l7.ecx & CPUID_7_ECX_PKS ? CR4_PKS : 0) |
	       ((l7.ecx & CPUID_7_ECX_CET_SS) || (l7.edx & CPUID_7_EDX_CET_IBT) ? CR4_CET : 0) |
	       (l7_1.eax & CPUID_7_1_EAX_LAM ? CR4_LAM_SUP : 0);
	return cr4;
}

bool cpuid_cr4_write_ok(uint64_t allowed, uint64_t old, uint64_t cr4, uint64_t efer,
			uint64_t cr3)
{
	bool long_mode = efer & EFER_LMA;

	if (cr4 & ~allowed)
		return false;
	if (long_mode && (!(cr4 & CR4_PAE) || ((cr4 ^ old) & CR4_LA57)))
		return false;
	if ((cr4 & CR4_PCIDE) && !(old & CR4_PCIDE) && (!long_mode || (cr3 & 0xfff)))
		return false;
	return true;
}

void cpuid_guest(const struct cpuid_host *h, uint32_t leaf, uint32_t subleaf,
		 struct cpuid_leaf *out)
{
	struct query q = { .h = h };
	struct cpuid_leaf l0 = { 0, 0, 0, 0 }, e0 = { 0, 0, 0, 0 };
	uint64_t avx_state = XCR0_SSE | XCR0_AVX;

	h->raw(h->ctx, 0, 0, &l0);
	h->raw(h->ctx, LEAF_EXT, 0, &e0);
	q.host_max = l0.eax;
	q.host_max_ext = e0.eax;
	q.max = q.host_max < MAX_BASIC ? q.host_max : MAX_BASIC;
	if (h->tsc_khz && q.max < MAX_BASIC_TSC)
		q.max = MAX_BASIC_TSC;
	q.max_ext = q.host_max_ext < MAX_EXT ? q.host_max_ext : MAX_EXT;
	/* "GenuineIntel", "AuthenticAMD", "HygonGenuine" in EBX, EDX, ECX. */
	q.intel = l0.ebx == 0x756e6547 && l0.edx == 0x49656e69 && l0.ecx == 0x6c65746e;
	q.amd = (l0.ebx == 0x68747541 && l0.edx == 0x69746e65 && l0.ecx == 0x444d4163) ||
		(l0.ebx == 0x6f677948 && l0.edx == 0x6e65476e && l0.ecx == 0x656e6975);
	q.avx = h->xsave && (h->xcr0_allowed & avx_state) == avx_state;
	q.avx512 = q.avx && (h->xcr0_allowed & XCR0_AVX512) == XCR0_AVX512;
	q.count = h->vcpu_count ? h->vcpu_count : 1;
	q.id_bits = bits_for(q.count);

	if (leaf >= LEAF_HYPERVISOR_FIRST && leaf <= LEAF_HYPERVISOR_LAST) {
		*out = (struct cpuid_leaf){ 0, 0, 0, 0 };
		if (leaf == CPUID_LEAF_HYPERVISOR && h->hv_signature) {
			out->eax = CPUID_LEAF_HYPERVISOR; /* the highest hypervisor leaf */
			memcpy(&out->ebx, h->hv_signature, 4);
			memcpy(&out->ecx, h->hv_signature + 4, 4);
			memcpy(&out->edx, h->hv_signature + 8, 4);
		} else if (leaf == PVCLOCK_CPUID_BASE && h->tsc_khz) {
			/* KVM's leaves: its clock (virt/pvclock.h) and the
			 * paravirtual features sprig implements (virt/kvm_pv.h). */
			out->eax = PVCLOCK_CPUID_BASE + 1;
			memcpy(&out->ebx, PVCLOCK_CPUID_SIGNATURE, 4);
			memcpy(&out->ecx, PVCLOCK_CPUID_SIGNATURE + 4, 4);
			memcpy(&out->edx, PVCLOCK_CPUID_SIGNATURE + 8, 4);
		} else if (leaf == PVCLOCK_CPUID_BASE + 1 && h->tsc_khz) {
			out->eax = KVM_FEATURE_CLOCKSOURCE2 | KVM_FEATURE_CLOCKSOURCE_STABLE_BIT |
				   (h->no_kvm_pv ? 0 : KVM_PV_FEATURES);
		}
		return;
	}
	if (leaf < LEAF_EXT ? leaf > q.max : (q.max_ext < LEAF_EXT || leaf > q.max_ext)) {
		/* Beyond its range: Intel CPUs answer with the highest basic
		 * leaf (SDM vol. 2A CPUID, "INPUT EAX = 0"), AMD with zeros. */
		*out = (struct cpuid_leaf){ 0, 0, 0, 0 };
		if (q.intel)
			leaf_in_range(&q, q.max, subleaf, out);
		return;
	}
	leaf_in_range(&q, leaf, subleaf, out);
}
