/* The hostile guest's storm (hostile.h): every vCPU attacks at once, so
 * that what sprig does for one vCPU's exit races what it does for another's:
 * a pc-testdev flush (port 0xe4: sprig zaps the page under its MMU lock and
 * kicks every vCPU out of the guest) while another vCPU writes CR0 in PAE
 * mode, a balloon release while another faults its code page back, and so
 * on. The CPUs start as a PC's do (rt/smp.c); each runs iters=K steps
 * (default 200) drawn by a generator seeded with seed=S and its index:
 *   flush     write a page of its own slice, flush it, check it
 *   flush-any flush a page it runs on or shares (its code, its stack, the
 *             counters, the image, another CPU's slice), check its own page
 *   release   HC_BALLOON_RELEASE a page of its slice: it must read zero
 *   cr        CR0.WP, CR4.PGE toggled, CR3 reloaded, INVLPG; check a page
 *   trip      the trip through every processor and paging mode (trip.c),
 *             if no other CPU is on it (else a flush)
 *   probe     CPUID, hypercalls with garbage arguments, port reads
 *   mmio      pc-testdev's MMIO scratch (its own word), now and then a read
 *             past RAM
 *   regs      DR0-DR3, DR6's B0-B3 and CR2 still hold what this CPU last
 *             wrote (other vCPUs share its host CPU), then new values
 * Each CPU's slice of SLICE_PAGES pages holds values it alone knows; a
 * word that differs is a failure. At the end the BSP checks every slice
 * again and prints "PASS storm: N CPUs, K steps each: counts" or "FAIL
 * storm: ...", and the guest exits 0 when that and the main mode passed. */
#include "guests/hostile/hostile.h"
#include "arch/x86/msr.h"
#include "guests/rt/cpu.h"
#include "guests/rt/smp.h"
#include "virt/hypercall.h"

#define SLICE_PAGES 32
#define WORDS (PAGE_SIZE / 8)
#define STEP 0x9e3779b97f4a7c15ul
#define TESTDEV_FLUSH 0xe4
#define TESTDEV_IOMEM 0xff000000ul
#define CR0_WP (1ul << 16)
#define CR4_PGE (1ul << 7)
#define CPUID_PGE (1u << 13)
#define PRINT_BAD_MAX 4 /* bad words printed per CPU */

enum op { OP_FLUSH, OP_FLUSH_ANY, OP_RELEASE, OP_CR, OP_TRIP, OP_PROBE, OP_MMIO, OP_REGS,
	  OP_COUNT };

static const char *const op_names[OP_COUNT] = { "flush", "flush-any", "release", "cr", "trip",
						 "probe", "mmio", "regs" };
static const unsigned op_weights[OP_COUNT] = { 30, 10, 8, 15, 10, 15, 12, 10 };

struct storm_cpu {
	uint64_t rng;
	uint64_t value[SLICE_PAGES];	/* each page's value, 0: all zero */
	uint64_t regs[6];		/* DR0-DR3, DR6's B0-B3, CR2 as last written */
	unsigned long count[OP_COUNT];
	unsigned long bad;
} __attribute__((aligned(64)));

static struct storm_cpu cpus[SMP_CPU_MAX];
static unsigned long iters;
static uint64_t ram_end;
static bool pge;
static int print_lock;

static void locked_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void locked_printf(const char *fmt, ...)
{
	va_list ap;

	while (__atomic_exchange_n(&print_lock, 1, __ATOMIC_ACQUIRE))
		cpu_relax();
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	__atomic_store_n(&print_lock, 0, __ATOMIC_RELEASE);
}

static uint64_t next(struct storm_cpu *c)
{
	uint64_t x = c->rng;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return c->rng = x;
}

static uint64_t page_addr(unsigned cpu, unsigned p)
{
	return GUEST_PLAYGROUND + ((uint64_t)cpu * SLICE_PAGES + p) * PAGE_SIZE;
}

static void fill(unsigned cpu, unsigned p, uint64_t value)
{
	volatile uint64_t *w = (volatile uint64_t *)page_addr(cpu, p);

	cpus[cpu].value[p] = value;
	for (uint64_t i = 0; i < WORDS; i++)
		w[i] = value ? value + i * STEP : 0;
}

