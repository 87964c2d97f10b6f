/* Splits, zaps, write protection and prefetch are atomic to a concurrent
 * walker, proven by replay (Hedron's fake-memory tests are the model).
 *
 * Every store to SPTE memory goes through spte_write (mm/spte.c), which in
 * host builds reports it to spte_write_recorder. Each test builds a VM on fake
 * memory (two 2 MiB leaves, a table of 512 4 KiB leaves, a 1 GiB leaf), copies
 * every table reachable from the root, runs one operation while recording its
 * stores, and copies the tables again. The replay then applies the stores one
 * by one to the first copy and after each one walks the copy from the root
 * over the operation's whole range: every gfn must translate as before the
 * operation or as after it, with no right and no memory type that one of them
 * does not give. Unmapped counts as a translation like any other, so a page
 * mapped both before and after (a split, write protection) may never fault in
 * between, as a linked but still empty child table would make it. Each
 * recorded store must also find the value the previous ones left, and the
 * last state must equal the tables as the operation left them: a store that
 * bypassed spte_write shows as a mismatch.
 *
 * The walk goes leaf by leaf: the gfns one leaf maps translate alike, so a
 * leaf is checked as a run of gfns against the runs of the state before and
 * after, which is the same as walking every gfn of the range, only faster. */
#include "check.h"
#include "mm/mmu_config.h"
#include "mm/mmu_internal.h"
#include "mm/tdp_mmu.h"
#include "svm/npt.h"
#include "tests/unit/host_mem.h"
#include "tests/unit/mmu_check.h"
#include "vmx/ept.h"
#include <string.h>

#define GiB (1ull << 30)
#define MiB (1ull << 20)
#define PAGE_GFN(gpa) ((gpa) >> PAGE_SHIFT)
#define N_FORMATS 3

static const struct spte_format *format(int i)
{
	return i == 0 ? &npt_format : i == 1 ? ept_format(false) : ept_format(true);
}

/* The stores of one operation, in order. */
struct spte_store {
	uint64_t *sptep;
	uint64_t old_spte, new_spte;
};

#define MAX_STORES 4096
static struct spte_store stores[MAX_STORES];
static unsigned n_stores;

static void record_store(uint64_t *sptep, uint64_t old_spte, uint64_t new_spte)
{
	if (n_stores < MAX_STORES)
		stores[n_stores] = (struct spte_store){ sptep, old_spte, new_spte };
	n_stores++;
}

/* Copies of table pages, found by the page's address: what a walker reads. */
#define IMAGE_PAGES 32
struct image {
	unsigned count;
	struct {
		paddr_t pa;
		uint64_t e[SPTE_PER_TABLE];
	} page[IMAGE_PAGES];
};

static struct image before_image, after_image, replay_image;

static uint64_t *image_find(struct image *img, paddr_t pa)
{
	for (unsigned i = 0; i < img->count; i++)
		if (img->page[i].pa == pa)
			return img->page[i].e;
	return NULL;
}

/* A page the image lacks is a table allocated during the operation: it
 * started zeroed. NULL when the image is full. */
static uint64_t *image_page(struct image *img, paddr_t pa)
{
	uint64_t *e = image_find(img, pa);

	if (e || img->count == IMAGE_PAGES)
		return e;
	img->page[img->count].pa = pa;
	memset(img->page[img->count].e, 0, sizeof(img->page[0].e));
	return img->page[img->count++].e;
}

static bool image_copy_table(struct image *img, const struct spte_format *f, paddr_t table,
			     int level)
{
	const uint64_t *pt = pa_to_va(table);
	uint64_t *e = image_page(img, table);

	if (!e)
		return false;
	for (unsigned i = 0; i < SPTE_PER_TABLE; i++) {
		e[i] = tdp_iter_read(&pt[i]);
		if (level > 1 && spte_is_table(f, e[i], level) &&
		    !image_copy_table(img, f, spte_addr(f, e[i]), level - 1))
			return false;
	}
	return true;
}

static bool image_take(struct image *img, struct mmu *mmu)
{
	bool ok;

	img->count = 0;
	read_lock(&mmu->lock);
	ok = image_copy_table(img, mmu->root.fmt, mmu->root.table, TDP_ROOT_LEVEL);
	read_unlock(&mmu->lock);
	return ok;
}

