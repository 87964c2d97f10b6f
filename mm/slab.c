/* Slab caches. Each slab tracks its objects in a bitmap in its header rather
 * than a free list threaded through the objects: allocation is a find-first-
 * zero over four words, a double free is caught by a clear bit, and free
 * objects are never written. */
#include "mm/slab.h"
#include "mm/frame.h"
#include "lib/print.h"
#include "lib/string.h"

#define SLAB_HEADER_SIZE 64
#define SLAB_MAX_OBJS 256
#define SLAB_MAX_ORDER 2

struct slab {
	struct slab_cache *cache; /* NULL once returned to the frame allocator */
	struct slab *next, *prev; /* partial list */
	uint32_t in_use;
	uint32_t reserved_pad;
	uint64_t used[SLAB_MAX_OBJS / 64];
};
_Static_assert(sizeof(struct slab) == SLAB_HEADER_SIZE, "slab header must stay 64 bytes");

static struct spinlock registry_lock = { .class = LOCK_SLAB_REGISTRY };
static struct slab_cache *registry;

static size_t slab_bytes(const struct slab_cache *c)
{
	return PAGE_SIZE << c->slab_order;
}

static void *slab_obj(const struct slab_cache *c, struct slab *s, unsigned idx)
{
	return (char *)s + SLAB_HEADER_SIZE + (size_t)idx * c->obj_size;
}

static void register_cache(struct slab_cache *c)
{
	struct slab_cache **p;

	spin_lock(&registry_lock);
	for (p = &registry; *p && *p != c; p = &(*p)->next_cache)
		;
	if (!*p) {
		c->next_cache = NULL;
		*p = c;
	}
	spin_unlock(&registry_lock);
}

void slab_init(struct slab_cache *c, const char *name, size_t obj_size)
{
	size_t align = obj_size >= 64 ? 64 : 16;
	size_t size = obj_size ? (obj_size + align - 1) & ~(align - 1) : align;
	struct slab_cache *next = c->next_cache;

	*c = (struct slab_cache){ .name = name, .obj_size = size, .next_cache = next,
				  .lock = { .class = LOCK_SLAB } };
	if (obj_size > SLAB_MAX_OBJ_SIZE) {
		kprintf("slab %s: objects of %zu bytes are too large\n", name, obj_size);
		register_cache(c);
		return;
	}
	/* The smallest slab that wastes at most an eighth of itself. */
	for (c->slab_order = 0; c->slab_order < SLAB_MAX_ORDER; c->slab_order++) {
		size_t room = slab_bytes(c) - SLAB_HEADER_SIZE;

		if ((room % size) * 8 <= slab_bytes(c))
			break;
	}
	c->objs_per_slab = (slab_bytes(c) - SLAB_HEADER_SIZE) / size;
	if (c->objs_per_slab > SLAB_MAX_OBJS)
		c->objs_per_slab = SLAB_MAX_OBJS;
	register_cache(c);
}

static void partial_add(struct slab_cache *c, struct slab *s)
{
	s->prev = NULL;
	s->next = c->partial;
	if (c->partial)
		c->partial->prev = s;
	c->partial = s;
}

static void partial_del(struct slab_cache *c, struct slab *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		c->partial = s->next;
	if (s->next)
		s->next->prev = s->prev;
}

/* Caller holds c->lock. */
static struct slab *new_slab(struct slab_cache *c)
{
	paddr_t pa = frame_alloc(c->slab_order);
	struct slab *s;

	if (!pa)
		return NULL;
	s = pa_to_va(pa);
	*s = (struct slab){ .cache = c };
	/* Bits past the last object read as used, so they are never handed out. */
	for (unsigned i = c->objs_per_slab; i < SLAB_MAX_OBJS; i++)
		s->used[i / 64] |= 1ull << (i % 64);
	c->slabs++;
	return s;
}

/* Caller holds c->lock. */
static void release_slab(struct slab_cache *c, struct slab *s)
{
	s->cache = NULL;
	c->slabs--;
	frame_free(va_to_pa(s), c->slab_order);
}

#ifdef HOST_TEST
unsigned slab_fail_nth;

