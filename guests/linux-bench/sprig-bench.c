/* sprig-bench: the proposals' workloads, as user space inside a Linux guest.
 *
 *   sprig-bench zap   [threads=N] [mib=N] [rounds=R] [ms=T]
 *   sprig-bench exec  [threads=N] [mib=N] [rounds=R]
 *   sprig-bench dirty [threads=N] [mib=N] [rounds=R] [writes=P]
 *   sprig-bench restore [mib=N]
 *   sprig-bench boot
 *   sprig-bench ipi   [threads=N] [ms=T]
 *   sprig-bench report [threads=N] [mib=N] [rounds=R] [cycles=C] [ms=T]
 *
 * Each round runs the workload once; under sprig, `bench zap|exec|dirty
 * guest=linux` on the console turns the optimisation off or on for each round
 * and measures the host side, and the two take turns through the bench port
 * (virt/bench_port.h): a command pauses the VM for the scenario, data words
 * hand it the workload's own figures. The guest-physical frames behind the
 * workload's memory come from /proc/self/pagemap (root only). Without sprig
 * (the port reads all ones) the workload runs alone and prints its figures.
 *
 * zap: the threads touch every page of the area again and again for ms
 *   milliseconds, each touch checking the value the last one wrote, while the
 *   host zaps the 32 MiB-aligned window of guest memory that holds most of the
 *   area (its address is the round's first two data words).
 * exec: write a RET into every 4 KiB page (populate), then call every page
 *   (execute); the host zaps all guest memory first, so that both rounds start
 *   from huge second-level pages.
 * dirty: touch every page (populate: huge pages again after the host's zap),
 *   then, with dirty logging on, touch every page once more, writing writes=P
 *   percent of them (iteration), then hand the host the frames written, which
 *   its log must all hold.
 * report: the free page reporting churn of the leaf hint's proposal: in each
 *   of a round's cycles, threads=N processes each map mib MiB, touch every page
 *   (fresh anonymous memory must read zero, also where the host discarded it
 *   behind a report) and check it, and unmap it; then all wait ms
 *   milliseconds, in which the kernel's free page reporting (2 s after the
 *   frees) hands the freed 2 MiB blocks to the balloon and the host discards
 *   them; the next cycle reuses, refaults and frees the same blocks. One
 *   unmeasured cycle comes first.
 * ipi: the threads, one a CPU, map a page, write it and unmap it again and
 *   again for ms milliseconds: each unmap flushes the TLBs of the other CPUs
 *   that run the process, with an IPI or, where the kernel has KVM's PV TLB
 *   flush and the vCPU is preempted, a flag in its steal-time record (`bench
 *   pv`). Data words after BEGIN: unmaps (lo, hi), ns (lo, hi) before END.
 * boot: stop at BEGIN at once, with the CPUs online as the data word: the
 *   host times the boot up to the workload's start (`bench boot`).
 * restore: write a word into every page, then stop at BEGIN, where the host
 *   snapshots the VM; each VM restored from that snapshot goes on from there
 *   and reads every page's word back (the touch the host times), then ends.
 *
 * Data words: zap: window (lo, hi) before BEGIN; touches
 * (lo, hi), ns (lo, hi), errors before END. exec: populate ns (lo, hi),
 * execute ns (lo, hi), errors before END. dirty: iteration ns (lo, hi), errors
 * before the second MARK, then the frames written before END. restore: touch
 * ns (lo, hi), wrong words before END. report: touches (lo, hi), touch ns
 * (lo, hi), wrong values before END. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/io.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "virt/bench_port.h"


#define PAGE 4096ul
#define WINDOW_SHIFT 25 /* 32 MiB, the span of the host's zap patterns */
#define THREADS_MAX 128 /* sprig's VM_VCPUS_MAX: a thread a vCPU */
#define OPCODE_RET 0xc3

static bool under_sprig;

struct options {
	unsigned threads, rounds, writes, cycles;
	unsigned long mib, ms;
};

