/* `selftest`: does this machine run sprig? The capabilities the backend
 * needs, each built-in guest run to its own verdict (exit status 0, and for
 * hello the lines it must print), the MMU
 * audit of every VM that ran, and each optimisation's counters moving as
 * they must. One line per check, `selftest: NAME: PASS|FAIL|SKIP (why)`,
 * then the totals, for a lab's job to read; a failure also makes a later
 * power-off under an emulator exit with status 1. Small guests, so that it
 * takes seconds on hardware and well under 90 s under QEMU. */
#include "arch/x86/cpuinfo.h"
#include "arch/x86/power.h"
#include "arch/x86/smp.h"
#include "lib/print.h"
#include "lib/string.h"
#include "mm/mmu_config.h"
#include "mm/rmap.h"
#include "virt/clone.h"
#include "boot/boot_info.h"
#include "shell/shell.h"
#include "virt/snapshot.h"
#include "virt/vm.h"

#define MiB (1ull << 20)
#define RUN_TIMEOUT_MS (60 * 1000)
#define CLONES 3

enum verdict { PASS, FAIL, SKIP, VERDICTS };
static const char *const verdict_names[VERDICTS] = { "PASS", "FAIL", "SKIP" };

struct selftest {
	unsigned counts[VERDICTS];
	bool audits_ok;
	unsigned audited;
	char why[128]; /* the reason of the check being made */
};

static void report(struct selftest *st, const char *name, enum verdict v)
{
	st->counts[v]++;
	if (st->why[0])
		kprintf("selftest: %s: %s (%s)\n", name, verdict_names[v], st->why);
	else
		kprintf("selftest: %s: %s\n", name, verdict_names[v]);
	st->why[0] = 0;
}

/* Why a VM check cannot run here, or NULL. */
static const char *vm_skip_reason(void)
{
	return backend ? NULL : "no usable SVM with NPT nor VMX with EPT";
}

/* The backend came up and its largest nested leaf agrees with the CPU's
 * capability bits (APM: CPUID Page1GB; SDM A.10: EPT 2 MiB and 1 GiB). */
static enum verdict check_caps(struct selftest *st)
{
	int cpu_max, leaf;

	if (!backend) {
		ksnprintf(st->why, sizeof(st->why), "%s", vm_skip_reason());
		return FAIL;
	}
	leaf = backend->tdp_max_leaf_level();
	if (strcmp(backend->name, "svm") == 0)
		cpu_max = cpuinfo.pages_1g ? 3 : 2;
	else
		cpu_max = cpuinfo.vmx.ept_vpid_cap & EPT_CAP_1G   ? 3
			  : cpuinfo.vmx.ept_vpid_cap & EPT_CAP_2M ? 2
								  : 1;
	if (leaf != cpu_max) {
		ksnprintf(st->why, sizeof(st->why), "%s uses leaves of level %d, the CPU allows %d",
			  backend->name, leaf, cpu_max);
		return FAIL;
	}
	ksnprintf(st->why, sizeof(st->why), "%s with %s, largest leaf %s, nx %s, %u CPUs online",
		  backend->name, backend->tdp->name,
		  leaf == 3 ? "1 GiB" : leaf == 2 ? "2 MiB" : "4 KiB", cpuinfo.nx ? "yes" : "no",
		  smp_online_count());
	return PASS;
}

/* The MMU audit of a VM before it goes, counted into the audit line. */
static void audit(struct selftest *st, struct vm *vm)
{
	struct mmu_audit_report r;

	st->audited++;
	if (!mmu_audit(&vm->mmu, &r)) {
		mmu_audit_print(&r);
		st->audits_ok = false;
	}
}

/* Create a VM of module (its arguments args); NULL with the verdict's
 * reason set, SKIP when the module is missing. */
static struct vm *create(struct selftest *st, enum verdict *v, const char *name,
			 const char *module, const char *args, uint64_t mem,
			 enum backing_kind backing, unsigned vcpus)
{
	static char cmdline[96];
	const struct boot_module *mod = boot_module_find(module);
	char err[96];
	struct vm *vm;

