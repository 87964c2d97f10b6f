/* The snapshot-restore guest. Fills `mib=N` MiB (default 124: up to the end of
 * a 128 MiB VM) from 4 MiB up with a pattern that differs every 8 bytes, then
 * stops at HC_SNAPSHOT_POINT, where the console snapshots it. Whatever runs on
 * from there (the paused VM itself, or a VM restored from the snapshot) asks
 * for its arguments (HC_ARGS: order=forward|backward|random) and reads every
 * page of the region in that order, checking every byte against the pattern:
 * restored memory must equal the image. Prints what it checked and the time,
 * exits 0, or 1 on a mismatch. Bare, without sprig, it checks forwards. */
#include "guests/rt/rt.h"
#include "virt/hypercall.h"

enum order { FORWARD, BACKWARD, RANDOM };
static const char *const order_names[] = { "forward", "backward", "random" };

static uint64_t pattern(uint64_t addr)
{
	return (addr * 0x9e3779b97f4a7c15ull) ^ 0x5a5a5a5a00000001ull;
}

static bool starts_with(const char *s, const char *prefix)
{
	while (*prefix)
		if (*s++ != *prefix++)
			return false;
	return true;
}

/* order=NAME among space-separated words; forward when absent. */
static enum order parse_order(const char *args)
{
	for (const char *p = args; *p; p++) {
		if ((p == args || p[-1] == ' ') && starts_with(p, "order=")) {
			for (int o = FORWARD; o <= RANDOM; o++)
				if (starts_with(p + 6, order_names[o]))
					return (enum order)o;
		}
	}
	return FORWARD;
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

int main(const struct mb1_info *mbi)
{
	static char args[128];
	unsigned long mib = arg_ulong(mbi, "mib", 124);
	uint64_t start = GUEST_PLAYGROUND, pages = mib * MIB / PAGE_SIZE;
	uint64_t step = 40503, mismatches = 0, t0 = 0, t1 = 0;
	enum order order = FORWARD;

	if (!pages || !playground_fits(mbi, mib * MIB)) {
		printf("restore_touch: %lu MiB at 0x%lx does not fit in memory\n", mib, start);
		return 1;
	}
	for (uint64_t a = start; a < start + pages * PAGE_SIZE; a += 8)
		*(volatile uint64_t *)a = pattern(a);
	if (under_sprig()) {
		printf("restore_touch: %lu MiB written, snapshot point\n", mib);
		hypercall(HC_SNAPSHOT_POINT, 0, 0, 0, 0);
		hypercall(HC_ARGS, (unsigned long)args, sizeof(args), 0, 0);
		order = parse_order(args);
		t0 = (uint64_t)hypercall(HC_TIME_NS, 0, 0, 0, 0);
	}
	/* Random: page i * step mod pages visits each page once when the two
	 * are coprime. */
	while (gcd(step, pages) != 1)
		step++;
	for (uint64_t i = 0; i < pages; i++) {
		uint64_t page = order == FORWARD ? i : order == BACKWARD ? pages - 1 - i
									 : i * step % pages;
		uint64_t base = start + page * PAGE_SIZE;

		for (uint64_t a = base; a < base + PAGE_SIZE; a += 8) {
			uint64_t v = *(volatile uint64_t *)a;

			if (v != pattern(a) && mismatches++ == 0)
				printf("restore_touch: 0x%lx reads 0x%lx, expected 0x%lx\n", a, v,
				       pattern(a));
		}
	}
	if (under_sprig())
		t1 = (uint64_t)hypercall(HC_TIME_NS, 0, 0, 0, 0);
	printf("restore_touch: %s, %lu pages checked, %lu mismatches, %lu us\n", order_names[order],
	       pages, mismatches, (t1 - t0) / 1000);
	if (mismatches)
		return 1;
	printf("restore_touch ok\n");
	return 0;
}
