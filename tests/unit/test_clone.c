/* Clones, copy on write, aliases and reclaim of shared frames (mm/cow.c), with
 * the audit of every MMU involved after each step; and the cross-VM lock rule
 * under threads (conc_clone_*, also under ThreadSanitizer): vCPUs of a family
 * fault and write while another thread reclaims shared frames and clones and
 * destroys members. */
#include "check.h"
#include "mm/mmu_internal.h"
#include "mm/rmap.h"
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

static void no_flush(void *ctx)
{
	(void)ctx;
}

static uint64_t free_bytes(void)
{
	struct frame_stats st;

	frame_get_stats(&st);
	return st.free_bytes;
}

/* Everything freed but the slab caches' spare slabs (one per rmap layout). */
static void check_no_leak(uint64_t free_before)
{
	CHECK_EQ_U64(rmap_descs_in_use(), 0);
	CHECK(free_before - free_bytes() <= RMAP_DESC_KINDS * PAGE_SIZE);
}

static void vm_init(struct mmu *mmu, const struct spte_format *fmt, uint32_t id)
{
	REQUIRE(mmu_init(mmu, fmt, no_flush, NULL) == 0);
	mmu->share.id = id;
}

/* Fault gpa in with `access`, then read or write one word through the mapping
 * under the read lock, as a vCPU would; retried while an invalidation takes
 * the mapping away meanwhile. A discard hands its locks over at every page
 * while faults wait, and they retry until it ends: the bound only stops a
 * livelock. */
static bool guest_access(struct mmu *mmu, uint64_t gpa, unsigned access, uint64_t *val)
{
	for (int tries = 0; tries < 1000000; tries++) {
		enum tdp_fault_result res = tdp_map(mmu, gpa, access);
		paddr_t hpa;
		unsigned rights;
		int level;
		bool done = false;

		if (res != TDP_FIXED && res != TDP_SPURIOUS && res != TDP_RETRY)
			return false;
		read_lock(&mmu->lock);
		if (tdp_translate(mmu, gpa, &hpa, &level, &rights) && (rights & access) == access) {
			uint64_t *p = pa_to_va(hpa);

			if (access & TDP_ACC_WRITE)
				__atomic_store_n(p, *val, __ATOMIC_RELAXED);
			else
				*val = __atomic_load_n(p, __ATOMIC_RELAXED);
			done = true;
		}
		read_unlock(&mmu->lock);
		if (done)
			return true;
	}
	return false;
}

static uint64_t read_word(struct mmu *mmu, uint64_t gpa)
{
	uint64_t v = ~0ull;

	CHECK(guest_access(mmu, gpa, TDP_ACC_READ, &v));
	return v;
}

static void write_word(struct mmu *mmu, uint64_t gpa, uint64_t v)
{
	CHECK(guest_access(mmu, gpa, TDP_ACC_WRITE, &v));
}

static paddr_t frame_at(struct mmu *mmu, uint64_t gpa)
{
	paddr_t hpa = 0;
	unsigned rights;
	int level;

	read_lock(&mmu->lock);
	if (!tdp_translate(mmu, gpa, &hpa, &level, &rights))
		hpa = 0;
	read_unlock(&mmu->lock);
	return hpa & ~(PAGE_SIZE - 1);
}

#define LAZY_SIZE (1 * MiB)
#define EAGER_GPA (4 * MiB)
#define EAGER_SIZE (4 * MiB)

/* A parent with a lazy and an eager (2 MiB-mapped) slot, every page written. */
static void make_parent(struct mmu *p, const struct spte_format *fmt)
{
	struct memslot_config lazy = { .gpa = 0, .size = LAZY_SIZE, .backing = { .kind = BACKING_LAZY } };
	struct memslot_config eager = { .gpa = EAGER_GPA, .size = EAGER_SIZE,
					.backing = { .kind = BACKING_EAGER } };

	vm_init(p, fmt, 1);
	REQUIRE(mmu_slot_add(p, &lazy) == 0);
	REQUIRE(mmu_slot_add(p, &eager) == 0);
	for (uint64_t gpa = 0; gpa < LAZY_SIZE; gpa += PAGE_SIZE)
		write_word(p, gpa, gpa + 1);
	for (uint64_t gpa = EAGER_GPA; gpa < EAGER_GPA + EAGER_SIZE; gpa += PAGE_SIZE)
		write_word(p, gpa, gpa + 1);
	CHECK(p->stats.pages[1] > 0);
}

