/* sprig's own writes into guest memory (mmu_write_guest, mm/mmu.c): in every
 * entry format they reach the dirty log of a logged slot, including pages the
 * guest mapped writable itself (a harvest just cleared them) and ranges across
 * pages and across adjacent slots; a range that leaves guest memory anywhere
 * (past a slot's end, into a hole, past 2^64) is refused with nothing written
 * and nothing logged, for reads too; a write to a clone's shared frame copies
 * it first. And the writers that compile on the host: the paravirtual clock
 * (virt/pvclock.c), whose system-time structure is refused, as KVM refuses
 * it, when it crosses a page or leaves memory; the loaders' writes are
 * checked in test_mb1_loader.c. */
#include "check.h"
#include "mm/dirty_log.h"
#include "mm/mmu_internal.h"
#include "mm/tdp_mmu.h"
#include "svm/npt.h"
#include "tests/unit/host_mem.h"
#include "tests/unit/mmu_check.h"
#include "virt/pvclock.h"
#include "vmx/ept.h"
#include <string.h>

#define MiB (1ull << 20)
#define SLOT_PAGES 64
#define LOG_WORDS ((SLOT_PAGES + 63) / 64)
#define MEM_BYTES (2 * SLOT_PAGES * PAGE_SIZE) /* the two slots of vm_init */

/* The source of the long writes: as long as all guest memory. */
static uint8_t big[MEM_BYTES];

static void no_flush(void *ctx)
{
	(void)ctx;
}

/* Two adjacent lazy slots of SLOT_PAGES pages at gpa 0 and right after,
 * logged when asked. */
static void vm_init(struct mmu *mmu, const struct spte_format *fmt, bool logged)
{
	for (int i = 0; i < 2; i++) {
		struct memslot_config cfg = {
			.gpa = i * SLOT_PAGES * PAGE_SIZE, .size = SLOT_PAGES * PAGE_SIZE,
			.flags = logged ? MEMSLOT_DIRTY_LOG : 0,
			.backing = { .kind = BACKING_LAZY },
		};

		if (i == 0)
			REQUIRE(mmu_init(mmu, fmt, no_flush, NULL) == 0);
		REQUIRE(mmu_slot_add(mmu, &cfg) == 0);
	}
}

/* The harvested log of the slot at slot_gpa is exactly the pages listed
 * (page numbers within the slot; -1 ends the list). */
static bool log_is(struct mmu *mmu, uint64_t slot_gpa, const int *pages)
{
	uint64_t got[LOG_WORDS], want[LOG_WORDS] = { 0 };
	int64_t n = mmu_dirty_log_get(mmu, slot_gpa, got);

	for (; *pages >= 0; pages++)
		want[*pages / 64] |= 1ull << (*pages % 64);
	if (n < 0 || memcmp(got, want, sizeof(got)) != 0) {
		fprintf(stderr, "  log of slot 0x%llx: got %016llx want %016llx (n %lld)\n",
			(unsigned long long)slot_gpa, (unsigned long long)got[0],
			(unsigned long long)want[0], (long long)n);
		return false;
	}
	return true;
}

static const struct spte_format *format(int i)
{
	return i == 0 ? &npt_format : ept_format(i == 2);
}

