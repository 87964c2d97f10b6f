/* `bench prefetch guest=linux`: the prefetch proposal's own setting, a Linux
 * guest restored from a snapshot in chunks. One boot: sprig-bench's restore
 * workload (guests/linux-bench/sprig-bench.c) writes a word into every page
 * of mib MiB, then stops at its BEGIN bench point, where the scenario
 * snapshots the VM into an image in memory. Then for each chunk size and
 * prefetch mode a VM restored from that image goes on from BEGIN: the
 * workload reads every page's word back and stops at END. Per run: the nested
 * page faults the whole guest took (the workload's touch, and whatever Linux
 * ran meanwhile), the pages the restore filled, the host time from resume to
 * END, the workload's own time of its touch, the prefetch counters, whether
 * every word came back and the audit. Modes: off; forward with
 * prefetch_adaptive off; forward with it on (adaptive). */
#include "arch/x86/cpu.h"
#include "arch/x86/tsc.h"
#include "lib/parse.h"
#include "lib/print.h"
#include "lib/string.h"
#include "mm/mmu_config.h"
#include "bench/linux_guest.h"
#include "bench/linux_split.h"
#include "bench/prefetch.h"
#include "virt/bench_port.h"
#include "shell/shell.h"
#include "virt/snapshot.h"

#define MiB (1ull << 20)
#define DEFAULT_MIB 128
#define MAX_MEM (1ull << 30) /* the image is a copy of all of it */
#define IMAGE_NAME "lr-image"

static const struct {
	const char *name;
	int prefetch;
	bool adaptive;
} modes[] = {
	{ "off", PREFETCH_OFF, false },
	{ "forward", PREFETCH_FORWARD, false },
	{ "adaptive", PREFETCH_FORWARD, true },
};
#define N_MODES 3

struct linux_restore_run {
	struct prefetch_run pf;
	uint64_t guest_ns, filled;
	bool ran;
};

/* Whether name is one of the comma-separated words of list. */
static bool listed(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list;; p++) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len == n && strncmp(p, name, n) == 0)
			return true;
		if (!end)
			return false;
		p = end;
	}
}

static unsigned words_in(const char *list)
{
	unsigned n = 1;

	for (; *list; list++)
		n += *list == ',';
	return n;
}

/* Boot Linux with the workload to its BEGIN and take the image. */
static const struct snapshot_image *build_image(uint64_t mib, uint64_t mem)
{
	const struct snapshot_image *img = NULL;
	struct linux_run src;
	char workload[32], err[128] = "";

	ksnprintf(workload, sizeof(workload), "restore mib=%llu", (unsigned long long)mib);
	if (!linux_run_create(&src, 1, mem, BACKING_LAZY, 0, workload))
		return NULL;
	if (linux_run_until(&src, BENCH_CMD_BEGIN) &&
	    !(img = snapshot_take(src.vm, IMAGE_NAME, err, sizeof(err))))
		kprintf("bench prefetch: no snapshot of the Linux guest: %s\n", err);
	if (!linux_run_finish(&src, "prefetch") && img) {
		snapshot_free(img);
		img = NULL;
	}
	return img;
}

static bool restore_and_touch(const struct snapshot_image *img, uint32_t chunk_pages,
			      struct linux_restore_run *out)
{
	struct linux_run r = { .ok = true };
	char err[128];
	uint64_t t;

	if (!(r.vm = vm_restore("lr-run", img, chunk_pages, "", err, sizeof(err)))) {
		kprintf("bench prefetch: cannot restore: %s\n", err);
		return false;
	}
	linux_run_keep_words(&r);
	t = rdtsc();
	linux_run_until(&r, BENCH_CMD_END);
	out->pf.ns = tsc_to_ns(rdtsc() - t);
	out->filled = mmu_backed_pages(&r.vm->mmu);
	out->guest_ns = linux_word64(&r, 0);
	out->pf.data_ok = r.ok && r.nwords == 3 && r.words[2] == 0;
	out->ran = true;
	prefetch_run_end(r.vm, &out->pf);
	return true;
}