	if (!mod) {
		ksnprintf(st->why, sizeof(st->why), "no module '%s'", module);
		*v = SKIP;
		return NULL;
	}
	ksnprintf(cmdline, sizeof(cmdline), "%s %s", module, args);
	struct vm_create_args a = {
		.name = name, .image = (const void *)(uintptr_t)mod->start,
		.image_size = mod->end - mod->start, .cmdline = cmdline, .args = args,
		.mem_bytes = mem, .backing = backing, .chunk_pages = 1, .vcpus = vcpus,
	};
	if (!(vm = vm_create(&a, err, sizeof(err)))) {
		ksnprintf(st->why, sizeof(st->why), "cannot create: %s", err);
		*v = FAIL;
	}
	return vm;
}

/* Run to the end; false with the reason set unless it exited with status 0. */
static bool run_to_exit(struct selftest *st, struct vm *vm)
{
	vm_run(vm, RUN_TIMEOUT_MS);
	if (vm->state == VM_EXITED && vm->exit_status == 0)
		return true;
	if (vm->state == VM_EXITED)
		ksnprintf(st->why, sizeof(st->why), "exit status %d", vm->exit_status);
	else if (vm->state == VM_PAUSED)
		ksnprintf(st->why, sizeof(st->why), "paused: %s", vm->pause_reason);
	else
		ksnprintf(st->why, sizeof(st->why), "failed: %s", vm->stop_reason);
	return false;
}

struct guest_check {
	const char *module, *args;
	uint64_t mem;
	unsigned vcpus;
	const char *const *lines; /* what it must print, NULL-ended; NULL: not compared */
};

/* A guest's console lines against those it must print, in order. */
struct line_check {
	const char *const *want;
	unsigned seen;
	char diff[96]; /* the first difference, or empty */
};

static void compare_line(struct vm *vm, const char *line, unsigned len, void *ctx)
{
	struct line_check *c = ctx;
	const char *want = c->want[c->seen];

	(void)vm;
	if (c->diff[0])
		return;
	if (!want)
		ksnprintf(c->diff, sizeof(c->diff), "an extra line \"%.*s\"", (int)len, line);
	else if (strlen(want) != len || memcmp(want, line, len) != 0)
		ksnprintf(c->diff, sizeof(c->diff), "line %u \"%.*s\", not \"%s\"", c->seen + 1,
			  (int)len, line, want);
	else
		c->seen++;
}

static const struct vm_observer line_observer = { .on_line = compare_line };

/* Every line printed as it must be, else false with the reason set. */
static bool lines_match(struct selftest *st, const struct line_check *c)
{
	unsigned want = 0;

	while (c->want[want])
		want++;
	if (c->diff[0])
		ksnprintf(st->why, sizeof(st->why), "printed %s", c->diff);
	else if (c->seen != want)
		ksnprintf(st->why, sizeof(st->why), "printed %u of its %u lines", c->seen, want);
	return !c->diff[0] && c->seen == want;
}

/* Each guest checks itself and ends with status 0 when all its checks pass;
 * a guest with lines to print must print exactly those. The apic guest judges timer lateness only on bare hardware: under a
 * hypervisor the host decides when sprig's CPUs run. */
static enum verdict check_guest(struct selftest *st, const struct guest_check *g)
{
	const char *args = g->args;
	struct line_check lines = { .want = g->lines };
	enum verdict v = FAIL;
	char name[VM_NAME_MAX];
	struct vm *vm;

	if (strcmp(g->module, "apic") == 0 && cpuinfo.hypervisor)
		args = "late_us=0";
	ksnprintf(name, sizeof(name), "st-%s", g->module);
	if (!(vm = create(st, &v, name, g->module, args, g->mem, BACKING_LAZY, g->vcpus)))
		return v;
	if (g->lines)
		vm_observe(vm, &line_observer, &lines);
	if (run_to_exit(st, vm) && (!g->lines || lines_match(st, &lines)))
		v = PASS;
	audit(st, vm);
	vm_destroy(vm);
	return v;
}

/* A zap of the whole memory leaves the 4 KiB leaf tables empty and hints
 * them; a second zap must skip them. */
static enum verdict check_leaf_hint(struct selftest *st)
{
	bool saved = mmu_config.leaf_hint;
	enum verdict v = FAIL;
	uint64_t set, skips;
	struct vm *vm;

