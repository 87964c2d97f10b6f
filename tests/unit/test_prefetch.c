/* Prefetch on 4 KiB faults (mm/prefetch.c): the run it maps and where it must
 * stop (slot ends, present entries, unbacked pages, the leaf table's edge), no
 * prefetch during an invalidation, read-only prefetch on dirty-logged slots,
 * the accessed bit and the unused count, adaptive back-off and its recovery
 * when a restore switches from 4 KiB to 2 MiB chunks, and byte-for-byte
 * contents; the audit after each run. conc_prefetch_* run faults, hardware
 * accessed-bit updates and discards together (also under TSan). */
#include "check.h"
#include "mm/mmu_config.h"
#include "mm/mmu_internal.h"
#include "mm/tdp_mmu.h"
#include "mm/cow.h"
#include "svm/npt.h"
#include "tests/rng.h"
#include "tests/unit/host_mem.h"
#include "tests/unit/mmu_check.h"
#include "vmx/ept.h"
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define PAGES_2M 512u
#define IMAGE_BYTES (16 * MiB)

static uint8_t image[IMAGE_BYTES];

/* Every 8 bytes different, so a page mapped at the wrong gfn shows. */
static void image_init(void)
{
	uint64_t *w = (uint64_t *)image;

	if (w[1])
		return;
	for (uint64_t i = 0; i < IMAGE_BYTES / 8; i++)
		w[i] = i * 0x9E3779B97F4A7C15ull + 1;
}

static void no_flush(void *ctx)
{
	(void)ctx;
}

/* The formats whose leaves have an accessed bit, and EPT without one. */
static const struct spte_format *format(int i)
{
	return i == 0 ? &npt_format : i == 1 ? ept_format(true) : ept_format(false);
}
#define N_FORMATS 3

/* Prefetch mode and adaptive switch for one test; restored by test_end. */
static struct mmu_config saved_config;

static void test_begin(int mode, bool adaptive)
{
	saved_config = mmu_config;
	mmu_config.prefetch = mode;
	mmu_config.prefetch_adaptive = adaptive;
	image_init();
}

static void test_end(void)
{
	mmu_config = saved_config;
}

static int restore_vm(struct mmu *mmu, const struct spte_format *f, uint64_t gpa, uint64_t size,
		      uint32_t chunk_pages, uint32_t flags)
{
	struct memslot_config s = { .gpa = gpa, .size = size, .flags = flags,
				    .backing = { .kind = BACKING_RESTORE, .image = image,
						 .image_bytes = size < IMAGE_BYTES ? size : IMAGE_BYTES,
						 .chunk_pages = chunk_pages } };

	if (mmu_init(mmu, f, no_flush, NULL))
		return -1;
	return mmu_slot_add(mmu, &s);
}

/* The VM each per-format test body gets: one restore slot. */
struct vm_shape {
	uint64_t gpa, size;
	uint32_t chunk_pages, flags;
};

/* Run body in a fresh VM of the given shape for each format, with the given
 * prefetch switches; the audit must pass after each. */
static void each_format(int mode, bool adaptive, struct vm_shape shape,
			void (*body)(struct mmu *mmu, const struct spte_format *f))
{
	test_begin(mode, adaptive);
	host_mem_init(1 * GiB);
	for (int fi = 0; fi < N_FORMATS; fi++) {
		struct mmu mmu;

		if (restore_vm(&mmu, format(fi), shape.gpa, shape.size, shape.chunk_pages,
			       shape.flags)) {
			CHECK(!"no memory for the VM");
			break;
		}
		body(&mmu, format(fi));
		CHECK(mmu_audit_passes(&mmu));
		mmu_destroy(&mmu);
	}
	test_end();
}

/* The leaf entry mapping gfn, or NULL. Caller holds mmu_lock. */
static uint64_t *leaf_of(struct mmu *mmu, uint64_t gfn)
{
	struct tdp_iter it;

	for_each_tdp_pte(it, &mmu->root, gfn, gfn + 1)
		if (spte_present(it.fmt, it.old_spte) && spte_is_leaf(it.fmt, it.old_spte, it.level))
			return it.sptep;
	return NULL;
}

static uint64_t spte_of(struct mmu *mmu, uint64_t gfn)
{
	uint64_t *p, v;

	read_lock(&mmu->lock);
	p = leaf_of(mmu, gfn);
	v = p ? tdp_iter_read(p) : SPTE_NONE;
	read_unlock(&mmu->lock);
	return v;
}

/* A guest access as the hardware does it: walk, fault until the leaf allows
 * the access, and set the accessed bit the walker sets on a leaf without it.
 * Returns the faults taken; *hpa is the byte the access reached. */
