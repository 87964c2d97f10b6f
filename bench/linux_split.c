/* `bench exec guest=linux` and `bench dirty guest=linux`: split on fault with
 * a Linux guest, sprig-bench's threads (one a vCPU) doing what the exec and
 * dirty guests do (guests/linux-bench/sprig-bench.c). One boot; each round the
 * scenario zaps all guest memory at the workload's BEGIN, so that every round
 * starts from the same huge second-level pages, then switches the
 * configuration under test. Counts are the whole guest's (Linux's own faults
 * and writes included), the same in every round.
 *
 * exec: round one split_on_fault off, round two on; nx_huge_pages=on.
 * dirty: rounds eps=N split_on_fault off and on, eps=Y, as `bench dirty`
 * does; the workload hands over the frames it wrote, each of which the host's
 * log must hold. Both with prefetch=off (bench/split.c says why). */
#include "arch/x86/cpu.h"
#include "arch/x86/tsc.h"
#include "lib/print.h"
#include "lib/string.h"
#include "mm/dirty_log.h"
#include "mm/mmu_config.h"
#include "bench/linux_guest.h"
#include "bench/linux_split.h"
#include "virt/bench_port.h"

#define MAX_MEM (3ull << 30)

struct round_start {
	uint64_t faults, splits_fault, splits_eager, nx_splits;
};

/* Run to the workload's BEGIN, then zap everything, tables too (a split or
 * zapped huge page leaves a 4 KiB table behind that later faults would fill),
 * so that the round starts from huge pages. */
static bool begin_round(struct linux_run *r, struct round_start *at)
{
	struct mmu_stats *st = &r->vm->mmu.stats;

	if (!linux_run_until(r, BENCH_CMD_BEGIN))
		return false;
	mmu_zap_all(&r->vm->mmu);
	*at = (struct round_start){ st->pf_taken, st->huge_page_splits_fault,
				    st->huge_page_splits_eager, st->nx_lpage_splits };
	return true;
}

static void workload_args(char *buf, size_t size, const char *what, uint64_t mib,
			  unsigned vcpus, unsigned rounds)
{
	ksnprintf(buf, size, "%s threads=%u mib=%llu rounds=%u", what, vcpus ? vcpus : 1,
		  (unsigned long long)mib, rounds);
}

struct exec_linux_row {
	uint64_t populate_faults, exec_faults, populate_ns, exec_ns, splits, nx_splits;
	bool ok;
};

static bool exec_round(struct linux_run *r, struct exec_linux_row *row)
{
	struct mmu_stats *st = &r->vm->mmu.stats;
	struct round_start at;
	uint64_t populated;

	if (!begin_round(r, &at) || !linux_run_until(r, BENCH_CMD_MARK))
		return false;
	populated = st->pf_taken;
	row->populate_faults = populated - at.faults;
	if (!linux_run_until(r, BENCH_CMD_END))
		return false;
	row->exec_faults = st->pf_taken - populated;
	row->splits = st->huge_page_splits_fault - at.splits_fault;
	row->nx_splits = st->nx_lpage_splits - at.nx_splits;
	row->populate_ns = linux_word64(r, 0);
	row->exec_ns = linux_word64(r, 2);
	row->ok = r->nwords == 5 && r->words[4] == 0;
	return true;
}