static void check_page(unsigned cpu, unsigned p, const char *after)
{
	volatile uint64_t *w = (volatile uint64_t *)page_addr(cpu, p);
	uint64_t value = cpus[cpu].value[p];

	for (uint64_t i = 0; i < WORDS; i++) {
		uint64_t want = value ? value + i * STEP : 0, v = w[i];

		if (v != want && cpus[cpu].bad++ < PRINT_BAD_MAX)
			locked_printf("FAIL storm: cpu %u, after %s: 0x%lx reads 0x%lx, expected "
				      "0x%lx\n", cpu, after, (uint64_t)&w[i], v, want);
	}
}

static void fail_step(unsigned cpu, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail_step(unsigned cpu, const char *fmt, ...)
{
	va_list ap;

	if (cpus[cpu].bad++ >= PRINT_BAD_MAX)
		return;
	while (__atomic_exchange_n(&print_lock, 1, __ATOMIC_ACQUIRE))
		cpu_relax();
	printf("FAIL storm: cpu %u: ", cpu);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	__atomic_store_n(&print_lock, 0, __ATOMIC_RELEASE);
}

static void flush(uint64_t gpa)
{
	asm volatile("outl %0, %w1" : : "a"((uint32_t)gpa), "Nd"(TESTDEV_FLUSH) : "memory");
}

static void op_flush(unsigned cpu, unsigned p)
{
	fill(cpu, p, next(&cpus[cpu]) | 1);
	flush(page_addr(cpu, p));
	check_page(cpu, p, "a flush");
}

static void op_flush_any(unsigned cpu, unsigned p)
{
	struct storm_cpu *c = &cpus[cpu];
	uint64_t x = next(c), on_stack = 0, gpa;

	switch (x % 5) {
	case 0:
		gpa = (uint64_t)op_flush_any;	/* the code running */
		break;
	case 1:
		gpa = (uint64_t)&on_stack;
		break;
	case 2:
		gpa = (uint64_t)&cpus[(x >> 8) % smp_cpu_count];
		break;
	case 3:
		gpa = MIB + (x >> 8) % (GUEST_PLAYGROUND - MIB);	/* the image */
		break;
	default:
		gpa = page_addr((unsigned)((x >> 8) % smp_cpu_count), (unsigned)(x >> 16) % SLICE_PAGES);
		break;
	}
	flush(gpa);
	check_page(cpu, p, "a flush of another page");
}

static void op_release(unsigned cpu, unsigned p)
{
	long r = hypercall(HC_BALLOON_RELEASE, page_addr(cpu, p), PAGE_SIZE, 0, 0);

	if (r != 0)
		fail_step(cpu, "HC_BALLOON_RELEASE of 0x%lx returned %ld", page_addr(cpu, p), r);
	cpus[cpu].value[p] = 0;
	check_page(cpu, p, "a balloon release");
}

static void op_cr(unsigned cpu, unsigned p)
{
	uint64_t cr0, cr3 = read_cr3(), cr4;

	asm volatile("mov %%cr0, %0" : "=r"(cr0));
	asm volatile("mov %0, %%cr0" : : "r"(cr0 ^ CR0_WP) : "memory");
	asm volatile("mov %0, %%cr0" : : "r"(cr0) : "memory");
	if (pge) {
		asm volatile("mov %%cr4, %0" : "=r"(cr4));
		asm volatile("mov %0, %%cr4" : : "r"(cr4 ^ CR4_PGE) : "memory");
		asm volatile("mov %0, %%cr4" : : "r"(cr4) : "memory");
	}
	asm volatile("mov %0, %%cr3" : : "r"(cr3) : "memory");
	asm volatile("invlpg (%0)" : : "r"(page_addr(cpu, p)) : "memory");
	check_page(cpu, p, "CR writes");
}

static void op_trip(unsigned cpu, unsigned p)
{
	struct trip t;

	if (!trip_run(&t, true, false, false)) {
		op_flush(cpu, p);	/* another CPU is on its trip */
		return;
	}
	if (t.stage != 6 || t.paged != trip_paging_modes() || t.rm_gp != 1 ||
	    t.rm_sig != 0x69727073 || (t.efer & (EFER_LME | EFER_LMA)) != (EFER_LME | EFER_LMA))
		fail_step(cpu, "mode trip: stage %d, %u of %u paging modes, %u #GP in real mode, "
			  "signature 0x%x, EFER 0x%lx", t.stage, t.paged, trip_paging_modes(),
			  t.rm_gp, t.rm_sig, t.efer);
	check_page(cpu, p, "a mode trip");
}

static void op_probe(unsigned cpu)
{
	uint64_t x = next(&cpus[cpu]);
	uint32_t a, b, c, d, a2, b2, c2, d2, leaf = (uint32_t)x;
	long r;

	leaf = x & 1 ? leaf : (leaf & 0xc00000ffu);	/* mostly leaves near a range's start */
	cpuid(leaf, (uint32_t)(x >> 32), &a, &b, &c, &d);
	cpuid(leaf, (uint32_t)(x >> 32), &a2, &b2, &c2, &d2);
	if (a != a2 || b != b2 || c != c2 || d != d2)
		fail_step(cpu, "CPUID 0x%x answered twice differently", leaf);
	r = hypercall(HC_VERSION, x, ~x, x, ~0ul);
	if (r != HC_ABI_VERSION)
		fail_step(cpu, "HC_VERSION with garbage arguments returned %ld", r);
	r = hypercall(HC_PUTS, 1ul << 63 | x, 8, x, x);
	if (r != HC_EINVAL)
		fail_step(cpu, "HC_PUTS at 2^63 returned %ld", r);
	(void)inb((uint16_t)(x >> 40));
	outb(0x80, (uint8_t)x);
}

static void op_mmio(unsigned cpu)
{
	volatile uint64_t *mine = (volatile uint64_t *)(TESTDEV_IOMEM + cpu * 8);
	uint64_t x = next(&cpus[cpu]), v;

	*mine = x;
	v = *mine;
	if (v != x)
		fail_step(cpu, "pc-testdev MMIO scratch at 0x%lx reads 0x%lx, wrote 0x%lx",
			  (uint64_t)mine, v, x);
	if (x % 8)
		return;	/* sprig reports each read past RAM on its console */
	v = *(volatile uint32_t *)ram_end;
	if (v != 0xffffffffu)
		fail_step(cpu, "a read past RAM at 0x%lx gives 0x%lx", ram_end, v);
}

#define DR6_B0_B3 0xful
#define DR6_RESET 0xffff0ff0ul
#define READ_DR(n, v) __asm__ volatile("mov %%db" #n ", %0" : "=r"(v))
#define WRITE_DR(n, v) __asm__ volatile("mov %0, %%db" #n ::"r"(v))

/* No breakpoint is armed (DR7 keeps its reset value), and nothing here page
 * faults: the values are only values, which must not change while other
 * vCPUs run. */
static void op_regs(unsigned cpu)
{
	static const char *const names[6] = { "DR0", "DR1", "DR2", "DR3", "DR6", "CR2" };
	struct storm_cpu *c = &cpus[cpu];
	uint64_t got[6], x = next(c);

	READ_DR(0, got[0]);
	READ_DR(1, got[1]);
	READ_DR(2, got[2]);
	READ_DR(3, got[3]);
	READ_DR(6, got[4]);
	got[4] &= DR6_B0_B3;
	__asm__ volatile("mov %%cr2, %0" : "=r"(got[5]));
	for (unsigned i = 0; i < 6; i++)
		if (got[i] != c->regs[i])
			fail_step(cpu, "%s reads 0x%lx, this CPU wrote 0x%lx", names[i], got[i],
				  c->regs[i]);
	for (unsigned i = 0; i < 4; i++)
		c->regs[i] = x * (i + 1) ^ (uint64_t)cpu << 56;
	c->regs[4] = x & DR6_B0_B3;
	c->regs[5] = x ^ 0x5a5a5a5a5a5a5a5aul;
	WRITE_DR(0, c->regs[0]);
	WRITE_DR(1, c->regs[1]);
	WRITE_DR(2, c->regs[2]);
	WRITE_DR(3, c->regs[3]);
	WRITE_DR(6, DR6_RESET | c->regs[4]);
	__asm__ volatile("mov %0, %%cr2" ::"r"(c->regs[5]));
}

static enum op pick(struct storm_cpu *c)
{
	unsigned total = 0, r;

	for (unsigned i = 0; i < OP_COUNT; i++)
		total += op_weights[i];
	r = (unsigned)(next(c) % total);
	for (unsigned i = 0; i < OP_COUNT; i++) {
		if (r < op_weights[i])
			return (enum op)i;
		r -= op_weights[i];
	}
	return OP_FLUSH;
}

static int (*bsp_main)(const struct mb1_info *mbi);
static const struct mb1_info *bsp_mbi;
static int bsp_status;

static void storm_cpu(unsigned cpu)
{
	struct storm_cpu *c = &cpus[cpu];

	if (cpu == 0 && bsp_main)
		bsp_status = bsp_main(bsp_mbi);
	for (unsigned p = 0; p < SLICE_PAGES; p++)
		fill(cpu, p, next(c) | 1);
	for (unsigned long i = 0; i < iters; i++) {
		unsigned p = (unsigned)(next(c) % SLICE_PAGES);
		enum op op = pick(c);

		c->count[op]++;
		switch (op) {
		case OP_FLUSH:
			op_flush(cpu, p);
			break;
		case OP_FLUSH_ANY:
			op_flush_any(cpu, p);
			break;
		case OP_RELEASE:
			op_release(cpu, p);
			break;
		case OP_CR:
			op_cr(cpu, p);
			break;
		case OP_TRIP:
			op_trip(cpu, p);
			break;
		case OP_PROBE:
			op_probe(cpu);
			break;
		case OP_REGS:
			op_regs(cpu);
			break;
		default:
			op_mmio(cpu);
			break;
		}
	}
}

int storm(const struct mb1_info *mbi, int (*bsp_mode)(const struct mb1_info *mbi))
{
	unsigned long want = arg_ulong(mbi, "cpus", 1), seed = arg_ulong(mbi, "seed", 1);
	unsigned long counts[OP_COUNT] = { 0 }, bad = 0;
	uint32_t a, b, c, d;
	bool all;

	iters = arg_ulong(mbi, "iters", 200);
	ram_end = MIB + (uint64_t)mbi->mem_upper * KIB;
	/* A slice for each CPU it runs on (smp_workers makes them all of the
	 * machine's). */
	if (!under_sprig() || want > SMP_CPU_MAX ||
	    !playground_fits(mbi, want * SLICE_PAGES * PAGE_SIZE)) {
		printf("storm: runs under sprig, with %lu KiB from 0x%lx\n",
		       want * SLICE_PAGES * PAGE_SIZE / KIB, GUEST_PLAYGROUND);
		return 2;
	}
	if (!smp_workers(mbi, (unsigned)want, "storm"))
		return 2;
	cpuid(1, 0, &a, &b, &c, &d);
	pge = d & CPUID_PGE;
	set_uncached(TESTDEV_IOMEM);
	for (unsigned i = 0; i < want; i++)
		cpus[i].rng = (seed + 1) * STEP ^ (i + 1) * 0xbf58476d1ce4e5b9ul;
	bsp_main = bsp_mode;
	bsp_mbi = mbi;
	all = smp_run(storm_cpu);
	for (unsigned i = 0; i < want; i++) {
		for (unsigned p = 0; p < SLICE_PAGES; p++)
			check_page(i, p, "the storm");
		for (unsigned k = 0; k < OP_COUNT; k++)
			counts[k] += cpus[i].count[k];
		bad += cpus[i].bad;
	}
	printf("%s storm: %lu CPUs, %lu steps each, seed %lu:", all && !bad ? "PASS" : "FAIL", want,
	       iters, seed);
	for (unsigned k = 0; k < OP_COUNT; k++)
		printf(" %s %lu%s", op_names[k], counts[k], k + 1 < OP_COUNT ? "," : ";");
	printf(" %lu failures%s\n", bad, all ? "" : ", a CPU did not finish");
	return bsp_status ? bsp_status : all && !bad ? 0 : 1;
}