static unsigned guest_access(struct mmu *mmu, uint64_t gpa, unsigned access, paddr_t *hpa)
{
	const struct spte_format *f = mmu->root.fmt;
	unsigned faults = 0;

	for (;;) {
		uint64_t *sptep;
		bool done = false;

		read_lock(&mmu->lock);
		sptep = leaf_of(mmu, gpa >> PAGE_SHIFT);
		if (sptep) {
			uint64_t spte = tdp_iter_read(sptep);

			if ((spte_rights(f, spte) & access) == access) {
				__atomic_fetch_or(sptep, f->accessed, __ATOMIC_RELAXED);
				*hpa = spte_addr(f, spte) + (gpa & (PAGE_SIZE - 1));
				done = true;
			}
		}
		read_unlock(&mmu->lock);
		if (done)
			return faults;
		faults++;
		if (tdp_map(mmu, gpa, access) > TDP_RETRY)
			return faults;
	}
}

/* Touch [gpa, gpa + len) page by page in the given order (0 forward, 1
 * backward), checking each page against the image; returns the faults. */
static uint64_t touch_range(struct mmu *mmu, uint64_t slot_gpa, uint64_t gpa, uint64_t len,
			    bool backward)
{
	uint64_t faults = 0, n = len / PAGE_SIZE;

	for (uint64_t i = 0; i < n; i++) {
		uint64_t at = gpa + (backward ? n - 1 - i : i) * PAGE_SIZE;
		paddr_t hpa = 0;

		faults += guest_access(mmu, at, TDP_ACC_READ, &hpa);
		if (!hpa || memcmp(pa_to_va(hpa), image + (at - slot_gpa), PAGE_SIZE) != 0) {
			CHECK(!"restored page differs from the image");
			break;
		}
	}
	return faults;
}

static void forward_2m_chunks(struct mmu *mmu, const struct spte_format *f)
{
	(void)f;
	/* 8 MiB forward: one fault per 2 MiB region, contents exact. */
	CHECK_EQ_U64(touch_range(mmu, 0, 0, 8 * MiB, false), 4);
	CHECK_EQ_U64(mmu->stats.pf_prefetch_called, 4);
	CHECK_EQ_U64(mmu->stats.pf_prefetch_pages, 4 * 511);
	CHECK_EQ_U64(mmu->stats.pf_prefetch_mapped, 4 * 511);
	CHECK_EQ_U64(mmu->stats.pages_4k, 4 * 512);
}

TEST(prefetch_forward_maps_2m_chunk_in_one_fault)
{
	each_format(PREFETCH_FORWARD, true, (struct vm_shape){ 0, 8 * MiB, PAGES_2M, 0 },
		    forward_2m_chunks);
}

static void accessed_bit_and_unused(struct mmu *mmu, const struct spte_format *f)
{
	paddr_t hpa;

	CHECK_EQ_U64(guest_access(mmu, 0, TDP_ACC_READ, &hpa), 1);
	/* The faulting page is built accessed, its prefetched neighbours not. */
	CHECK((spte_of(mmu, 0) & f->accessed) == f->accessed);
	CHECK_EQ_U64(spte_of(mmu, 1) & f->accessed, 0);
	/* The walker sets A on ten of them: the leaves changed under the MMU
	 * and the audit must accept them. */
	for (uint64_t g = 1; g <= 10; g++)
		CHECK_EQ_U64(guest_access(mmu, g << PAGE_SHIFT, TDP_ACC_WRITE, &hpa), 0);
	CHECK((spte_of(mmu, 5) & f->accessed) == f->accessed);
	CHECK(mmu_audit_passes(mmu));
	mmu_discard(mmu, 0, 2 * MiB);
	/* 511 prefetched, 10 used; without an accessed bit nothing can tell. */
	CHECK_EQ_U64(mmu->stats.pf_prefetch_unused, f->accessed ? 501 : 0);
}

TEST(prefetch_accessed_bit_and_unused)
{
	each_format(PREFETCH_FORWARD, false, (struct vm_shape){ 0, 2 * MiB, PAGES_2M, 0 },
		    accessed_bit_and_unused);
}

/* The restore slot covers pages [100, 300) of one leaf table; eager slots
 * (always backed) sit on both sides of it in the same table. */
