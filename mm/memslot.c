/* Sorted memslot array (see memslot.h). */
#include "mm/memslot.h"
#include "lib/string.h"

/* Index of the first slot that ends after gfn. */
static unsigned first_ending_after(const struct memslots *s, uint64_t gfn)
{
	unsigned lo = 0, hi = s->count;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (memslot_end(&s->slot[mid]) <= gfn)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct memslot *memslot_find(struct memslots *s, uint64_t gfn)
{
	unsigned i = first_ending_after(s, gfn);

	if (i < s->count && s->slot[i].base_gfn <= gfn)
		return &s->slot[i];
	return NULL;
}

int memslot_insert_pos(const struct memslots *s, uint64_t base_gfn, uint64_t npages)
{
	unsigned i = first_ending_after(s, base_gfn);

	if (!npages || base_gfn + npages > TDP_GFN_LIMIT || s->count == MEMSLOTS_MAX)
		return -1;
	if (i < s->count && s->slot[i].base_gfn < base_gfn + npages)
		return -1;
	return (int)i;
}

int memslot_insert(struct memslots *s, const struct memslot *m)
{
	int pos = memslot_insert_pos(s, m->base_gfn, m->npages);

	if (pos >= 0) {
		memmove(&s->slot[pos + 1], &s->slot[pos], (s->count - (unsigned)pos) * sizeof(*m));
		s->slot[pos] = *m;
		s->count++;
	}
	return pos;
}

struct memslot *memslot_at(struct memslots *s, uint64_t base_gfn)
{
	struct memslot *m = memslot_find(s, base_gfn);

	return m && m->base_gfn == base_gfn ? m : NULL;
}
