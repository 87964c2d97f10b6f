/* KVM's pvclock structures and TSC scale (pvclock.h). */
#include "virt/pvclock.h"
#include "lib/bytes.h"
#include "lib/string.h"
#include "mm/mmu.h"

#define NS_PER_MS 1000000ull
#define PAGE_OFFSET_MASK (PAGE_SIZE - 1)

void pvclock_scale_for(uint64_t tsc_khz, struct pvclock_scale *s)
{
	/* mul / 2^32 * 2^shift = NS_PER_MS / tsc_khz, num / den kept in [1/2, 1). */
	uint64_t num = NS_PER_MS, den = tsc_khz;
	int shift = 0;

	while (num >= den) {
		den <<= 1;
		shift++;
	}
	while (num * 2 < den) {
		num <<= 1;
		shift--;
	}
	s->mul = (uint32_t)((num << 32) / den);
	s->shift = (int8_t)shift;
}

uint64_t pvclock_scaled_ns(uint64_t tsc, const struct pvclock_scale *s)
{
	uint64_t d = s->shift < 0 ? tsc >> -s->shift : tsc << s->shift;

	/* (d * mul) >> 32 without a 128-bit product. */
	return (d >> 32) * s->mul + (((d & 0xffffffffull) * s->mul) >> 32);
}

void pvclock_time_info(uint8_t out[PVCLOCK_TIME_INFO_SIZE], uint32_t version,
		       const struct pvclock_scale *s)
{
	memset(out, 0, PVCLOCK_TIME_INFO_SIZE);
	put32(out, version);
	/* tsc_timestamp (8) and system_time (16) stay 0. */
	put32(out + 24, s->mul);
	out[28] = (uint8_t)s->shift;
	out[29] = PVCLOCK_TSC_STABLE_BIT;
}

void pvclock_wall_clock(uint8_t out[PVCLOCK_WALL_CLOCK_SIZE], uint32_t version, uint32_t sec,
			uint32_t nsec)
{
	put32(out, version);
	put32(out + 4, sec);
	put32(out + 8, nsec);
}

int pvclock_publish_time_info(struct mmu *mmu, uint64_t gpa, uint32_t *version,
			      const struct pvclock_scale *s)
{
	uint8_t buf[PVCLOCK_TIME_INFO_SIZE];
	uint32_t whole = *version + 2;

	if ((gpa & PAGE_OFFSET_MASK) + PVCLOCK_TIME_INFO_SIZE > PAGE_SIZE)
		return -1;
	/* Odd while the structure changes, even once it is whole. */
	pvclock_time_info(buf, whole - 1, s);
	if (mmu_write_guest(mmu, gpa, buf, sizeof(buf)) ||
	    mmu_write_guest(mmu, gpa, &whole, sizeof(whole)))
		return -1;
	*version = whole;
	return 0;
}

int pvclock_publish_wall_clock(struct mmu *mmu, uint64_t gpa, uint32_t sec)
{
	uint8_t buf[PVCLOCK_WALL_CLOCK_SIZE];

	pvclock_wall_clock(buf, 2, sec, 0);
	return mmu_write_guest(mmu, gpa, buf, sizeof(buf));
}