static void clone_cow(const struct spte_format *fmt)
{
	static struct mmu parent, child, grandchild;
	uint64_t before;

	host_mem_init(1 * GiB);
	before = free_bytes();
	make_parent(&parent, fmt);
	vm_init(&child, fmt, 2);
	REQUIRE(mmu_clone(&parent, &child) == 0);
	/* Huge leaves went, writable ones became read-only. */
	CHECK_EQ_U64(stat_read(&parent.stats.pages[1]), 0);
	CHECK(mmu_audit_passes(&parent));
	CHECK(mmu_audit_passes(&child));
	CHECK_EQ_U64(mmu_family_size(&child), 2);
	/* The child reads its parent's memory from the same frames. */
	for (uint64_t gpa = 0; gpa < LAZY_SIZE; gpa += 16 * PAGE_SIZE)
		CHECK_EQ_U64(read_word(&child, gpa), gpa + 1);
	CHECK_EQ_U64(read_word(&child, EAGER_GPA + 5 * PAGE_SIZE), EAGER_GPA + 5 * PAGE_SIZE + 1);
	CHECK_EQ_U64(read_word(&parent, 0), 1);
	CHECK_EQ_U64(frame_at(&parent, 0), frame_at(&child, 0));
	CHECK_EQ_U64(rmap_count(&frame_of(frame_at(&child, 0))->rmap), 2);
	CHECK(stat_read(&child.stats.max_mmu_rmap_size) >= 2);
	CHECK(mmu_audit_passes(&parent));
	CHECK(mmu_audit_passes(&child));

	/* A write in the child copies: the parent keeps its contents. */
	write_word(&child, 0, 0xc0ffee);
	CHECK_EQ_U64(child.share.cow_copies, 1);
	CHECK(frame_at(&parent, 0) != frame_at(&child, 0));
	CHECK_EQ_U64(read_word(&parent, 0), 1);
	CHECK_EQ_U64(read_word(&child, 0), 0xc0ffee);
	CHECK_EQ_U64(rmap_count(&frame_of(frame_at(&parent, 0))->rmap), 1);
	/* The rest of the page came along. */
	CHECK_EQ_U64(read_word(&child, 8), 0);
	CHECK(mmu_audit_passes(&parent));
	CHECK(mmu_audit_passes(&child));
	/* The parent, last holder of its frame now, writes without a copy. */
	write_word(&parent, 0, 7);
	CHECK_EQ_U64(parent.share.cow_copies, 0);
	write_word(&parent, EAGER_GPA, 9);
	CHECK_EQ_U64(parent.share.cow_copies, 1);
	CHECK_EQ_U64(read_word(&child, EAGER_GPA), EAGER_GPA + 1);

	/* A clone of a clone joins the family. */
	vm_init(&grandchild, fmt, 3);
	REQUIRE(mmu_clone(&child, &grandchild) == 0);
	CHECK_EQ_U64(mmu_family_size(&parent), 3);
	CHECK_EQ_U64(read_word(&grandchild, 0), 0xc0ffee);
	CHECK_EQ_U64(read_word(&grandchild, 2 * PAGE_SIZE), 2 * PAGE_SIZE + 1);
	CHECK_EQ_U64(rmap_count(&frame_of(frame_at(&grandchild, 2 * PAGE_SIZE))->rmap), 3);
	CHECK(mmu_audit_passes(&grandchild));

	/* Reclaim: a discard in one VM zaps the shared frame in all of them;
	 * the others keep its contents. */
	mmu_discard(&child, 2 * PAGE_SIZE, PAGE_SIZE);
	CHECK_EQ_U64(frame_at(&parent, 2 * PAGE_SIZE), 0);
	CHECK_EQ_U64(frame_at(&grandchild, 2 * PAGE_SIZE), 0);
	CHECK(mmu_audit_passes(&parent));
	CHECK(mmu_audit_passes(&child));
	CHECK(mmu_audit_passes(&grandchild));
	CHECK_EQ_U64(read_word(&child, 2 * PAGE_SIZE), 0);
	CHECK_EQ_U64(read_word(&parent, 2 * PAGE_SIZE), 2 * PAGE_SIZE + 1);
	CHECK_EQ_U64(read_word(&grandchild, 2 * PAGE_SIZE), 2 * PAGE_SIZE + 1);
	/* An eager page: the discarder gets zeros, the others keep theirs. */
	mmu_discard(&parent, EAGER_GPA + PAGE_SIZE, PAGE_SIZE);
	CHECK_EQ_U64(read_word(&parent, EAGER_GPA + PAGE_SIZE), 0);
	CHECK_EQ_U64(read_word(&child, EAGER_GPA + PAGE_SIZE), EAGER_GPA + PAGE_SIZE + 1);
	CHECK(mmu_audit_passes(&parent));
	CHECK(mmu_audit_passes(&child));

	/* Destroying the parent first drops references; the clones keep going. */
	mmu_destroy(&parent);
	CHECK_EQ_U64(read_word(&child, 3 * PAGE_SIZE), 3 * PAGE_SIZE + 1);
	CHECK(mmu_audit_passes(&child));
	mmu_destroy(&child);
	CHECK_EQ_U64(read_word(&grandchild, 3 * PAGE_SIZE), 3 * PAGE_SIZE + 1);
	CHECK(grandchild.share.family == NULL);
	mmu_destroy(&grandchild);
	check_no_leak(before);
}

