#include "virt/fpu.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpuinfo.h"
#include "lib/string.h"
#include "mm/frame.h"
#include "virt/vcpu.h"

#define CR0_MP (1ull << 1)
#define CR0_EM (1ull << 2)
#define CR0_TS (1ull << 3)
#define CR4_OSFXSR (1ull << 9)
#define CR4_OSXMMEXCPT (1ull << 10)
#define CR4_OSXSAVE (1ull << 18)

#define XCR0_X87 (1ull << 0)
#define XCR0_SSE (1ull << 1)
#define XCR0_AVX (1ull << 2)
#define XCR0_OPMASK (1ull << 5)
#define XCR0_ZMM_HI256 (1ull << 6)
#define XCR0_HI16_ZMM (1ull << 7)
#define XCR0_AVX512 (XCR0_OPMASK | XCR0_ZMM_HI256 | XCR0_HI16_ZMM)
/* User state sprig switches; MPX, PKRU and supervisor state are not offered. */
#define XCR0_SWITCHED (XCR0_X87 | XCR0_SSE | XCR0_AVX | XCR0_AVX512)

#define FXSAVE_SIZE 512

static bool use_xsave;
static uint64_t host_xcr0;       /* every component guests may use: set while sprig runs */
static struct vcpu *fpu_owner;   /* whose state is in the registers */

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

void fpu_init(void)
{
	write_cr0((read_cr0() | CR0_MP) & ~(CR0_EM | CR0_TS));
	write_cr4(read_cr4() | CR4_OSFXSR | CR4_OSXMMEXCPT);
	use_xsave = cpuinfo.xsave;
	if (!use_xsave)
		return;
	write_cr4(read_cr4() | CR4_OSXSAVE);
	host_xcr0 = cpuinfo.xcr0_supported & XCR0_SWITCHED;
	/* AVX-512 comes as a whole or not at all (SDM vol. 1, 13.3). */
	if ((host_xcr0 & XCR0_AVX512) != XCR0_AVX512)
		host_xcr0 &= ~XCR0_AVX512;
	xsetbv(0, host_xcr0);
}

bool fpu_has_xsave(void)
{
	return use_xsave;
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

void fpu_vcpu_sync(struct vcpu *v)
{
	if (fpu_owner == v)
		fpu_save(v->xsave);
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
	if (fpu_owner == v)
		fpu_owner = NULL;
	if (v->xsave) {
		frame_free(va_to_pa(v->xsave), fpu_vcpu_area_bytes() > PAGE_SIZE ? 1 : 0);
	}
	v->xsave = NULL;
}

void fpu_enter(struct vcpu *v)
{
	if (fpu_owner != v) {
		if (fpu_owner)
			fpu_save(fpu_owner->xsave);
		fpu_restore(v->xsave);
		fpu_owner = v;
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
	/* SDM vol. 2, XSETBV: #GP for another XCR, x87 clear, AVX without SSE,
	 * AVX-512 partly or without AVX, or bits the CPU (here: sprig) lacks. */
	if (!use_xsave || index != 0 || !(value & XCR0_X87))
		return false;
	if (value & ~host_xcr0)
		return false;
	if ((value & XCR0_AVX) && !(value & XCR0_SSE))
		return false;
	if ((value & XCR0_AVX512) &&
	    ((value & XCR0_AVX512) != XCR0_AVX512 || !(value & XCR0_AVX)))
		return false;
	v->xcr0 = value;
	return true;
}