/* What a run of gfns [gfn, end) translates to: unmapped, or consecutive
 * frames from pa with the same rights and leaf attributes (memory type). */
struct span {
	uint64_t gfn, end;
	bool present;
	paddr_t pa;
	unsigned rights;
	uint64_t attrs;
};

#define MAX_SPANS 2048
struct spans {
	unsigned n;
	bool overflow;
	struct span s[MAX_SPANS];
};

static struct spans before_spans, after_spans, state_spans;

static paddr_t span_pa(const struct span *s, uint64_t gfn)
{
	return s->pa + ((gfn - s->gfn) << PAGE_SHIFT);
}

/* Append, merging with the previous span where the translation continues. */
static void span_add(struct spans *out, const struct span *s)
{
	struct span *last = out->n ? &out->s[out->n - 1] : NULL;

	if (last && last->end == s->gfn && last->present == s->present &&
	    (!s->present || (span_pa(last, s->gfn) == s->pa && last->rights == s->rights &&
			     last->attrs == s->attrs))) {
		last->end = s->end;
		return;
	}
	if (out->n == MAX_SPANS) {
		out->overflow = true;
		return;
	}
	out->s[out->n++] = *s;
}

/* The walker's view of [start, end) below the table at pa (level, first gfn
 * base); a table the image lacks reads as zeroes (allocated zeroed). */
static void walk_table(struct image *img, const struct spte_format *f, paddr_t pa, int level,
		       uint64_t base, uint64_t start, uint64_t end, struct spans *out)
{
	const uint64_t *e = image_find(img, pa);

	for (unsigned i = 0; i < SPTE_PER_TABLE; i++) {
		uint64_t gfn = base + i * tdp_level_pages(level), spte = e ? e[i] : SPTE_NONE;
		uint64_t last = gfn + tdp_level_pages(level);
		uint64_t lo = gfn > start ? gfn : start, hi = last < end ? last : end;

		if (lo >= hi)
			continue;
		if (!spte_present(f, spte)) {
			span_add(out, &(struct span){ .gfn = lo, .end = hi });
		} else if (spte_is_leaf(f, spte, level)) {
			paddr_t pa = spte_addr(f, spte) + ((lo - gfn) << PAGE_SHIFT);

			span_add(out, &(struct span){ lo, hi, true, pa, spte_rights(f, spte),
						      spte & f->leaf });
		} else {
			walk_table(img, f, spte_addr(f, spte), level - 1, gfn, start, end, out);
		}
	}
}

static void walk(struct image *img, const struct spte_format *f, paddr_t root, uint64_t start,
		 uint64_t end, struct spans *out)
{
	out->n = 0;
	out->overflow = false;
	walk_table(img, f, root, TDP_ROOT_LEVEL, 0, start, end, out);
}

/* Whether gfn translates in s as in ref or to less: unmapped where ref is
 * unmapped, else ref's frame and attributes with no right ref lacks. */
static bool no_more_than(const struct span *s, const struct span *ref, uint64_t gfn)
{
	if (!s->present)
		return !ref->present;
	return ref->present && span_pa(s, gfn) == span_pa(ref, gfn) && s->attrs == ref->attrs &&
	       !(s->rights & ~ref->rights);
}

static bool state_allowed(const struct span *now, const struct span *before,
			  const struct span *after, uint64_t gfn)
{
	return no_more_than(now, before, gfn) || no_more_than(now, after, gfn);
}

static bool same_translation(const struct span *now, const struct span *after,
			     const struct span *unused, uint64_t gfn)
{
	(void)unused;
	return no_more_than(now, after, gfn) && no_more_than(after, now, gfn);
}

/* No operation here moves a gfn to another frame. */
static bool frame_kept(const struct span *before, const struct span *after,
		       const struct span *unused, uint64_t gfn)
{
	(void)unused;
	return !before->present || !after->present || span_pa(before, gfn) == span_pa(after, gfn);
}

static bool mapping_kept(const struct span *before, const struct span *after,
			 const struct span *unused, uint64_t gfn)
{
	(void)unused;
	return !before->present || (after->present && span_pa(before, gfn) == span_pa(after, gfn));
}

typedef bool span_test(const struct span *, const struct span *, const struct span *, uint64_t);