int exec_linux(uint64_t mib, uint64_t mem, unsigned vcpus)
{
	struct mmu_config saved = mmu_config;
	struct exec_linux_row rows[2] = { 0 };
	struct linux_run r;
	char workload[96];
	bool ok = true;

	workload_args(workload, sizeof(workload), "exec", mib, vcpus, 2);
	mmu_config.nx_huge_pages = NX_HUGE_ON;
	mmu_config.prefetch = PREFETCH_OFF;
	if (!linux_run_create(&r, vcpus, mem, BACKING_EAGER, 0, workload)) {
		mmu_config = saved;
		return 1;
	}
	for (int on = 0; on < 2 && r.ok; on++) {
		mmu_config.split_on_fault = on;
		exec_round(&r, &rows[on]);
	}
	mmu_config = saved;
	if (!linux_run_finish(&r, "exec"))
		return 1;
	kprintf("bench exec guest=linux: %llu MiB written then called, one 4 KiB page at a time, "
		"by %u threads in a Linux guest of %llu MiB, nx_huge_pages=on, prefetch=off\n",
		(unsigned long long)mib, vcpus ? vcpus : 1, (unsigned long long)(mem >> 20));
	kprintf("%-14s %12s %12s %10s %10s %8s %4s\n", "split_on_fault", "populate ms",
		"execute ms", "pop faults", "exec faults", "splits", "ok");
	for (int on = 0; on < 2; on++) {
		const struct exec_linux_row *w = &rows[on];

		ok &= w->ok;
		kprintf("%-14s %12llu %12llu %10llu %10llu %8llu %4s\n", on ? "on" : "off",
			(unsigned long long)(w->populate_ns / 1000000),
			(unsigned long long)(w->exec_ns / 1000000),
			(unsigned long long)w->populate_faults, (unsigned long long)w->exec_faults,
			(unsigned long long)w->splits, w->ok ? "ok" : "BAD");
	}
	for (int on = 0; on < 2; on++) {
		const struct exec_linux_row *w = &rows[on];

		kprintf("@bench bench=exec in=linux split_on_fault=%s faults=%llu time_ns=%llu "
			"populate_faults=%llu populate_ns=%llu huge_page_splits=%llu "
			"nx_lpage_splits=%llu mib=%llu vcpus=%u ok=%s\n", on ? "on" : "off",
			(unsigned long long)w->exec_faults, (unsigned long long)w->exec_ns,
			(unsigned long long)w->populate_faults, (unsigned long long)w->populate_ns,
			(unsigned long long)w->splits, (unsigned long long)w->nx_splits,
			(unsigned long long)mib, vcpus ? vcpus : 1, w->ok ? "yes" : "no");
	}
	return ok ? 0 : 1;
}

static const struct { bool eager, split; const char *name; } dirty_rounds[] = {
	{ false, false, "eps=N split_on_fault=off" },
	{ false, true, "eps=N split_on_fault=on" },
	{ true, true, "eps=Y" },
};
#define N_DIRTY_ROUNDS 3

struct dirty_linux_row {
	uint64_t iter_ns, iter_faults, enable_ns, logged, written, missed, splits;
	bool ok;
};

/* The host's log of the round, and the frames the workload says it wrote. */
static uint64_t host_log[MAX_MEM / 4096 / 64];

struct frame_check {
	uint64_t npages;
	struct dirty_linux_row *row;
};

static void check_written_frame(struct vm *vm, uint32_t pfn, void *ctx)
{
	struct frame_check *c = ctx;

	(void)vm;
	c->row->written++;
	c->row->missed += pfn >= c->npages || !(host_log[pfn / 64] & (1ull << (pfn % 64)));
}

static const struct vm_observer frame_check_observer = { .on_bench_word = check_written_frame };

static bool dirty_round(struct linux_run *r, int round, struct dirty_linux_row *row)
{
	struct mmu *mmu = &r->vm->mmu;
	struct frame_check check = { r->vm->mem_bytes >> 12, row };
	struct round_start at;
	uint64_t t, iter_start;
	int64_t logged;

	mmu_config.eager_page_split = dirty_rounds[round].eager;
	mmu_config.split_on_fault = dirty_rounds[round].split;
	if (!begin_round(r, &at) || !linux_run_until(r, BENCH_CMD_MARK))
		return false;
	t = rdtsc();
	r->ok &= mmu_dirty_log_enable(mmu, 0, true) == 0;
	row->enable_ns = tsc_to_ns(rdtsc() - t);
	iter_start = mmu->stats.pf_taken;
	if (!linux_run_until(r, BENCH_CMD_MARK))
		return false;
	row->iter_faults = mmu->stats.pf_taken - iter_start;
	row->iter_ns = linux_word64(r, 0);
	row->ok = r->nwords == 3 && r->words[2] == 0;
	logged = mmu_dirty_log_get(mmu, 0, host_log);
	r->ok &= logged >= 0;
	row->logged = (uint64_t)logged;
	row->splits = mmu->stats.huge_page_splits_fault - at.splits_fault +
		      mmu->stats.huge_page_splits_eager - at.splits_eager;
	vm_observe(r->vm, &frame_check_observer, &check);
	bool ended = linux_run_until(r, BENCH_CMD_END);
	linux_run_keep_words(r);
	r->ok &= mmu_dirty_log_enable(mmu, 0, false) == 0;
	row->ok &= ended && row->written && !row->missed;
	return ended;
}

