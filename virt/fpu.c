#include "virt/fpu.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpuinfo.h"
#include "arch/x86/regs.h"
#include "arch/x86/smp.h"
#include "lib/string.h"
#include "mm/frame.h"
#include "virt/state_check.h"
#include "virt/backend.h"

/* User state sprig switches; MPX and supervisor state are not offered. PKRU
 * is the guest's alone: sprig never sets CR4.PKE, so the guest's PKRU left in
 * the CPU after an exit does not restrict sprig's own accesses. */
#define XCR0_SWITCHED (XCR0_X87 | XCR0_SSE | XCR0_AVX | XCR0_AVX512 | XCR0_PKRU)

#define FXSAVE_SIZE 512
/* The legacy area (SDM vol. 1, table 10-2): FSW, the abridged tag word,
 * ST0-7 (MM0-7) and XMM0-15 at 16 bytes each; XSTATE_BV after it. */
#define FX_FSW 2
#define FX_FTW 4
#define FX_ST0 32
#define FX_XMM0 160
#define XSAVE_XSTATE_BV 512

static bool use_xsave;
static uint32_t mxcsr_mask;      /* what FXSAVE reports; 0 there means 0xffbf */
static uint64_t host_xcr0;       /* every component guests may use: set while sprig runs */
static struct vcpu *fpu_owner[CPU_MAX]; /* per CPU: whose state is in its registers */

static inline void xsetbv(uint32_t index, uint64_t value)
{
	__asm__ volatile("xsetbv" ::"c"(index), "a"((uint32_t)value), "d"((uint32_t)(value >> 32)));
}

static inline uint64_t xgetbv(uint32_t index)
{
	uint32_t lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(index));
	return ((uint64_t)hi << 32) | lo;
}

static inline void fpu_save(uint8_t *area)
{
	if (use_xsave)
		__asm__ volatile("xsave64 (%0)" ::"r"(area), "a"(~0u), "d"(~0u) : "memory");
	else
		__asm__ volatile("fxsave64 (%0)" ::"r"(area) : "memory");
}

static inline void fpu_restore(const uint8_t *area)
{
	if (use_xsave)
		__asm__ volatile("xrstor64 (%0)" ::"r"(area), "a"(~0u), "d"(~0u) : "memory");
	else
		__asm__ volatile("fxrstor64 (%0)" ::"r"(area) : "memory");
}

/* The MXCSR bits this CPU implements (SDM vol. 1, 11.6.6). */
static uint32_t read_mxcsr_mask(void)
{
	static uint8_t area[FXSAVE_SIZE] __attribute__((aligned(16)));
	uint32_t mask;

	memset(area, 0, sizeof(area));
	__asm__ volatile("fxsave64 %0" : "=m"(area));
	memcpy(&mask, area + 28, sizeof(mask));
	return mask ? mask : 0xffbf;
}

void fpu_init(void)
{
	use_xsave = cpuinfo.xsave;
	if (use_xsave) {
		host_xcr0 = cpuinfo.xcr0_supported & XCR0_SWITCHED;
		/* AVX-512 comes as a whole or not at all (SDM vol. 1, 13.3). */
		if ((host_xcr0 & XCR0_AVX512) != XCR0_AVX512)
			host_xcr0 &= ~XCR0_AVX512;
	}
	fpu_cpu_init();
	mxcsr_mask = read_mxcsr_mask();
}

void fpu_cpu_init(void)
{
	write_cr0((read_cr0() | CR0_MP) & ~(CR0_EM | CR0_TS));
	write_cr4(read_cr4() | CR4_OSFXSR | CR4_OSXMMEXCPT);
	if (!use_xsave)
		return;
	write_cr4(read_cr4() | CR4_OSXSAVE);
	xsetbv(0, host_xcr0);
}

bool fpu_has_xsave(void)
{
	return use_xsave;
}

void fpu_limits(struct fpu_limits *lim)
{
	lim->xsave = use_xsave;
	lim->area_bytes = fpu_vcpu_area_bytes();
	lim->xcr0_allowed = fpu_guest_xcr0_allowed();
	lim->mxcsr_mask = mxcsr_mask;
}

uint64_t fpu_guest_xcr0_allowed(void)
{
	return use_xsave ? host_xcr0 : XCR0_X87;
}

uint32_t fpu_xsave_size(uint64_t xcr0)
{
	uint32_t size = FXSAVE_SIZE + 64; /* legacy area and XSAVE header */

	for (unsigned i = 2; i < 64; i++) {
		if (!(xcr0 & (1ull << i)))
			continue;
		struct cpuid_regs r = cpuid(0xd, i);
		if (r.eax + r.ebx > size)
			size = r.eax + r.ebx;
	}
	return size;
}

uint32_t fpu_vcpu_area_bytes(void)
{
	return use_xsave ? fpu_xsave_size(host_xcr0) : FXSAVE_SIZE;
}