/* The first gfn of [start, end) where ok fails on the three views, or end. */
static uint64_t first_failing_gfn(const struct spans *a, const struct spans *b,
				  const struct spans *c, uint64_t start, uint64_t end,
				  span_test *ok)
{
	unsigned i = 0, j = 0, k = 0;

	for (uint64_t gfn = start; gfn < end;) {
		const struct span *x = &a->s[i], *y = &b->s[j], *z = &c->s[k];

		if (!ok(x, y, z, gfn))
			return gfn;
		gfn = x->end < y->end ? x->end : y->end;
		gfn = z->end < gfn ? z->end : gfn;
		i += x->end == gfn;
		j += y->end == gfn;
		k += z->end == gfn;
	}
	return end;
}

static const struct span *span_at(const struct spans *v, uint64_t gfn)
{
	unsigned i = 0;

	while (v->s[i].end <= gfn)
		i++;
	return &v->s[i];
}

static void print_span(const char *what, const struct spans *v, uint64_t gfn)
{
	const struct span *s = span_at(v, gfn);

	if (s->present)
		printf("    %s: frame %#llx rights %u attrs %#llx\n", what,
		       (unsigned long long)span_pa(s, gfn), s->rights,
		       (unsigned long long)s->attrs);
	else
		printf("    %s: not present\n", what);
}

/* The walker agrees with the MMU's own (tdp_translate) at sampled gfns. */
static bool walk_matches_mmu(struct mmu *mmu, const struct spans *v, uint64_t start, uint64_t end)
{
	bool ok = true;

	read_lock(&mmu->lock);
	for (uint64_t gfn = start; gfn < end; gfn += (end - start) / 61 + 1) {
		const struct span *s = span_at(v, gfn);
		unsigned rights;
		paddr_t hpa;
		int level;

		if (tdp_translate(mmu, gfn << PAGE_SHIFT, &hpa, &level, &rights) != s->present ||
		    (s->present && (hpa != span_pa(s, gfn) || rights != s->rights)))
			ok = false;
	}
	read_unlock(&mmu->lock);
	return ok;
}

/* The VM: two 2 MiB leaves at 0, 512 4 KiB leaves at 4 MiB (one table), a
 * 1 GiB leaf at 1 GiB; all writable, huge ones non-executable (NX huge pages). */
#define SLOT_A_GPA 0
#define SLOT_B_GPA (4 * MiB)
#define SLOT_C_GPA (1 * GiB)

#define EAGER { .kind = BACKING_EAGER, .no_zero = true }
static const struct memslot_config vm_slots[] = {
	{ .gpa = SLOT_A_GPA, .size = 4 * MiB, .backing = EAGER },
	{ .gpa = SLOT_B_GPA, .size = 2 * MiB, .flags = MEMSLOT_NO_HUGE, .backing = EAGER },
	{ .gpa = SLOT_C_GPA, .size = 1 * GiB, .backing = EAGER },
};

static void no_flush(void *ctx)
{
	(void)ctx;
}

static bool vm_build(struct mmu *mmu, const struct spte_format *f)
{
	bool ok = mmu_init(mmu, f, no_flush, NULL) == 0;

	for (unsigned i = 0; i < sizeof(vm_slots) / sizeof(vm_slots[0]); i++)
		ok = ok && mmu_slot_add(mmu, &vm_slots[i]) == 0;
	ok = ok && tdp_map(mmu, SLOT_A_GPA, TDP_ACC_WRITE) == TDP_FIXED &&
	     tdp_map(mmu, SLOT_A_GPA + 2 * MiB, TDP_ACC_WRITE) == TDP_FIXED &&
	     tdp_map(mmu, SLOT_C_GPA, TDP_ACC_WRITE) == TDP_FIXED;
	for (uint64_t gpa = SLOT_B_GPA; ok && gpa < SLOT_B_GPA + 2 * MiB; gpa += PAGE_SIZE)
		ok = tdp_map(mmu, gpa, TDP_ACC_WRITE) == TDP_FIXED;
	return ok && mmu->stats.pages_2m == 2 && mmu->stats.pages_4k == 512 &&
	       mmu->stats.pages_1g == 1;
}

struct replay_op {
	const char *name;
	uint64_t gpa, size;      /* the range walked after every store */
	unsigned min_stores;     /* what the operation stores at least */
	bool keeps_mappings;     /* no page mapped before is unmapped after */
	void (*prepare)(struct mmu *mmu); /* not recorded */
	void (*run)(struct mmu *mmu);     /* recorded */
};

