/* The scale benchmarks' probe guest (`bench faults`, `bench share`; docs/mmu.md,
 * "Faults, exits and Linux's boot against vCPUs"): exits measured where they
 * are cheapest, so that sprig's nested page fault path can be set against
 * the emulator's own limit; faults on many vCPUs at once; vCPUs that only
 * compute, for the scheduler's shares.
 *
 * Bare, on a CPU with SVM (QEMU `-cpu max`), the guest is itself the host of a
 * nested guest, and runs three loops of `exits=N` exits each (default
 * 100000) with no hypervisor's code between two entries: the emulator's own
 * limits.
 *   svm  the nested guest runs nothing but VMMCALL: VMRUN, #VMEXIT, step
 *        over the VMMCALL, VMRUN again (a world switch);
 *   npt  the same with nested paging on (an identity map of 2 MiB pages),
 *        as every guest of sprig runs;
 *   npf  the nested guest writes one byte into each page of a 2 MiB window
 *        the nested page table maps page by page, and each write's nested
 *        page fault is answered by mapping its page; once the whole window
 *        is mapped it is unmapped again with a TLB flush (a fault's minimum).
 * Each loop prints "probe: MODE ..." and a line "@bench bench=exitloop
 * in=bare mode=MODE exits=N cycles=C cycles_per_exit=X tsc_khz=K
 * exits_per_s=E".
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
 * Exit 0; 1 on bad arguments, bare without SVM or nested paging, or a #VMEXIT
 * that is not the loop's. */
#include "arch/x86/msr.h"
#include "arch/x86/cpuinfo.h"
#include "guests/rt/cpu.h"
#include "guests/rt/rt.h"
#include "guests/rt/smp.h"
#include "guests/rt/tsc.h"
#include "svm/vmcb.h"
#include "virt/hypercall.h"

#define CPUID_EXT_SVM (1u << 2) /* CPUID 0x80000001 ECX */
#define CPUID_SVM_NPT (1u << 0) /* CPUID 0x8000000A EDX */
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

/* The npf loop's nested guest: a byte into each page of the window at RAX,
 * round and round (the window is 2 MiB-aligned; the AND wraps RAX). */
#define NPF_WINDOW GUEST_PLAYGROUND
#define NPF_WRAP_MASK 0x5ff000 /* a literal: the assembler takes it as text */
#define STRINGIFY(x) #x
#define EXPAND_STRINGIFY(x) STRINGIFY(x)
_Static_assert(NPF_WRAP_MASK == (NPF_WINDOW | 0x1ff000), "the AND below wraps in the window");
void npf_l2(void);
asm(".text\n"
    ".globl npf_l2\n"
    "npf_l2:\n"
    "	movb $1, (%rax)\n"
    "	add $0x1000, %rax\n"
    "	and $" EXPAND_STRINGIFY(NPF_WRAP_MASK) ", %rax\n"
    "	jmp npf_l2\n");

/* Nested page tables: the first 4 GiB identity-mapped with 2 MiB pages, the
 * npf window by a table of 4 KiB entries that the loop fills. The nested
 * guest's accesses count as user accesses, hence U at every level. */
#define NPT_P (1ull << 0)
#define NPT_RW (1ull << 1)
#define NPT_U (1ull << 2)
#define NPT_PS (1ull << 7)
#define NPT_TABLE (NPT_P | NPT_RW | NPT_U)
static uint64_t npt_pml4[512] __attribute__((aligned(4096)));
static uint64_t npt_pdpt[512] __attribute__((aligned(4096)));
static uint64_t npt_pd[4][512] __attribute__((aligned(4096)));
static uint64_t npt_window[512] __attribute__((aligned(4096)));

static void npt_window_clear(void)
{
	for (unsigned j = 0; j < 512; j++)
		npt_window[j] = 0;
}

static void npt_setup(bool window)
{
	npt_pml4[0] = (uint64_t)(uintptr_t)npt_pdpt | NPT_TABLE;
	for (unsigned i = 0; i < 4; i++) {
		npt_pdpt[i] = (uint64_t)(uintptr_t)npt_pd[i] | NPT_TABLE;
		for (unsigned j = 0; j < 512; j++)
			npt_pd[i][j] = ((uint64_t)(i * 512 + j) << 21) | NPT_TABLE | NPT_PS;
	}
	npt_window_clear();
	if (window)
		npt_pd[0][NPF_WINDOW >> 21] = (uint64_t)(uintptr_t)npt_window | NPT_TABLE;
}

