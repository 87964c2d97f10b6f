/* The soak test's guest (tests/soak.py): rounds of checking and writing its
 * memory, with a pause between two rounds where the console may clone,
 * snapshot, restore, discard or log it. It keeps, in its own memory, what
 * every page of `mib=N` MiB (default 4, at most 16) from 4 MiB up must hold,
 * so whatever copy of it runs on (the VM itself, a clone, a VM restored from a
 * snapshot) checks exactly the memory it was given.
 *
 * Round G (1 to `rounds=R`, default 4):
 *   1. ask for the arguments (HC_ARGS): a `restore=K` that differs from the
 *      last one seen means this is a VM restored from a snapshot taken at the
 *      last pause (or before it first ran): its memory is the image, and a
 *      page discarded from now on refaults the image's contents (it prints
 *      "soakg: restored (restore=K) before round G");
 *   2. collect what sprig discarded behind its back (HC_LOST_RANGES): those
 *      pages must now read zero, or the image's contents in a restored VM;
 *   3. check every word of every page;
 *   4. write a run of pages (from a page chosen by a generator seeded with
 *      `seed=S`, the round and, after each pause, the hypercall's result and
 *      the TSC, so that a clone and its parent write differently), wrapping
 *      at the end of the region, then check every page again;
 *   5. print "soakg: round G ok: P pages checked, wrote W pages from page F,
 *      lost L" and stop at HC_CLONE_POINT (odd rounds) or HC_SNAPSHOT_POINT
 *      (even rounds), except after round R: print "soakg ok" and exit 0.
 * A page holds 512 words derived from one value (0 for a zero page); any
 * word that differs is a failure: print it, "soakg: round G FAILED", exit 1.
 * Bare, without sprig, it runs its rounds without pausing. */
#include "guests/rt/rt.h"
#include "virt/hypercall.h"

#define MAX_MIB 16
#define MAX_PAGES (MAX_MIB * MIB / PAGE_SIZE)
#define WORDS (PAGE_SIZE / 8)
#define LOST_BATCH 16
#define STEP 0x9e3779b97f4a7c15ull

static uint64_t expected[MAX_PAGES];   /* each page's value; 0: all zero */
static uint64_t image_value[MAX_PAGES]; /* the image's, once restored */
static uint32_t lost_round[MAX_PAGES]; /* the round that last counted it lost */
static struct hc_range lost[LOST_BATCH];
static char args[256];
static uint64_t area, pages, round, tag;
static unsigned long restore_id, bad;
static bool restored;

