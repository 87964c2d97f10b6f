/* The scale benchmarks' probe guest (`bench faults`, `bench share`; docs/mmu.md,
 * "Faults, exits and Linux's boot against vCPUs"): exits measured where they
 * are cheapest, so that sprig's nested page fault path can be set against
 * the emulator's own limit; faults on many vCPUs at once; vCPUs that only
 * compute, for the scheduler's shares.
 *
 * Bare, on a CPU with SVM (QEMU `-cpu max`), the guest is itself the host of a
 * nested guest that runs nothing but VMMCALL: VMRUN, #VMEXIT, step over the
 * VMMCALL, VMRUN again, `exits=N` times (default 100000). No hypervisor's
 * code runs between two entries, so the rate is the emulator's limit for a
 * world switch. It prints "probe: svm ..." and a line
 * "@bench bench=exitloop in=bare mode=svm exits=N cycles=C cycles_per_exit=X
 * tsc_khz=K exits_per_s=E".
 *
 * Under sprig (which offers its guests no SVM) it runs, between two
 * HC_SNAPSHOT_POINT pauses so that the host times it and counts its exits:
 *   mode=cpuid   `exits=N` CPUIDs, each an exit to sprig and back;
 *   mode=faults  one write into each 4 KiB page of `mib=M` MiB from 4 MiB up
 *                (default 16), shared among `cpus=C` CPUs (default 1), all
 *                at once: on memory sprig maps as it is touched, a fault a page;
 *   mode=spin    each of `cpus=C` CPUs spins without exits for `ms=T`
 *                milliseconds (default 1000) of the TSC; the first pause comes
 *                once all of them spin, from the last to arrive.
 * Exit 0; 1 on bad arguments, bare without SVM, or a #VMEXIT that is not the
 * VMMCALL's. */
#include "arch/x86/msr.h"
#include "arch/x86/cpuinfo.h"
#include "guests/rt/cpu.h"
#include "guests/rt/rt.h"
#include "guests/rt/smp.h"
#include "guests/rt/tsc.h"
#include "svm/vmcb.h"
#include "virt/hypercall.h"

#define CPUID_EXT_SVM (1u << 2) /* CPUID 0x80000001 ECX */
#define VM_CR_SVMDIS (1ull << 4)
#define VMMCALL_LEN 3
#define L2_STACK_SIZE 4096
/* The runtime's GDT (guests/rt/entry.S): 64-bit code at 0x08, data at 0x10,
 * in the VMCB's packed attribute form (descriptor bits 8-15 and 20-23). */
#define RT_CODE_SEL 0x08
#define RT_DATA_SEL 0x10
#define ATTRIB_CODE64 0xa9b /* G L P S type 0xb */
#define ATTRIB_DATA 0xc93   /* G D P S type 0x3 */

static struct vmcb vmcb __attribute__((aligned(4096)));
static uint8_t host_save_area[4096] __attribute__((aligned(4096)));
static uint8_t l2_stack[L2_STACK_SIZE] __attribute__((aligned(16)));

/* The nested guest: one exit after another. */
void exitloop_l2(void);
asm(".text\n"
    ".globl exitloop_l2\n"
    "exitloop_l2:\n"
    "	vmmcall\n"
    "	jmp exitloop_l2\n");

struct table_reg {
	uint16_t limit;
	uint64_t base;
} __attribute__((packed));

static bool svm_usable(void)
{
	uint32_t a, b, c, d;

	cpuid(0x80000000, 0, &a, &b, &c, &d);
	if (a < 0x80000001)
		return false;
	cpuid(0x80000001, 0, &a, &b, &c, &d);
	return (c & CPUID_EXT_SVM) && !(rdmsr(MSR_VM_CR) & VM_CR_SVMDIS);
}

static void set_segment(struct vmcb_segment *s, uint16_t sel, uint16_t attrib)
{
	*s = (struct vmcb_segment){ .selector = sel, .attrib = attrib, .limit = 0xffffffff };
}

/* The nested guest runs in this guest's own mode, page tables and GDT, on a
 * stack of its own, with only VMRUN (which the APM requires) and VMMCALL
 * intercepted. */
static void vmcb_setup(void)
{
	struct table_reg gdt, idt;
	uint64_t cr0, cr4;

	asm volatile("sgdt %0; sidt %1" : "=m"(gdt), "=m"(idt));
	asm volatile("mov %%cr0, %0; mov %%cr4, %1" : "=r"(cr0), "=r"(cr4));
	vmcb.control.intercept_misc2 = INTERCEPT_VMRUN | INTERCEPT_VMMCALL;
	vmcb.control.asid = 1;
	set_segment(&vmcb.save.cs, RT_CODE_SEL, ATTRIB_CODE64);
	set_segment(&vmcb.save.ds, RT_DATA_SEL, ATTRIB_DATA);
	set_segment(&vmcb.save.es, RT_DATA_SEL, ATTRIB_DATA);
	set_segment(&vmcb.save.ss, RT_DATA_SEL, ATTRIB_DATA);
	vmcb.save.gdtr = (struct vmcb_segment){ .limit = gdt.limit, .base = gdt.base };
	vmcb.save.idtr = (struct vmcb_segment){ .limit = idt.limit, .base = idt.base };
	vmcb.save.efer = rdmsr(MSR_EFER);
	vmcb.save.cr0 = cr0;
	vmcb.save.cr3 = read_cr3();
	vmcb.save.cr4 = cr4;
	vmcb.save.dr6 = 0xffff0ff0;
	vmcb.save.dr7 = 0x400;
	vmcb.save.rflags = 2; /* interrupts off: nothing but the loop */
	vmcb.save.rip = (uint64_t)(uintptr_t)exitloop_l2;
	vmcb.save.rsp = (uint64_t)(uintptr_t)(l2_stack + L2_STACK_SIZE);
	vmcb.save.g_pat = rdmsr(MSR_PAT);
}