struct table_reg {
	uint16_t limit;
	uint64_t base;
} __attribute__((packed));

/* SVM, enabled by the firmware; *npt whether nested paging comes with it. */
static bool svm_usable(bool *npt)
{
	uint32_t a, b, c, d, max;

	cpuid(0x80000000, 0, &max, &b, &c, &d);
	if (max < 0x80000001)
		return false;
	cpuid(0x80000001, 0, &a, &b, &c, &d);
	if (!(c & CPUID_EXT_SVM) || (rdmsr(MSR_VM_CR) & VM_CR_SVMDIS))
		return false;
	*npt = false;
	if (max >= 0x8000000a) {
		cpuid(0x8000000a, 0, &a, &b, &c, &d);
		*npt = d & CPUID_SVM_NPT;
	}
	return true;
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

enum bare_mode { BARE_SVM, BARE_NPT, BARE_NPF, BARE_MODES };

static const char *const bare_names[BARE_MODES] = { "svm", "npt", "npf" };

/* One loop of the mode's exits from a fresh VMCB; false if an exit was not
 * the loop's. */
static bool bare_loop(enum bare_mode mode, unsigned long exits)
{
	uint64_t t, expected = mode == BARE_NPF ? SVM_EXIT_NPF : SVM_EXIT_VMMCALL;
	unsigned mapped = 0;

	vmcb = (struct vmcb){ 0 };
	vmcb_setup();
	if (mode != BARE_SVM) {
		npt_setup(mode == BARE_NPF);
		vmcb.control.nested_ctl = 1;
		vmcb.control.nested_cr3 = (uint64_t)(uintptr_t)npt_pml4;
	}
	if (mode == BARE_NPF) {
		vmcb.save.rip = (uint64_t)(uintptr_t)npf_l2;
		vmcb.save.rax = NPF_WINDOW;
	}
	asm volatile("clgi" ::: "memory");
	t = rdtsc();
	for (unsigned long i = 0; i < exits; i++) {
		vmrun();
		if (vmcb.control.exit_code != expected) {
			asm volatile("stgi" ::: "memory");
			printf("probe: %s exit %lu has code 0x%llx, not 0x%llx\n", bare_names[mode], i,
			       (unsigned long long)vmcb.control.exit_code,
			       (unsigned long long)expected);
			return false;
		}
		if (mode != BARE_NPF) {
			vmcb.save.rip += VMMCALL_LEN;
			continue;
		}
		/* Not present before: no flush needed to map it (APM 15.16). */
		npt_window[(vmcb.control.exit_info2 >> 12) & 511] =
			(vmcb.control.exit_info2 & ~0xfffull) | NPT_TABLE;
		vmcb.control.tlb_control = TLB_CONTROL_NONE;
		if (++mapped == 512) {
			npt_window_clear();
			vmcb.control.tlb_control = TLB_CONTROL_FLUSH_ALL;
			mapped = 0;
		}
	}
	t = rdtsc() - t;
	asm volatile("stgi" ::: "memory");
	printf("probe: %s %lu exits in %llu cycles\n", bare_names[mode], exits,
	       (unsigned long long)t);
	printf("@bench bench=exitloop in=bare mode=%s exits=%lu cycles=%llu cycles_per_exit=%llu "
	       "tsc_khz=%llu exits_per_s=%llu\n", bare_names[mode], exits, (unsigned long long)t,
	       (unsigned long long)(t / exits), (unsigned long long)tsc_khz,
	       (unsigned long long)(exits * tsc_khz * 1000 / t));
	return true;
}

static int svm_loops(const struct mb1_info *mbi, unsigned long exits)
{
	bool npt, ok = true;

	if (!svm_usable(&npt)) {
		printf("probe: no SVM on this CPU\n");
		return 1;
	}
	if (!npt) {
		printf("probe: SVM without nested paging\n");
		return 1;
	}
	if (!playground_fits(mbi, 2 * MIB))
		return 1;
	tsc_calibrate();
	wrmsr(MSR_EFER, rdmsr(MSR_EFER) | EFER_SVME);
	wrmsr(MSR_VM_HSAVE_PA, (uint64_t)(uintptr_t)host_save_area);
	for (int m = BARE_SVM; m < BARE_MODES && ok; m++)
		ok = bare_loop(m, exits);
	wrmsr(MSR_EFER, rdmsr(MSR_EFER) & ~(uint64_t)EFER_SVME);
	return ok ? 0 : 1;
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
	return under_sprig() ? under_sprig_mode(mbi, exits) : svm_loops(mbi, exits);
}