static uint64_t mix(uint64_t x)
{
	x += STEP;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static volatile uint64_t *page_at(uint64_t p)
{
	return (volatile uint64_t *)(area + p * PAGE_SIZE);
}

static uint64_t word_of(uint64_t value, uint64_t i)
{
	return value ? value + i * STEP : 0;
}

static void check_all(const char *when)
{
	for (uint64_t p = 0; p < pages; p++) {
		volatile uint64_t *w = page_at(p);

		for (uint64_t i = 0; i < WORDS; i++) {
			uint64_t v = w[i], want = word_of(expected[p], i);

			if (v != want && bad++ == 0)
				printf("soakg: round %lu, %s: 0x%lx reads 0x%lx, expected 0x%lx\n",
				       (unsigned long)round, when, area + p * PAGE_SIZE + i * 8, v, want);
		}
	}
}

static unsigned long value_arg(const char *s, const char *key)
{
	unsigned long v = 0;
	const char *p = s;

	for (; *p; p++) {
		const char *k = key, *q = p;

		if (p != s && p[-1] != ' ')
			continue;
		while (*k && *q == *k) {
			k++;
			q++;
		}
		if (*k)
			continue;
		while (*q >= '0' && *q <= '9')
			v = v * 10 + (unsigned long)(*q++ - '0');
		return v;
	}
	return 0;
}

/* The pages sprig discarded: each now reads zero, or the image's contents. */
static bool collect_lost(unsigned long *count)
{
	long n;

	do {
		n = hypercall(HC_LOST_RANGES, (unsigned long)lost, LOST_BATCH, 0, 0);
		if (n < 0) {
			printf("soakg: round %lu: HC_LOST_RANGES failed: %ld\n", (unsigned long)round, n);
			return false;
		}
		for (long r = 0; r < n; r++) {
			uint64_t a = lost[r].gpa, end = lost[r].gpa + lost[r].len;

			if (a < area || end > area + pages * PAGE_SIZE || (a | end) % PAGE_SIZE) {
				printf("soakg: round %lu: lost 0x%lx-0x%lx, outside 0x%lx-0x%lx\n",
				       (unsigned long)round, a, end, area, area + pages * PAGE_SIZE);
				return false;
			}
			for (; a < end; a += PAGE_SIZE) {
				uint64_t p = (a - area) / PAGE_SIZE;

				expected[p] = restored ? image_value[p] : 0;
				if (lost_round[p] != round) {
					lost_round[p] = (uint32_t)round;
					(*count)++;
				}
			}
		}
	} while (n == LOST_BATCH);
	return true;
}

/* A restore=K other than the last one seen: this VM was restored from a
 * snapshot taken at the last pause (or before it booted), so its memory was
 * the image, and a discarded page refaults the image's contents. */
static bool restore_check(void)
{
	unsigned long id;

	if (hypercall(HC_ARGS, (unsigned long)args, sizeof(args), 0, 0) < 0) {
		printf("soakg: round %lu: HC_ARGS failed\n", (unsigned long)round);
		return false;
	}
	id = value_arg(args, "restore=");
	if (id == restore_id)
		return true;
	restore_id = id;
	restored = true;
	for (uint64_t p = 0; p < pages; p++)
		image_value[p] = expected[p];
	printf("soakg: restored (restore=%lu) before round %lu\n", id, (unsigned long)round);
	return true;
}

int main(const struct mb1_info *mbi)
{
	unsigned long mib = arg_ulong(mbi, "mib", 4);
	unsigned long rounds = arg_ulong(mbi, "rounds", 4);
	bool sprig = under_sprig();

	tag = mix(arg_ulong(mbi, "seed", 1));
	if (!mib || mib > MAX_MIB || !rounds || !playground_fits(mbi, mib * MIB)) {
		printf("soakg: %lu MiB does not fit (1 to %u, in memory), or no rounds\n", mib,
		       MAX_MIB);
		return 1;
	}
	area = GUEST_PLAYGROUND;
	pages = mib * MIB / PAGE_SIZE;
	printf("soakg: %lu MiB at 0x%lx, %lu rounds\n", mib, area, rounds);
	for (round = 1;; round++) {
		unsigned long lost_pages = 0;
		uint64_t r = mix(tag ^ round), first = r % pages, n = 1 + (r >> 32) % pages;

		if (sprig && !restore_check())
			break;
		if (sprig && !collect_lost(&lost_pages))
			break;
		check_all("after the pause");
		for (uint64_t k = 0; k < n; k++) {
			uint64_t p = (first + k) % pages, value = mix(r ^ p) | 1;
			volatile uint64_t *w = page_at(p);

			expected[p] = value;
			for (uint64_t i = 0; i < WORDS; i++)
				w[i] = word_of(value, i);
		}
		check_all("after writing");
		if (bad)
			break;
		printf("soakg: round %lu ok: %lu pages checked, wrote %lu pages from page %lu, "
		       "lost %lu\n", (unsigned long)round, (unsigned long)pages, (unsigned long)n,
		       (unsigned long)first, lost_pages);
		if (round == rounds) {
			printf("soakg ok\n");
			return 0;
		}
		if (!sprig)
			continue;
		tag = mix(tag ^ (uint64_t)hypercall(round % 2 ? HC_CLONE_POINT : HC_SNAPSHOT_POINT,
						      0, 0, 0, 0));
		tag = mix(tag ^ __builtin_ia32_rdtsc());
	}
	printf("soakg: round %lu FAILED: %lu bad words\n", (unsigned long)round, bad);
	return 1;
}