	mmu_config.leaf_hint = true;
	if (!(vm = create(st, &v, "st-hint", "touch", "mib=8", 16 * MiB, BACKING_LAZY, 0)))
		goto out;
	if (run_to_exit(st, vm)) {
		mmu_zap(&vm->mmu, 0, vm->mem_bytes);
		set = vm->mmu.zap_stats.zap_hints_set;
		skips = vm->mmu.zap_stats.tdp_zap_skip_child;
		mmu_zap(&vm->mmu, 0, vm->mem_bytes);
		skips = vm->mmu.zap_stats.tdp_zap_skip_child - skips;
		ksnprintf(st->why, sizeof(st->why), "%llu hints set, %llu tables skipped",
			  (unsigned long long)set, (unsigned long long)skips);
		v = set && skips == set ? PASS : FAIL;
	}
	audit(st, vm);
	vm_destroy(vm);
out:
	mmu_config.leaf_hint = saved;
	return v;
}

/* The exec guest calls into every 4 KiB page of eager memory mapped by huge
 * leaves; with nx_huge_pages on, each call must split its leaf in place. */
static enum verdict check_split(struct selftest *st)
{
	struct mmu_config saved = mmu_config;
	enum verdict v = FAIL;
	uint64_t splits;
	struct vm *vm;

	mmu_config.nx_huge_pages = NX_HUGE_ON;
	mmu_config.split_on_fault = true;
	mmu_config.prefetch = PREFETCH_OFF;
	if (!(vm = create(st, &v, "st-split", "exec", "mib=4", 16 * MiB, BACKING_EAGER, 0)))
		goto out;
	if (run_to_exit(st, vm)) {
		splits = vm->mmu.stats.huge_page_splits_fault;
		ksnprintf(st->why, sizeof(st->why), "%llu huge leaves split on exec faults",
			  (unsigned long long)splits);
		v = splits ? PASS : FAIL;
	}
	audit(st, vm);
	vm_destroy(vm);
out:
	mmu_config = saved;
	return v;
}

/* CLONES clones of the rmapread guest read its shared 1 MiB: each frame's
 * counted rmap chain must reach the parent plus every clone. */
static enum verdict check_rmap(struct selftest *st)
{
	int saved = mmu_config.rmap_desc;
	struct vm *parent, *clones[CLONES];
	unsigned made = 0, ok = 0;
	enum verdict v = FAIL;
	char name[VM_NAME_MAX], err[96];
	uint64_t longest;

	mmu_config.rmap_desc = RMAP_DESC_COUNTED;
	if (!(parent = create(st, &v, "st-rmap", "rmapread", "", 8 * MiB, BACKING_LAZY, 0)))
		goto out;
	vm_run(parent, RUN_TIMEOUT_MS);
	if (parent->state != VM_PAUSED || strcmp(parent->pause_reason, VM_PAUSE_CLONE_POINT) != 0) {
		ksnprintf(st->why, sizeof(st->why), "the guest did not reach its clone point");
		goto destroy;
	}
	for (; made < CLONES; made++) {
		ksnprintf(name, sizeof(name), "st-rmap-c%u", made);
		if (!(clones[made] = vm_clone(parent, name, err, sizeof(err)))) {
			ksnprintf(st->why, sizeof(st->why), "cannot clone: %s", err);
			goto destroy;
		}
	}
	for (unsigned i = 0; i < made; i++) {
		vm_run(clones[i], RUN_TIMEOUT_MS);
		ok += clones[i]->state == VM_EXITED && clones[i]->exit_status == 0;
	}
	/* Installs count in the VM that made them: the clones grew the chains. */
	longest = stat_read(&parent->mmu.stats.max_mmu_rmap_size);
	for (unsigned i = 0; i < made; i++)
		if (stat_read(&clones[i]->mmu.stats.max_mmu_rmap_size) > longest)
			longest = stat_read(&clones[i]->mmu.stats.max_mmu_rmap_size);
	ksnprintf(st->why, sizeof(st->why), "%u of %u clones read their data, longest chain %llu",
		  ok, made, (unsigned long long)longest);
	v = ok == CLONES && longest >= CLONES + 1 ? PASS : FAIL;
	audit(st, parent);
destroy:
	for (unsigned i = 0; i < made; i++)
		vm_destroy(clones[i]);
	audit(st, parent);
	vm_destroy(parent);
out:
	mmu_config.rmap_desc = saved;
	return v;
}

/* A snapshot of the restore_touch guest restored 64 KiB at a time: each
 * fault brings in a chunk, and forward prefetch maps the rest of it. */
static enum verdict check_prefetch(struct selftest *st)
{
	int saved = mmu_config.prefetch;
	const struct snapshot_image *img = NULL;
	enum verdict v = FAIL;
	char err[96] = "";
	struct vm *vm;
	uint64_t pages;

