/* Concurrency tests of the MMU's lock protocol: vCPU threads fault and access
 * memory through their own model TLBs while other threads zap, discard and add
 * and remove a slot, all on one VM. Every access is checked (under the read
 * lock) against the page tables and the memslot backing; the audit runs at the
 * quiescent points between rounds. Also built with ThreadSanitizer. */
#include "check.h"
#include "mm/mmu_config.h"
#include "mm/mmu_internal.h"
#include "mm/tdp_mmu.h"
#include "mm/migrate.h"
#include "mm/cow.h"
#include "svm/npt.h"
#include "tests/rng.h"
#include "tests/unit/host_mem.h"
#include "tests/unit/mmu_check.h"
#include "tests/unit/model_tlb.h"
#include "vmx/ept.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
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

/* vCPUs on CPUs of their own, with the real entry protocol (virt/kick.h):
 * each runs the guest in bursts between model_cpu_enter and model_cpu_exit,
 * reading and writing memory only through its own model TLB (no lock: the
 * hardware's part); a miss exits, walks the tables under the read lock to
 * fill the TLB (faulting with tdp_map where nothing is mapped) and enters
 * again. The MMU's flush is kick_remote_flush over them (model_smp_flush). A
 * zapper thread zaps, discards, migrates, splits and write-protects (dirty
 * logging), and removes and adds a slot (its tables freed), recording for each
 * gfn the number of the last operation that removed its translation or its
 * write right, once the operation has returned. Each fill is stamped with
 * the number of the last operation that had started; a hit on an entry older
 * than an operation that has returned and removed what it maps is a stale
 * use: the operation's flush did not reach that CPU before it returned.
 * Freed tables are covered alike: a TLB entry that could reach one was filled
 * before the removal that freed it. Formats: EPT without A/D bits, whose
 * write protection clears W on every writable leaf (with dirty bits, a clean
 * writable leaf keeps W and its TLB entry stays legal). */
#define SMP_VCPUS 3
#define SMP_BURST 1024
#define SMP_GFNS (SPACE >> 12)

struct smp {
	struct mmu mmu;
	struct model_cpu cpu[SMP_VCPUS];
	struct model_smp smp;
	uint64_t ops_started;           /* the operation running or last run */
	uint32_t removed[SMP_GFNS];      /* the last operation that removed the gfn's translation */
	uint32_t write_removed[SMP_GFNS]; /* ... its write right */
	uint32_t stop;
	uint64_t stale_uses;
	uint64_t accesses;
	char first_stale[160];
	bool logging; /* the eager slot's dirty logging (zapper only) */
	bool writes; /* vCPUs write too (not with remote_flush off: a stale write could hit a freed frame) */
	int ops;
};

struct smp_vcpu {
	struct smp *s;
	struct model_cpu *cpu;
	struct rng rng;
};

static bool stale(struct smp *s, const struct model_tlb_entry *e, uint64_t gpa)
{
	uint64_t gfn = gpa >> 12;

	return __atomic_load_n(&s->removed[gfn], __ATOMIC_RELAXED) > e->stamp ||
	       ((e->rights & TDP_ACC_WRITE) &&
		__atomic_load_n(&s->write_removed[gfn], __ATOMIC_RELAXED) > e->stamp);
}

/* Guest mode: accesses through the TLB until a miss (returned in *miss), a
 * kick, or the end of the burst. */
static void run_guest(struct smp_vcpu *v, uint64_t *miss, unsigned *miss_access)
{
	struct smp *s = v->s;

	for (int n = 0; n < SMP_BURST && !model_cpu_kicked(v->cpu); n++) {
		/* Mostly a small working set (64 pages of the lazy slot), so
		 * that entries live long. */
		uint64_t gpa = rng_below(&v->rng, 8) ? rng_below(&v->rng, 64) << 12 | 8 * rng_below(&v->rng, 512)
						    : rng_below(&v->rng, SPACE) & ~7ull;
		unsigned access = s->writes && rng_below(&v->rng, 2) ? TDP_ACC_WRITE : TDP_ACC_READ;
		const struct model_tlb_entry *e;
		paddr_t hpa;

		e = model_tlb_hit(&v->cpu->tlb, gpa, access, &hpa);
		if (!e) {
			*miss = gpa;
			*miss_access = access;
			return;
		}
		if (stale(s, e, gpa) && !__atomic_fetch_add(&s->stale_uses, 1, __ATOMIC_RELAXED))
			snprintf(s->first_stale, sizeof(s->first_stale),
				 "cpu %d: gpa %#llx through an entry of operation %llu", v->cpu->sync.cpu,
				 (unsigned long long)gpa, (unsigned long long)e->stamp);
		if (access & TDP_ACC_WRITE)
			__atomic_store_n((uint64_t *)pa_to_va(hpa), gpa, __ATOMIC_RELAXED);
		else
			(void)__atomic_load_n((uint64_t *)pa_to_va(hpa), __ATOMIC_RELAXED);
		__atomic_fetch_add(&s->accesses, 1, __ATOMIC_RELAXED);
	}
}

