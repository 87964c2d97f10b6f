/* `bench zap PATTERN [discard] [every=N] [touches=N]`: the leaf-empty hint in a
 * guest. The churn guest (guests/churn.c) keeps faulting, writing and checking
 * its memory while sprig zaps the pattern's ranges of it, one zap every N exits
 * of the guest, once with the hint off and once on. Exits are counted, not
 * time, so that both runs see the same schedule; interrupt exits, which come by
 * wall time, do not count. With `discard` the ranges lose their backing too
 * (vm_discard) and the guest, told through HC_LOST_RANGES, checks that exactly
 * those pages read zero.
 *
 * Patterns, over the guest's data (32 MiB from 4 MiB): same16 and same4 zap its
 * first 16 / 4 MiB again and again; sweep16, sweep4, sweep2 and sweep1 zap
 * rolling 16/4/2/1 MiB chunks across it. */
#include "arch/x86/tsc.h"
#include "lib/parse.h"
#include "lib/print.h"
#include "lib/string.h"
#include "mm/mmu_config.h"
#include "virt/kernel.h"
#include "virt/bench/scenario.h"
#include "virt/shell.h"
#include "virt/vm.h"
#include "virt/bench/zap_patterns.h"

#define MiB (1ull << 20)
#define GUEST_MEM (64 * MiB)
#define DATA_GPA (4 * MiB) /* the guest's GUEST_PLAYGROUND */
#define DATA_MIB 32
#define MAX_EVERY 1000000
#define MAX_TOUCHES 1000000
#define DEFAULT_EVERY 16
#define DEFAULT_TOUCHES 20000
#define RUN_TIMEOUT_MS (600 * 1000)

struct zap_schedule {
	const struct zap_pattern *p;
	bool discard;
	uint64_t every;
	uint64_t exits;    /* counted exits so far */
	uint64_t next_off; /* of the next zap, in the guest's data */
};

static void zap_on_exit(struct vm *vm, const struct vexit *e, void *ctx)
{
	struct zap_schedule *z = ctx;
	uint64_t gpa = DATA_GPA + z->next_off;

	if (e->kind == VEXIT_INTR || ++z->exits % z->every)
		return;
	if (z->p->sweep)
		z->next_off = (z->next_off + z->p->chunk) % (DATA_MIB * MiB);
	if (z->discard) {
		vm_discard(vm, gpa, z->p->chunk);
		return;
	}
	mmu_zap(&vm->mmu, gpa, z->p->chunk);
}

struct zap_result {
	struct zap_stats zs;
	uint64_t guest_faults;
	bool data_ok;
};

/* One run of the churn guest under the schedule; false if it could not start. */
static bool run_churn(const struct boot_module *mod, struct zap_schedule *z, uint64_t touches,
		      bool hint, struct zap_result *res)
{
	static char cmdline[96], args[80];
	char name[16], err[128];
	struct vm *vm;

	ksnprintf(args, sizeof(args), "mib=%u touches=%llu", DATA_MIB, (unsigned long long)touches);
	ksnprintf(cmdline, sizeof(cmdline), "churn %s", args);
	ksnprintf(name, sizeof(name), "zap-%s", hint ? "on" : "off");
	struct vm_create_args a = {
		.name = name, .image = (const void *)(uintptr_t)mod->start,
		.image_size = mod->end - mod->start, .cmdline = cmdline, .args = args,
		.mem_bytes = GUEST_MEM, .backing = BACKING_LAZY, .chunk_pages = 1,
	};
	if (!(vm = vm_create(&a, err, sizeof(err)))) {
		kprintf("bench zap: cannot create the guest: %s\n", err);
		return false;
	}
	mmu_config.leaf_hint = hint;
	z->exits = 0;
	z->next_off = 0;
	vm->on_exit = zap_on_exit;
	vm->on_exit_ctx = z;
	vm_run(vm, RUN_TIMEOUT_MS);
	res->zs = vm->mmu.zap_stats;
	res->guest_faults = vm->mmu.stats.pf_taken;
	res->data_ok = vm->state == VM_EXITED && vm->exit_status == 0;
	vm_destroy(vm);
	return true;
}

static uint64_t cycles_to_ns(uint64_t cycles)
{
	return tsc_khz() ? cycles * 1000000 / tsc_khz() : 0;
}

