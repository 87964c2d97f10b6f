/* `bench stale [rounds=N]`: the remote TLB flush, seen from a guest. The stale
 * guest (guests/stale.c) spins on CPU 1 without exits, reading word W of its
 * page D and its flag page F. Each round the console CPU moves D to a new frame
 * with W changed in the copy (mmu_migrate_page: zap, remote flush, copy, switch
 * the leaf), then writes the round's number to F and waits for the guest's
 * answer: the W it read after it saw that number. The old W is a hit: the guest
 * still ran on a translation the flush should have taken away. QEMU flushes a
 * vCPU's TLB at every VMRUN and #VMEXIT, so what can show here is a missing
 * kick; with `mmu remote_flush=off` there are hits, with it on there must be
 * none. (Without the kick about every other round hits: the frame freed by
 * one round is the next round's copy, so the stale translation then reads the
 * new word by chance, through a frame the guest should no longer reach.) */
#include "arch/x86/cpu.h"
#include "arch/x86/tsc.h"
#include "lib/parse.h"
#include "lib/print.h"
#include "lib/string.h"
#include "bench/scenario.h"
#include "boot/boot_info.h"
#include "virt/sched.h"
#include "shell/shell.h"
#include "virt/vm.h"
#include "mm/migrate.h"

#define MiB (1ull << 20)
#define GUEST_MEM (16 * MiB)
#define D_GPA (8 * MiB)
#define F_GPA (D_GPA + PAGE_SIZE)
#define A_GPA (D_GPA + 2 * PAGE_SIZE)
#define WORD 7
#define GUEST_CPU 1
#define DEFAULT_ROUNDS 1000
#define MAX_ROUNDS 1000000
/* A liveness bound only: under a loaded emulator the guest's thread has
 * gone without the host CPU for over a second. */
#define ANSWER_WAIT_MS 5000
#define START_WAIT_MS 10000 /* the guest boots first */
#define RUN_TIMEOUT_MS (120 * 1000)

struct stale_run {
	uint64_t rounds, answered, hits;
	const char *failure; /* why the rounds stopped early, or NULL */
	bool started;        /* the watch hook ran the rounds (it does once) */
};

static uint64_t guest_word(struct vm *vm, uint64_t gpa)
{
	uint64_t v = 0;

	mmu_read_guest(&vm->mmu, gpa, &v, sizeof(v));
	return v;
}

static void set_flag(struct vm *vm, uint64_t seq)
{
	mmu_write_guest(&vm->mmu, F_GPA, &seq, sizeof(seq));
}

/* Post seq in F and wait up to wait_ms for the guest's answer; false if none came. */
static bool ask(struct vm *vm, uint64_t seq, uint64_t wait_ms, uint64_t *seen)
{
	uint64_t deadline = rdtsc() + wait_ms * tsc_khz();

	set_flag(vm, seq);
	while (guest_word(vm, A_GPA) != seq) {
		if (rdtsc() >= deadline || !vm_running(vm))
			return false;
		cpu_relax();
	}
	*seen = guest_word(vm, A_GPA + 8);
	return true;
}

/* The console CPU's watch hook: the whole experiment, once the guest answers
 * its first number (it is spinning then), then the stop value. */
static void stale_rounds(struct vm *vm, void *ctx)
{
	struct stale_run *r = ctx;
	uint64_t seen;

	if (r->started)
		return;
	r->started = true;
	if (!ask(vm, 1, START_WAIT_MS, &seen)) {
		r->failure = "the guest never answered";
		return;
	}
	for (uint64_t i = 0; i < r->rounds; i++) {
		uint64_t seq = i + 2; /* also W's new value: 0 first, the sync round's 1 */
		struct mmu_page_patch w = { WORD * 8, seq };

		if (mmu_migrate_page(&vm->mmu, D_GPA, &w) != MIGRATE_DONE) {
			r->failure = "page D could not be moved";
			break;
		}
		if (!ask(vm, seq, ANSWER_WAIT_MS, &seen)) {
			r->failure = "the guest stopped answering";
			break;
		}
		r->answered++;
		r->hits += seen != seq;
	}
	set_flag(vm, ~0ull);
}

static const struct vm_observer stale_observer = { .on_watch = stale_rounds };

static int stale_scenario(int argc, char **argv)
{
	static char cmdline[96], args[80];
	struct stale_run r = { .rounds = DEFAULT_ROUNDS };
	const struct boot_module *mod;
	char err[128];
	struct vm *vm;
	bool ok;

	for (int i = 1; i < argc; i++)
		if (strncmp(argv[i], "rounds=", 7) != 0 ||
		    !parse_u64_in(argv[i] + 7, 1, MAX_ROUNDS, &r.rounds))
			return shell_usage_error("bench", "bad argument '%s' (rounds=1..%u)", argv[i],
						 MAX_ROUNDS);
	if (smp_cpu_count() <= GUEST_CPU || smp_cpu_state(GUEST_CPU) != CPU_ONLINE) {
		kprintf("bench stale: needs CPU %u online: the guest spins there while this CPU "
			"moves its page\n", GUEST_CPU);
		return 1;
	}
	if (!(mod = boot_module_find("stale"))) {
		kprintf("bench stale: no module 'stale' (the ISO carries it)\n");
		return 1;
	}
	ksnprintf(args, sizeof(args), "d=0x%llx f=0x%llx a=0x%llx w=%u", D_GPA, F_GPA, A_GPA, WORD);
	ksnprintf(cmdline, sizeof(cmdline), "stale %s", args);
	struct vm_create_args a = {
		.name = "stale-bench", .image = (const void *)(uintptr_t)mod->start,
		.image_size = mod->end - mod->start, .cmdline = cmdline, .args = args,
		.mem_bytes = GUEST_MEM, .backing = BACKING_LAZY, .chunk_pages = 1, .vcpus = 1,
		.cpu_list = { GUEST_CPU }, .cpu_list_len = 1,
	};
	if (!(vm = vm_create(&a, err, sizeof(err)))) {
		kprintf("bench stale: cannot create the guest: %s\n", err);
		return 1;
	}
	vm_observe(vm, &stale_observer, &r);
	vm_run(vm, RUN_TIMEOUT_MS);
	ok = !r.failure && vm->state == VM_EXITED && vm->exit_status == 0;
	vm_destroy(vm);
	if (r.failure)
		kprintf("bench stale: %s after %llu rounds\n", r.failure,
			(unsigned long long)r.answered);
	kprintf("stale: rounds=%llu hits=%llu\n", (unsigned long long)r.answered,
		(unsigned long long)r.hits);
	kprintf("@bench bench=stale in=guest remote_flush=%s rounds=%llu hits=%llu data=%s\n",
		vm_remote_flush ? "on" : "off", (unsigned long long)r.answered,
		(unsigned long long)r.hits, ok ? "ok" : "FAILED");
	return ok ? 0 : 1;
}
SCENARIO(stale, .name = "stale", .run = stale_scenario, .usage = "[rounds=N]",
	 .help = "count a spinning guest's reads through translations a remote flush removed");