/* Outside guest mode: fill the TLB for the access, faulting until it maps. */
static void handle_miss(struct smp_vcpu *v, uint64_t gpa, unsigned access)
{
	struct mmu *mmu = &v->s->mmu;

	for (int tries = 0; tries < 100; tries++) {
		paddr_t hpa;
		bool ok;
		int res;

		read_lock(&mmu->slots_lock);
		read_lock(&mmu->lock);
		ok = model_tlb_fill(&v->cpu->tlb, mmu, gpa, access,
				    __atomic_load_n(&v->s->ops_started, __ATOMIC_ACQUIRE), &hpa);
		read_unlock(&mmu->lock);
		read_unlock(&mmu->slots_lock);
		if (ok)
			return;
		res = tdp_map(mmu, gpa, access);
		if (res != TDP_FIXED && res != TDP_SPURIOUS && res != TDP_RETRY)
			return; /* no slot (the churn slot is away) */
	}
}

static void *smp_vcpu_thread(void *arg)
{
	struct smp_vcpu *v = arg;

	while (!__atomic_load_n(&v->s->stop, __ATOMIC_ACQUIRE)) {
		uint64_t miss = ~0ull;
		unsigned access = 0;

		model_cpu_enter(v->cpu);
		run_guest(v, &miss, &access);
		model_cpu_exit(v->cpu);
		if (miss != ~0ull)
			handle_miss(v, miss, access);
	}
	return NULL;
}

static void mark_removed(uint32_t *what, uint64_t gpa, uint64_t len, uint32_t op)
{
	for (uint64_t gfn = gpa >> 12; gfn < (gpa + len + 4095) >> 12 && gfn < SMP_GFNS; gfn++)
		__atomic_store_n(&what[gfn], op, __ATOMIC_RELAXED);
}

/* One operation, numbered op; what it removed is marked once it returned. */
static void zapper_op(struct smp *s, struct rng *rng, uint32_t op)
{
	struct memslot_config churn = { .gpa = CHURN_GPA, .size = CHURN_SIZE,
					.backing = { .kind = BACKING_LAZY } };
	struct mmu *mmu = &s->mmu;
	/* Small ranges in the working set, larger ones anywhere. */
	uint64_t gpa = (rng_below(rng, 2) ? rng_below(rng, 64) : rng_below(rng, SPACE >> 12)) << 12;
	uint64_t len = (rng_below(rng, 4) ? rng_below(rng, 16) + 1 : rng_below(rng, 1024) + 1) << 12;
	uint64_t *bits = NULL;

	__atomic_store_n(&s->ops_started, op, __ATOMIC_RELEASE);
	switch (rng_below(rng, 6)) {
	case 0:
		mmu_zap(mmu, gpa, len);
		mark_removed(s->removed, gpa, len, op);
		break;
	case 1:
		mmu_discard(mmu, gpa, len);
		mark_removed(s->removed, gpa, len, op);
		break;
	case 2:
		gpa = rng_below(rng, 64) << 12; /* the lazy slot's working set */
		if (mmu_migrate_page(mmu, gpa, NULL) == MIGRATE_DONE)
			mark_removed(s->removed, gpa, 4096, op);
		break;
	case 3:
		/* Eager splitting (the eager slot is mapped at 2 MiB at first)
		 * and write protection of the whole slot; or logging ends,
		 * which removes nothing. */
		mmu_config.eager_page_split = true;
		if (!s->logging && mmu_dirty_log_enable(mmu, 16 * MiB, true) == 0)
			mark_removed(s->write_removed, 16 * MiB, 8 * MiB, op);
		else if (s->logging)
			mmu_dirty_log_enable(mmu, 16 * MiB, false);
		s->logging = !s->logging;
		break;
	case 4:
		bits = calloc(8 * MiB >> 18, 8);
		if (s->logging && mmu_dirty_log_get(mmu, 16 * MiB, bits) >= 0)
			mark_removed(s->write_removed, 16 * MiB, 8 * MiB, op);
		free(bits);
		break;
	case 5:
		if (mmu_slot_remove(mmu, CHURN_GPA) == 0)
			mark_removed(s->removed, CHURN_GPA, CHURN_SIZE, op);
		mmu_slot_add(mmu, &churn);
		break;
	}
}

