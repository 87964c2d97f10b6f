/* Model TLB (see model_tlb.h). */
#include "tests/unit/model_tlb.h"
#include "mm/tdp_mmu.h"
#include <stdio.h>
#include <string.h>

static unsigned slot_of(uint64_t gfn, int level)
{
	uint64_t k = (gfn >> (9 * (level - 1))) * 0x9E3779B97F4A7C15ull + (uint64_t)level;

	return (unsigned)(k >> 40) % MODEL_TLB_ENTRIES;
}

void model_tlb_flush(void *ctx)
{
	struct model_tlbs *t = ctx;

	for (unsigned i = 0; i < t->count; i++)
		memset(t->tlb[i]->e, 0, sizeof(t->tlb[i]->e));
}

static void violation(struct model_tlb *tlb, const char *what, uint64_t gpa, paddr_t cached,
		      paddr_t now)
{
	if (!tlb->violations++)
		snprintf(tlb->first_violation, sizeof(tlb->first_violation),
			 "%s: gpa %#llx cached hpa %#llx, tables say %#llx", what,
			 (unsigned long long)gpa, (unsigned long long)cached,
			 (unsigned long long)now);
}

/* A cached entry must still be what the tables say, with no right lost. */
static void check_entry(struct model_tlb *tlb, struct mmu *mmu, const struct model_tlb_entry *e,
			uint64_t gpa)
{
	uint64_t off = gpa - (e->gfn << PAGE_SHIFT);
	paddr_t hpa;
	unsigned rights;
	int level;

	if (!tdp_translate(mmu, gpa, &hpa, &level, &rights))
		violation(tlb, "cached translation was zapped without a flush", gpa, e->hpa + off, 0);
	else if (hpa != e->hpa + off)
		violation(tlb, "cached translation was remapped without a flush", gpa, e->hpa + off,
			  hpa);
	else if (e->rights & ~rights)
		violation(tlb, "cached translation lost a right without a flush", gpa, e->hpa + off,
			  hpa);
}

static struct model_tlb_entry *lookup(struct model_tlb *tlb, uint64_t gfn)
{
	for (int level = 1; level <= TDP_MAX_HUGE_LEVEL; level++) {
		struct model_tlb_entry *e = &tlb->e[slot_of(gfn, level)];

		if (e->level == level && e->gfn == tdp_level_base(gfn, level))
			return e;
	}
	return NULL;
}

static void check_backing(struct model_tlb *tlb, struct mmu *mmu, uint64_t gpa, paddr_t hpa)
{
	struct memslot *s = memslot_find(&mmu->slots, gpa >> PAGE_SHIFT);
	paddr_t want = s ? backing_peek(&s->backing, (gpa >> PAGE_SHIFT) - s->base_gfn) : 0;

	if (want != (hpa & ~(PAGE_SIZE - 1)))
		violation(tlb, "access reached a frame that does not back the gfn", gpa, hpa, want);
}

const struct model_tlb_entry *model_tlb_hit(struct model_tlb *tlb, uint64_t gpa, unsigned access,
					    paddr_t *hpa)
{
	struct model_tlb_entry *e = lookup(tlb, gpa >> PAGE_SHIFT);

	if (!e || (e->rights & access) != access)
		return NULL;
	tlb->hits++;
	*hpa = e->hpa + (gpa - (e->gfn << PAGE_SHIFT));
	return e;
}

bool model_tlb_fill(struct model_tlb *tlb, struct mmu *mmu, uint64_t gpa, unsigned access,
		    uint64_t stamp, paddr_t *hpa)
{
	uint64_t gfn = gpa >> PAGE_SHIFT;
	struct model_tlb_entry *e;
	unsigned rights;
	int level;

	tlb->misses++;
	if (!tdp_translate(mmu, gpa, hpa, &level, &rights) || (rights & access) != access)
		return false;
	e = &tlb->e[slot_of(gfn, level)];
	e->level = level;
	e->gfn = tdp_level_base(gfn, level);
	e->hpa = *hpa - ((gpa - (e->gfn << PAGE_SHIFT)));
	e->rights = rights;
	e->stamp = stamp;
	return true;
}

/* One attempt under the locks: hit, or walk and fill. False on a miss that
 * needs a fault. */
static bool try_translate(struct model_tlb *tlb, struct mmu *mmu, uint64_t gpa, unsigned access,
			  paddr_t *hpa)
{
	const struct model_tlb_entry *e = model_tlb_hit(tlb, gpa, access, hpa);

	if (e)
		check_entry(tlb, mmu, e, gpa);
	else if (!model_tlb_fill(tlb, mmu, gpa, access, 0, hpa))
		return false;
	check_backing(tlb, mmu, gpa, *hpa);
	return true;
}

int model_access(struct model_tlb *tlb, struct mmu *mmu, uint64_t gpa, unsigned access,
		 paddr_t *hpa)
{
	for (;;) {
		bool ok;
		enum tdp_fault_result res;

		read_lock(&mmu->slots_lock);
		read_lock(&mmu->lock);
		ok = try_translate(tlb, mmu, gpa, access, hpa);
		read_unlock(&mmu->lock);
		read_unlock(&mmu->slots_lock);
		if (ok)
			return 0;
		tlb->faults++;
		res = tdp_map(mmu, gpa, access);
		if (res != TDP_FIXED && res != TDP_SPURIOUS && res != TDP_RETRY)
			return (int)res;
	}
}

void model_tlb_check_all(struct model_tlb *tlb, struct mmu *mmu)
{
	read_lock(&mmu->lock);
	for (unsigned i = 0; i < MODEL_TLB_ENTRIES; i++) {
		struct model_tlb_entry *e = &tlb->e[i];

		if (!e->level)
			continue;
		/* First and last page: a huge entry is one SPTE or was split evenly. */
		check_entry(tlb, mmu, e, e->gfn << PAGE_SHIFT);
		check_entry(tlb, mmu, e, ((e->gfn + tdp_level_pages(e->level)) << PAGE_SHIFT) - 8);
	}
	read_unlock(&mmu->lock);
}

static struct model_cpu *kick_targets[MODEL_CPUS];

/* The host IPI: the vCPU on that CPU leaves guest mode when it sees it. */
static void kick(int cpu)
{
	__atomic_store_n(&kick_targets[cpu]->kicked, 1, __ATOMIC_RELEASE);
}

void model_smp_init(struct model_smp *smp, struct model_cpu *cpus, unsigned n, bool remote_flush)
{
	memset(smp, 0, sizeof(*smp));
	smp->count = n;
	smp->remote_flush = remote_flush;
	for (unsigned i = 0; i < n; i++) {
		memset(&cpus[i], 0, sizeof(cpus[i]));
		cpus[i].sync.cpu = (int)i;
		smp->sync[i] = &cpus[i].sync;
		kick_targets[i] = &cpus[i];
	}
}

void model_smp_flush(void *ctx)
{
	struct model_smp *smp = ctx;

	kick_remote_flush(smp->sync, smp->count, smp->remote_flush ? kick : NULL, smp->seq);
}

void model_cpu_enter(struct model_cpu *c)
{
	/* A kick that came before the entry is consumed here, with the
	 * requests it announced: one that comes after makes the guest exit. */
	__atomic_store_n(&c->kicked, 0, __ATOMIC_RELAXED);
	/* Ordered before the entry's seq store: a kicker that sees seq odd
	 * sets the flag after this clear. */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	if (kick_sync_enter(&c->sync) & KICK_REQ_FLUSH_TLB) {
		memset(c->tlb.e, 0, sizeof(c->tlb.e));
		c->flushes++;
	}
}