static void slot_ends(struct mmu *mmu, const struct spte_format *f)
{
	struct memslot_config below = { .gpa = 0, .size = 100 * PAGE_SIZE,
					.backing = { .kind = BACKING_EAGER } };
	struct memslot_config above = { .gpa = 300 * PAGE_SIZE, .size = 212 * PAGE_SIZE,
					.backing = { .kind = BACKING_EAGER } };

	(void)f;
	REQUIRE(mmu_slot_add(mmu, &below) == 0 && mmu_slot_add(mmu, &above) == 0);
	CHECK_EQ_U64(tdp_map(mmu, 150 * PAGE_SIZE, TDP_ACC_READ), TDP_FIXED);
	CHECK_EQ_U64(mmu->stats.pf_prefetch_mapped, 199);
	CHECK_EQ_U64(mmu->stats.pages_4k, 200);
	CHECK_EQ_U64(spte_of(mmu, 99), SPTE_NONE);
	CHECK(spte_of(mmu, 100) != SPTE_NONE && spte_of(mmu, 299) != SPTE_NONE);
	CHECK_EQ_U64(spte_of(mmu, 300), SPTE_NONE);
}

TEST(prefetch_stops_at_slot_end)
{
	each_format(PREFETCH_BOTH, false,
		    (struct vm_shape){ 100 * PAGE_SIZE, 200 * PAGE_SIZE, PAGES_2M, 0 }, slot_ends);
}

/* Chunks of 16 pages: a fault at page 44 fills [32, 48). */
static void present_entry_and_unbacked_page(struct mmu *mmu, const struct spte_format *f)
{
	uint64_t present;

	(void)f;
	CHECK_EQ_U64(tdp_map(mmu, 44 * PAGE_SIZE, TDP_ACC_WRITE), TDP_FIXED);
	/* Unbacked on both sides: exactly the chunk is mapped. */
	CHECK_EQ_U64(mmu->stats.pages_4k, 16);
	CHECK_EQ_U64(spte_of(mmu, 31), SPTE_NONE);
	CHECK_EQ_U64(spte_of(mmu, 48), SPTE_NONE);
	/* Zap [34, 46) but keep 40: present entries bound the next run. */
	write_lock(&mmu->lock);
	tdp_zap_range(mmu, 34, 40);
	tdp_zap_range(mmu, 41, 46);
	mmu_flush_tlb(mmu);
	write_unlock(&mmu->lock);
	present = spte_of(mmu, 40);
	CHECK_EQ_U64(tdp_map(mmu, 37 * PAGE_SIZE, TDP_ACC_READ), TDP_FIXED);
	/* 32, 33, 40, 46, 47 stayed; 37 itself, then 38, 39 and 36, 35, 34 join
	 * them; not 41 or anything past the present 40. */
	CHECK_EQ_U64(mmu->stats.pages_4k, 5 + 1 + 5);
	CHECK_EQ_U64(spte_of(mmu, 40), present);
	CHECK_EQ_U64(spte_of(mmu, 41), SPTE_NONE);
}

TEST(prefetch_stops_at_present_entry_and_unbacked_page)
{
	each_format(PREFETCH_BOTH, false, (struct vm_shape){ 0, 2 * MiB, 16, 0 },
		    present_entry_and_unbacked_page);
}

TEST(prefetch_modes)
{
	host_mem_init(1 * GiB);
	for (int mode = PREFETCH_OFF; mode <= PREFETCH_BOTH; mode++) {
		struct mmu mmu;
		uint64_t faults;

		test_begin(mode, false);
		REQUIRE(restore_vm(&mmu, &npt_format, 0, 4 * MiB, PAGES_2M, 0) == 0);
		faults = touch_range(&mmu, 0, 0, 4 * MiB, true);
		/* Backwards, forward prefetch finds every later page mapped. */
		CHECK_EQ_U64(faults, mode == PREFETCH_BOTH ? 2 : 2 * PAGES_2M);
		CHECK_EQ_U64(mmu.stats.pf_prefetch_called, mode == PREFETCH_OFF ? 0 : faults);
		CHECK(mmu_audit_passes(&mmu));
		mmu_destroy(&mmu);
		test_end();
	}
}

static void dirty_log_read_only(struct mmu *mmu, const struct spte_format *f)
{
	paddr_t hpa;

	CHECK_EQ_U64(guest_access(mmu, 0, TDP_ACC_WRITE, &hpa), 1);
	/* The written page is writable, its prefetched neighbours are not. */
	CHECK(spte_rights(f, spte_of(mmu, 0)) & TDP_ACC_WRITE);
	CHECK_EQ_U64(spte_rights(f, spte_of(mmu, 1)), TDP_ACC_READ | TDP_ACC_EXEC);
	CHECK_EQ_U64(mmu->stats.pf_prefetch_mapped, 511);
	CHECK(mmu_audit_passes(mmu));
	/* Reading them costs nothing; the first write faults and upgrades. */
	CHECK_EQ_U64(guest_access(mmu, 7 * PAGE_SIZE, TDP_ACC_READ, &hpa), 0);
	CHECK_EQ_U64(guest_access(mmu, 7 * PAGE_SIZE, TDP_ACC_WRITE, &hpa), 1);
	CHECK(spte_rights(f, spte_of(mmu, 7)) & TDP_ACC_WRITE);
	CHECK_EQ_U64(mmu->stats.pf_fixed, 2);
	/* The upgrade prefetches nothing more. */
	CHECK_EQ_U64(mmu->stats.pf_prefetch_called, 1);
}

