/* The stale-translation guest (`bench stale`): one CPU that spins without
 * exits, so that only a remote TLB flush with a kick can make it drop a
 * translation. Arguments (HC_ARGS under sprig, the command line bare):
 *   d=GPA f=GPA a=GPA   three page-aligned guest-physical pages: D (data),
 *                       F (flag: the host writes sequence numbers there),
 *                       A (answers)
 *   w=N                 the word of D it watches (0-511; words are 64-bit)
 * It prints its arguments, then loops reading D[w] and F[0] on every
 * iteration (no I/O, HLT or hypercall in the loop). When F[0] holds a value s
 * other than the last it saw (0 at first), it reads D[w], writes that to A[1]
 * and then s to A[0]: whoever sees A[0] == s finds in A[1] the D[w] of that
 * round. When F[0] reads as all ones it prints how many values it answered
 * and exits 0. Bad arguments: exit 1.
 *
 * Bare, without d=, it tests itself on two CPUs (`qemu -smp 2`): the loop on
 * the BSP, and an AP in the host's place writing `selftest=N` rounds (default
 * 1000) of a new D[w] and then F[0], each answer checked; exit 0 when every
 * round was answered with the new value. */
#include "guests/rt/cpu.h"
#include "guests/rt/rt.h"
#include "guests/rt/smp.h"
#include "guests/rt/tsc.h"
#include "virt/hypercall.h"

#define WORDS (PAGE_SIZE / 8)
#define DONE (~0ull)
#define ANSWER_WAIT_US 1000000

static volatile uint64_t *data, *flag, *answer;
static unsigned long word;

/* Until F[0] reads as all ones; the number of values answered. */
static unsigned long spin(void)
{
	unsigned long answered = 0;
	uint64_t last = 0;

	for (;;) {
		uint64_t s;

		(void)data[word];
		s = flag[0];
		if (s == DONE)
			return answered;
		if (s != last) {
			answer[1] = data[word];
			asm volatile("" ::: "memory");
			answer[0] = s;
			last = s;
			answered++;
		}
	}
}

static unsigned long self_rounds, self_stale, self_lost;

/* The host's part in the self-test, on an AP. */
static void drive(unsigned int cpu)
{
	(void)cpu;
	for (uint64_t s = 1; s <= self_rounds; s++) {
		uint64_t end = rdtsc() + us_to_tsc(ANSWER_WAIT_US);

		data[word] = s * 0x10001;
		flag[0] = s;
		while (answer[0] != s && rdtsc() < end)
			cpu_relax();
		if (answer[0] != s)
			self_lost++;
		else if (answer[1] != s * 0x10001)
			self_stale++;
	}
	flag[0] = DONE;
}

static int self_test(const struct mb1_info *mbi)
{
	unsigned long answered;

	self_rounds = arg_ulong(mbi, "selftest", 1000);
	data = (volatile uint64_t *)GUEST_PLAYGROUND;
	flag = data + WORDS;
	answer = flag + WORDS;
	word = 7;
	data[word] = 0;
	flag[0] = 0;
	answer[0] = answer[1] = 0;
	tsc_calibrate();
	if (smp_start(mbi, drive) < 2) {
		printf("stale: the self-test needs a second CPU\n");
		return 1;
	}
	answered = spin();
	printf("stale: self-test: %lu rounds, %lu answered, %lu stale, %lu lost\n", self_rounds,
	       answered, self_stale, self_lost);
	return answered == self_rounds && !self_stale && !self_lost ? 0 : 1;
}

int main(const struct mb1_info *mbi)
{
	static char buf[256];
	struct mb1_info args = *mbi;
	uint64_t d, f, a;
	unsigned long answered;

	if (under_sprig()) {
		hypercall(HC_ARGS, (unsigned long)buf, sizeof(buf), 0, 0);
		args.args = buf;
	} else if (!arg_ulong(mbi, "d", 0)) {
		return self_test(mbi);
	}
	d = arg_ulong(&args, "d", 0);
	f = arg_ulong(&args, "f", 0);
	a = arg_ulong(&args, "a", 0);
	word = arg_ulong(&args, "w", 0);
	printf("stale: d=0x%lx f=0x%lx a=0x%lx w=%lu\n", d, f, a, word);
	if (!d || !f || !a || ((d | f | a) & (PAGE_SIZE - 1)) || word >= WORDS) {
		printf("stale: bad arguments: d=, f=, a= page-aligned and not 0, w= below %lu\n",
		       WORDS);
		return 1;
	}
	data = (volatile uint64_t *)d;
	flag = (volatile uint64_t *)f;
	answer = (volatile uint64_t *)a;
	answered = spin();
	printf("stale: answered %lu\n", answered);
	return 0;
}