int dirty_linux(uint64_t mib, uint64_t mem, unsigned vcpus, uint64_t writes)
{
	struct mmu_config saved = mmu_config;
	struct dirty_linux_row rows[N_DIRTY_ROUNDS] = { 0 };
	struct linux_run r;
	char workload[96];
	bool ok = true;

	if (mem > MAX_MEM) {
		kprintf("bench dirty: guest=linux takes mem= up to 3G\n");
		return 1;
	}
	workload_args(workload, sizeof(workload), "dirty", mib, vcpus, N_DIRTY_ROUNDS);
	ksnprintf(workload + strlen(workload), sizeof(workload) - strlen(workload),
		  " writes=%llu", (unsigned long long)writes);
	mmu_config.prefetch = PREFETCH_OFF;
	if (!linux_run_create(&r, vcpus, mem, BACKING_EAGER, 0, workload)) {
		mmu_config = saved;
		return 1;
	}
	for (int i = 0; i < N_DIRTY_ROUNDS && r.ok; i++)
		dirty_round(&r, i, &rows[i]);
	mmu_config = saved;
	if (!linux_run_finish(&r, "dirty"))
		return 1;
	kprintf("bench dirty guest=linux: %llu MiB touched by %u threads in a Linux guest of %llu "
		"MiB, %llu%% of its pages written in iteration 1, prefetch=off\n",
		(unsigned long long)mib, vcpus ? vcpus : 1, (unsigned long long)(mem >> 20),
		(unsigned long long)writes);
	kprintf("%-26s %10s %10s %10s %9s %9s %7s %7s %4s\n", "config", "iter ms", "iter faults",
		"enable ms", "logged", "written", "missed", "splits", "ok");
	for (int i = 0; i < N_DIRTY_ROUNDS; i++) {
		const struct dirty_linux_row *w = &rows[i];

		ok &= w->ok;
		kprintf("%-26s %10llu %10llu %10llu %9llu %9llu %7llu %7llu %4s\n",
			dirty_rounds[i].name, (unsigned long long)(w->iter_ns / 1000000),
			(unsigned long long)w->iter_faults,
			(unsigned long long)(w->enable_ns / 1000000), (unsigned long long)w->logged,
			(unsigned long long)w->written, (unsigned long long)w->missed,
			(unsigned long long)w->splits, w->ok ? "ok" : "BAD");
	}
	for (int i = 0; i < N_DIRTY_ROUNDS; i++) {
		const struct dirty_linux_row *w = &rows[i];

		kprintf("@bench bench=dirty in=linux writes=%llu eager_page_split=%s "
			"split_on_fault=%s faults=%llu time_ns=%llu enable_ns=%llu logged=%llu "
			"written=%llu missed=%llu huge_page_splits=%llu mib=%llu vcpus=%u ok=%s\n",
			(unsigned long long)writes, dirty_rounds[i].eager ? "on" : "off",
			dirty_rounds[i].split ? "on" : "off", (unsigned long long)w->iter_faults,
			(unsigned long long)w->iter_ns, (unsigned long long)w->enable_ns,
			(unsigned long long)w->logged, (unsigned long long)w->written,
			(unsigned long long)w->missed, (unsigned long long)w->splits,
			(unsigned long long)mib, vcpus ? vcpus : 1, w->ok ? "yes" : "no");
	}
	return ok ? 0 : 1;
}
