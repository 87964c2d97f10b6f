/* Reverse map: the chain layouts and their operations (see mm/rmap.h). */
#include "mm/rmap.h"
#include "arch/x86/lock.h"
#include "lib/print.h"
#include "mm/mmu_config.h"
#include "mm/slab.h"
#include <stddef.h>

const char *const rmap_desc_names[RMAP_DESC_KINDS + 1] = {
	[RMAP_DESC_EXT3] = "ext3", [RMAP_DESC_EXT14] = "ext14", [RMAP_DESC_COUNTED] = "counted", NULL,
};

const struct rmap_variant rmap_fork_variants[RMAP_FORK_VARIANTS] = {
	{ RMAP_DESC_EXT3, false },
	{ RMAP_DESC_EXT14, false },
	{ RMAP_DESC_COUNTED, false },
	{ RMAP_DESC_COUNTED, true },
};

/* ext3 and ext14: an empty slot is NULL, and the filled slots of a descriptor
 * come first. New descriptors go at the end of the chain. */
struct rmap_plain_desc {
	struct rmap_plain_desc *more;
	uint64_t *sptes[];
};

/* counted: a ring. The head names the newest descriptor, where adds go; its
 * `more` is the oldest, where removals take the entry that fills a hole; from
 * there `more` runs from older to newer back to the newest. Every descriptor
 * but these two is full. A scan (back-reference off) starts at the oldest, as
 * KVM's and ext14's do, so removing SPTEs in the order they came (clones torn
 * down oldest first) finds each near the start. */
struct rmap_counted_desc {
	struct rmap_counted_desc *more;
	uint32_t count;      /* entries in this descriptor */
	uint32_t tail_count; /* newest only: entries in the others */
	uint64_t *sptes[RMAP_COUNTED_EXT];
};

static const unsigned plain_ext[] = { [RMAP_DESC_EXT3] = 3, [RMAP_DESC_EXT14] = 14 };
static struct slab_cache desc_caches[RMAP_DESC_KINDS];

static size_t desc_size(enum rmap_desc_kind kind)
{
	if (kind == RMAP_DESC_COUNTED)
		return sizeof(struct rmap_counted_desc);
	return sizeof(struct rmap_plain_desc) + plain_ext[kind] * sizeof(uint64_t *);
}

void rmap_init(void)
{
	static const char *const cache_names[RMAP_DESC_KINDS] = {
		"rmap_ext3", "rmap_ext14", "rmap_counted",
	};

	for (int k = 0; k < RMAP_DESC_KINDS; k++)
		slab_init(&desc_caches[k], cache_names[k], desc_size(k));
}

unsigned rmap_desc_bytes(enum rmap_desc_kind kind)
{
	return desc_caches[kind].obj_size;
}

uint64_t rmap_descs_in_use(void)
{
	uint64_t n = 0;

	for (int k = 0; k < RMAP_DESC_KINDS; k++) {
		struct slab_stats st;

		slab_get_stats(&desc_caches[k], &st);
		n += st.objs_in_use;
	}
	return n;
}

/* The head's bit lock. Returns the head's value, lock bit clear; the holder
 * works on that copy and publishes it with head_unlock. */