struct area {
	uint8_t *base;
	size_t pages;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void command(uint32_t cmd)
{
	if (under_sprig)
		outl(cmd, BENCH_PORT_CMD);
}

static void word(uint32_t w)
{
	if (under_sprig)
		outl(w, BENCH_PORT_DATA);
}

static void word64(uint64_t w)
{
	word((uint32_t)w);
	word((uint32_t)(w >> 32));
}

static void detect_sprig(void)
{
	if (ioperm(BENCH_PORT_CMD, BENCH_PORT_DATA + 4 - BENCH_PORT_CMD, 1) != 0) {
		perror("sprig-bench: ioperm (running alone)");
		return;
	}
	under_sprig = inl(BENCH_PORT_CMD) == BENCH_PORT_MAGIC;
	printf("sprig-bench: %s\n", under_sprig ? "under sprig" : "no bench port: running alone");
}

static bool map_area(struct area *a, unsigned long mib, int prot)
{
	a->pages = mib << 20 >> 12;
	a->base = mmap(NULL, a->pages * PAGE, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		       -1, 0);
	if (a->base == MAP_FAILED) {
		perror("sprig-bench: mmap");
		return false;
	}
	/* Frames must stay where pagemap said they are. */
	if (mlock(a->base, a->pages * PAGE) != 0) {
		perror("sprig-bench: mlock");
		return false;
	}
	return true;
}

/* The guest-physical frame behind each page of the area (0: unknown). */
static uint64_t *area_frames(const struct area *a)
{
	uint64_t *pfn = calloc(a->pages, sizeof(*pfn));
	int fd = open("/proc/self/pagemap", O_RDONLY);
	off_t off = (off_t)((uintptr_t)a->base / PAGE * 8);

	if (!pfn || fd < 0 || pread(fd, pfn, a->pages * 8, off) != (ssize_t)(a->pages * 8)) {
		perror("sprig-bench: pagemap");
		free(pfn);
		pfn = NULL;
	}
	if (fd >= 0)
		close(fd);
	for (size_t i = 0; pfn && i < a->pages; i++)
		pfn[i] = pfn[i] >> 63 ? pfn[i] & ((1ull << 55) - 1) : 0;
	return pfn;
}

/* Split pages [0, n) among the threads and run fn on each share. */
struct share {
	const struct options *o;
	struct area *a;
	unsigned index;
	uint64_t touches, errors, ns;
	uint32_t *last; /* zap: what each page holds */
	unsigned round;
};

static void run_threads(struct share *s, unsigned n, void *(*fn)(void *))
{
	pthread_t t[THREADS_MAX];

	for (unsigned i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, fn, &s[i]) != 0) {
			perror("sprig-bench: pthread_create");
			exit(1);
		}
	for (unsigned i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

static void *zap_thread(void *arg)
{
	struct share *s = arg;
	uint64_t end = now_ns() + s->o->ms * 1000000ull;
	size_t n = s->a->pages;

	for (;;) {
		for (size_t p = s->index; p < n; p += s->o->threads) {
			volatile uint32_t *w = (uint32_t *)(s->a->base + p * PAGE);

			if (*w != s->last[p])
				s->errors++;
			*w = ++s->last[p];
			s->touches++;
			if ((s->touches & 255) == 0 && now_ns() >= end)
				return NULL;
		}
	}
}

/* ipi: map, write and unmap a page until the time is up, on CPU index. */
static void *ipi_thread(void *arg)
{
	struct share *s = arg;
	uint64_t end = now_ns() + s->o->ms * 1000000ull;
	cpu_set_t cpu;

	CPU_ZERO(&cpu);
	CPU_SET(s->index, &cpu);
	if (sched_setaffinity(0, sizeof(cpu), &cpu) != 0)
		s->errors++;
	for (;;) {
		volatile uint64_t *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
					    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED) {
			s->errors++;
			return NULL;
		}
		*p = s->touches;
		munmap((void *)p, PAGE);
		if ((++s->touches & 63) == 0 && now_ns() >= end)
			return NULL;
	}
}

static int ipi(const struct options *o)
{
	struct share s[THREADS_MAX];
	uint64_t unmaps = 0, errors = 0, t;

	for (unsigned i = 0; i < o->threads; i++)
		s[i] = (struct share){ .o = o, .index = i };
	command(BENCH_CMD_BEGIN);
	t = now_ns();
	run_threads(s, o->threads, ipi_thread);
	t = now_ns() - t;
	for (unsigned i = 0; i < o->threads; i++) {
		unmaps += s[i].touches;
		errors += s[i].errors;
	}
	word64(unmaps);
	word64(t);
	command(BENCH_CMD_END);
	printf("sprig-bench ipi: %u threads, %llu unmaps in %llu ms, %llu errors\n", o->threads,
	       (unsigned long long)unmaps, (unsigned long long)(t / 1000000),
	       (unsigned long long)errors);
	return errors != 0;
}

/* The 32 MiB-aligned window of guest memory that holds most of the area. */
static uint64_t busiest_window(const uint64_t *pfn, size_t pages, size_t *in_window)
{
	uint64_t top = 0, best = 0;
	size_t *count;

	for (size_t i = 0; i < pages; i++)
		if (pfn[i] >> (WINDOW_SHIFT - 12) > top)
			top = pfn[i] >> (WINDOW_SHIFT - 12);
	if (!(count = calloc(top + 1, sizeof(*count))))
		return 0;
	for (size_t i = 0; i < pages; i++)
		if (pfn[i])
			count[pfn[i] >> (WINDOW_SHIFT - 12)]++;
	for (uint64_t w = 0; w <= top; w++)
		if (count[w] > count[best])
			best = w;
	*in_window = count[best];
	free(count);
	return best << WINDOW_SHIFT;
}

static int zap(const struct options *o)
{
	struct share s[THREADS_MAX];
	struct area a;
	uint64_t *pfn, window;
	size_t in_window = 0;
	int rc = 0;

	if (!map_area(&a, o->mib, PROT_READ | PROT_WRITE) || !(pfn = area_frames(&a)))
		return 1;
	uint32_t *last = calloc(a.pages, sizeof(*last));
	if (!last)
		return 1;
	for (size_t p = 0; p < a.pages; p++)
		*(uint32_t *)(a.base + p * PAGE) = 0;
	window = busiest_window(pfn, a.pages, &in_window);
	printf("sprig-bench zap: %lu MiB, %zu of its pages in the window at 0x%llx\n", o->mib,
	       in_window, (unsigned long long)window);
	for (unsigned r = 0; r < o->rounds; r++) {
		uint64_t touches = 0, errors = 0, t;

		for (unsigned i = 0; i < o->threads; i++)
			s[i] = (struct share){ .o = o, .a = &a, .index = i, .last = last };
		word64(window);
		command(BENCH_CMD_BEGIN);
		t = now_ns();
		run_threads(s, o->threads, zap_thread);
		t = now_ns() - t;
		for (unsigned i = 0; i < o->threads; i++) {
			touches += s[i].touches;
			errors += s[i].errors;
		}
		word64(touches);
		word64(t);
		word((uint32_t)errors);
		command(BENCH_CMD_END);
		printf("sprig-bench zap: round %u: %llu touches in %llu ms, %llu wrong values\n", r,
		       (unsigned long long)touches, (unsigned long long)(t / 1000000),
		       (unsigned long long)errors);
		rc |= errors != 0;
	}
	return rc;
}

static void *populate_exec_thread(void *arg)
{
	struct share *s = arg;

	for (size_t p = s->index; p < s->a->pages; p += s->o->threads)
		s->a->base[p * PAGE] = OPCODE_RET;
	return NULL;
}

static void *execute_thread(void *arg)
{
	struct share *s = arg;

	for (size_t p = s->index; p < s->a->pages; p += s->o->threads) {
		void (*fn)(void) = (void (*)(void))(s->a->base + p * PAGE);

		fn();
		s->touches++;
	}
	return NULL;
}

static int exec(const struct options *o)
{
	struct share s[THREADS_MAX];
	struct area a;
	int rc = 0;

	if (!map_area(&a, o->mib, PROT_READ | PROT_WRITE | PROT_EXEC))
		return 1;
	for (unsigned r = 0; r < o->rounds; r++) {
		uint64_t populate, execute, calls = 0;

		for (unsigned i = 0; i < o->threads; i++)
			s[i] = (struct share){ .o = o, .a = &a, .index = i };
		command(BENCH_CMD_BEGIN);
		populate = now_ns();
		run_threads(s, o->threads, populate_exec_thread);
		populate = now_ns() - populate;
		command(BENCH_CMD_MARK);
		execute = now_ns();
		run_threads(s, o->threads, execute_thread);
		execute = now_ns() - execute;
		for (unsigned i = 0; i < o->threads; i++)
			calls += s[i].touches;
		word64(populate);
		word64(execute);
		word(calls != a.pages);
		command(BENCH_CMD_END);
		printf("sprig-bench exec: round %u: populate %llu ms, execute %llu ms, %llu calls\n",
		       r, (unsigned long long)(populate / 1000000),
		       (unsigned long long)(execute / 1000000), (unsigned long long)calls);
		rc |= calls != a.pages;
	}
	return rc;
}

/* Pages the iteration writes: writes percent of them, spread evenly. */
static bool dirty_writes_page(size_t p, unsigned writes)
{
	return p * writes / 100 != (p + 1) * writes / 100;
}

static void *dirty_populate_thread(void *arg)
{
	struct share *s = arg;

	for (size_t p = s->index; p < s->a->pages; p += s->o->threads)
		((volatile uint64_t *)(s->a->base + p * PAGE))[0] = p + s->round;
	return NULL;
}

static void *dirty_iterate_thread(void *arg)
{
	struct share *s = arg;

	for (size_t p = s->index; p < s->a->pages; p += s->o->threads) {
		volatile uint64_t *w = (uint64_t *)(s->a->base + p * PAGE);

		if (*w != p + s->round)
			s->errors++;
		if (dirty_writes_page(p, s->o->writes)) {
			*w = p + s->round + 1;
			s->touches++;
		}
	}
	return NULL;
}

static int dirty(const struct options *o)
{
	struct share s[THREADS_MAX];
	struct area a;
	uint64_t *pfn;
	int rc = 0;

	if (!map_area(&a, o->mib, PROT_READ | PROT_WRITE) || !(pfn = area_frames(&a)))
		return 1;
	for (unsigned r = 0; r < o->rounds; r++) {
		uint64_t t, written = 0, errors = 0;

		for (unsigned i = 0; i < o->threads; i++)
			s[i] = (struct share){ .o = o, .a = &a, .index = i, .round = r };
		command(BENCH_CMD_BEGIN);
		run_threads(s, o->threads, dirty_populate_thread);
		command(BENCH_CMD_MARK);
		t = now_ns();
		run_threads(s, o->threads, dirty_iterate_thread);
		t = now_ns() - t;
		for (unsigned i = 0; i < o->threads; i++) {
			written += s[i].touches;
			errors += s[i].errors;
		}
		word64(t);
		word((uint32_t)errors);
		command(BENCH_CMD_MARK);
		for (size_t p = 0; p < a.pages; p++)
			if (dirty_writes_page(p, o->writes))
				word((uint32_t)pfn[p]);
		command(BENCH_CMD_END);
		printf("sprig-bench dirty: round %u: %llu of %zu pages written in %llu ms, "
		       "%llu wrong values\n", r, (unsigned long long)written, a.pages,
		       (unsigned long long)(t / 1000000), (unsigned long long)errors);
		rc |= errors != 0;
	}
	return rc;
}

/* restore: what page p holds, distinct for every page. */
static uint64_t restore_word(size_t p)
{
	return p * 0x9e3779b97f4a7c15ull ^ 0x5350524752535452ull;
}

static int boot(void)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);

	word((uint32_t)online);
	command(BENCH_CMD_BEGIN);
	printf("sprig-bench boot: %ld CPUs online\n", online);
	return online < 1;
}