static void print_results(const struct zap_schedule *z, const struct zap_result res[2])
{
	kprintf("bench zap %s%s: one zap every %llu exits, hint off and on\n", z->p->name,
		z->discard ? " discard" : "", (unsigned long long)z->every);
	kprintf("%-5s %6s %12s %12s %12s %12s %7s %8s %8s %s\n", "hint", "zaps", "median cyc",
		"p99.9 cyc", "spte visits", "leaf visits", "skips", "checks", "faults", "data");
	for (int h = 0; h < 2; h++) {
		const struct zap_stats *zs = &res[h].zs;
		uint64_t median = zap_latency_percentile(zs, 500);
		uint64_t p999 = zap_latency_percentile(zs, 999);

		kprintf("%-5s %6llu %12llu %12llu %12llu %12llu %7llu %8llu %8llu %s\n",
			h ? "on" : "off", (unsigned long long)zs->zaps, (unsigned long long)median,
			(unsigned long long)p999, (unsigned long long)zs->zap_spte_visits,
			(unsigned long long)zs->zap_leaf_visits,
			(unsigned long long)zs->tdp_zap_skip_child,
			(unsigned long long)zs->zap_hint_checks,
			(unsigned long long)res[h].guest_faults, res[h].data_ok ? "ok" : "FAILED");
	}
	for (int h = 0; h < 2; h++) {
		const struct zap_stats *zs = &res[h].zs;
		uint64_t median = zap_latency_percentile(zs, 500);
		uint64_t p999 = zap_latency_percentile(zs, 999);

		kprintf("@bench bench=zap in=guest pattern=%s discard=%d every=%llu leaf_hint=%s "
			"zaps=%llu zap_median_ns=%llu zap_p999_ns=%llu zap_median_cycles=%llu "
			"zap_p999_cycles=%llu zap_spte_visits=%llu zap_leaf_visits=%llu skips=%llu "
			"hint_checks=%llu guest_faults=%llu data=%s\n",
			z->p->name, z->discard, (unsigned long long)z->every, h ? "on" : "off",
			(unsigned long long)zs->zaps, (unsigned long long)cycles_to_ns(median),
			(unsigned long long)cycles_to_ns(p999), (unsigned long long)median,
			(unsigned long long)p999, (unsigned long long)zs->zap_spte_visits,
			(unsigned long long)zs->zap_leaf_visits,
			(unsigned long long)zs->tdp_zap_skip_child,
			(unsigned long long)zs->zap_hint_checks,
			(unsigned long long)res[h].guest_faults, res[h].data_ok ? "ok" : "FAILED");
	}
}

static int zap_scenario(int argc, char **argv)
{
	struct zap_schedule z = { .every = DEFAULT_EVERY };
	uint64_t touches = DEFAULT_TOUCHES;
	const struct boot_module *mod;
	struct zap_result res[2];
	bool saved = mmu_config.leaf_hint;

	if (argc < 2)
		return shell_usage_error("bench", "zap needs a PATTERN");
	for (size_t i = 0; i < N_ZAP_PATTERNS; i++)
		if (strcmp(argv[1], zap_patterns[i].name) == 0)
			z.p = &zap_patterns[i];
	if (!z.p)
		return shell_usage_error("bench", "unknown zap pattern '%s'", argv[1]);
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "discard") == 0)
			z.discard = true;
		else if (strncmp(argv[i], "every=", 6) == 0 &&
			 parse_u64_in(argv[i] + 6, 1, MAX_EVERY, &z.every))
			continue;
		else if (strncmp(argv[i], "touches=", 8) == 0 &&
			 parse_u64_in(argv[i] + 8, 1, MAX_TOUCHES, &touches))
			continue;
		else
			return shell_usage_error("bench", "bad argument '%s' (every=1..%u, touches=1..%u)",
						 argv[i], MAX_EVERY, MAX_TOUCHES);
	}
	if (!(mod = boot_module_find("churn"))) {
		kprintf("bench zap: no module 'churn' (the ISO carries it)\n");
		return 1;
	}
	for (int h = 0; h < 2; h++)
		if (!run_churn(mod, &z, touches, h, &res[h])) {
			mmu_config.leaf_hint = saved;
			return 1;
		}
	mmu_config.leaf_hint = saved;
	print_results(&z, res);
	return res[0].data_ok && res[1].data_ok ? 0 : 1;
}
SCENARIO(zap, .name = "zap", .run = zap_scenario,
	 .usage = "same16|same4|sweep16|sweep4|sweep2|sweep1 [discard] [every=N] [touches=N]",
	 .help = "zap a churning guest's memory, leaf-empty hint off and on");