static uint64_t head_lock(uint64_t *head)
{
	uint64_t v = __atomic_load_n(head, __ATOMIC_RELAXED);

	lockcheck_acquire(head, LOCK_RMAP, LOCK_EXCLUSIVE, false);
	for (;;) {
		if (v & RMAP_LOCKED) {
			cpu_relax();
			v = __atomic_load_n(head, __ATOMIC_RELAXED);
		} else if (__atomic_compare_exchange_n(head, &v, v | RMAP_LOCKED, true,
						       __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			return v;
		}
	}
}

static void head_unlock(uint64_t *head, uint64_t v)
{
	lockcheck_release(head);
	__atomic_store_n(head, v, __ATOMIC_RELEASE);
}

static enum rmap_desc_kind head_kind(uint64_t v)
{
	return (enum rmap_desc_kind)((v & RMAP_KIND_MASK) >> RMAP_KIND_SHIFT);
}

static void *head_desc(uint64_t v)
{
	return (void *)(uintptr_t)(v & ~RMAP_FLAG_MASK);
}

static uint64_t many_head(const void *desc, enum rmap_desc_kind kind)
{
	return desc ? (uint64_t)(uintptr_t)desc | RMAP_MANY | ((uint64_t)kind << RMAP_KIND_SHIFT) : 0;
}

/* --- ext3, ext14: KVM's layout before counted descriptors --- */

/* spare: a zeroed descriptor of the chain's layout when add_needs_desc said
 * so (the add then cannot fail). */
static unsigned plain_add(uint64_t *v, uint64_t *sptep, void *spare)
{
	enum rmap_desc_kind kind = head_kind(*v);
	unsigned ext = plain_ext[kind], count = 0, i;
	struct rmap_plain_desc *d = head_desc(*v);

	while (d->sptes[ext - 1]) {
		count += ext;
		if (!d->more) {
			d->more = spare;
			d = d->more;
			break;
		}
		d = d->more;
	}
	for (i = 0; d->sptes[i]; i++)
		count++;
	d->sptes[i] = sptep;
	/* Removals leave holes in earlier descriptors, so the add may stop
	 * before the end: the size needs the rest of the chain. */
	for (d = d->more; d; d = d->more)
		for (i = 0; i < ext && d->sptes[i]; i++)
			count++;
	return count + 1;
}

/* Fills the hole at i with the descriptor's own last entry; a descriptor left
 * empty leaves the chain. */
static void plain_remove_at(uint64_t *v, struct rmap_plain_desc *d, struct rmap_plain_desc *prev,
			    unsigned i)
{
	enum rmap_desc_kind kind = head_kind(*v);
	unsigned j = plain_ext[kind] - 1;

	while (j > i && !d->sptes[j])
		j--;
	d->sptes[i] = d->sptes[j];
	d->sptes[j] = NULL;
	if (j)
		return;
	if (prev)
		prev->more = d->more;
	else
		*v = many_head(d->more, kind);
	slab_free(&desc_caches[kind], d);
}

static bool plain_remove(uint64_t *v, uint64_t *sptep)
{
	unsigned ext = plain_ext[head_kind(*v)];
	struct rmap_plain_desc *prev = NULL;

	for (struct rmap_plain_desc *d = head_desc(*v); d; prev = d, d = d->more)
		for (unsigned i = 0; i < ext && d->sptes[i]; i++)
			if (d->sptes[i] == sptep) {
				plain_remove_at(v, d, prev, i);
				return true;
			}
	return false;
}

static unsigned plain_for_each(uint64_t v, void (*fn)(uint64_t *sptep, void *ctx), void *ctx)
{
	unsigned ext = plain_ext[head_kind(v)], n = 0;

	for (struct rmap_plain_desc *d = head_desc(v); d; d = d->more)
		for (unsigned i = 0; i < ext && d->sptes[i]; i++, n++)
			if (fn)
				fn(d->sptes[i], ctx);
	return n;
}

/* --- counted --- */

static void counted_put(struct rmap_counted_desc *d, unsigned i, uint64_t *sptep)
{
	d->sptes[i] = sptep;
	*rmap_backref(sptep) = &d->sptes[i];
}

static unsigned counted_add(uint64_t *v, uint64_t *sptep, void *spare)
{
	struct rmap_counted_desc *d = head_desc(*v);

	if (d->count == RMAP_COUNTED_EXT) {
		struct rmap_counted_desc *newest = spare;

		newest->more = d->more;
		d->more = newest;
		newest->count = 0;
		newest->tail_count = d->count + d->tail_count;
		d = newest;
		*v = many_head(d, RMAP_DESC_COUNTED);
	}
	counted_put(d, d->count++, sptep);
	return d->count + d->tail_count;
}

static uint64_t **counted_find(uint64_t v, uint64_t *sptep)
{
	struct rmap_counted_desc *newest = head_desc(v), *d = newest;

	if (__atomic_load_n(&mmu_config.rmap_backref, __ATOMIC_RELAXED)) {
		uint64_t **slot = *rmap_backref(sptep);

		return slot && *slot == sptep ? slot : NULL;
	}
	do {
		d = d->more;
		for (unsigned i = 0; i < d->count; i++)
			if (d->sptes[i] == sptep)
				return &d->sptes[i];
	} while (d != newest);
	return NULL;
}

/* The oldest descriptor's last entry fills the hole, so the ones between
 * stay full; the oldest leaves the ring when it empties. A chain down to one
 * entry goes back into the head: most shared frames end up mapped once again
 * (a clone gone, an alias unmapped). */
static bool counted_remove(uint64_t *v, uint64_t *sptep)
{
	struct rmap_counted_desc *newest = head_desc(*v), *oldest = newest->more;
	uint64_t **slot = counted_find(*v, sptep);
	uint64_t **last;

	if (!slot)
		return false;
	last = &oldest->sptes[--oldest->count];
	if (oldest != newest)
		newest->tail_count--;
	if (slot != last) {
		*slot = *last;
		*rmap_backref(*slot) = slot;
	}
	if (!oldest->count && oldest != newest) {
		newest->more = oldest->more;
		slab_free(&desc_caches[RMAP_DESC_COUNTED], oldest);
	}
	if (newest->count + newest->tail_count == 1) {
		*v = (uint64_t)(uintptr_t)newest->sptes[0];
		slab_free(&desc_caches[RMAP_DESC_COUNTED], newest);
	}
	return true;
}

static unsigned counted_for_each(uint64_t v, void (*fn)(uint64_t *sptep, void *ctx), void *ctx)
{
	struct rmap_counted_desc *newest = head_desc(v), *d = newest;
	unsigned n = 0;

	do {
		d = d->more;
		for (unsigned i = 0; i < d->count; i++, n++)
			if (fn)
				fn(d->sptes[i], ctx);
	} while (d != newest);
	return n;
}

/* --- the operations, under the head's bit lock --- */

/* A second SPTE turns a single-entry head into a chain of layout kind. */
static unsigned start_chain(uint64_t *v, uint64_t *sptep, enum rmap_desc_kind kind, void *spare)
{
	uint64_t *first = (uint64_t *)(uintptr_t)*v;

	if (kind == RMAP_DESC_COUNTED) {
		struct rmap_counted_desc *d = spare;

		d->more = d;
		d->count = 2;
		d->tail_count = 0;
		counted_put(d, 0, first);
		counted_put(d, 1, sptep);
		*v = many_head(d, kind);
	} else {
		struct rmap_plain_desc *d = spare;

		d->sptes[0] = first;
		d->sptes[1] = sptep;
		*v = many_head(d, kind);
	}
	return 2;
}

/* Whether adding to the chain v takes a new descriptor, and of which layout:
 * a second entry starts a chain of the current layout; a counted chain whose
 * first descriptor is full and a plain one whose descriptors are all full
 * grow by one. */
static bool add_needs_desc(uint64_t v, enum rmap_desc_kind *kind)
{
	if (!v)
		return false;
	if (!(v & RMAP_MANY)) {
		*kind = (enum rmap_desc_kind)__atomic_load_n(&mmu_config.rmap_desc, __ATOMIC_RELAXED);
		return true;
	}
	*kind = head_kind(v);
	if (*kind == RMAP_DESC_COUNTED)
		return ((struct rmap_counted_desc *)head_desc(v))->count == RMAP_COUNTED_EXT;
	for (struct rmap_plain_desc *d = head_desc(v); d; d = d->more)
		if (!d->sptes[plain_ext[*kind] - 1])
			return false;
	return true;
}

int rmap_add_publish(uint64_t *head, uint64_t *sptep, bool (*publish)(void *ctx), void *ctx)
{
	uint64_t v = head_lock(head);
	enum rmap_desc_kind kind = RMAP_DESC_COUNTED;
	void *spare = NULL;
	unsigned size;

	/* The entry is in this rmap already, so present: a racing install of
	 * the same page (two faults on one page, the usual race) lost. Nothing
	 * to allocate: publish fails, and may only report the current value. */
	if (publish && v == (uint64_t)(uintptr_t)sptep) {
		bool published = publish(ctx);

		head_unlock(head, v);
		return published ? 1 : -1;
	}
	/* Everything that can fail comes before the entry is published. */
	if (add_needs_desc(v, &kind)) {
		spare = kind == RMAP_DESC_COUNTED ? slab_alloc(&desc_caches[kind])
						  : slab_zalloc(&desc_caches[kind]);
		if (!spare) {
			head_unlock(head, v);
			return 0;
		}
	}
	if (publish && !publish(ctx)) {
		if (spare)
			slab_free(&desc_caches[kind], spare);
		head_unlock(head, v);
		return -1;
	}
	if (!v) {
		v = (uint64_t)(uintptr_t)sptep;
		size = 1;
	} else if (!(v & RMAP_MANY)) {
		size = start_chain(&v, sptep, kind, spare);
	} else if (head_kind(v) == RMAP_DESC_COUNTED) {
		size = counted_add(&v, sptep, spare);
	} else {
		size = plain_add(&v, sptep, spare);
	}
	head_unlock(head, v);
	return (int)size;
}

unsigned rmap_add(uint64_t *head, uint64_t *sptep)
{
	int size = rmap_add_publish(head, sptep, NULL, NULL);

	return size > 0 ? (unsigned)size : 0;
}

bool rmap_remove(uint64_t *head, uint64_t *sptep)
{
	uint64_t v = head_lock(head);
	bool found;

	if (!(v & RMAP_MANY)) {
		found = v && v == (uint64_t)(uintptr_t)sptep;
		if (found)
			v = 0;
	} else if (head_kind(v) == RMAP_DESC_COUNTED) {
		found = counted_remove(&v, sptep);
	} else {
		found = plain_remove(&v, sptep);
	}
	head_unlock(head, v);
	return found;
}

static unsigned for_each_locked(uint64_t v, void (*fn)(uint64_t *sptep, void *ctx), void *ctx)
{
	if (!(v & RMAP_MANY)) {
		if (v && fn)
			fn((uint64_t *)(uintptr_t)v, ctx);
		return v != 0;
	}
	if (head_kind(v) == RMAP_DESC_COUNTED)
		return counted_for_each(v, fn, ctx);
	return plain_for_each(v, fn, ctx);
}

unsigned rmap_count(uint64_t *head)
{
	uint64_t v = head_lock(head);
	unsigned n;

	if ((v & RMAP_MANY) && head_kind(v) == RMAP_DESC_COUNTED) {
		const struct rmap_counted_desc *d = head_desc(v);

		n = d->count + d->tail_count;
	} else {
		n = for_each_locked(v, NULL, NULL);
	}
	head_unlock(head, v);
	return n;
}

unsigned rmap_for_each(uint64_t *head, void (*fn)(uint64_t *sptep, void *ctx), void *ctx)
{
	uint64_t v = head_lock(head);
	unsigned n = for_each_locked(v, fn, ctx);

	head_unlock(head, v);
	return n;
}

uint64_t *rmap_first(uint64_t *head)
{
	uint64_t v = head_lock(head);
	uint64_t *first;

	if (!(v & RMAP_MANY))
		first = (uint64_t *)(uintptr_t)v;
	else if (head_kind(v) == RMAP_DESC_COUNTED)
		first = ((struct rmap_counted_desc *)head_desc(v))->sptes[0];
	else
		first = ((struct rmap_plain_desc *)head_desc(v))->sptes[0];
	head_unlock(head, v);
	return first;
}

void rmap_hist_print(const struct rmap_histogram *h)
{
	static const char *const level_names[RMAP_HIST_LEVELS] = { "4K", "2M", "1G" };

	kprintf("Rmap_Count:  %8s %8s", "0", "1");
	for (unsigned b = 2; b < RMAP_HIST_BUCKETS - 1; b++) {
		char range[16];

		ksnprintf(range, sizeof range, "%u-%u", 1u << (b - 1), (1u << b) - 1);
		kprintf(" %8s", range);
	}
	kprintf(" %8s\n", "1024+");
	for (unsigned l = 0; l < RMAP_HIST_LEVELS; l++) {
		kprintf("Level=%s:   ", level_names[l]);
		for (unsigned b = 0; b < RMAP_HIST_BUCKETS; b++)
			kprintf(" %8llu", (unsigned long long)h->count[l][b]);
		kprintf("\n");
	}
}