TEST(clone_cow_npt)
{
	clone_cow(&npt_format);
}

TEST(clone_cow_ept)
{
	clone_cow(ept_format(true));
}

/* A parent cloned again with nothing writable or huge since is not walked
 * again; a write in between (a copy, mapped writable) is write-protected by
 * the next clone, whose copy on write then works both ways. */
static void clone_again(const struct spte_format *fmt)
{
	static struct mmu parent, first, second, third;
	uint64_t before, visited;

	host_mem_init(1 * GiB);
	before = free_bytes();
	make_parent(&parent, fmt);
	vm_init(&first, fmt, 2);
	REQUIRE(mmu_clone(&parent, &first) == 0);
	visited = stat_read(&parent.stats.spte_visited);
	vm_init(&second, fmt, 3);
	REQUIRE(mmu_clone(&parent, &second) == 0);
	CHECK_EQ_U64(stat_read(&parent.stats.spte_visited), visited);
	CHECK_EQ_U64(read_word(&second, PAGE_SIZE), PAGE_SIZE + 1);

	write_word(&parent, 0, 5);
	CHECK_EQ_U64(parent.share.cow_copies, 1);
	vm_init(&third, fmt, 4);
	REQUIRE(mmu_clone(&parent, &third) == 0);
	CHECK(stat_read(&parent.stats.spte_visited) > visited);
	CHECK(mmu_audit_passes(&parent));
	CHECK_EQ_U64(read_word(&third, 0), 5);
	write_word(&parent, 0, 6);
	CHECK_EQ_U64(read_word(&third, 0), 5);
	CHECK_EQ_U64(read_word(&second, 0), 1);
	CHECK(mmu_audit_passes(&parent) && mmu_audit_passes(&third));
	mmu_destroy(&third);
	mmu_destroy(&second);
	mmu_destroy(&first);
	mmu_destroy(&parent);
	check_no_leak(before);
}

TEST(clone_again_npt)
{
	clone_again(&npt_format);
}

TEST(clone_again_ept)
{
	clone_again(ept_format(true));
}

/* A clone write-protects its parent: writes the parent's dirty log has not
 * harvested yet must still be in its next read (found by make soak). */
static void clone_keeps_dirty_log(const struct spte_format *fmt)
{
	static uint64_t bits[LAZY_SIZE / PAGE_SIZE / 64];
	struct memslot_config lazy = { .gpa = 0, .size = LAZY_SIZE, .backing = { .kind = BACKING_LAZY } };
	uint64_t before = free_bytes();
	struct mmu parent, child;

	vm_init(&parent, fmt, 1);
	REQUIRE(mmu_slot_add(&parent, &lazy) == 0);
	REQUIRE(mmu_dirty_log_enable(&parent, 0, true) == 0);
	for (uint64_t gpa = 0; gpa < 16 * PAGE_SIZE; gpa += PAGE_SIZE) {
		write_word(&parent, gpa, gpa + 1);
		mmu_cpu_sets_dirty(&parent, gpa);
	}
	vm_init(&child, fmt, 2);
	REQUIRE(mmu_clone(&parent, &child) == 0);
	CHECK_EQ_U64(mmu_dirty_log_get(&parent, 0, bits), 16);
	CHECK_EQ_U64(bits[0], 0xffff);
	CHECK(mmu_audit_passes(&parent) && mmu_audit_passes(&child));
	mmu_destroy(&child);
	mmu_destroy(&parent);
	check_no_leak(before);
}