TEST(prefetch_dirty_log_maps_read_only)
{
	each_format(PREFETCH_FORWARD, false,
		    (struct vm_shape){ 0, 2 * MiB, PAGES_2M, MEMSLOT_DIRTY_LOG }, dirty_log_read_only);
}

static void none_during_invalidation(struct mmu *mmu, const struct spte_format *f)
{
	(void)f;
	CHECK_EQ_U64(tdp_map(mmu, 0, TDP_ACC_READ), TDP_FIXED);
	write_lock(&mmu->lock);
	tdp_zap_range(mmu, 1, PAGES_2M);
	mmu_flush_tlb(mmu);
	write_unlock(&mmu->lock);
	/* An invalidation that has yielded its lock: the pages still look
	 * backed, but a fault retries and prefetch maps none of them. */
	__atomic_store_n(&mmu->invalidate_in_progress, 1, __ATOMIC_RELAXED);
	CHECK_EQ_U64(tdp_map(mmu, 100 * PAGE_SIZE, TDP_ACC_READ), TDP_RETRY);
	read_lock(&mmu->slots_lock);
	read_lock(&mmu->lock);
	tdp_prefetch(mmu, memslot_find(&mmu->slots, 0), 0, leaf_of(mmu, 0));
	read_unlock(&mmu->lock);
	read_unlock(&mmu->slots_lock);
	CHECK_EQ_U64(mmu->stats.pages_4k, 1);
	CHECK_EQ_U64(mmu->stats.pf_prefetch_called, 1);
	/* Once it has ended, the next fault prefetches again. */
	__atomic_store_n(&mmu->invalidate_in_progress, 0, __ATOMIC_RELAXED);
	CHECK_EQ_U64(tdp_map(mmu, 100 * PAGE_SIZE, TDP_ACC_READ), TDP_FIXED);
	CHECK_EQ_U64(mmu->stats.pages_4k, PAGES_2M);
}

TEST(prefetch_none_during_invalidation)
{
	each_format(PREFETCH_BOTH, false, (struct vm_shape){ 0, 2 * MiB, PAGES_2M, 0 },
		    none_during_invalidation);
}

/* 4 KiB chunks: prefetch finds nothing; adaptive stops trying, without adding
 * a fault. Then the restore switches to 2 MiB chunks half way and prefetch
 * must pick up within one back-off. */
#define HALF (8 * MiB)

static void adaptive_resumes(struct mmu *mmu, const struct spte_format *f)
{
	const uint64_t pages = HALF / PAGE_SIZE;
	uint64_t faults;

	(void)f;
	faults = touch_range(mmu, 0, 0, HALF, false);
	CHECK_EQ_U64(faults, pages);
	CHECK_EQ_U64(mmu->stats.pf_prefetch_mapped, 0);
	CHECK(mmu->stats.pf_prefetch_called < pages / 8);
	/* The userfaultfd handler starts copying 2 MiB at a time. */
	memslot_find(&mmu->slots, 0)->backing.cfg.chunk_pages = PAGES_2M;
	faults = touch_range(mmu, 0, HALF, HALF, false);
	/* At most one back-off's worth of single faults, then one per region. */
	CHECK(faults <= 64 + 1 + HALF / (2 * MiB));
	CHECK(mmu->stats.pf_prefetch_mapped >= pages - 64 - HALF / (2 * MiB));
}

TEST(prefetch_adaptive_resumes_when_chunks_grow)
{
	each_format(PREFETCH_FORWARD, true, (struct vm_shape){ 0, 2 * HALF, 1, 0 },
		    adaptive_resumes);
}

/* Without adaptive, every fault tries. */
static void every_fault_tries(struct mmu *mmu, const struct spte_format *f)
{
	(void)f;
	CHECK_EQ_U64(touch_range(mmu, 0, 0, HALF, false), HALF / PAGE_SIZE);
	CHECK_EQ_U64(mmu->stats.pf_prefetch_called, HALF / PAGE_SIZE);
}

