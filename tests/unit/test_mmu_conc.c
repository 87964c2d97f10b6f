/* Concurrency tests of the MMU's lock protocol: vCPU threads fault and access
 * memory through their own model TLBs while other threads zap, discard and add
 * and remove a slot, all on one VM. Every access is checked (under the read
 * lock) against the page tables and the memslot backing; the audit runs at the
 * quiescent points between rounds. Also built with ThreadSanitizer. */
#include "check.h"
#include "mm/mmu_internal.h"
#include "svm/npt.h"
#include "tests/rng.h"
#include "tests/unit/host_mem.h"
#include "tests/unit/model_tlb.h"
#include "vmx/ept.h"
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define N_VCPUS 3
#define ROUNDS 6
#define OPS 3000

/* Fixed slots: lazy [0, 8M), restore [8M, 12M) (chunks of 16), eager [16M, 24M)
 * (2 MiB mappings); [32M, 36M) is added and removed while vCPUs run. */
#define CHURN_GPA (32 * MiB)
#define CHURN_SIZE (4 * MiB)
#define SPACE (36 * MiB)

struct conc {
	struct mmu mmu;
	struct model_tlb tlb[N_VCPUS];
	struct model_tlbs tlbs;
	uint64_t failures;
};

struct worker {
	struct conc *c;
	struct rng rng; /* this thread's own */
	int id;
};

static void *vcpu_thread(void *arg)
{
	struct worker *w = arg;
	struct model_tlb *tlb = &w->c->tlb[w->id];

	for (int i = 0; i < OPS; i++) {
		uint64_t gpa = rng_below(&w->rng, SPACE);
		unsigned access = rng_below(&w->rng, 2) ? TDP_ACC_WRITE : TDP_ACC_READ;
		paddr_t hpa;
		int res = model_access(tlb, &w->c->mmu, gpa, access, &hpa);

		if (res != 0 && res != TDP_NO_SLOT) {
			printf("  vcpu %d: access %#llx: fault result %d\n", w->id,
			       (unsigned long long)gpa, res);
			__atomic_fetch_add(&w->c->failures, 1, __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

static void *invalidator_thread(void *arg)
{
	struct worker *w = arg;
	struct mmu *mmu = &w->c->mmu;

	for (int i = 0; i < OPS / 10; i++) {
		uint64_t gpa = rng_below(&w->rng, SPACE) & ~0xfffull;
		uint64_t len = rng_below(&w->rng, 3 * MiB) + 4096;

		if (i % 2) {
			mmu_discard(mmu, gpa, len);
		} else {
			write_lock(&mmu->lock);
			if (tdp_zap_range(mmu, gpa >> 12, (gpa + len) >> 12))
				mmu_flush_tlb(mmu);
			write_unlock(&mmu->lock);
		}
	}
	return NULL;
}

static void *slot_thread(void *arg)
{
	struct worker *w = arg;
	struct memslot_config churn = { .gpa = CHURN_GPA, .size = CHURN_SIZE,
					.backing = { .kind = BACKING_LAZY } };

	for (int i = 0; i < OPS / 100; i++) {
		churn.backing.kind = rng_below(&w->rng, 2) ? BACKING_LAZY : BACKING_EAGER;
		if (mmu_slot_add(&w->c->mmu, &churn) ||
		    mmu_slot_remove(&w->c->mmu, CHURN_GPA)) {
			printf("  slot add/remove failed\n");
			__atomic_fetch_add(&w->c->failures, 1, __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

static void conc_run(const struct spte_format *fmt, uint64_t seed)
{
	static struct conc c;
	static uint64_t image[4 * MiB / 8];
	struct memslot_config lazy = { .gpa = 0, .size = 8 * MiB, .backing = { .kind = BACKING_LAZY } };
	struct memslot_config restore = { .gpa = 8 * MiB, .size = 4 * MiB,
					  .backing = { .kind = BACKING_RESTORE, .image = image,
						       .image_bytes = sizeof(image), .chunk_pages = 16 } };
	struct memslot_config eager = { .gpa = 16 * MiB, .size = 8 * MiB,
					.backing = { .kind = BACKING_EAGER } };
	struct worker w[N_VCPUS + 2];
	pthread_t t[N_VCPUS + 2];
	struct mmu_audit_report rep;
	struct frame_stats st;
	uint64_t free_before;

	host_mem_init(1 * GiB);
	frame_get_stats(&st);
	free_before = st.free_bytes;
	memset(&c, 0, sizeof(c));
	c.tlbs.count = N_VCPUS;
	for (int i = 0; i < N_VCPUS; i++)
		c.tlbs.tlb[i] = &c.tlb[i];
	REQUIRE(mmu_init(&c.mmu, fmt, model_tlb_flush, &c.tlbs) == 0);
	REQUIRE(mmu_slot_add(&c.mmu, &lazy) == 0);
	REQUIRE(mmu_slot_add(&c.mmu, &restore) == 0);
	REQUIRE(mmu_slot_add(&c.mmu, &eager) == 0);
	for (int round = 0; round < ROUNDS; round++) {
		for (int i = 0; i < N_VCPUS + 2; i++) {
			uint64_t s = seed * 1000 + (uint64_t)round * 10 + (uint64_t)i + 1;

			w[i] = (struct worker){ &c, rng_seeded(s), i };
			pthread_create(&t[i], NULL,
				       i < N_VCPUS ? vcpu_thread : i == N_VCPUS ? invalidator_thread : slot_thread,
				       &w[i]);
		}
		for (int i = 0; i < N_VCPUS + 2; i++)
			pthread_join(t[i], NULL);
		/* Quiescent: the audit and the TLBs must agree with the tables. */
		if (!mmu_audit(&c.mmu, &rep)) {
			mmu_audit_print(&rep);
			CHECK(!"audit failed");
		}
		for (int i = 0; i < N_VCPUS; i++) {
			model_tlb_check_all(&c.tlb[i], &c.mmu);
			if (c.tlb[i].violations)
				printf("  vcpu %d: %s\n", i, c.tlb[i].first_violation);
			CHECK_EQ_U64(c.tlb[i].violations, 0);
		}
	}
	CHECK_EQ_U64(c.failures, 0);
	printf("  %s: %llu faults (%llu retried), %llu leaves installed, %llu zapped, %llu "
	       "flushes, %llu zap yields\n",
	       fmt->name, (unsigned long long)c.mmu.stats.pf_taken,
	       (unsigned long long)c.mmu.stats.pf_retry,
	       (unsigned long long)c.mmu.stats.leaves_installed,
	       (unsigned long long)c.mmu.stats.leaves_zapped,
	       (unsigned long long)c.mmu.stats.remote_tlb_flush,
	       (unsigned long long)c.mmu.stats.zap_yields);
	mmu_destroy(&c.mmu);
	frame_get_stats(&st);
	CHECK_EQ_U64(st.free_bytes, free_before);
}

TEST(conc_mmu_npt)
{
	conc_run(&npt_format, 1);
}

TEST(conc_mmu_ept)
{
	conc_run(ept_format(true), 2);
}
