/* Console commands about the machine and sprig itself. */
#include "arch/x86/acpi.h"
#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpuinfo.h"
#include "arch/x86/percpu.h"
#include "arch/x86/power.h"
#include "arch/x86/smp.h"
#include "arch/x86/tsc.h"
#include "lib/parse.h"
#include "lib/print.h"
#include "lib/string.h"
#include "mm/frame.h"
#include "virt/fpu.h"
#include "boot/boot_info.h"
#include "boot/paging.h"
#include "shell/shell.h"
#include "virt/state_check.h"

#define NO_ARGS(cmd)                                                                   \
	do {                                                                           \
		if (argc > 1)                                                          \
			return shell_usage_error(cmd, "unexpected argument '%s'", argv[1]); \
	} while (0)

static int cmd_version(int argc, char **argv)
{
	NO_ARGS("version");
	kprintf("sprig %s (built with gcc %s)\n", SPRIG_VERSION, __VERSION__);
	return 0;
}
SHELL_COMMAND(version, "version", cmd_version, "", "show sprig's version");

static int cmd_mem(int argc, char **argv)
{
	NO_ARGS("mem");
	frame_print_stats();
	return 0;
}
SHELL_COMMAND(mem, "mem", cmd_mem, "", "total and free memory, free blocks by size");

/* How long an online CPU has to answer `cpus` before it counts as failed. */
#define ANSWER_TIMEOUT_US 100000

static void answer(void *arg)
{
	__atomic_store_n((uint64_t *)arg, 1, __ATOMIC_RELEASE);
}

/* Spin until *v is no longer old, at most ANSWER_TIMEOUT_US from TSC t0;
 * the time since t0 in nanoseconds, or -1. */
static long long wait_answer(const uint64_t *v, uint64_t old, uint64_t t0)
{
	uint64_t end = t0 + tsc_from_us(ANSWER_TIMEOUT_US), now;

	do {
		now = rdtsc();
		if (__atomic_load_n(v, __ATOMIC_ACQUIRE) != old)
			return (long long)tsc_to_ns(now - t0);
		cpu_relax();
	} while (now < end);
	return -1;
}

/* An online AP proves that it runs: a function through smp_call (unless it
 * is busy with one already), then a kick, each timed from here to the AP's
 * answer; what it showed goes to how. The answer flags are static: an AP
 * that answers late must not write to a stack that is gone. */
static bool cpu_answers(unsigned id, char *how, size_t len)
{
	static uint64_t answered[CPU_MAX];
	struct percpu *pc = percpu_of(id);
	long long call_ns, kick_ns;
	uint64_t kicks, t0;
	int n;

	if (smp_busy(id)) {
		n = ksnprintf(how, len, " busy");
	} else {
		__atomic_store_n(&answered[id], 0, __ATOMIC_RELAXED);
		t0 = rdtsc();
		if (!smp_call(id, answer, &answered[id]) ||
		    (call_ns = wait_answer(&answered[id], 0, t0)) < 0) {
			ksnprintf(how, len, " (no answer to smp_call within %d ms)",
				  ANSWER_TIMEOUT_US / 1000);
			return false;
		}
		n = ksnprintf(how, len, " call %lld ns", call_ns);
	}
	kicks = __atomic_load_n(&pc->kicks, __ATOMIC_ACQUIRE);
	t0 = rdtsc();
	smp_kick(id);
	if ((kick_ns = wait_answer(&pc->kicks, kicks, t0)) < 0) {
		ksnprintf(how + n, len - n, " (no answer to a kick within %d ms)",
			  ANSWER_TIMEOUT_US / 1000);
		return false;
	}
	ksnprintf(how + n, len - n, " kick %lld ns", kick_ns);
	return true;
}

static const char *const cpu_state_names[] = {
	[CPU_OFFLINE] = "offline", [CPU_ONLINE] = "online", [CPU_FAILED] = "failed",
};

static int cmd_cpus(int argc, char **argv)
{
	unsigned online = 0;

	NO_ARGS("cpus");
	cpuinfo_print(acpi_cpu_count());
	kprintf("tsc: %llu kHz (%s)\n", (unsigned long long)tsc_khz(), tsc_source());
	kprintf("apic: %s id %u\n", apic_mode(), apic_id());
	/* What a snapshot image's FPU state must match (docs/snapshot.md). */
	struct fpu_limits fpu;
	fpu_limits(&fpu);
	kprintf("vcpu-fpu: %s area %u bytes, xcr0 up to 0x%llx, mxcsr mask 0x%x\n",
		fpu.xsave ? "xsave" : "fxsave", fpu.area_bytes,
		(unsigned long long)fpu.xcr0_allowed, fpu.mxcsr_mask);
	for (unsigned id = 0; id < smp_cpu_count(); id++) {
		enum cpu_state st = smp_cpu_state(id);
		char how[64] = "";

		if (st == CPU_ONLINE && id == this_cpu_id())
			ksnprintf(how, sizeof(how), " (this one)");
		else if (st == CPU_ONLINE && !cpu_answers(id, how, sizeof(how)))
			st = CPU_FAILED;
		kprintf("cpu %u apic %u %s%s\n", id, smp_apic_id(id), cpu_state_names[st], how);
		online += st == CPU_ONLINE;
	}
	kprintf("%u online\n", online);
	return 0;
}
SHELL_COMMAND(cpus, "cpus", cmd_cpus, "",
	      "CPU vendor, SVM/VMX, NPT/EPT capabilities; each CPU's state, its smp_call and kick times");