void fpu_vcpu_put(struct vcpu *v)
{
	struct vcpu **owner = &fpu_owner[this_cpu_id()];

	if (*owner == v) {
		fpu_save(v->xsave);
		*owner = NULL;
	}
}

int fpu_vcpu_init(struct vcpu *v)
{
	uint32_t size = fpu_vcpu_area_bytes();
	unsigned order = size > PAGE_SIZE ? 1 : 0;
	paddr_t pa = frame_alloc_zeroed(order);

	if (!pa)
		return -1;
	v->xsave = pa_to_va(pa);
	/* An all-zero XSAVE header means "every component in its initial
	 * state"; the legacy fields still need FCW and MXCSR for FXRSTOR. */
	*(uint16_t *)(v->xsave + 0) = 0x37f;
	*(uint32_t *)(v->xsave + 24) = 0x1f80;
	v->xcr0 = XCR0_X87;
	return 0;
}

void fpu_vcpu_free(struct vcpu *v)
{
	for (unsigned c = 0; c < CPU_MAX; c++)
		if (fpu_owner[c] == v)
			fpu_owner[c] = NULL;
	if (v->xsave) {
		frame_free(va_to_pa(v->xsave), fpu_vcpu_area_bytes() > PAGE_SIZE ? 1 : 0);
	}
	v->xsave = NULL;
}

void fpu_enter(struct vcpu *v)
{
	struct vcpu **owner = &fpu_owner[this_cpu_id()];

	if (*owner != v) {
		if (*owner)
			fpu_save((*owner)->xsave);
		fpu_restore(v->xsave);
		*owner = v;
	}
	if (use_xsave && v->xcr0 != host_xcr0)
		xsetbv(0, v->xcr0);
}

void fpu_exit(struct vcpu *v)
{
	if (!use_xsave)
		return;
	/* Read XCR0 back rather than trust the XSETBV intercept alone: QEMU's
	 * SVM lets the guest's XSETBV through without an exit. */
	v->xcr0 = xgetbv(0);
	if (v->xcr0 != host_xcr0)
		xsetbv(0, host_xcr0);
}

bool fpu_guest_xsetbv(struct vcpu *v, uint32_t index, uint64_t value)
{
	/* SDM vol. 2, XSETBV: #GP for another XCR or an XCR0 it refuses. */
	if (!use_xsave || index != 0 || !xcr0_valid(value, host_xcr0))
		return false;
	v->xcr0 = value;
	return true;
}

/* A component XSAVE found in its initial state is not written to the area
 * (XSTATE_BV clear): its registers read as that state, zeros. */
static bool component_saved(struct vcpu *v, uint64_t bit)
{
	return !use_xsave || (*(uint64_t *)(v->xsave + XSAVE_XSTATE_BV) & bit);
}

/* About to write a component: one in its initial state gets it written
 * out first (x87: FCW 0x37f, the rest zero; SSE: the XMM registers zero,
 * MXCSR has its own slot), and XSTATE_BV then says the area holds it. */
static void component_claim(struct vcpu *v, uint64_t bit)
{
	if (component_saved(v, bit))
		return;
	if (bit == XCR0_X87) {
		memset(v->xsave, 0, 24);
		*(uint16_t *)v->xsave = 0x37f;
		memset(v->xsave + FX_ST0, 0, 8 * 16);
	} else {
		memset(v->xsave + FX_XMM0, 0, 16 * 16);
	}
	*(uint64_t *)(v->xsave + XSAVE_XSTATE_BV) |= bit;
}

static uint8_t *vec_slot(struct vcpu *v, bool mmx, unsigned reg)
{
	return v->xsave + (mmx ? FX_ST0 + 16 * (reg & 7) : FX_XMM0 + 16 * (reg & 15));
}

/* An MMX instruction sets TOP to 0 and tags every register valid (SDM vol.
 * 1, 9.5.1). */
static void mmx_touch(struct vcpu *v)
{
	component_claim(v, XCR0_X87);
	*(uint16_t *)(v->xsave + FX_FSW) &= (uint16_t)~(7u << 11);
	v->xsave[FX_FTW] = 0xff;
}

void fpu_guest_vec_read(struct vcpu *v, bool mmx, unsigned reg, uint8_t val[16])
{
	uint64_t bit = mmx ? XCR0_X87 : XCR0_SSE;

	fpu_vcpu_put(v);
	if (component_saved(v, bit))
		memcpy(val, vec_slot(v, mmx, reg), 16);
	else
		memset(val, 0, 16);
	if (mmx) {
		memset(val + 8, 0, 8);
		mmx_touch(v);
	}
}

void fpu_guest_vec_write(struct vcpu *v, bool mmx, unsigned reg, const uint8_t val[16])
{
	uint8_t *slot = vec_slot(v, mmx, reg);

	fpu_vcpu_put(v);
	if (mmx) {
		mmx_touch(v);
		memcpy(slot, val, 8);
		slot[8] = slot[9] = 0xff; /* bits 79:64 of the register: all ones */
		return;
	}
	component_claim(v, XCR0_SSE);
	memcpy(slot, val, 16);
}