TEST(prefetch_not_adaptive_tries_every_fault)
{
	each_format(PREFETCH_FORWARD, false, (struct vm_shape){ 0, HALF, 1, 0 }, every_fault_tries);
}

/* vCPU threads read random pages of a restore slot (setting accessed bits as
 * the walker does) while another thread discards random ranges: every page
 * read must hold the image's bytes (a stale prefetched mapping would reach a
 * freed, reused frame), and the audit must pass at the end. */
#define CONC_VCPUS 3
#define CONC_SLOT (8 * MiB)
#define CONC_OPS 4000

struct conc_prefetch {
	struct mmu mmu;
	uint64_t bad;
};

struct conc_worker {
	struct conc_prefetch *c;
	struct rng rng; /* this thread's own */
};

static void *conc_vcpu(void *arg)
{
	struct conc_worker *w = arg;
	struct mmu *mmu = &w->c->mmu;

	for (int i = 0; i < CONC_OPS; i++) {
		/* Mostly sequential bursts, so that prefetched runs get used. */
		uint64_t gpa = rng_below(&w->rng, CONC_SLOT) & ~(PAGE_SIZE - 1);

		for (int k = 0; k < 8 && gpa < CONC_SLOT; k++, gpa += PAGE_SIZE) {
			const struct spte_format *f = mmu->root.fmt;
			uint64_t *sptep, got = 0, want;
			bool mapped = false;

			while (!mapped) {
				read_lock(&mmu->lock);
				sptep = leaf_of(mmu, gpa >> PAGE_SHIFT);
				if (sptep) {
					uint64_t spte = tdp_iter_read(sptep);

					__atomic_fetch_or(sptep, f->accessed, __ATOMIC_RELAXED);
					memcpy(&got, (char *)pa_to_va(spte_addr(f, spte)) + 8, 8);
					mapped = true;
				}
				read_unlock(&mmu->lock);
				if (!mapped && tdp_map(mmu, gpa, TDP_ACC_READ) > TDP_RETRY)
					break;
			}
			memcpy(&want, image + gpa + 8, 8);
			if (mapped && got != want)
				__atomic_fetch_add(&w->c->bad, 1, __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

static void *conc_discarder(void *arg)
{
	struct conc_worker *w = arg;

	for (int i = 0; i < CONC_OPS / 8; i++) {
		uint64_t gpa = rng_below(&w->rng, CONC_SLOT) & ~(PAGE_SIZE - 1);
		uint64_t len = (rng_below(&w->rng, 1 * MiB) & ~(PAGE_SIZE - 1)) + PAGE_SIZE;

		mmu_discard(&w->c->mmu, gpa, len);
	}
	return NULL;
}

static void conc_prefetch_run(const struct spte_format *f, uint32_t chunk_pages)
{
	static struct conc_prefetch c;
	struct conc_worker w[CONC_VCPUS + 1];
	pthread_t t[CONC_VCPUS + 1];

	test_begin(PREFETCH_BOTH, true);
	host_mem_init(1 * GiB);
	memset(&c, 0, sizeof(c));
	REQUIRE(restore_vm(&c.mmu, f, 0, CONC_SLOT, chunk_pages, 0) == 0);
	for (int i = 0; i <= CONC_VCPUS; i++) {
		uint64_t seed = 0x1234567ull * (uint64_t)(i + 1) + chunk_pages;

		w[i] = (struct conc_worker){ &c, rng_seeded(seed) };
		pthread_create(&t[i], NULL, i < CONC_VCPUS ? conc_vcpu : conc_discarder, &w[i]);
	}
	for (int i = 0; i <= CONC_VCPUS; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ_U64(c.bad, 0);
	CHECK(c.mmu.stats.pf_prefetch_mapped > 0);
	CHECK(mmu_audit_passes(&c.mmu));
	printf("  %s chunk %u: %llu faults, %llu prefetched, %llu unused, %llu retries\n", f->name,
	       chunk_pages, (unsigned long long)c.mmu.stats.pf_taken,
	       (unsigned long long)c.mmu.stats.pf_prefetch_mapped,
	       (unsigned long long)c.mmu.stats.pf_prefetch_unused,
	       (unsigned long long)c.mmu.stats.pf_retry);
	mmu_destroy(&c.mmu);
	test_end();
}

TEST(conc_prefetch_npt)
{
	conc_prefetch_run(&npt_format, PAGES_2M);
	conc_prefetch_run(&npt_format, 16);
}

TEST(conc_prefetch_ept_ad)
{
	conc_prefetch_run(ept_format(true), PAGES_2M);
	conc_prefetch_run(ept_format(true), 16);
}