TEST(clone_keeps_dirty_log_npt)
{
	clone_keeps_dirty_log(&npt_format);
}

TEST(clone_keeps_dirty_log_ept)
{
	clone_keeps_dirty_log(ept_format(false));
}

TEST(clone_keeps_dirty_log_ept_ad)
{
	clone_keeps_dirty_log(ept_format(true));
}

TEST(clone_alias)
{
	static struct mmu vm, child;
	/* Mapped at 4 KiB, so that both aliases' leaves sit in the page's rmap. */
	struct memslot_config eager = { .gpa = 0, .size = 4 * MiB, .flags = MEMSLOT_NO_HUGE,
					.backing = { .kind = BACKING_EAGER } };
	uint64_t before;

	host_mem_init(256 * MiB);
	before = free_bytes();
	vm_init(&vm, &npt_format, 1);
	REQUIRE(mmu_slot_add(&vm, &eager) == 0);
	/* Not eager, overlapping, or out of the target: refused. */
	CHECK(mmu_alias_add(&vm, 2 * MiB, MiB, 0) == -1);
	CHECK(mmu_alias_add(&vm, 16 * MiB, 8 * MiB, 0) == -1);
	REQUIRE(mmu_alias_add(&vm, 16 * MiB, MiB, 2 * MiB) == 0);
	write_word(&vm, 2 * MiB + 8 * PAGE_SIZE, 42);
	CHECK_EQ_U64(read_word(&vm, 16 * MiB + 8 * PAGE_SIZE), 42);
	write_word(&vm, 16 * MiB + 9 * PAGE_SIZE, 43);
	CHECK_EQ_U64(read_word(&vm, 2 * MiB + 9 * PAGE_SIZE), 43);
	CHECK_EQ_U64(rmap_count(&frame_of(frame_at(&vm, 16 * MiB + 9 * PAGE_SIZE))->rmap), 2);
	CHECK(stat_read(&vm.stats.max_mmu_rmap_size) >= 2);
	CHECK(mmu_audit_passes(&vm));
	CHECK(mmu_slot_remove(&vm, 0) == -1); /* the pair goes together */

	/* Discarding through the alias zeroes the page for both. */
	mmu_discard(&vm, 16 * MiB + 8 * PAGE_SIZE, PAGE_SIZE);
	CHECK(mmu_audit_passes(&vm));
	CHECK_EQ_U64(read_word(&vm, 2 * MiB + 8 * PAGE_SIZE), 0);

	/* A clone keeps the pair, over its own copy on write. */
	vm_init(&child, &npt_format, 2);
	REQUIRE(mmu_clone(&vm, &child) == 0);
	CHECK_EQ_U64(read_word(&child, 16 * MiB + 9 * PAGE_SIZE), 43);
	write_word(&child, 2 * MiB + 9 * PAGE_SIZE, 44);
	CHECK_EQ_U64(read_word(&child, 16 * MiB + 9 * PAGE_SIZE), 44);
	CHECK_EQ_U64(read_word(&vm, 16 * MiB + 9 * PAGE_SIZE), 43);
	CHECK(mmu_audit_passes(&vm));
	CHECK(mmu_audit_passes(&child));
	mmu_destroy(&vm);
	mmu_destroy(&child);
	check_no_leak(before);
}

/* Concurrency. A family: VM 0, the parent, reclaims (discards) random ranges
 * and has clones made and destroyed; VMs 1..N_WRITERS each run a vCPU thread
 * that reads and writes random pages. A writer must always read back its own
 * last write, and a page it never wrote reads as the parent's pattern from
 * before the clone or zero: another VM's write is never seen. */
#define N_WRITERS 3
#define CONC_PAGES 512
#define CONC_OPS 4000

struct conc_family {
	struct mmu vm[N_WRITERS + 2]; /* 0: parent, then writers, then the churned clone */
	uint64_t failures;
};

struct conc_writer {
	struct conc_family *c;
	int id;
	struct rng rng; /* this thread's own */
	uint64_t written[CONC_PAGES]; /* 0: never written */
};

