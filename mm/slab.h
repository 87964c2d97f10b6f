/* Slab caches for fixed-size objects (rmap descriptors, VM structures, ...).
 *
 * A slab is one block from the frame allocator, normally a single 4 KiB frame
 * (a 2- or 4-frame block when one frame would waste more than an eighth on large
 * objects). Its first 64 bytes hold its bookkeeping, so slab_free finds it by
 * rounding the object's address down to the block size, without a search.
 * Objects are aligned to 16 bytes, or to 64 (a cache line) from 64 bytes up. */
#pragma once
#include "arch/x86/lock.h"
#include <stddef.h>
#include <stdint.h>

#define SLAB_MAX_OBJ_SIZE 2048

struct slab;

/* Caches are statically allocated: slab_init registers them for
 * slab_print_all, so they must live as long as the program. */
struct slab_cache {
	const char *name;
	uint32_t obj_size;      /* rounded up to the object alignment */
	uint32_t objs_per_slab; /* 0 if the requested size is unsupported */
	unsigned slab_order;    /* frame_alloc order of each slab */
	struct spinlock lock;
	struct slab *partial;   /* slabs with free and used objects */
	struct slab *spare;     /* at most one empty slab, kept for reuse */
	uint64_t objs_in_use;
	uint64_t slabs;         /* slabs held, the spare included */
	struct slab_cache *next_cache;
};

struct slab_stats {
	uint64_t obj_size;
	uint64_t objs_in_use;
	uint64_t slabs;
	uint64_t bytes; /* held in slabs */
};

/* Set up a cache of objects of obj_size bytes, at most SLAB_MAX_OBJ_SIZE.
 * Calling it again forgets what the cache held (tests do, after frame_init). */
void slab_init(struct slab_cache *c, const char *name, size_t obj_size);
/* NULL when the frame allocator is out of memory. */
void *slab_alloc(struct slab_cache *c);
void *slab_zalloc(struct slab_cache *c);
#ifdef HOST_TEST
/* Host tests' fault injection: when nonzero, the slab_fail_nth-th slab_alloc
 * (or slab_zalloc) from now, of any cache, returns NULL (1: the next one);
 * the count then stays 0. */
extern unsigned slab_fail_nth;
#endif
/* Frees obj; a pointer not allocated from c, or freed twice, is reported and ignored. */
void slab_free(struct slab_cache *c, void *obj);
/* Return the spare empty slab to the frame allocator. */
void slab_shrink(struct slab_cache *c);
void slab_get_stats(struct slab_cache *c, struct slab_stats *st);
/* One line per registered cache, for the console. */
void slab_print_all(void);