static bool slab_fail_injected(void)
{
	unsigned n = __atomic_load_n(&slab_fail_nth, __ATOMIC_RELAXED);

	while (n && !__atomic_compare_exchange_n(&slab_fail_nth, &n, n - 1, true, __ATOMIC_RELAXED,
						 __ATOMIC_RELAXED))
		;
	return n == 1;
}
#endif

void *slab_alloc(struct slab_cache *c)
{
	struct slab *s;
	unsigned w, idx;

	if (!c->objs_per_slab)
		return NULL;
#ifdef HOST_TEST
	if (slab_fail_injected())
		return NULL;
#endif
	spin_lock(&c->lock);
	s = c->partial;
	if (!s) {
		s = c->spare ? c->spare : new_slab(c);
		c->spare = NULL;
		if (!s) {
			spin_unlock(&c->lock);
			return NULL;
		}
		partial_add(c, s);
	}
	for (w = 0; s->used[w] == UINT64_MAX; w++)
		;
	idx = w * 64 + __builtin_ctzll(~s->used[w]);
	s->used[w] |= 1ull << (idx % 64);
	if (++s->in_use == c->objs_per_slab)
		partial_del(c, s);
	c->objs_in_use++;
	spin_unlock(&c->lock);
	return slab_obj(c, s, idx);
}

void *slab_zalloc(struct slab_cache *c)
{
	void *obj = slab_alloc(c);

	if (obj)
		memset(obj, 0, c->obj_size);
	return obj;
}

void slab_free(struct slab_cache *c, void *obj)
{
	struct slab *s = (struct slab *)((uintptr_t)obj & ~(uintptr_t)(slab_bytes(c) - 1));
	size_t offset = (uintptr_t)obj - (uintptr_t)s;
	const char *misuse = NULL;
	unsigned idx;
	bool was_full;

	if (!obj)
		return;
	spin_lock(&c->lock);
	idx = (offset - SLAB_HEADER_SIZE) / c->obj_size;
	if (!c->objs_per_slab || s->cache != c)
		misuse = "not from this cache";
	else if (offset < SLAB_HEADER_SIZE || (offset - SLAB_HEADER_SIZE) % c->obj_size ||
		 idx >= c->objs_per_slab)
		misuse = "not the start of an object";
	else if (!(s->used[idx / 64] & (1ull << (idx % 64))))
		misuse = "double free";
	if (misuse) {
		spin_unlock(&c->lock);
		kprintf("slab %s: refused free of %p: %s\n", c->name, obj, misuse);
		return;
	}
	was_full = s->in_use == c->objs_per_slab;
	s->used[idx / 64] &= ~(1ull << (idx % 64));
	s->in_use--;
	c->objs_in_use--;
	if (!s->in_use) {
		if (!was_full)
			partial_del(c, s);
		if (c->spare)
			release_slab(c, s);
		else
			c->spare = s;
	} else if (was_full) {
		partial_add(c, s);
	}
	spin_unlock(&c->lock);
}

void slab_shrink(struct slab_cache *c)
{
	spin_lock(&c->lock);
	if (c->spare) {
		release_slab(c, c->spare);
		c->spare = NULL;
	}
	spin_unlock(&c->lock);
}

void slab_get_stats(struct slab_cache *c, struct slab_stats *st)
{
	spin_lock(&c->lock);
	st->obj_size = c->obj_size;
	st->objs_in_use = c->objs_in_use;
	st->slabs = c->slabs;
	st->bytes = c->slabs * slab_bytes(c);
	spin_unlock(&c->lock);
}

void slab_print_all(void)
{
	spin_lock(&registry_lock);
	for (struct slab_cache *c = registry; c; c = c->next_cache) {
		struct slab_stats st;

		slab_get_stats(c, &st);
		kprintf("slab %-16s %5llu B: %llu in use, %llu slabs, %llu KiB\n", c->name,
			(unsigned long long)st.obj_size, (unsigned long long)st.objs_in_use,
			(unsigned long long)st.slabs, (unsigned long long)(st.bytes >> 10));
	}
	spin_unlock(&registry_lock);
}