struct replay_total {
	unsigned ops;
	uint64_t states;
	uint64_t gfns_checked; /* states times the gfns of their range */
};

/* Apply the recorded stores to the copy of the tables from before, checking
 * the state after each. Returns false at the first failure (printed). */
static bool replay(const struct spte_format *f, paddr_t root, const struct replay_op *op,
		   struct replay_total *total)
{
	uint64_t start = PAGE_GFN(op->gpa), end = PAGE_GFN(op->gpa + op->size), gfn;

	replay_image = before_image;
	for (unsigned i = 0; i < n_stores; i++) {
		const struct spte_store *st = &stores[i];
		paddr_t page = va_to_pa(st->sptep) & ~(PAGE_SIZE - 1);
		uint64_t *e = image_page(&replay_image, page);
		unsigned index = (unsigned)((va_to_pa(st->sptep) & (PAGE_SIZE - 1)) / 8);

		if (!e || e[index] != st->old_spte) {
			printf("  %s %s: store %u to %#llx found %#llx, not %#llx\n", f->name,
			       op->name, i, (unsigned long long)va_to_pa(st->sptep),
			       e ? (unsigned long long)e[index] : 0ull,
			       (unsigned long long)st->old_spte);
			return false;
		}
		e[index] = st->new_spte;
		walk(&replay_image, f, root, start, end, &state_spans);
		if (state_spans.overflow) {
			printf("  %s %s: more than %u spans\n", f->name, op->name, MAX_SPANS);
			return false;
		}
		gfn = first_failing_gfn(&state_spans, &before_spans, &after_spans, start, end,
					state_allowed);
		if (gfn != end) {
			printf("  %s %s: after store %u of %u (%#llx: %#llx -> %#llx), "
			       "gfn %#llx:\n", f->name, op->name, i + 1, n_stores,
			       (unsigned long long)va_to_pa(st->sptep),
			       (unsigned long long)st->old_spte, (unsigned long long)st->new_spte,
			       (unsigned long long)gfn);
			print_span("walk  ", &state_spans, gfn);
			print_span("before", &before_spans, gfn);
			print_span("after ", &after_spans, gfn);
			return false;
		}
		total->states++;
		total->gfns_checked += end - start;
	}
	if (first_failing_gfn(&state_spans, &after_spans, &after_spans, start, end,
			      same_translation) != end) {
		printf("  %s %s: the stores do not end in the final state\n", f->name, op->name);
		return false;
	}
	for (unsigned i = 0; i < after_image.count; i++) {
		const uint64_t *e = image_page(&replay_image, after_image.page[i].pa);

		if (!e || memcmp(e, after_image.page[i].e, sizeof(after_image.page[i].e))) {
			printf("  %s %s: table %#llx changed by a store not recorded\n", f->name,
			       op->name, (unsigned long long)after_image.page[i].pa);
			return false;
		}
	}
	return true;
}

/* Record op on mmu and check it; false at the first failure (printed). */
static bool record_and_replay(struct mmu *mmu, const struct replay_op *op,
			      struct replay_total *total)
{
	const struct spte_format *f = mmu->root.fmt;
	uint64_t start = PAGE_GFN(op->gpa), end = PAGE_GFN(op->gpa + op->size), gfn;

	if (!image_take(&before_image, mmu))
		return false;
	n_stores = 0;
	spte_write_recorder = record_store;
	op->run(mmu);
	spte_write_recorder = NULL;
	if (!image_take(&after_image, mmu))
		return false;
	walk(&before_image, f, mmu->root.table, start, end, &before_spans);
	walk(&after_image, f, mmu->root.table, start, end, &after_spans);
	if (before_spans.overflow || after_spans.overflow || n_stores < op->min_stores ||
	    n_stores > MAX_STORES) {
		printf("  %s %s: %u stores, %u and %u spans\n", f->name, op->name, n_stores,
		       before_spans.n, after_spans.n);
		return false;
	}
	if (!walk_matches_mmu(mmu, &after_spans, start, end)) {
		printf("  %s %s: the walk disagrees with tdp_translate\n", f->name, op->name);
		return false;
	}
	gfn = first_failing_gfn(&before_spans, &after_spans, &after_spans, start, end,
				op->keeps_mappings ? mapping_kept : frame_kept);
	if (gfn != end) {
		printf("  %s %s: gfn %#llx %s\n", f->name, op->name, (unsigned long long)gfn,
		       op->keeps_mappings ? "lost its mapping" : "changed frame");
		return false;
	}
	return replay(f, mmu->root.table, op, total);
}

