/* Puts distinct values in every x87 and SSE register (and the upper halves
 * of the AVX registers when the CPU has AVX), spins for `loops=N` iterations
 * (default 20 million) while the host takes interrupts and exits, then checks
 * that every register kept its value: sprig must switch FPU/SSE/AVX state per
 * vCPU. Prints "fpu ok" or what changed; exit 0 or 1. Nothing printed
 * depends on whether AVX was there. */
#include "guests/rt/rt.h"

#define CPUID1_ECX_XSAVE (1u << 26)
#define CPUID1_ECX_AVX (1u << 28)
#define CR4_OSXSAVE (1ul << 18)
#define CPUID1_ECX_OSXSAVE (1u << 27)
#define XCR0_X87 (1u << 0)
#define XCR0_SSE (1u << 1)
#define XCR0_AVX (1u << 2)
#define MXCSR_ROUND_TO_ZERO 0x7f80	/* all exceptions masked */
#define FCW_ROUND_TO_ZERO 0x0f7f	/* all exceptions masked, 64-bit precision */

/* Offsets are fixed: hold.S uses them. */
struct fpu_state {
	uint8_t vec[16][32];
	int64_t x87[8];
	uint32_t mxcsr;
	uint16_t fcw;
} __attribute__((packed));

void fpu_hold(const struct fpu_state *in, struct fpu_state *out,
	      unsigned long loops, bool avx);

static struct fpu_state before, after;

/* Turns on AVX state (CR4.OSXSAVE and XCR0) when CPUID offers it. */
static bool enable_avx(void)
{
	uint32_t a, b, c, d;
	unsigned long cr4;

	cpuid(1, 0, &a, &b, &c, &d);
	if (!(c & CPUID1_ECX_XSAVE) || !(c & CPUID1_ECX_AVX))
		return false;
	cpuid(0xd, 0, &a, &b, &c, &d);
	if (!(a & XCR0_AVX))
		return false;
	asm volatile("mov %%cr4, %0" : "=r"(cr4));
	asm volatile("mov %0, %%cr4" : : "r"(cr4 | CR4_OSXSAVE));
	/* CPUID's OSXSAVE bit mirrors this CPU's CR4.OSXSAVE (SDM vol. 2, CPUID). */
	cpuid(1, 0, &a, &b, &c, &d);
	if (!(c & CPUID1_ECX_OSXSAVE))
		printf("fpu: CPUID.1:ECX.OSXSAVE is clear with CR4.OSXSAVE set\n");
	asm volatile("xsetbv" : : "c"(0), "a"(XCR0_X87 | XCR0_SSE | XCR0_AVX), "d"(0));
	return true;
}

static bool vec_equal(const uint8_t *x, const uint8_t *y, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (x[i] != y[i])
			return false;
	return true;
}

int main(const struct mb1_info *mbi)
{
	unsigned long loops = arg_ulong(mbi, "loops", 20000000);
	/* Two guests with different seeds hold different values, so that one
	 * would notice the other's state leaking into its registers. */
	uint8_t seed = (uint8_t)arg_ulong(mbi, "seed", 0);
	bool avx = enable_avx();
	bool ok = true;

	if (!loops)
		loops = 1;
	for (int r = 0; r < 16; r++)
		for (int i = 0; i < 32; i++)
			before.vec[r][i] = (uint8_t)(r * 32 + i + 1) ^ 0xa5 ^ seed;
	for (int r = 0; r < 8; r++)
		before.x87[r] = 1000003ll * (r + 1 + seed) * (r % 2 ? -1 : 1);
	before.mxcsr = MXCSR_ROUND_TO_ZERO;
	before.fcw = FCW_ROUND_TO_ZERO;

	printf("fpu: holding values for %lu loops\n", loops);
	fpu_hold(&before, &after, loops, avx);

	for (int r = 0; r < 16; r++) {
		if (!vec_equal(before.vec[r], after.vec[r], 16)) {
			printf("fpu: xmm%d changed\n", r);
			ok = false;
		}
		if (avx && !vec_equal(before.vec[r] + 16, after.vec[r] + 16, 16)) {
			printf("fpu: ymm%d upper half changed\n", r);
			ok = false;
		}
	}
	for (int r = 0; r < 8; r++) {
		if (before.x87[r] != after.x87[r]) {
			printf("fpu: x87 value %d changed: %ld, expected %ld\n",
			       r, after.x87[r], before.x87[r]);
			ok = false;
		}
	}
	if (after.mxcsr != before.mxcsr) {
		printf("fpu: mxcsr changed: 0x%x\n", after.mxcsr);
		ok = false;
	}
	if (after.fcw != before.fcw) {
		printf("fpu: x87 control word changed: 0x%x\n", after.fcw);
		ok = false;
	}
	if (!ok)
		return 1;
	printf("fpu ok\n");
	return 0;
}