static int restore(const struct options *o)
{
	struct area a;
	uint64_t t, errors = 0;

	if (!map_area(&a, o->mib, PROT_READ | PROT_WRITE))
		return 1;
	for (size_t p = 0; p < a.pages; p++)
		*(volatile uint64_t *)(a.base + p * PAGE) = restore_word(p);
	command(BENCH_CMD_BEGIN);
	/* From here on, in a VM restored from the snapshot taken at BEGIN. */
	t = now_ns();
	for (size_t p = 0; p < a.pages; p++)
		errors += *(volatile uint64_t *)(a.base + p * PAGE) != restore_word(p);
	t = now_ns() - t;
	word64(t);
	word((uint32_t)errors);
	command(BENCH_CMD_END);
	printf("sprig-bench restore: %lu MiB read back in %llu ms, %llu wrong words\n", o->mib,
	       (unsigned long long)(t / 1000000), (unsigned long long)errors);
	return errors != 0;
}

/* report: one process's share of a cycle, into its slot of the shared
 * results: touches, then wrong values. */
static void report_child(const struct options *o, uint64_t *result)
{
	size_t pages = o->mib << 20 >> 12;
	uint8_t *base = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t errors = 0;

	if (base == MAP_FAILED) {
		perror("sprig-bench report: mmap");
		_exit(1);
	}
	for (size_t p = 0; p < pages; p++) {
		volatile uint64_t *w = (uint64_t *)(base + p * PAGE);

		errors += *w != 0;
		*w = p ^ 0x5245504f5254ull;
	}
	for (size_t p = 0; p < pages; p++)
		errors += *(volatile uint64_t *)(base + p * PAGE) != (p ^ 0x5245504f5254ull);
	munmap(base, pages * PAGE);
	result[0] = pages;
	result[1] = errors;
	_exit(0);
}