/* RAX holds the VMCB's address; VMRUN saves and restores only RAX, RSP and
 * RIP of the general registers, so the others are the compiler's to lose. */
static void vmrun(void)
{
	asm volatile("vmrun"
		     : : "a"((uint64_t)(uintptr_t)&vmcb)
		     : "rbx", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13",
		       "r14", "r15", "memory", "cc");
}

static int svm_loop(unsigned long exits)
{
	uint64_t t;

	if (!svm_usable()) {
		printf("probe: no SVM on this CPU\n");
		return 1;
	}
	tsc_calibrate();
	wrmsr(MSR_EFER, rdmsr(MSR_EFER) | EFER_SVME);
	wrmsr(MSR_VM_HSAVE_PA, (uint64_t)(uintptr_t)host_save_area);
	vmcb_setup();
	asm volatile("clgi" ::: "memory");
	t = rdtsc();
	for (unsigned long i = 0; i < exits; i++) {
		vmrun();
		if (vmcb.control.exit_code != SVM_EXIT_VMMCALL) {
			asm volatile("stgi" ::: "memory");
			printf("probe: exit %lu has code 0x%llx, not VMMCALL's\n", i,
			       (unsigned long long)vmcb.control.exit_code);
			return 1;
		}
		vmcb.save.rip += VMMCALL_LEN;
	}
	t = rdtsc() - t;
	asm volatile("stgi" ::: "memory");
	wrmsr(MSR_EFER, rdmsr(MSR_EFER) & ~(uint64_t)EFER_SVME);
	printf("probe: svm %lu exits in %llu cycles\n", exits, (unsigned long long)t);
	printf("@bench bench=exitloop in=bare mode=svm exits=%lu cycles=%llu cycles_per_exit=%llu "
	       "tsc_khz=%llu exits_per_s=%llu\n", exits, (unsigned long long)t,
	       (unsigned long long)(t / exits), (unsigned long long)tsc_khz,
	       (unsigned long long)(exits * tsc_khz * 1000 / t));
	return 0;
}

static uint64_t fault_pages, spin_tsc;
static volatile uint64_t spin_end; /* 0 until every CPU spins */
static volatile unsigned int spinning;
static unsigned int work_cpus;

static void touch_share(unsigned int cpu)
{
	uint64_t first, end;

	smp_share(fault_pages, 1, cpu, work_cpus, &first, &end);
	for (uint64_t i = first; i < end; i++)
		*(volatile uint64_t *)(GUEST_PLAYGROUND + i * PAGE_SIZE) = i | 1;
}

/* Once every CPU spins, the last to arrive pauses the VM (the host starts
 * counting there) and starts the clock; so the vCPUs' times are compared
 * over a span in which all of them wanted their CPU. No PAUSE in the loops:
 * a PAUSE exit would end the vCPU's slice early. */
static void spin(unsigned int cpu)
{
	(void)cpu;
	if (__atomic_add_fetch(&spinning, 1, __ATOMIC_SEQ_CST) == work_cpus) {
		hypercall(HC_SNAPSHOT_POINT, 0, 0, 0, 0);
		spin_end = rdtsc() + spin_tsc;
	}
	while (!spin_end || rdtsc() < spin_end)
		;
}

static void cpuid_loop(unsigned long exits)
{
	uint32_t a, b, c, d;

	for (unsigned long i = 0; i < exits; i++)
		cpuid(0, 0, &a, &b, &c, &d);
}

enum probe_mode { MODE_CPUID, MODE_FAULTS, MODE_SPIN };

static int under_sprig_mode(const struct mb1_info *mbi, unsigned long exits)
{
	static const char *const modes[] = { "mode=cpuid", "mode=faults", "mode=spin" };
	unsigned long mib = arg_ulong(mbi, "mib", 16), ms = arg_ulong(mbi, "ms", 1000);
	int mode = -1;

	for (int m = MODE_CPUID; m <= MODE_SPIN; m++)
		if (first_arg_is(mbi, modes[m]))
			mode = m;
	if (mode < 0) {
		printf("probe: under sprig, the first argument is mode=cpuid, mode=faults or "
		       "mode=spin\n");
		return 1;
	}
	work_cpus = (unsigned int)arg_ulong(mbi, "cpus", 1);
	fault_pages = mib * MIB / PAGE_SIZE;
	if (mode == MODE_FAULTS && !playground_fits(mbi, mib * MIB))
		return 1;
	if (mode != MODE_CPUID && (!work_cpus || !smp_workers(mbi, work_cpus, "probe")))
		return 1;
	tsc_calibrate();
	spin_tsc = us_to_tsc(ms * 1000);
	if (mode != MODE_SPIN)
		hypercall(HC_SNAPSHOT_POINT, 0, 0, 0, 0);
	if (mode == MODE_CPUID)
		cpuid_loop(exits);
	else if (!smp_run(mode == MODE_FAULTS ? touch_share : spin))
		return 1;
	hypercall(HC_SNAPSHOT_POINT, 0, 0, 0, 0);
	return 0;
}

int main(const struct mb1_info *mbi)
{
	unsigned long exits = arg_ulong(mbi, "exits", 100000);

	if (!exits) {
		printf("probe: exits=0\n");
		return 1;
	}
	return under_sprig() ? under_sprig_mode(mbi, exits) : svm_loop(exits);
}