static void smp_run(const struct spte_format *fmt, bool remote_flush, uint64_t seed)
{
	static struct smp s;
	struct memslot_config lazy = { .gpa = 0, .size = 8 * MiB, .backing = { .kind = BACKING_LAZY } };
	struct memslot_config eager = { .gpa = 16 * MiB, .size = 8 * MiB,
					.backing = { .kind = BACKING_EAGER } };
	struct memslot_config churn = { .gpa = CHURN_GPA, .size = CHURN_SIZE,
					.backing = { .kind = BACKING_LAZY } };
	struct smp_vcpu v[SMP_VCPUS];
	pthread_t t[SMP_VCPUS];
	struct mmu_config saved = mmu_config;
	struct rng rng = rng_seeded(seed);
	uint64_t flushes = 0;

	host_mem_init(1 * GiB);
	memset(&s, 0, sizeof(s));
	s.writes = remote_flush;
	mmu_config.split_on_fault = true; /* no flush from a fault under the read lock */
	model_smp_init(&s.smp, s.cpu, SMP_VCPUS, remote_flush);
	REQUIRE(mmu_init(&s.mmu, fmt, model_smp_flush, &s.smp) == 0);
	REQUIRE(mmu_slot_add(&s.mmu, &lazy) == 0);
	REQUIRE(mmu_slot_add(&s.mmu, &eager) == 0);
	REQUIRE(mmu_slot_add(&s.mmu, &churn) == 0);
	for (uint64_t gpa = eager.gpa; gpa < eager.gpa + eager.size; gpa += 2 * MiB)
		REQUIRE(tdp_map(&s.mmu, gpa, TDP_ACC_READ) == TDP_FIXED);
	for (int i = 0; i < SMP_VCPUS; i++) {
		v[i] = (struct smp_vcpu){ &s, &s.cpu[i], rng_seeded(seed * 100 + (uint64_t)i) };
		pthread_create(&t[i], NULL, smp_vcpu_thread, &v[i]);
	}
	for (uint32_t op = 1; op <= (remote_flush ? 600u : 3000u); op++) {
		zapper_op(&s, &rng, op);
		if (!remote_flush && __atomic_load_n(&s.stale_uses, __ATOMIC_RELAXED))
			break;
		/* Let the vCPUs refill their TLBs between operations. */
		for (int i = 0; i < 2000; i++)
			cpu_relax();
	}
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < SMP_VCPUS; i++) {
		pthread_join(t[i], NULL);
		flushes += s.cpu[i].flushes;
	}
	printf("  %s remote_flush=%s: %llu accesses, %llu flushes taken, %llu stale uses%s%s\n",
	       fmt->name, remote_flush ? "on" : "off", (unsigned long long)s.accesses,
	       (unsigned long long)flushes, (unsigned long long)s.stale_uses,
	       s.stale_uses ? "; first: " : "", s.first_stale);
	CHECK(s.accesses > 0);
	if (remote_flush) {
		CHECK_EQ_U64(s.stale_uses, 0);
		CHECK(flushes > 0);
		CHECK(mmu_audit_passes(&s.mmu));
	} else {
		CHECK(s.stale_uses > 0);
	}
	mmu_destroy(&s.mmu);
	mmu_config = saved;
}

TEST(conc_mmu_smp_remote_flush)
{
	smp_run(ept_format(false), true, 3);
}

/* Without the kick and the wait (mmu remote_flush=off) vCPUs in guest mode go
 * on with translations the operation removed, and the check sees it: the
 * test above can fail. Not under ThreadSanitizer: such a vCPU reads frames
 * the hypervisor is already reusing. */
TEST(mmu_smp_no_remote_flush_is_caught)
{
	smp_run(ept_format(false), false, 4);
}