TEST(guest_write_dirty_logged)
{
	static const int none[] = { -1 }, p3[] = { 3, -1 }, p10_11[] = { 10, 11, -1 },
			 last[] = { SLOT_PAGES - 1, -1 }, first[] = { 0, -1 };
	const uint64_t b = SLOT_PAGES * PAGE_SIZE;
	uint64_t word = 0x1122334455667788ull;

	host_mem_init(64 * MiB);
	for (int fi = 0; fi < 3; fi++) {
		struct mmu mmu;

		vm_init(&mmu, format(fi), true);
		/* The guest wrote page 3 through its own mapping; the harvest
		 * takes it and write-protects or cleans the leaf. */
		REQUIRE(tdp_map(&mmu, 3 * PAGE_SIZE, TDP_ACC_WRITE) == TDP_FIXED);
		mmu_cpu_sets_dirty(&mmu, 3 * PAGE_SIZE);
		CHECK(log_is(&mmu, 0, p3));
		/* sprig writes it now: no leaf sees that, the log must. */
		CHECK(mmu_write_guest(&mmu, 3 * PAGE_SIZE + 8, &word, 8) == 0);
		CHECK(log_is(&mmu, 0, p3));
		CHECK(log_is(&mmu, 0, none));
		/* Across a page boundary: both pages. */
		CHECK(mmu_write_guest(&mmu, 11 * PAGE_SIZE - 4, &word, 8) == 0);
		CHECK(log_is(&mmu, 0, p10_11));
		/* Across the boundary of two adjacent slots: one page in each. */
		CHECK(mmu_write_guest(&mmu, b - 4, &word, 8) == 0);
		CHECK(log_is(&mmu, 0, last));
		CHECK(log_is(&mmu, b, first));
		/* A read is no write. */
		CHECK(mmu_read_guest(&mmu, 20 * PAGE_SIZE, &word, 8) == 0);
		CHECK(log_is(&mmu, 0, none));
		CHECK(mmu_audit_passes(&mmu));
		mmu_destroy(&mmu);
	}
}

TEST(guest_write_range_refused)
{
	static const int none[] = { -1 };
	const uint64_t end = MEM_BYTES;
	uint8_t before[8], got[8], ones[8];
	struct mmu mmu;

	host_mem_init(64 * MiB);
	memset(ones, 0xff, sizeof(ones));
	vm_init(&mmu, &npt_format, false);
	for (unsigned i = 0; i < sizeof(before); i++)
		before[i] = (uint8_t)(0xa0 + i);
	REQUIRE(mmu_write_guest(&mmu, end - 8, before, 8) == 0);
	REQUIRE(mmu_dirty_log_enable(&mmu, SLOT_PAGES * PAGE_SIZE, true) == 0);
	/* Straddling the end of memory: nothing of it goes in, nothing logged. */
	CHECK(mmu_write_guest(&mmu, end - 4, ones, 8) != 0);
	CHECK(mmu_read_guest(&mmu, end - 8, got, 8) == 0);
	CHECK(memcmp(got, before, 8) == 0);
	CHECK(log_is(&mmu, SLOT_PAGES * PAGE_SIZE, none));
	/* Reads are all or nothing too. */
	memset(got, 0x5a, sizeof(got));
	CHECK(mmu_read_guest(&mmu, end - 4, got, 8) != 0);
	/* Wholly outside, and wrapping past 2^64 onto page 0. */
	CHECK(mmu_write_guest(&mmu, end, ones, 8) != 0);
	CHECK(mmu_write_guest(&mmu, UINT64_MAX - 3, ones, 8) != 0);
	CHECK(mmu_write_guest(&mmu, 8, big, MEM_BYTES) != 0);
	CHECK(mmu_read_guest(&mmu, UINT64_MAX - 3, got, 8) != 0);
	CHECK(mmu_read_guest(&mmu, 0, got, 8) == 0);
	CHECK(memcmp(got, ones, 8) != 0);
	mmu_destroy(&mmu);

	/* A hole between two slots. */
	{
		struct memslot_config lo = { .gpa = 0, .size = 16 * PAGE_SIZE,
					     .backing = { .kind = BACKING_LAZY } };
		struct memslot_config hi = lo;

		hi.gpa = 32 * PAGE_SIZE;
		REQUIRE(mmu_init(&mmu, &npt_format, no_flush, NULL) == 0);
		REQUIRE(mmu_slot_add(&mmu, &lo) == 0 && mmu_slot_add(&mmu, &hi) == 0);
		REQUIRE(mmu_write_guest(&mmu, 16 * PAGE_SIZE - 8, before, 8) == 0);
		CHECK(mmu_write_guest(&mmu, 16 * PAGE_SIZE - 4, big, 20 * PAGE_SIZE) != 0);
		CHECK(mmu_read_guest(&mmu, 16 * PAGE_SIZE - 8, got, 8) == 0);
		CHECK(memcmp(got, before, 8) == 0);
		CHECK(mmu_audit_passes(&mmu));
		mmu_destroy(&mmu);
	}
}