static void replay_op(const struct spte_format *f, const struct replay_op *op,
		      struct replay_total *total)
{
	struct mmu mmu;

	REQUIRE(vm_build(&mmu, f));
	if (op->prepare)
		op->prepare(&mmu);
	CHECK(record_and_replay(&mmu, op, total));
	CHECK(mmu_audit_passes(&mmu));
	mmu_destroy(&mmu);
	total->ops++;
}

static struct mmu_config saved_config;

static void replay_ops(const struct replay_op *ops, unsigned n)
{
	struct replay_total total = { 0 };

	host_mem_init(4 * GiB);
	for (int fi = 0; fi < N_FORMATS; fi++)
		for (unsigned i = 0; i < n; i++) {
			saved_config = mmu_config;
			mmu_config.prefetch = PREFETCH_OFF;
			mmu_config.prefetch_adaptive = false;
			mmu_config.nx_huge_pages = NX_HUGE_ON;
			mmu_config.split_on_fault = true;
			mmu_config.eager_page_split = false;
			replay_op(format(fi), &ops[i], &total);
			mmu_config = saved_config;
		}
	printf("  %u operations, %llu intermediate states, %llu gfn translations checked\n",
	       total.ops, (unsigned long long)total.states, (unsigned long long)total.gfns_checked);
}

static void exec_fault_2m(struct mmu *mmu)
{
	CHECK_EQ_U64(tdp_map(mmu, SLOT_A_GPA + 2 * MiB + 5 * PAGE_SIZE, TDP_ACC_EXEC), TDP_FIXED);
}

static void exec_fault_1g(struct mmu *mmu)
{
	CHECK_EQ_U64(tdp_map(mmu, SLOT_C_GPA + 3 * MiB + PAGE_SIZE, TDP_ACC_EXEC), TDP_FIXED);
}

static void log_slot_a(struct mmu *mmu)
{
	CHECK(mmu_dirty_log_enable(mmu, SLOT_A_GPA, true) == 0);
}

static void write_fault_2m(struct mmu *mmu)
{
	CHECK_EQ_U64(tdp_map(mmu, SLOT_A_GPA + 2 * MiB + 7 * PAGE_SIZE, TDP_ACC_WRITE), TDP_FIXED);
}

static void eager_split_on(struct mmu *mmu)
{
	(void)mmu;
	mmu_config.eager_page_split = true;
}

/* Split on fault (an execute fault under the NX-huge-page policy, a logged
 * write) and eager split. */
TEST(replay_split)
{
	static const struct replay_op ops[] = {
		{ "2 MiB split by an execute fault", SLOT_A_GPA, 4 * MiB, 513, true, NULL,
		  exec_fault_2m },
		{ "1 GiB then 2 MiB split by an execute fault", SLOT_C_GPA, 1 * GiB, 1026, true,
		  NULL, exec_fault_1g },
		{ "2 MiB split by a logged write", SLOT_A_GPA, 4 * MiB, 514, true, log_slot_a,
		  write_fault_2m },
		{ "eager split at dirty-log enable", SLOT_A_GPA, 4 * MiB, 1026, true,
		  eager_split_on, log_slot_a },
	};

	replay_ops(ops, sizeof(ops) / sizeof(ops[0]));
}

/* [2 MiB, 1 GiB + 2 MiB): a 2 MiB leaf, the 4 KiB table, part of the 1 GiB leaf. */
static void zap_keep_tables(struct mmu *mmu)
{
	mmu_zap(mmu, 2 * MiB, 1 * GiB);
}

static void zap_free_tables(struct mmu *mmu)
{
	write_lock(&mmu->lock);
	if (tdp_zap(mmu, PAGE_GFN(2 * MiB), PAGE_GFN(1 * GiB + 2 * MiB), true, true))
		mmu_flush_tlb(mmu);
	write_unlock(&mmu->lock);
}

static void zap_part_of_table(struct mmu *mmu)
{
	write_lock(&mmu->lock);
	if (tdp_zap(mmu, PAGE_GFN(SLOT_B_GPA + 64 * 1024), PAGE_GFN(SLOT_B_GPA + 1 * MiB), true,
		    true))
		mmu_flush_tlb(mmu);
	write_unlock(&mmu->lock);
}