static void *writer_thread(void *arg)
{
	struct conc_writer *w = arg;
	struct mmu *mmu = &w->c->vm[w->id];

	for (int i = 0; i < CONC_OPS; i++) {
		unsigned page = (unsigned)rng_below(&w->rng, CONC_PAGES);
		uint64_t gpa = (uint64_t)page * PAGE_SIZE, v;
		bool ok;

		if (rng_below(&w->rng, 3) == 0) {
			v = ((uint64_t)w->id << 32) | (uint64_t)(i + 1);
			if ((ok = guest_access(mmu, gpa, TDP_ACC_WRITE, &v)))
				w->written[page] = v;
		} else if ((ok = guest_access(mmu, gpa, TDP_ACC_READ, &v))) {
			uint64_t want = w->written[page];

			ok = want ? v == want : v == gpa + 1 || v == 0;
		}
		if (!ok)
			__atomic_fetch_add(&w->c->failures, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *reclaim_thread(void *arg)
{
	struct conc_writer *w = arg;
	struct conc_family *c = w->c;

	for (int i = 0; i < CONC_OPS / 20; i++) {
		uint64_t gpa = rng_below(&w->rng, CONC_PAGES) * PAGE_SIZE;

		mmu_discard(&c->vm[0], gpa, (rng_below(&w->rng, 8) + 1) * PAGE_SIZE);
		if (i % 10 == 0) {
			vm_init(&c->vm[N_WRITERS + 1], c->vm[0].root.fmt, N_WRITERS + 1);
			if (mmu_clone(&c->vm[0], &c->vm[N_WRITERS + 1]))
				__atomic_fetch_add(&c->failures, 1, __ATOMIC_RELAXED);
			read_word(&c->vm[N_WRITERS + 1], gpa);
			mmu_destroy(&c->vm[N_WRITERS + 1]);
		}
	}
	return NULL;
}

static void conc_clone_run(const struct spte_format *fmt, enum backing_kind kind, uint64_t seed)
{
	static struct conc_family c;
	static struct conc_writer w[N_WRITERS + 1];
	struct memslot_config slot = { .gpa = 0, .size = CONC_PAGES * PAGE_SIZE,
				       .backing = { .kind = kind } };
	pthread_t t[N_WRITERS + 1];
	uint64_t before;

	host_mem_init(1 * GiB);
	before = free_bytes();
	memset(&c, 0, sizeof(c));
	vm_init(&c.vm[0], fmt, 0);
	REQUIRE(mmu_slot_add(&c.vm[0], &slot) == 0);
	for (uint64_t gpa = 0; gpa < CONC_PAGES * PAGE_SIZE; gpa += PAGE_SIZE)
		write_word(&c.vm[0], gpa, gpa + 1);
	for (int i = 1; i <= N_WRITERS; i++) {
		vm_init(&c.vm[i], fmt, (uint32_t)i);
		REQUIRE(mmu_clone(&c.vm[0], &c.vm[i]) == 0);
	}
	for (int i = 0; i <= N_WRITERS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i] = (struct conc_writer){ .c = &c, .id = i,
					     .rng = rng_seeded(seed * 100 + (uint64_t)i + 1) };
		pthread_create(&t[i], NULL, i ? writer_thread : reclaim_thread, &w[i]);
	}
	for (int i = 0; i <= N_WRITERS; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ_U64(c.failures, 0);
	for (int i = 0; i <= N_WRITERS; i++)
		CHECK(mmu_audit_passes(&c.vm[i]));
	printf("  %s %s: %llu copies on write in the writers, family of %u\n", fmt->name,
	       kind == BACKING_EAGER ? "eager" : "lazy",
	       (unsigned long long)(c.vm[1].share.cow_copies + c.vm[2].share.cow_copies +
				    c.vm[3].share.cow_copies),
	       mmu_family_size(&c.vm[0]));
	for (int i = 0; i <= N_WRITERS; i++)
		mmu_destroy(&c.vm[i]);
	check_no_leak(before);
}

TEST(conc_clone_lazy_npt)
{
	conc_clone_run(&npt_format, BACKING_LAZY, 1);
}

TEST(conc_clone_eager_ept)
{
	conc_clone_run(ept_format(true), BACKING_EAGER, 2);
}
