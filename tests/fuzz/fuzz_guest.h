/* Shared by the loader fuzz targets (fuzz_mb1.c, fuzz_bzimage.c): a guest's
 * memory on the real MMU over host_mem, read back to check what a loader
 * wrote. */
#pragma once
#include "mm/mmu.h"
#include "tests/fuzz/fuzz.h"
#include <stdbool.h>
#include <string.h>

/* The MMU's flush: nothing runs the guest, no TLB to flush. */
static inline void no_flush(void *ctx)
{
	(void)ctx;
}

static inline uint32_t guest32(struct mmu *mmu, uint64_t gpa)
{
	uint32_t v;

	FUZZ_ASSERT(mmu_read_guest(mmu, gpa, &v, 4) == 0);
	return v;
}

static inline bool guest_equals(struct mmu *mmu, uint64_t gpa, const void *want, size_t len)
{
	uint8_t got[4096];

	for (size_t off = 0; off < len; off += sizeof(got)) {
		size_t n = len - off < sizeof(got) ? len - off : sizeof(got);
		if (mmu_read_guest(mmu, gpa + off, got, n) || memcmp(got, (const uint8_t *)want + off, n))
			return false;
	}
	return true;
}