static void remove_slot_b(struct mmu *mmu)
{
	CHECK(mmu_slot_remove(mmu, SLOT_B_GPA) == 0);
}

TEST(replay_zap)
{
	static const struct replay_op ops[] = {
		{ "zap keeping tables", 0, 2 * GiB, 514, false, NULL, zap_keep_tables },
		{ "zap freeing tables", 0, 2 * GiB, 516, false, NULL, zap_free_tables },
		{ "zap of part of a table", SLOT_B_GPA, 2 * MiB, 240, false, NULL,
		  zap_part_of_table },
		{ "slot removal", 0, 2 * GiB, 514, false, NULL, remove_slot_b },
	};

	replay_ops(ops, sizeof(ops) / sizeof(ops[0]));
}

static void log_slots_a_b(struct mmu *mmu)
{
	CHECK(mmu_dirty_log_enable(mmu, SLOT_A_GPA, true) == 0);
	CHECK(mmu_dirty_log_enable(mmu, SLOT_B_GPA, true) == 0);
}

/* Logging on slot B, then eight of its pages written. */
static void log_b_and_write(struct mmu *mmu)
{
	CHECK(mmu_dirty_log_enable(mmu, SLOT_B_GPA, true) == 0);
	for (uint64_t gpa = SLOT_B_GPA; gpa < SLOT_B_GPA + 2 * MiB; gpa += 64 * 1024) {
		CHECK(tdp_map(mmu, gpa, TDP_ACC_WRITE) <= TDP_SPURIOUS);
		mmu_cpu_sets_dirty(mmu, gpa);
	}
}

static void read_log_b(struct mmu *mmu)
{
	uint64_t bits[8];

	CHECK_EQ_U64(mmu_dirty_log_get(mmu, SLOT_B_GPA, bits), 32);
}

/* Dirty logging's write protection (or dirty-bit clearing) at enable and at
 * each read of the log. */
TEST(replay_write_protect)
{
	static const struct replay_op ops[] = {
		{ "write protection at dirty-log enable", 0, 6 * MiB, 514, true, NULL,
		  log_slots_a_b },
		{ "write protection at a log read", SLOT_B_GPA, 2 * MiB, 32, true, log_b_and_write,
		  read_log_b },
	};

	replay_ops(ops, sizeof(ops) / sizeof(ops[0]));
}

/* Slot B again, empty, its table freed. */
static void empty_slot_b(struct mmu *mmu)
{
	CHECK(mmu_slot_remove(mmu, SLOT_B_GPA) == 0);
	CHECK(mmu_slot_add(mmu, &vm_slots[1]) == 0);
}

static void empty_slot_b_forward(struct mmu *mmu)
{
	empty_slot_b(mmu);
	mmu_config.prefetch = PREFETCH_FORWARD;
}

/* Runs both ways stop at the leaves of pages 200 and 400. */
static void empty_slot_b_both(struct mmu *mmu)
{
	empty_slot_b(mmu);
	CHECK_EQ_U64(tdp_map(mmu, SLOT_B_GPA + 200 * PAGE_SIZE, TDP_ACC_READ), TDP_FIXED);
	CHECK_EQ_U64(tdp_map(mmu, SLOT_B_GPA + 400 * PAGE_SIZE, TDP_ACC_READ), TDP_FIXED);
	mmu_config.prefetch = PREFETCH_BOTH;
}

static void read_fault_100(struct mmu *mmu)
{
	CHECK_EQ_U64(tdp_map(mmu, SLOT_B_GPA + 100 * PAGE_SIZE, TDP_ACC_READ), TDP_FIXED);
}

static void read_fault_300(struct mmu *mmu)
{
	CHECK_EQ_U64(tdp_map(mmu, SLOT_B_GPA + 300 * PAGE_SIZE, TDP_ACC_READ), TDP_FIXED);
}

TEST(replay_prefetch)
{
	static const struct replay_op ops[] = {
		{ "forward prefetch", SLOT_B_GPA, 2 * MiB, 413, true, empty_slot_b_forward,
		  read_fault_100 },
		{ "prefetch both ways", SLOT_B_GPA, 2 * MiB, 199, true, empty_slot_b_both,
		  read_fault_300 },
	};

	replay_ops(ops, sizeof(ops) / sizeof(ops[0]));
}