TEST(guest_write_breaks_cow)
{
	static struct mmu parent, child;
	uint64_t old = 0x0123456789abcdefull, word = 0xfeedull, got = 0;

	host_mem_init(64 * MiB);
	vm_init(&parent, &npt_format, false);
	parent.share.id = 1;
	REQUIRE(mmu_write_guest(&parent, 5 * PAGE_SIZE, &old, 8) == 0);
	REQUIRE(mmu_init(&child, &npt_format, no_flush, NULL) == 0);
	child.share.id = 2;
	REQUIRE(mmu_clone(&parent, &child) == 0);
	/* Refused whole: no copy made for the first, shared page either. */
	CHECK(mmu_write_guest(&child, 5 * PAGE_SIZE, big, MEM_BYTES) != 0);
	CHECK_EQ_U64(child.share.cow_copies, 0);
	CHECK(mmu_write_guest(&child, 5 * PAGE_SIZE, &word, 8) == 0);
	CHECK_EQ_U64(child.share.cow_copies, 1);
	CHECK(mmu_read_guest(&child, 5 * PAGE_SIZE, &got, 8) == 0);
	CHECK_EQ_U64(got, word);
	CHECK(mmu_read_guest(&parent, 5 * PAGE_SIZE, &got, 8) == 0);
	CHECK_EQ_U64(got, old);
	CHECK(mmu_audit_passes(&parent));
	CHECK(mmu_audit_passes(&child));
	mmu_destroy(&child);
	mmu_destroy(&parent);
}

TEST(guest_write_pvclock)
{
	static const int p7[] = { 7, -1 }, none[] = { -1 };
	const uint64_t end = MEM_BYTES;
	struct pvclock_scale s;
	uint32_t version = 4, got;
	uint8_t buf[PVCLOCK_TIME_INFO_SIZE], zero[PVCLOCK_TIME_INFO_SIZE] = { 0 };
	struct mmu mmu;

	host_mem_init(64 * MiB);
	pvclock_scale_for(2000000, &s);
	vm_init(&mmu, &npt_format, true);
	/* Written whole, with an even version, and logged. */
	CHECK(pvclock_publish_time_info(&mmu, 7 * PAGE_SIZE + 0x40, &version, &s) == 0);
	CHECK_EQ_U64(version, 6);
	CHECK(mmu_read_guest(&mmu, 7 * PAGE_SIZE + 0x40, &got, 4) == 0);
	CHECK_EQ_U64(got, 6);
	CHECK(log_is(&mmu, 0, p7));
	CHECK(pvclock_publish_wall_clock(&mmu, 7 * PAGE_SIZE + 0x80, 1234) == 0);
	CHECK(log_is(&mmu, 0, p7));
	/* Across a page (KVM's pfn cache refuses it), and across the end of
	 * memory: nothing written, nothing logged, the version kept. */
	CHECK(pvclock_publish_time_info(&mmu, 9 * PAGE_SIZE - 16, &version, &s) != 0);
	CHECK(pvclock_publish_time_info(&mmu, end - 16, &version, &s) != 0);
	CHECK(pvclock_publish_time_info(&mmu, end, &version, &s) != 0);
	CHECK_EQ_U64(version, 6);
	CHECK(mmu_read_guest(&mmu, 9 * PAGE_SIZE - 16, buf, sizeof(buf)) == 0);
	CHECK(memcmp(buf, zero, sizeof(buf)) == 0);
	CHECK(mmu_read_guest(&mmu, end - 16, buf, 16) == 0);
	CHECK(memcmp(buf, zero, 16) == 0);
	CHECK(pvclock_publish_wall_clock(&mmu, end - 4, 1234) != 0);
	CHECK(mmu_read_guest(&mmu, end - 4, buf, 4) == 0);
	CHECK(memcmp(buf, zero, 4) == 0);
	CHECK(log_is(&mmu, 0, none));
	CHECK(log_is(&mmu, SLOT_PAGES * PAGE_SIZE, none));
	mmu_destroy(&mmu);
}
