/* Console commands about the machine and sprig itself. */
#include "arch/x86/acpi.h"
#include "arch/x86/apic.h"
#include "arch/x86/cpuinfo.h"
#include "arch/x86/power.h"
#include "arch/x86/tsc.h"
#include "lib/print.h"
#include "lib/string.h"
#include "mm/frame.h"
#include "virt/fpu.h"
#include "virt/kernel.h"
#include "virt/shell.h"
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

static int cmd_cpus(int argc, char **argv)
{
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
	return 0;
}
SHELL_COMMAND(cpus, "cpus", cmd_cpus, "", "CPU vendor, SVM/VMX, NPT/EPT capabilities, CPU count");

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
static int cmd_panic_test(int argc, char **argv)
{
	const char *kind = argc > 1 ? argv[1] : "pf";
	if (argc > 2)
		return shell_usage_error("panic-test", "unexpected argument '%s'", argv[2]);
	if (strcmp(kind, "pf") == 0) {
		/* Beyond the identity map: a not-present page fault with CR2 set. */
		volatile uint64_t *p = (volatile uint64_t *)(mapped_top + 0x1234000);
		__asm__ volatile("mov $0x5151515151515151, %%r15" ::: "r15");
		*p = 1;
	} else if (strcmp(kind, "wx") == 0) {
		/* sprig's text is read-only: a protection fault on write. */
		*(volatile uint8_t *)(uintptr_t)cmd_panic_test = 0xc3;
	} else if (strcmp(kind, "nx") == 0) {
		/* Data is never executable: a fetch fault. */
		static uint8_t ret_insn = 0xc3;
		((void (*)(void))(uintptr_t)&ret_insn)();
	} else if (strcmp(kind, "ud") == 0) {
		__asm__ volatile("ud2");
	} else if (strcmp(kind, "gp") == 0) {
		volatile uint64_t *p = (volatile uint64_t *)0x8000000000000000ull; /* non-canonical */
		*p = 1;
	} else {
		return shell_usage_error("panic-test", "unknown kind '%s'", kind);
	}
	return 0;
}
SHELL_COMMAND(panic_test, "panic-test", cmd_panic_test, "[pf|wx|nx|ud|gp]",
	      "raise a CPU exception on purpose (the report, then the CPU stops)");