static int cmd_cmdline(int argc, char **argv)
{
	NO_ARGS("cmdline");
	kprintf("cmdline: %s\n", boot_info.cmdline);
	return 0;
}
SHELL_COMMAND(cmdline, "cmdline", cmd_cmdline, "", "the kernel command line");

static int cmd_modules(int argc, char **argv)
{
	NO_ARGS("modules");
	if (!boot_info.n_modules)
		kprintf("modules: none\n");
	for (size_t i = 0; i < boot_info.n_modules; i++) {
		const struct boot_module *m = &boot_info.modules[i];
		kprintf("module %zu: 0x%llx-0x%llx (%llu bytes) %s\n", i,
			(unsigned long long)m->start, (unsigned long long)m->end,
			(unsigned long long)(m->end - m->start), m->cmdline);
	}
	return 0;
}
SHELL_COMMAND(modules, "modules", cmd_modules, "", "the modules GRUB loaded");

static int cmd_reboot(int argc, char **argv)
{
	NO_ARGS("reboot");
	power_reboot();
}
SHELL_COMMAND(reboot, "reboot", cmd_reboot, "", "reset the machine");

static int cmd_poweroff(int argc, char **argv)
{
	NO_ARGS("poweroff");
	power_off();
}
SHELL_COMMAND(poweroff, "poweroff", cmd_poweroff, "", "switch the machine off (ACPI, or QEMU's/Bochs' exit port)");

/* Raise an exception on purpose, to see (and test) the report it prints. */
enum panic_kind { PANIC_PF, PANIC_WX, PANIC_NX, PANIC_UD, PANIC_GP, PANIC_KINDS };
static const char *const panic_kinds[PANIC_KINDS] = {
	[PANIC_PF] = "pf", [PANIC_WX] = "wx", [PANIC_NX] = "nx", [PANIC_UD] = "ud", [PANIC_GP] = "gp",
};

/* kind: an enum panic_kind, as smp_call's argument. */
static void raise_exception(void *kind)
{
	switch ((enum panic_kind)(uintptr_t)kind) {
	case PANIC_PF: {
		/* Beyond the identity map: a not-present page fault with CR2 set. */
		volatile uint64_t *p = (volatile uint64_t *)(paging_mapped_top + 0x1234000);
		__asm__ volatile("mov $0x5151515151515151, %%r15" ::: "r15");
		*p = 1;
		break;
	}
	case PANIC_WX:
		/* sprig's text is read-only: a protection fault on write. */
		*(volatile uint8_t *)(uintptr_t)raise_exception = 0xc3;
		break;
	case PANIC_NX: {
		/* Data is never executable: a fetch fault. */
		static uint8_t ret_insn = 0xc3;
		((void (*)(void))(uintptr_t)&ret_insn)();
		break;
	}
	case PANIC_UD:
		__asm__ volatile("ud2");
		break;
	case PANIC_GP:
	case PANIC_KINDS: {
		volatile uint64_t *p = (volatile uint64_t *)0x8000000000000000ull; /* non-canonical */
		*p = 1;
		break;
	}
	}
}

static int cmd_panic_test(int argc, char **argv)
{
	const char *kind = NULL, *cpu = NULL;
	uintptr_t k = 0;
	uint64_t id;

	for (int i = 1; i < argc; i++) {
		if (strncmp(argv[i], "cpu=", 4) == 0 && !cpu)
			cpu = argv[i] + 4;
		else if (!kind && strchr(argv[i], '=') == NULL)
			kind = argv[i];
		else
			return shell_usage_error("panic-test", "unexpected argument '%s'", argv[i]);
	}
	if (!kind)
		kind = panic_kinds[PANIC_PF];
	while (k < PANIC_KINDS && strcmp(panic_kinds[k], kind) != 0)
		k++;
	if (k == PANIC_KINDS)
		return shell_usage_error("panic-test", "unknown kind '%s'", kind);
	if (!cpu || (parse_u64(cpu, &id) && id == this_cpu_id())) {
		raise_exception((void *)k);
		return 0;
	}
	/* On another CPU: its report comes while the console goes on here. */
	if (!parse_u64_in(cpu, 0, smp_cpu_count() - 1, &id) ||
	    !smp_call((unsigned)id, raise_exception, (void *)k))
		return shell_usage_error("panic-test", "cpu %s is not an idle online CPU", cpu);
	kprintf("panic-test: %s raised on cpu %llu\n", kind, (unsigned long long)id);
	return 0;
}
SHELL_COMMAND(panic_test, "panic-test", cmd_panic_test, "[pf|wx|nx|ud|gp] [cpu=N]",
	      "raise a CPU exception on purpose (the report, then that CPU stops)");