	mmu_config.prefetch = PREFETCH_FORWARD;
	if (!(vm = create(st, &v, "st-pf-source", "restore_touch", "mib=4", 16 * MiB,
			  BACKING_LAZY, 0)))
		goto out;
	vm_run(vm, RUN_TIMEOUT_MS);
	if (vm->state == VM_PAUSED && strcmp(vm->pause_reason, "snapshot point") == 0)
		img = snapshot_take(vm, "st-pf-image", err, sizeof(err));
	vm_destroy(vm);
	if (!img) {
		ksnprintf(st->why, sizeof(st->why), "no snapshot of the guest%s%s",
			  err[0] ? ": " : "", err);
		goto out;
	}
	if (!(vm = vm_restore("st-pf-run", img, 16, "order=forward", err, sizeof(err)))) {
		ksnprintf(st->why, sizeof(st->why), "cannot restore: %s", err);
		goto free;
	}
	if (run_to_exit(st, vm)) {
		pages = vm->mmu.stats.pf_prefetch_pages;
		ksnprintf(st->why, sizeof(st->why), "%llu pages prefetched, %llu faults",
			  (unsigned long long)pages, (unsigned long long)vm->mmu.stats.pf_taken);
		v = pages ? PASS : FAIL;
	}
	audit(st, vm);
	vm_destroy(vm);
free:
	snapshot_free(img);
out:
	mmu_config.prefetch = saved;
	return v;
}

/* guests/hello.c: its arguments and the memory rounded up to whole MiB. */
static const char *const hello_lines[] = {
	"hello from a multiboot guest", "args: \"from selftest\"", "memory: 16 MiB", NULL,
};

static const struct guest_check guests[] = {
	{ "hello", "from selftest", 16 * MiB, 0, hello_lines },
	{ "touch", "mib=8", 16 * MiB, 0, NULL },
	{ "fpu", "loops=300000", 16 * MiB, 0, NULL },
	{ "apic", "", 16 * MiB, 0, NULL },
	{ "pc", "", 128 * MiB, 0, NULL },
	/* Two vCPUs share one host CPU where there is only one. */
	{ "smp", "cpus=2 rounds=10", 16 * MiB, 2, NULL },
};

static const struct {
	const char *name;
	enum verdict (*run)(struct selftest *st);
} optimisations[] = {
	{ "leaf-hint", check_leaf_hint },
	{ "split-on-fault", check_split },
	{ "rmap-counted", check_rmap },
	{ "prefetch", check_prefetch },
};

static int cmd_selftest(int argc, char **argv)
{
	struct selftest st = { .audits_ok = true };
	const char *skip = vm_skip_reason();
	char name[32];

	if (argc > 1)
		return shell_usage_error("selftest", "unexpected argument '%s'", argv[1]);
	report(&st, "caps", check_caps(&st));
	for (unsigned i = 0; i < sizeof(guests) / sizeof(guests[0]); i++) {
		ksnprintf(name, sizeof(name), "guest-%s", guests[i].module);
		if (skip)
			ksnprintf(st.why, sizeof(st.why), "%s", skip);
		report(&st, name, skip ? SKIP : check_guest(&st, &guests[i]));
	}
	for (unsigned i = 0; i < sizeof(optimisations) / sizeof(optimisations[0]); i++) {
		if (skip)
			ksnprintf(st.why, sizeof(st.why), "%s", skip);
		report(&st, optimisations[i].name, skip ? SKIP : optimisations[i].run(&st));
	}
	if (skip)
		ksnprintf(st.why, sizeof(st.why), "%s", skip);
	else if (!st.audited)
		ksnprintf(st.why, sizeof(st.why), "no VM ran");
	else
		ksnprintf(st.why, sizeof(st.why), "%u audits of the VMs that ran", st.audited);
	report(&st, "audit", skip || !st.audited ? SKIP : st.audits_ok ? PASS : FAIL);
	kprintf("selftest: %u passed, %u failed, %u skipped\n", st.counts[PASS], st.counts[FAIL],
		st.counts[SKIP]);
	if (st.counts[FAIL])
		power_exit_failed = true;
	return st.counts[FAIL] ? 1 : 0;
}
SHELL_COMMAND(selftest, "selftest", cmd_selftest, "",
	      "check this machine: capabilities, the built-in guests, the audit, the optimisations");