static void print_runs(const struct linux_restore_run runs[N_RESTORE_CHUNKS][N_MODES],
		       uint64_t mib, uint64_t mem)
{
	kprintf("bench prefetch guest=linux: a Linux guest of %llu MiB restored from a snapshot, "
		"its workload then reading one word of each page of %llu MiB\n",
		(unsigned long long)(mem / MiB), (unsigned long long)mib);
	kprintf("%-5s %-8s %8s %8s %8s %8s %7s %7s %7s %5s %5s\n", "chunk", "prefetch", "faults",
		"filled", "ms", "touch ms", "called", "mapped", "unused", "data", "audit");
	for (unsigned c = 0; c < N_RESTORE_CHUNKS; c++)
		for (int m = 0; m < N_MODES; m++) {
			const struct linux_restore_run *r = &runs[c][m];

			if (r->ran)
				kprintf("%-5s %-8s %8llu %8llu %8llu %8llu %7llu %7llu %7llu %5s %5s\n",
					restore_chunks[c].name, modes[m].name,
					(unsigned long long)r->pf.faults,
					(unsigned long long)r->filled,
					(unsigned long long)(r->pf.ns / 1000000),
					(unsigned long long)(r->guest_ns / 1000000),
					(unsigned long long)r->pf.called,
					(unsigned long long)r->pf.mapped,
					(unsigned long long)r->pf.unused,
					r->pf.data_ok ? "ok" : "BAD", r->pf.audit_ok ? "ok" : "BAD");
		}
	for (unsigned c = 0; c < N_RESTORE_CHUNKS; c++)
		for (int m = 0; m < N_MODES; m++) {
			const struct linux_restore_run *r = &runs[c][m];

			if (r->ran)
				kprintf("@bench bench=prefetch in=linux chunk=%s mode=%s prefetch=%s "
					"adaptive=%s faults=%llu filled_pages=%llu time_ns=%llu "
					"touch_ns=%llu mib=%llu mem_mib=%llu pf_prefetch_called=%llu "
					"pf_prefetch_pages=%llu pf_prefetch_mapped=%llu "
					"pf_prefetch_unused=%llu data=%s audit=%s\n",
					restore_chunks[c].name, modes[m].name,
					modes[m].prefetch == PREFETCH_OFF ? "off" : "forward",
					modes[m].adaptive ? "on" : "off",
					(unsigned long long)r->pf.faults, (unsigned long long)r->filled,
					(unsigned long long)r->pf.ns, (unsigned long long)r->guest_ns,
					(unsigned long long)mib, (unsigned long long)(mem / MiB),
					(unsigned long long)r->pf.called, (unsigned long long)r->pf.pages,
					(unsigned long long)r->pf.mapped, (unsigned long long)r->pf.unused,
					r->pf.data_ok ? "ok" : "BAD", r->pf.audit_ok ? "ok" : "BAD");
		}
}

int prefetch_linux(int argc, char **argv)
{
	static struct linux_restore_run runs[N_RESTORE_CHUNKS][N_MODES];
	const char *chunk_list = "4K,64K,512K,2M", *mode_list = "off,forward,adaptive";
	struct mmu_config saved = mmu_config;
	uint64_t mib = DEFAULT_MIB, mem = LINUX_SPLIT_MEM;
	const struct snapshot_image *img;
	unsigned nchunks = 0, nmodes = 0;
	bool ok = true;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strncmp(a, "mib=", 4) == 0 && parse_u64_in(a + 4, 1, MAX_MEM / MiB, &mib))
			continue;
		if (strncmp(a, "mem=", 4) == 0 &&
		    parse_size_in(a + 4, LINUX_SPLIT_MEM_MIN, MAX_MEM, &mem))
			continue;
		if (strncmp(a, "chunks=", 7) == 0)
			chunk_list = a + 7;
		else if (strncmp(a, "modes=", 6) == 0)
			mode_list = a + 6;
		else
			return shell_usage_error("bench", "bad argument '%s' (guest=linux takes mib=N, "
						 "mem=256M..1G, chunks=4K,64K,512K,2M, "
						 "modes=off,forward,adaptive)", a);
	}
	for (unsigned c = 0; c < N_RESTORE_CHUNKS; c++)
		nchunks += listed(chunk_list, restore_chunks[c].name);
	for (int m = 0; m < N_MODES; m++)
		nmodes += listed(mode_list, modes[m].name);
	if (nchunks != words_in(chunk_list) || nmodes != words_in(mode_list))
		return shell_usage_error("bench", "chunks= takes 4K,64K,512K,2M and modes= "
					 "off,forward,adaptive, each once");
	if (mib * MiB > mem / 2)
		return shell_usage_error("bench", "mib= is at most half of mem=");

	memset(runs, 0, sizeof(runs));
	if (!(img = build_image(mib, mem)))
		return 1;
	for (unsigned c = 0; c < N_RESTORE_CHUNKS && ok; c++)
		for (int m = 0; m < N_MODES && ok; m++) {
			if (!listed(chunk_list, restore_chunks[c].name) ||
			    !listed(mode_list, modes[m].name))
				continue;
			mmu_config.prefetch = modes[m].prefetch;
			mmu_config.prefetch_adaptive = modes[m].adaptive;
			ok = restore_and_touch(img, restore_chunks[c].pages, &runs[c][m]);
		}
	mmu_config = saved;
	snapshot_free(img);
	print_runs(runs, mib, mem);
	for (unsigned c = 0; c < N_RESTORE_CHUNKS; c++)
		for (int m = 0; m < N_MODES; m++)
			ok &= !runs[c][m].ran || (runs[c][m].pf.data_ok && runs[c][m].pf.audit_ok);
	return ok ? 0 : 1;
}