/* report: one cycle, its processes' touches and wrong values added up;
 * its touch time returned. */
static uint64_t report_cycle(const struct options *o, uint64_t *results, uint64_t *touches,
			     uint64_t *errors)
{
	uint64_t start = now_ns(), t;

	memset(results, 0, THREADS_MAX * 2 * sizeof(uint64_t));
	for (unsigned i = 0; i < o->threads; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("sprig-bench report: fork");
			exit(1);
		}
		if (pid == 0)
			report_child(o, results + 2 * i);
	}
	for (unsigned i = 0; i < o->threads; i++) {
		int status;

		if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			(*errors)++;
	}
	t = now_ns() - start;
	for (unsigned i = 0; i < o->threads; i++) {
		*touches += results[2 * i];
		*errors += results[2 * i + 1];
	}
	usleep(o->ms * 1000);
	return t;
}

static int report(const struct options *o)
{
	uint64_t *results = mmap(NULL, THREADS_MAX * 2 * sizeof(uint64_t), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	uint64_t warm_touches = 0, warm_errors = 0;
	int rc = 0;

	if (results == MAP_FAILED) {
		perror("sprig-bench report: mmap");
		return 1;
	}
	/* Unmeasured: the first report hands over all the memory Linux never
	 * used, which the rounds would otherwise not share alike. */
	report_cycle(o, results, &warm_touches, &warm_errors);
	rc |= warm_errors != 0;
	for (unsigned r = 0; r < o->rounds; r++) {
		uint64_t touches = 0, errors = 0, t = 0;

		command(BENCH_CMD_BEGIN);
		for (unsigned c = 0; c < o->cycles; c++)
			t += report_cycle(o, results, &touches, &errors);
		word64(touches);
		word64(t);
		word((uint32_t)errors);
		command(BENCH_CMD_END);
		printf("sprig-bench report: round %u: %llu touches in %llu ms of %u cycles, "
		       "%llu wrong values\n", r, (unsigned long long)touches,
		       (unsigned long long)(t / 1000000), o->cycles, (unsigned long long)errors);
		rc |= errors != 0;
	}
	return rc;
}

static bool parse(int argc, char **argv, struct options *o)
{
	for (int i = 2; i < argc; i++) {
		char *v = strchr(argv[i], '='), *end;
		unsigned long n;

		if (!v)
			return false;
		n = strtoul(v + 1, &end, 10);
		if (*end || end == v + 1 || n == 0)
			return false;
		if (strncmp(argv[i], "threads=", 8) == 0 && n <= THREADS_MAX)
			o->threads = (unsigned)n;
		else if (strncmp(argv[i], "mib=", 4) == 0 && n <= 4096)
			o->mib = n;
		else if (strncmp(argv[i], "rounds=", 7) == 0 && n <= 100)
			o->rounds = (unsigned)n;
		else if (strncmp(argv[i], "ms=", 3) == 0 && n <= 600000)
			o->ms = n;
		else if (strncmp(argv[i], "writes=", 7) == 0 && n <= 100)
			o->writes = (unsigned)n;
		else if (strncmp(argv[i], "cycles=", 7) == 0 && n <= 1000)
			o->cycles = (unsigned)n;
		else
			return false;
	}
	return true;
}

int main(int argc, char **argv)
{
	struct options o = { .threads = 1, .rounds = 2, .writes = 100, .mib = 64, .ms = 2000,
			   .cycles = 4 };
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2 || !parse(argc, argv, &o)) {
		fprintf(stderr, "usage: sprig-bench zap|exec|dirty|restore|report|boot|ipi [threads=1..%d] "
			"[mib=N] [rounds=R] [ms=T] [writes=P] [cycles=C]\n", THREADS_MAX);
		return 2;
	}
	detect_sprig();
	if (strcmp(argv[1], "zap") == 0)
		rc = zap(&o);
	else if (strcmp(argv[1], "exec") == 0)
		rc = exec(&o);
	else if (strcmp(argv[1], "dirty") == 0)
		rc = dirty(&o);
	else if (strcmp(argv[1], "restore") == 0)
		rc = restore(&o);
	else if (strcmp(argv[1], "report") == 0)
		rc = report(&o);
	else if (strcmp(argv[1], "boot") == 0)
		rc = boot();
	else if (strcmp(argv[1], "ipi") == 0)
		rc = ipi(&o);
	else
		rc = 2;
	printf("sprig-bench %s: %s\n", argv[1], rc ? "FAILED" : "ok");
	return rc;
}
