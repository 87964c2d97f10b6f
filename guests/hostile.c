/* The hostile guest: attacks its hypervisor from inside, one way per mode
 * (the first argument), for tests/e2e/e2e_hostile.py. It installs an IDT that
 * catches every exception it provokes, prints one "PASS MODE: ..." or
 * "FAIL MODE: ..." line per check and exits 0 when all passed, 1 otherwise.
 * Modes that end with sprig stopping the VM say so.
 *   hypercall      hostile hypercall arguments: ranges outside memory, huge
 *                  and wrapping ones, zero lengths; register preservation;
 *                  KVM's numbers answered as KVM answers them (KVM_HC_SEND_IPI
 *                  to nobody 0, with a shorthand -KVM_EINVAL; HC_EXIT with bit
 *                  32 set is no HC_EXIT); then
 *                  an unknown number in sprig's range: the VM must be
 *                  stopped as an unknown hypercall
 *   usercall       HC_PUTS and HC_EXIT from user mode (CPL 3), then SYSCALL
 *                  back to CPL 0 to report: both must be refused (HC_EPERM)
 *   msr            every MSR sprig offers, read and written with edge values,
 *                  and random MSR numbers: each access #GP or a sane value;
 *                  prints a hash of all outcomes (seed=N picks the numbers),
 *                  which must not depend on SVM or VMX
 *   msr-policy     the writes that must raise #GP on both backends: all-ones
 *                  PAT, non-canonical FS/GS base and LSTAR, EFER with LME or
 *                  LMA cleared while paging, ...; and valid ones read back
 *   cpuid          CPUID over every leaf in range, the hypervisor range, past
 *                  the ends, and random leaves: deterministic, VMX/SVM hidden
 *   priv NAME      one privileged instruction (invd wbinvd rdpmc monitor mwait
 *                  invlpga vmrun vmload vmsave clgi stgi skinit vmxon vmcall
 *                  vmmcall lgdt-noncanon lgdt-outside xsetbv rdtscp
 *                  invpcid cr4-vmxe outsb insb): prints what happened, if it
 *                  can; outsb and insb also check what they moved
 *   ports          every port 0-0xffff read and written (but the exit port)
 *   mmio read|write|fetch   an access outside guest memory: reads all ones,
 *                  writes dropped (the VM stops with strict_mmio=on); running
 *                  code there stops the VM
 *   spin           cli; jmp . for ever
 *   exits          out to port 0x80 for ever (an exit each time)
 *   modes          long -> protected -> 32-bit paging -> PAE paging -> real
 *                  -> protected -> long mode (hostile/modes.S) and checks
 *                  there, then the trip again ending in a triple fault in
 *                  real mode
 *   storm cpus=N [iters=K] [seed=S] [main=MODE]
 *                  every vCPU at once (hostile/storm.c): the BSP runs MODE
 *                  first (one of the above that takes no second word), then
 *                  every CPU K random steps of pc-testdev flushes, balloon
 *                  releases, CR writes, mode trips, probes and MMIO, its data
 *                  checked after each; "PASS storm: ..." and exit 0 when all
 *                  held, for tests/soak.py's hostile-smp mode */
#include "arch/x86/msr.h"
#include "guests/hostile/hostile.h"
#include "guests/rt/idt.h"
#include "guests/rt/rt.h"
#include "guests/rt/smp.h"
#include "virt/msr_policy.h"
#include "virt/hypercall.h"

#define VEC_UD 6
#define VEC_GP 13
#define NO_TRAP (-1)
#define RFLAGS_RF (1ul << 16)
#define EXIT_UNEXPECTED_TRAP 3
#define CR4_OSXSAVE (1ul << 18)
#define CR4_VMXE (1ul << 13)
#define CR0_PG (1ul << 31)
#define NONCANONICAL 0x8000000000000000ul

static const char *mode = "";
static int failures;

/* ------------------------------------------------------------------ */
/* Exceptions, through the runtime's IDT (rt/idt.c). An instruction run
 * with TRY resumes after itself if it faults, with the vector recorded. */

/* Where a caught exception resumes (0: none expected), and what it was. */
volatile uint64_t trap_fixup;
volatile int trap_vector;
volatile uint64_t trap_error;
volatile uint64_t trap_rflags; /* as the exception pushed them */

static void hostile_trap(struct frame *f)
{
	if (trap_fixup) {
		trap_vector = (int)f->vector;
		trap_error = f->error;
		trap_rflags = f->rflags;
		f->rip = trap_fixup;
		trap_fixup = 0;
		return;
	}
	printf("FAIL %s: unexpected exception %lu (error 0x%lx) at RIP 0x%lx\n", mode,
	       f->vector, f->error, f->rip);
	exit(EXIT_UNEXPECTED_TRAP);
}

#define COMMA ,

/* Run INSN (asm text) with the given operands; evaluates to the vector it
 * raised, or NO_TRAP. r11 carries the resume address. */
#define TRY(insn, outputs, inputs, ...)                                              \
	({                                                                           \
		trap_vector = NO_TRAP;                                               \
		asm volatile("leaq 1f(%%rip), %%r11\n\t"                              \
			     "movq %%r11, trap_fixup(%%rip)\n\t" insn "\n"            \
			     "1:\n\tmovq $0, trap_fixup(%%rip)"                         \
			     : outputs                                               \
			     : inputs                                                \
			     : "r11", "memory", ##__VA_ARGS__);                      \
		trap_vector;                                                         \
	})

static int rdmsr_safe(uint32_t msr, uint64_t *val)
{
	uint32_t lo = 0, hi = 0;
	int vec = TRY("rdmsr", "=a"(lo) COMMA "=d"(hi), "c"(msr));

	*val = vec == NO_TRAP ? (uint64_t)hi << 32 | lo : 0;
	return vec;
}

static int wrmsr_safe(uint32_t msr, uint64_t val)
{
	return TRY("wrmsr", , "c"(msr) COMMA "a"((uint32_t)val) COMMA "d"((uint32_t)(val >> 32)));
}

static uint64_t rdmsr(uint32_t msr)
{
	uint64_t v = 0;

	if (rdmsr_safe(msr, &v) != NO_TRAP) {
		printf("FAIL %s: RDMSR 0x%x raised #%d\n", mode, msr, trap_vector);
		failures++;
	}
	return v;
}

static const char *vector_name(int vec)
{
	static char buf[8];

	if (vec == NO_TRAP)
		return "completed";
	if (vec == VEC_UD)
		return "#UD";
	if (vec == VEC_GP)
		return "#GP";
	buf[0] = '#';
	buf[1] = (char)('0' + vec / 10);
	buf[2] = (char)('0' + vec % 10);
	buf[3] = 0;
	return buf;
}

/* ------------------------------------------------------------------ */
/* Helpers (guests have no libc). */

static bool streq(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return *a == *b;
}

static void check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s %s: ", ok ? "PASS" : "FAIL", mode);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!ok)
		failures++;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ul;

static uint64_t rng(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static uint64_t fnv(uint64_t h, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		h ^= (v >> (8 * i)) & 0xff;
		h *= 0x100000001b3ul;
	}
	return h;
}

static bool vendor_amd(void)
{
	uint32_t a, b, c, d;

	cpuid(0, 0, &a, &b, &c, &d);
	return b == 0x68747541 || b == 0x6f677948; /* "Auth", "Hygo" */
}

static uint64_t read_cr0(void)
{
	uint64_t v;

	asm volatile("mov %%cr0, %0" : "=r"(v));
	return v;
}

static uint64_t read_cr4(void)
{
	uint64_t v;

	asm volatile("mov %%cr4, %0" : "=r"(v));
	return v;
}

/* The first byte past the RAM that mem_upper reports. */
static uint64_t ram_end(const struct mb1_info *mbi)
{
	return MIB + (uint64_t)mbi->mem_upper * KIB;
}

/* ------------------------------------------------------------------ */
/* hypercall */

/* RDI and R8-R15 around HC_VERSION: none may change (virt/hypercall.h:
 * "every other register is preserved"). */
static bool hypercall_keeps_registers(void)
{
	uint64_t buf[19];
	bool kept = true;

	for (int i = 0; i < 9; i++)
		buf[i] = 0x1111111111111111ul * (uint64_t)(i + 1);
	buf[18] = vendor_amd();
	asm volatile("pushq %%rbx\n\t"
		     "pushq %%rbp\n\t"
		     "pushq %%r12\n\t"
		     "pushq %%r13\n\t"
		     "pushq %%r14\n\t"
		     "pushq %%r15\n\t"
		     "movq 0(%%rsi), %%rdi\n\t"
		     "movq 8(%%rsi), %%r8\n\t"
		     "movq 16(%%rsi), %%r9\n\t"
		     "movq 24(%%rsi), %%r10\n\t"
		     "movq 32(%%rsi), %%r11\n\t"
		     "movq 40(%%rsi), %%r12\n\t"
		     "movq 48(%%rsi), %%r13\n\t"
		     "movq 56(%%rsi), %%r14\n\t"
		     "movq 64(%%rsi), %%r15\n\t"
		     "xorl %%eax, %%eax\n\t" /* HC_VERSION */
		     "xorl %%ebx, %%ebx\n\t"
		     "xorl %%ecx, %%ecx\n\t"
		     "xorl %%edx, %%edx\n\t"
		     "cmpq $0, 144(%%rsi)\n\t"
		     "je 1f\n\t"
		     "vmmcall\n\t"
		     "jmp 2f\n"
		     "1:\tvmcall\n"
		     "2:\tmovq %%rdi, 72(%%rsi)\n\t"
		     "movq %%r8, 80(%%rsi)\n\t"
		     "movq %%r9, 88(%%rsi)\n\t"
		     "movq %%r10, 96(%%rsi)\n\t"
		     "movq %%r11, 104(%%rsi)\n\t"
		     "movq %%r12, 112(%%rsi)\n\t"
		     "movq %%r13, 120(%%rsi)\n\t"
		     "movq %%r14, 128(%%rsi)\n\t"
		     "movq %%r15, 136(%%rsi)\n\t"
		     "popq %%r15\n\t"
		     "popq %%r14\n\t"
		     "popq %%r13\n\t"
		     "popq %%r12\n\t"
		     "popq %%rbp\n\t"
		     "popq %%rbx"
		     :
		     : "S"(buf)
		     : "rax", "rcx", "rdx", "rdi", "r8", "r9", "r10", "r11", "memory");
	for (int i = 0; i < 9; i++)
		kept &= buf[9 + i] == buf[i];
	return kept;
}

static int mode_hypercall(const struct mb1_info *mbi)
{
	static char buf[64];
	static const char msg[] = "hypercall: HC_PUTS of a valid range\n";
	uint64_t end = ram_end(mbi), page = GUEST_PLAYGROUND;
	long r;
	struct {
		const char *what;
		unsigned long nr, a1, a2;
		long want;
	} cases[] = {
		{ "HC_PUTS past the end of RAM", HC_PUTS, end - 4, 16, HC_EINVAL },
		{ "HC_PUTS at the end of RAM", HC_PUTS, end, 1, HC_EINVAL },
		{ "HC_PUTS wrapping around", HC_PUTS, ~0ul - 8, 64, HC_EINVAL },
		{ "HC_PUTS huge length", HC_PUTS, MIB, ~0ul, HC_EINVAL },
		{ "HC_PUTS 4097 bytes", HC_PUTS, MIB, 4097, HC_EINVAL },
		{ "HC_PUTS zero length", HC_PUTS, MIB, 0, HC_EINVAL },
		{ "HC_PUTS at 2^63", HC_PUTS, 1ul << 63, 8, HC_EINVAL },
		{ "HC_PUTS outside memory (MMIO hole)", HC_PUTS, 0xfee00000ul, 16, HC_EINVAL },
		{ "HC_ARGS outside memory", HC_ARGS, 0xc0000000ul, 16, HC_EINVAL },
		{ "HC_ARGS zero length", HC_ARGS, (unsigned long)buf, 0, HC_EINVAL },
		{ "HC_ARGS huge length", HC_ARGS, (unsigned long)buf, ~0ul, HC_EINVAL },
		{ "HC_ARGS wrapping around", HC_ARGS, ~0ul - 3, 16, HC_EINVAL },
		{ "HC_BALLOON_RELEASE unaligned address", HC_BALLOON_RELEASE, page + 1, PAGE_SIZE,
		  HC_EINVAL },
		{ "HC_BALLOON_RELEASE unaligned length", HC_BALLOON_RELEASE, page, 100, HC_EINVAL },
		{ "HC_BALLOON_RELEASE zero length", HC_BALLOON_RELEASE, page, 0, HC_EINVAL },
		{ "HC_BALLOON_RELEASE past the end", HC_BALLOON_RELEASE, end - PAGE_SIZE,
		  2 * PAGE_SIZE, HC_EINVAL },
		{ "HC_BALLOON_RELEASE wrapping around", HC_BALLOON_RELEASE, ~0ul & ~(PAGE_SIZE - 1),
		  2 * PAGE_SIZE, HC_EINVAL },
		{ "HC_BALLOON_RELEASE huge length", HC_BALLOON_RELEASE, 0, ~0ul & ~(PAGE_SIZE - 1),
		  HC_EINVAL },
		{ "HC_BALLOON_RELEASE outside memory", HC_BALLOON_RELEASE, 0x100000000ul,
		  PAGE_SIZE, HC_EINVAL },
		{ "HC_LOST_RANGES to a bad address, nothing lost", HC_LOST_RANGES, 0xc0000000ul,
		  ~0ul, 0 },
		{ "HC_VERSION with garbage arguments", HC_VERSION, ~0ul, ~0ul, HC_ABI_VERSION },
	};

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		r = hypercall(cases[i].nr, cases[i].a1, cases[i].a2, ~0ul, ~0ul);
		check(r == cases[i].want, "%s (0x%lx, 0x%lx) returns %ld (want %ld)", cases[i].what,
		      cases[i].a1, cases[i].a2, r, cases[i].want);
	}
	r = hypercall(HC_PUTS, (unsigned long)msg, sizeof(msg) - 1, 0, 0);
	check(r == 0, "HC_PUTS of a valid range returns %ld", r);
	r = hypercall(HC_ARGS, end - 1, 1, 0, 0);
	check(r >= 0, "HC_ARGS into the last byte of RAM returns %ld", r);
	r = hypercall(HC_TSC_KHZ, ~0ul, ~0ul, ~0ul, ~0ul);
	check(r > 0, "HC_TSC_KHZ with garbage arguments returns %ld", r);

	/* A page given back reads as zero. */
	for (uint64_t a = page; a < page + PAGE_SIZE; a += 8)
		*(volatile uint64_t *)a = a | 1;
	r = hypercall(HC_BALLOON_RELEASE, page, PAGE_SIZE, 0, 0);
	bool zero = true;
	for (uint64_t a = page; a < page + PAGE_SIZE; a += 8)
		zero &= *(volatile uint64_t *)a == 0;
	check(r == 0 && zero, "HC_BALLOON_RELEASE of a written page returns %ld, reads zero: %s",
	      r, zero ? "yes" : "no");
	check(hypercall_keeps_registers(), "registers kept across a hypercall");

	/* Numbers outside sprig's range get KVM's answers and the VM goes on
	 * (virt/hypercall.h); HC_EXIT with bit 32 set is not HC_EXIT. */
	r = hypercall(KVM_HC_SEND_IPI, 1, 0, 200, 0xf0);
	check(r == 0, "KVM_HC_SEND_IPI to APIC ID 200 (nobody) returns %ld (want 0)", r);
	r = hypercall(KVM_HC_SEND_IPI, 1, 0, 0, 0xc00f0);
	check(r == -KVM_EINVAL, "KVM_HC_SEND_IPI with a shorthand returns %ld (want %d)", r,
	      -KVM_EINVAL);
	r = hypercall(KVM_HC_VAPIC_POLL_IRQ, 0, 0, 0, 0);
	check(r == 0, "KVM_HC_VAPIC_POLL_IRQ returns %ld (want 0)", r);
	r = hypercall((1ul << 32) | HC_EXIT, 0, 0, 0, 0);
	check(r == -KVM_ENOSYS, "hypercall 0x%lx (HC_EXIT with bit 32) returns %ld (want %d)",
	      (1ul << 32) | HC_EXIT, r, -KVM_ENOSYS);
	/* An unknown number in sprig's range stops the VM. */
	printf("hypercall: 0x%x, expect sprig to stop the VM\n", HC_BASE + HC_COUNT);
	r = hypercall(HC_BASE + HC_COUNT, 0, 0, 0, 0);
	check(false, "hypercall 0x%x returned %ld", HC_BASE + HC_COUNT, r);
	return 1;
}

/* ------------------------------------------------------------------ */
/* usercall: hypercalls from user mode (CPL 3) */

#define PTE_USER 4ul
#define PTE_ADDR 0x000ffffffffff000ul
#define SEL_USER_DATA (0x18 | 3)
#define SEL_USER_CODE (0x20 | 3)

static const uint64_t user_gdt[] __attribute__((aligned(16))) = {
	0,
	0x00af9a000000ffff, /* 0x08: kernel code, as the runtime's */
	0x00cf92000000ffff, /* 0x10: kernel data */
	0x00cff2000000ffff, /* 0x18: user data */
	0x00affa000000ffff, /* 0x20: user code */
};
static uint8_t user_stack[4096] __attribute__((aligned(16)));

static volatile long user_puts_ret, user_exit_ret;

/* Back at CPL 0 through SYSCALL (LSTAR), on the user stack: report. */
static void __attribute__((noreturn, used)) user_returned(void)
{
	printf("usercall: from CPL 3, HC_PUTS returned %ld and HC_EXIT %ld\n", user_puts_ret,
	       user_exit_ret);
	exit(user_puts_ret == HC_EPERM && user_exit_ret == HC_EPERM ? 0 : 1);
}
asm(".text\n"
    "user_syscall_entry:\n\t"
    "and $-16, %rsp\n\t"
    "call user_returned\n");
void user_syscall_entry(void);

/* Runs at CPL 3 on its own stack: its hypercalls must do nothing, so it
 * records what they returned and goes back to CPL 0 with SYSCALL. */
static void __attribute__((noreturn, used)) user_main(void)
{
	static const char msg[] = "usercall: HC_PUTS from CPL 3 was taken\n";

	user_puts_ret = hypercall(HC_PUTS, (unsigned long)msg, sizeof(msg) - 1, 0, 0);
	user_exit_ret = hypercall(HC_EXIT, 43, 0, 0, 0);
	asm volatile("syscall");
	for (;;)
		;
}

static int mode_usercall(const struct mb1_info *mbi)
{
	(void)mbi;
	struct table_pointer gdt = { sizeof(user_gdt) - 1, (uint64_t)user_gdt };
	uint64_t cr3, *pml4, *pdpt, *pd;

	/* The user bit on the runtime's identity map of the first 4 MiB, and
	 * user segments. */
	asm volatile("mov %%cr3, %0" : "=r"(cr3));
	pml4 = (uint64_t *)(cr3 & PTE_ADDR);
	pml4[0] |= PTE_USER;
	pdpt = (uint64_t *)(pml4[0] & PTE_ADDR);
	pdpt[0] |= PTE_USER;
	pd = (uint64_t *)(pdpt[0] & PTE_ADDR);
	pd[0] |= PTE_USER;
	pd[1] |= PTE_USER;
	asm volatile("mov %0, %%cr3" : : "r"(cr3) : "memory");
	asm volatile("lgdt %0" : : "m"(gdt));
	/* SYSCALL leads back to CS 0x08 at user_syscall_entry. */
	if (wrmsr_safe(MSR_EFER, rdmsr(MSR_EFER) | EFER_SCE) != NO_TRAP ||
	    wrmsr_safe(MSR_STAR, (uint64_t)0x08 << 32) != NO_TRAP ||
	    wrmsr_safe(MSR_LSTAR, (uint64_t)user_syscall_entry) != NO_TRAP) {
		printf("FAIL usercall: SYSCALL cannot be set up\n");
		return 1;
	}
	printf("usercall: to CPL 3, which calls HC_PUTS and HC_EXIT(43)\n");
	asm volatile("pushq %0\n\t"
		     "pushq %1\n\t"
		     "pushq $2\n\t" /* RFLAGS: IF and IOPL 0 */
		     "pushq %2\n\t"
		     "pushq %3\n\t"
		     "iretq"
		     :
		     : "i"(SEL_USER_DATA), "r"((uint64_t)(user_stack + sizeof(user_stack))),
		       "i"(SEL_USER_CODE), "r"((uint64_t)user_main)
		     : "memory");
	__builtin_unreachable();
}

/* ------------------------------------------------------------------ */
/* msr */

/* The legacy performance counters and their event selects, which KVM
 * without a virtual PMU reads as 0 and lets any write through, dropped. */
#define PERF_MSRS                                                                   \
	0xc1, 0xc2, 0x186, 0x187,                       /* P6 PERFCTR0-1, EVNTSEL0-1 */ \
	0xc0010000, 0xc0010001, 0xc0010002, 0xc0010003, /* K7 EVNTSEL0-3 */             \
	0xc0010004, 0xc0010005, 0xc0010006, 0xc0010007  /* K7 PERFCTR0-3 */
static const uint32_t perf_msrs[] = { PERF_MSRS };

static bool is_perf_counter(uint32_t msr)
{
	for (unsigned i = 0; i < sizeof(perf_msrs) / sizeof(perf_msrs[0]); i++)
		if (perf_msrs[i] == msr)
			return true;
	return false;
}

/* What RDMSR returns after a write sprig accepted. */
static uint64_t readback_expected(uint32_t msr, uint64_t val)
{
	switch (msr) {
	case MSR_SFMASK:
	case MSR_SYSENTER_CS:
		return val & 0xffffffffu;
	case MSR_TSC_AUX: /* bits 63:32: #GP on Intel, dropped on AMD */
		return val & 0xffffffffu;
	case MSR_MTRR_DEF_TYPE:
		return 0;
	case MSR_MISC_ENABLE: /* EMON: writes ignored (clear at reset) */
		return val & ~MISC_ENABLE_EMON;
	default:
		return is_perf_counter(msr) ? 0 : val;
	}
}

/* A random value whose canonical-ness is the same at 48 and 57 bits. */
static uint64_t random_value(void)
{
	uint64_t v = rng();

	switch (v & 3) {
	case 0: return v >> 17;                        /* canonical, low half */
	case 1: return v | 0xffff800000000000ul;       /* canonical, high half */
	case 2: return (v & ~(1ul << 63)) | (1ul << 62); /* non-canonical */
	default: return v & 0xffffffffu;
	}
}

static const uint32_t known_msrs[] = {
	MSR_EFER, MSR_STAR, MSR_LSTAR, MSR_CSTAR, MSR_SFMASK, MSR_FS_BASE, MSR_GS_BASE,
	MSR_KERNEL_GS_BASE, MSR_SYSENTER_CS, MSR_SYSENTER_ESP, MSR_SYSENTER_EIP, MSR_PAT,
	MSR_TSC, MSR_MISC_ENABLE, MSR_MTRRCAP, MSR_MTRR_DEF_TYPE, MSR_TSC_AUX, PERF_MSRS,
};
#define KNOWN_MSRS (sizeof(known_msrs) / sizeof(known_msrs[0]))

static bool is_address_msr(uint32_t msr)
{
	return msr == MSR_FS_BASE || msr == MSR_GS_BASE || msr == MSR_KERNEL_GS_BASE ||
	       msr == MSR_LSTAR || msr == MSR_CSTAR || msr == MSR_SYSENTER_ESP ||
	       msr == MSR_SYSENTER_EIP;
}

static bool canonical_at(uint64_t va, unsigned bits)
{
	return (uint64_t)((int64_t)(va << (64 - bits)) >> (64 - bits)) == va;
}

static bool is_known(uint32_t msr)
{
	for (unsigned i = 0; i < KNOWN_MSRS; i++)
		if (known_msrs[i] == msr)
			return true;
	return false;
}

/* The local APIC's MSRs (IA32_APIC_BASE, TSC_DEADLINE, the x2APIC range):
 * sprig offers them, the apic guest tests them; random writes here would only
 * switch this guest's APIC off. */
static bool is_apic_msr(uint32_t msr)
{
	return msr == MSR_APIC_BASE || msr == MSR_TSC_DEADLINE ||
	       (msr >= MSR_X2APIC_BASE && msr <= MSR_X2APIC_LAST);
}

/* MSRs sprig offers that the random numbers below leave alone: the
 * machine-check MSRs (kvm-unit-tests' msr test covers their rules) and PKRS,
 * which exists only where the backend switches it, so that the SVM and VMX
 * runs agree on the hash. */
static bool is_left_alone(uint32_t msr)
{
	return msr <= 1 || (msr >= 0x179 && msr <= 0x17b) || (msr >= 0x400 && msr < 0x428) ||
	       msr == 0x6e1;
}

static int mode_msr(const struct mb1_info *mbi)
{
	uint64_t hash = 0xcbf29ce484222325ul, r0, r1;
	unsigned reads = 0, read_gp = 0, writes = 0, write_gp = 0, insane = 0, offered = 0;
	unsigned wide = 0, wide_wrong = 0, aux_high = 0, aux_high_wrong = 0;
	unsigned long n = arg_ulong(mbi, "n", 2000);
	bool amd = vendor_amd();
	uint32_t a, b, c, d;
	bool la57;

	cpuid(7, 0, &a, &b, &c, &d);
	la57 = c & (1u << 16);

	rng_state ^= arg_ulong(mbi, "seed", 1) * 0x2545f4914f6cdd1dul;
	/* Every MSR sprig offers, with edge values and random ones. */
	for (unsigned i = 0; i < KNOWN_MSRS; i++) {
		uint32_t m = known_msrs[i];
		uint64_t vals[24] = { 0, ~0ul, 1ul << 63, 0x00007ffffffff000ul, 0xffff800000000000ul,
				      1ul << 62, 0xffffffffu, 1ul << 32, PAT_DEFAULT,
				      0x0606060606060606ul, 0x0202020202020202ul,
				      0x0007010600070106ul, 0xc06, 0x807 };
		unsigned nv = 14;

		reads++;
		if (rdmsr_safe(m, &r0) != NO_TRAP) {
			check(false, "RDMSR 0x%x of an MSR sprig offers raised #%d", m, trap_vector);
			continue;
		}
		vals[nv++] = r0;
		vals[nv++] = r0 ^ EFER_SCE;
		vals[nv++] = r0 ^ EFER_NXE;
		vals[nv++] = r0 ^ EFER_LME;
		vals[nv++] = r0 ^ EFER_LMA;
		vals[nv++] = r0 | EFER_SVME;
		while (nv < 24)
			vals[nv++] = random_value();
		for (unsigned j = 0; j < nv; j++) {
			int vec;

			/* TSC_AUX's bits 63:32 are the vendor's to judge (#GP
			 * on Intel, dropped on AMD, as KVM does): kept out of
			 * the hash, which both backends must agree on. */
			if (m == MSR_TSC_AUX && (vals[j] >> 32)) {
				vec = wrmsr_safe(m, vals[j]);
				aux_high++;
				aux_high_wrong += (vec == NO_TRAP) != amd;
				wrmsr_safe(m, r0);
				continue;
			}
			/* Addresses canonical at 57 bits but not 48 are for the
			 * CPU to judge, by its CPUID: kept out of the hash. */
			if (is_address_msr(m) && canonical_at(vals[j], 48) != canonical_at(vals[j], 57)) {
				vec = wrmsr_safe(m, vals[j]);
				wide++;
				wide_wrong += (vec == NO_TRAP) != la57;
				if (vec == NO_TRAP)
					wrmsr_safe(m, r0);
				continue;
			}
			vec = wrmsr_safe(m, vals[j]);
			writes++;
			hash = fnv(hash, m);
			if (m != MSR_TSC) /* its values depend on the time */
				hash = fnv(hash, vals[j]);
			hash = fnv(hash, (uint64_t)vec);
			if (vec == VEC_GP) {
				write_gp++;
				continue;
			}
			if (vec != NO_TRAP) {
				check(false, "WRMSR 0x%x = 0x%lx raised #%d", m, vals[j], vec);
				continue;
			}
			r1 = rdmsr(m);
			reads++;
			if (m != MSR_TSC) {
				hash = fnv(hash, r1);
				if (r1 != readback_expected(m, vals[j]) && insane++ < 4)
					printf("FAIL msr: MSR 0x%x written 0x%lx reads 0x%lx\n", m,
					       vals[j], r1);
			}
			if (wrmsr_safe(m, r0) != NO_TRAP)
				check(false, "WRMSR 0x%x of its old value 0x%lx raised #%d", m, r0,
				      trap_vector);
		}
	}
	check(!wide_wrong, "%u writes of addresses canonical at 57 bits only: %s, as CPUID "
	      "leaf 7 (LA57 %s) says", wide, la57 ? "accepted" : "#GP", la57 ? "yes" : "no");
	check(!aux_high_wrong, "%u writes of TSC_AUX with bits 63:32 set: %s, as on %s CPUs",
	      aux_high, amd ? "accepted, the bits dropped" : "#GP", amd ? "AMD" : "Intel");
	check(!insane, "%u accepted writes of the MSRs sprig offers read back as written "
	      "(SFMASK, SYSENTER_CS, TSC_AUX: 32 bits; MTRR_DEF_TYPE and the performance "
	      "counters: 0; MISC_ENABLE: EMON as it was)", writes - write_gp);

	/* Random MSR numbers: around the architectural, AMD and synthetic
	 * ranges, and anywhere. Only the MSRs above may read. */
	for (unsigned long i = 0; i < n; i++) {
		uint64_t x = rng(), v = random_value(), val;
		static const uint32_t bases[] = { 0, 0xc0000000, 0xc0010000, 0x40000000, 0x480 };
		uint32_t m = (x & 7) == 7 ? (uint32_t)(x >> 32)
					   : bases[(x >> 3) % 5] + (uint32_t)((x >> 8) & 0x1fff);
		int vec;

		if (is_left_alone(m))
			continue;
		vec = rdmsr_safe(m, &val);

		reads++;
		hash = fnv(hash, m);
		hash = fnv(hash, (uint64_t)vec);
		if (vec == VEC_GP) {
			read_gp++;
		} else if (!is_known(m) && !is_apic_msr(m) && offered++ < 4) {
			printf("FAIL msr: MSR 0x%x outside the policy reads 0x%lx (#%d)\n", m, val,
			       vec);
		}
		if (is_known(m) || is_apic_msr(m))
			continue; /* written above, with care, or by the apic guest */
		vec = wrmsr_safe(m, v);
		writes++;
		hash = fnv(hash, (uint64_t)vec);
		if (vec == VEC_GP)
			write_gp++;
		else if (offered++ < 4)
			printf("FAIL msr: MSR 0x%x outside the policy took a write (#%d)\n", m, vec);
	}
	check(!offered, "%lu random MSR numbers: only the MSRs sprig offers read or write", n);
	printf("msr: %u reads (%u #GP), %u writes (%u #GP), hash %016lx\n", reads, read_gp, writes,
	       write_gp, hash);
	return failures ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* msr-policy */

static void expect_gp(uint32_t msr, uint64_t val, const char *what)
{
	uint64_t before = rdmsr(msr), after;
	int vec = wrmsr_safe(msr, val);

	after = rdmsr(msr);
	check(vec == VEC_GP && after == before, "WRMSR %s (0x%x = 0x%lx): %s, value %s", what, msr,
	      val, vector_name(vec), after == before ? "unchanged" : "CHANGED");
}

static void expect_ok(uint32_t msr, uint64_t val, uint64_t readback, const char *what)
{
	uint64_t before = rdmsr(msr), after;
	int vec = wrmsr_safe(msr, val);

	after = rdmsr(msr);
	check(vec == NO_TRAP && after == readback, "WRMSR %s (0x%x = 0x%lx): %s, reads 0x%lx",
	      what, msr, val, vector_name(vec), after);
	wrmsr_safe(msr, before);
}

static int mode_msr_policy(const struct mb1_info *mbi)
{
	(void)mbi;
	uint64_t efer = rdmsr(MSR_EFER);
	uint32_t a, b, c, d;

	check((efer & (EFER_LME | EFER_LMA)) == (EFER_LME | EFER_LMA) && !(efer & EFER_SVME) &&
	      (read_cr0() & CR0_PG), "EFER reads 0x%lx in long mode with paging: LME and LMA, "
	      "no SVME", efer);
	check(rdmsr(MSR_PAT) == PAT_DEFAULT, "PAT reads 0x%lx at reset", rdmsr(MSR_PAT));
	check(rdmsr(MSR_MISC_ENABLE) == MISC_ENABLE_RESET, "MISC_ENABLE reads 0x%lx at reset",
	      rdmsr(MSR_MISC_ENABLE));

	/* The checks both backends must make alike. */
	expect_gp(MSR_PAT, ~0ul, "all-ones PAT");
	expect_gp(MSR_FS_BASE, NONCANONICAL, "non-canonical FS base");
	expect_gp(MSR_GS_BASE, NONCANONICAL, "non-canonical GS base");
	expect_gp(MSR_LSTAR, NONCANONICAL, "non-canonical LSTAR");
	expect_gp(MSR_EFER, efer & ~(uint64_t)EFER_LME, "EFER with LME cleared while paging");
	expect_gp(MSR_EFER, efer & ~(uint64_t)EFER_LMA, "EFER with LMA cleared while paging");
	/* More of the same rules. */
	expect_gp(MSR_KERNEL_GS_BASE, NONCANONICAL, "non-canonical KERNEL_GS_BASE");
	expect_gp(MSR_CSTAR, 0x0000800000000000ul | NONCANONICAL, "non-canonical CSTAR");
	expect_gp(MSR_SYSENTER_ESP, NONCANONICAL, "non-canonical SYSENTER_ESP");
	expect_gp(MSR_SYSENTER_EIP, NONCANONICAL, "non-canonical SYSENTER_EIP");
	expect_gp(MSR_PAT, (PAT_DEFAULT & ~0xfful) | 2, "PAT with type 2 in byte 0");
	expect_gp(MSR_PAT, PAT_DEFAULT | (3ul << 56), "PAT with type 3 in byte 7");
	expect_gp(MSR_PAT, PAT_DEFAULT | (8ul << 24), "PAT with type 8 in byte 3");
	expect_gp(MSR_EFER, efer | EFER_SVME, "EFER with SVME");
	expect_gp(MSR_EFER, efer | (1ul << 1), "EFER with reserved bit 1");
	expect_gp(MSR_EFER, efer | (1ul << 63), "EFER with reserved bit 63");
	expect_gp(MSR_MTRRCAP, 0, "MTRRCAP (read-only)");
	expect_gp(MSR_MISC_ENABLE, 0, "MISC_ENABLE cleared (BTS and PEBS unavailable are read-only)");
	/* The vendor's answer, as KVM gives it (e2e_hostile leaves these two
	 * lines out when it compares the backends). */
	if (vendor_amd())
		expect_ok(MSR_TSC_AUX, 1ul << 32 | 5, 5, "TSC_AUX bit 32 dropped (AMD)");
	else
		expect_gp(MSR_TSC_AUX, 1ul << 32, "TSC_AUX bit 32 (Intel)");
	/* Valid writes go through and read back. */
	expect_ok(MSR_PAT, 0x0007010600070106ul, 0x0007010600070106ul, "PAT with WC");
	expect_ok(MSR_FS_BASE, 0xffff800000001000ul, 0xffff800000001000ul, "canonical FS base");
	expect_ok(MSR_GS_BASE, 0x00007ffffffff000ul, 0x00007ffffffff000ul, "canonical GS base");
	expect_ok(MSR_LSTAR, 0xffffffff81000000ul, 0xffffffff81000000ul, "canonical LSTAR");
	expect_ok(MSR_EFER, efer | EFER_SCE, efer | EFER_SCE, "EFER with SCE");
	cpuid(0x80000001, 0, &a, &b, &c, &d);
	if (d & (1u << 20))
		expect_ok(MSR_EFER, efer | EFER_NXE, efer | EFER_NXE, "EFER with NXE (CPUID NX)");
	else
		expect_gp(MSR_EFER, efer | EFER_NXE, "EFER with NXE (no NX in CPUID)");
	expect_ok(MSR_SFMASK, ~0ul, 0xffffffffu, "SFMASK all ones (bits 63:32 dropped)");
	expect_ok(MSR_SYSENTER_CS, ~0ul, 0xffffffffu, "SYSENTER_CS all ones (bits 63:32 dropped)");
	expect_ok(MSR_STAR, ~0ul, ~0ul, "STAR all ones");
	/* As KVM keeps it: the guest's bits as written, EMON ignored. */
	expect_ok(MSR_MISC_ENABLE, MISC_ENABLE_RESET ^ MISC_ENABLE_FAST_STRINGS ^ MISC_ENABLE_EMON,
		  MISC_ENABLE_RESET ^ MISC_ENABLE_FAST_STRINGS, "MISC_ENABLE fast strings off, EMON");
	expect_ok(MSR_MTRR_DEF_TYPE, 0xc06, 0, "MTRR_DEF_TYPE enabled WB (dropped)");
	uint64_t v;
	int vec = rdmsr_safe(MSR_APIC_BASE, &v);
	check(vec == NO_TRAP && v == 0xfee00900ul,
	      "RDMSR APIC_BASE: the BSP's enabled local APIC at 0xfee00000 (%s, 0x%lx)",
	      vector_name(vec), v);
	vec = rdmsr_safe(MSR_VM_HSAVE_PA, &v);
	check(vec == VEC_GP, "RDMSR VM_HSAVE_PA (no SVM in CPUID): %s", vector_name(vec));
	/* A fault pushes RFLAGS with RF set, also one that sprig injects (the
	 * entry would push RF as it loads it; KVM sets it too). */
	vec = wrmsr_safe(MSR_PAT, ~0ul);
	check(vec == VEC_GP && (trap_rflags & RFLAGS_RF), "#GP of a refused WRMSR: RF %s in "
	      "the RFLAGS pushed", trap_rflags & RFLAGS_RF ? "set" : "clear");
	vec = TRY("ud2", , );
	check(vec == VEC_UD && (trap_rflags & RFLAGS_RF), "#UD of UD2: RF %s in the RFLAGS pushed",
	      trap_rflags & RFLAGS_RF ? "set" : "clear");
	vec = rdmsr_safe(MSR_VMX_BASIC, &v);
	check(vec == VEC_GP, "RDMSR VMX_BASIC (no VMX in CPUID): %s", vector_name(vec));
	return failures ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* cpuid */

struct regs4 {
	uint32_t a, b, c, d;
};

static struct regs4 cpuid4(uint32_t leaf, uint32_t sub)
{
	struct regs4 r;

	cpuid(leaf, sub, &r.a, &r.b, &r.c, &r.d);
	return r;
}

static bool same(struct regs4 x, struct regs4 y)
{
	return x.a == y.a && x.b == y.b && x.c == y.c && x.d == y.d;
}

static bool zero(struct regs4 x)
{
	return !(x.a | x.b | x.c | x.d);
}

static int mode_cpuid(const struct mb1_info *mbi)
{
	(void)mbi;
	uint32_t max_basic = cpuid4(0, 0).a, max_ext = cpuid4(0x80000000, 0).a;
	unsigned calls = 0, differ = 0, nonzero = 0, topology_noted = 0;
	struct regs4 r;

	/* In range, each leaf with subleaves 0-7, twice. */
	for (int range = 0; range < 2; range++) {
		uint32_t base = range ? 0x80000000 : 0, max = range ? max_ext : max_basic;

		for (uint32_t leaf = base; leaf <= max && leaf - base < 0x100; leaf++)
			for (uint32_t sub = 0; sub < 8; sub++, calls += 2)
				differ += !same(cpuid4(leaf, sub), cpuid4(leaf, sub));
	}
	/* In the hypervisor range: zeros (sprig's rule), but for sprig's own
	 * leaf 0x40000000 and KVM's clock leaves 0x40000100-0x40000101
	 * (virt/pvclock.h), which are not looked at here. Past the ends: what
	 * the CPU's vendor answers, zeros on AMD, the highest basic leaf on
	 * Intel (SDM vol. 2A, CPUID). */
	uint32_t vendor_b = cpuid4(0, 0).b;
	bool intel = vendor_b == 0x756e6547; /* "Genu" */

	for (uint32_t i = 1; i <= 0x40; i++) {
		uint32_t leaves[] = { max_basic + i, 0x40000000 + i, 0x400000c0 + i,
				      0x40000100 + i * 0x1001, max_ext + i, 0xffffffff - i };

		for (unsigned j = 0; j < sizeof(leaves) / sizeof(leaves[0]); j++, calls++) {
			if (leaves[j] == 0x40000100 || leaves[j] == 0x40000101)
				continue;
			r = cpuid4(leaves[j], i);
			/* sprig answers the topology leaves 0xb and 0x1f with
			 * ECX = subleaf even past the last basic leaf. */
			if ((leaves[j] == 0xb || leaves[j] == 0x1f) && r.a == 0 && r.b == 0 &&
			    r.c == i && r.d == 0) {
				if (!topology_noted++)
					printf("cpuid: leaf 0x%x past the last basic leaf 0x%x reads "
					       "ECX = subleaf (the topology override)\n", leaves[j],
					       max_basic);
				continue;
			}
			bool past = leaves[j] > max_ext || (leaves[j] > max_basic &&
							    leaves[j] < 0x40000000);
			struct regs4 want = past && intel ? cpuid4(max_basic, i)
						   : (struct regs4){ 0, 0, 0, 0 };

			if (!same(r, want) && nonzero++ < 4)
				printf("cpuid: leaf 0x%x sub %u is not what it should be\n", leaves[j],
				       i);
		}
	}
	/* Random leaves and subleaves. */
	for (unsigned i = 0; i < 2000; i++, calls += 2) {
		uint64_t x = rng();
		uint32_t leaf = (x & 3) == 0 ? (uint32_t)(x >> 32)
				: (uint32_t)((x & 3) << 30) + (uint32_t)((x >> 8) & 0x3f);

		leaf = (x & 3) == 3 ? 0x40000000 + (uint32_t)((x >> 8) & 0x1ff) : leaf;
		differ += !same(cpuid4(leaf, (uint32_t)(x >> 16)), cpuid4(leaf, (uint32_t)(x >> 16)));
	}
	check(!differ, "%u CPUID calls, every leaf answers the same twice (%u differ)", calls,
	      differ);
	check(!nonzero, "leaves past the basic and extended ranges read as the vendor's CPUs "
	      "answer, the hypervisor range but its first leaf as zero");
	r = cpuid4(1, 0);
	check((r.c & (1u << 31)) && !(r.c & (1u << 5)) && (r.c & (1u << 21)) &&
	      (r.c & (1u << 24)) && (r.d & (1u << 9)), "leaf 1 ECX 0x%x EDX 0x%x: hypervisor "
	      "bit set; VMX hidden; APIC, x2APIC and TSC-deadline shown", r.c, r.d);
	check((r.b >> 16 & 0xff) >= smp_cpu_count && (r.b >> 24) == 0, "leaf 1 EBX 0x%x: IDs "
	      "for %u logical processors or more, APIC ID 0", r.b, smp_cpu_count);
	r = cpuid4(0x80000001, 0);
	check(!(r.c & (1u << 2)), "leaf 0x80000001 ECX 0x%x: SVM hidden", r.c);
	r = cpuid4(0x8000000a, 0);
	check(max_ext < 0x8000000a || zero(r), "leaf 0x8000000a (SVM features) reads zero");
	r = cpuid4(0x40000000, 0);
	check(r.a == 0x40000000 && r.b == 0x69727073 && r.c == 0x76682d67 && r.d == 0,
	      "leaf 0x40000000: \"sprig-hv\", max leaf 0x%x", r.a);
	r = cpuid4(0xb, 5);
	check(max_basic < 0xb || (r.a == 0 && r.b == 0 && r.c == 5 && r.d == 0),
	      "leaf 0xb subleaf 5: no topology (ECX = 5)");
	return failures ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* priv */

static volatile uint64_t monitored;

static char word1[32]; /* the second word of the arguments */

static int mode_priv(const struct mb1_info *mbi)
{
	const char *name = word1;
	struct table_pointer gdt, bad;
	uint64_t scratch = 0xdead000, rax, rcx, rdx, cr4;
	int vec = NO_TRAP;

	(void)mbi;

	printf("priv %s: executing\n", name);
#define IS(s) (streq(name, s))
	if (IS("invd")) {
		vec = TRY("invd", , );
	} else if (IS("wbinvd")) {
		vec = TRY("wbinvd", , );
	} else if (IS("rdpmc")) {
		vec = TRY("rdpmc", "=a"(rax) COMMA "=d"(rdx), "c"(0));
	} else if (IS("monitor")) {
		vec = TRY("monitor", , "a"(&monitored) COMMA "c"(0) COMMA "d"(0));
	} else if (IS("mwait")) {
		vec = TRY("monitor", , "a"(&monitored) COMMA "c"(0) COMMA "d"(0));
		if (vec == NO_TRAP)
			vec = TRY("mwait", , "a"(0) COMMA "c"(0));
	} else if (IS("invlpga")) {
		vec = TRY("invlpga", , "a"(0) COMMA "c"(0));
	} else if (IS("vmrun")) {
		vec = TRY("vmrun", , "a"(scratch));
	} else if (IS("vmload")) {
		vec = TRY("vmload", , "a"(scratch));
	} else if (IS("vmsave")) {
		vec = TRY("vmsave", , "a"(scratch));
	} else if (IS("clgi")) {
		vec = TRY("clgi", , );
	} else if (IS("stgi")) {
		vec = TRY("stgi", , );
	} else if (IS("skinit")) {
		vec = TRY("skinit", , "a"(scratch));
	} else if (IS("vmxon")) {
		vec = TRY("vmxon %0", , "m"(scratch));
	} else if (IS("vmcall")) {
		vec = TRY("vmcall", "=a"(rax), "a"(0xdeadbeefcafeul) COMMA "b"(~0ul) COMMA "c"(~0ul));
	} else if (IS("vmmcall")) {
		vec = TRY("vmmcall", "=a"(rax), "a"(0xdeadbeefcafeul) COMMA "b"(~0ul) COMMA "c"(~0ul));
	} else if (IS("lgdt-noncanon")) {
		bad = (struct table_pointer){ 0xffff, NONCANONICAL };
		asm volatile("sgdt %0" : "=m"(gdt));
		vec = TRY("lgdt %0", , "m"(bad));
		asm volatile("lgdt %0" : : "m"(gdt));
	} else if (IS("lgdt-outside")) {
		/* The next segment load reads the GDT outside guest memory. */
		bad = (struct table_pointer){ 0xffff, 0xc0000000ul };
		vec = TRY("lgdt %0\n\tmovw $0x10, %%cx\n\tmovw %%cx, %%ds", , "m"(bad), "rcx");
	} else if (IS("xsetbv")) {
		uint32_t a, b, c, d;

		cpuid(1, 0, &a, &b, &c, &d);
		if (!(c & (1u << 26))) {
			printf("priv xsetbv: no XSAVE in CPUID\n");
			return 0;
		}
		cr4 = read_cr4();
		asm volatile("mov %0, %%cr4" : : "r"(cr4 | CR4_OSXSAVE));
		vec = TRY("xsetbv", , "c"(0) COMMA "a"(0) COMMA "d"(0));
		check(vec == VEC_GP, "XSETBV XCR0 = 0 (x87 cleared): %s", vector_name(vec));
		vec = TRY("xsetbv", , "c"(0) COMMA "a"(5) COMMA "d"(0));
		check(vec == VEC_GP, "XSETBV XCR0 = 5 (AVX without SSE): %s", vector_name(vec));
		vec = TRY("xsetbv", , "c"(1) COMMA "a"(3) COMMA "d"(0));
		check(vec == VEC_GP, "XSETBV XCR1: %s", vector_name(vec));
		vec = TRY("xsetbv", , "c"(0) COMMA "a"(3) COMMA "d"(0));
		check(vec == NO_TRAP, "XSETBV XCR0 = 3: %s", vector_name(vec));
		asm volatile("mov %0, %%cr4" : : "r"(cr4));
	} else if (IS("rdtscp")) {
		vec = TRY("rdtscp", "=a"(rax) COMMA "=d"(rdx) COMMA "=c"(rcx), );
	} else if (IS("invpcid")) {
		static const uint64_t desc[2] = { 0, 0 };

		vec = TRY("invpcid %0, %1", , "m"(desc) COMMA "r"(2ul));
	} else if (IS("cr4-vmxe")) {
		cr4 = read_cr4();
		vec = TRY("mov %0, %%cr4", , "r"(cr4 | CR4_VMXE));
		asm volatile("mov %0, %%cr4" : : "r"(cr4));
	} else if (IS("outsb")) {
		/* Through COM1's scratch register, which keeps the last byte. */
		static const char bytes[2] = { 'x', 'y' };
		const char *src = bytes;
		uint64_t count = 2;
		uint8_t scr;

		vec = TRY("rep outsb", "+S"(src) COMMA "+c"(count), "d"(0x3ff));
		asm volatile("inb %1, %0" : "=a"(scr) : "d"((uint16_t)0x3ff));
		check(vec != NO_TRAP || (src == bytes + 2 && !count && scr == 'y'),
		      "rep outsb: rsi moved %ld, rcx %lu, scratch '%c'", (long)(src - bytes),
		      (unsigned long)count, scr);
	} else if (IS("insb")) {
		char buf[3] = { 0, 0, 'z' };
		char *dst = buf;
		uint64_t count = 2;

		asm volatile("outb %0, %1" : : "a"((uint8_t)'q'), "d"((uint16_t)0x3ff));
		vec = TRY("rep insb", "+D"(dst) COMMA "+c"(count), "d"(0x3ff));
		check(vec != NO_TRAP || (dst == buf + 2 && !count && buf[0] == 'q' && buf[1] == 'q' &&
					 buf[2] == 'z'),
		      "rep insb: rdi moved %ld, rcx %lu, bytes %02x %02x %02x", (long)(dst - buf),
		      (unsigned long)count, buf[0], buf[1], buf[2]);
	} else {
		printf("priv: unknown instruction \"%s\"\n", name);
		return 2;
	}
#undef IS
	(void)rax;
	(void)rcx;
	(void)rdx;
	printf("priv %s: %s\n", name, vector_name(vec));
	return failures ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* ports */

/* COM1 and the chipset sprig emulates: PIC, PIT and port 0x61, the 8042's
 * status, CMOS, ELCR, the ACPI PM block, fw_cfg, PCI configuration and
 * QEMU's pc-testdev. */
static bool emulated_port(unsigned p)
{
	return p == 0x20 || p == 0x21 || p == 0xa0 || p == 0xa1 || (p >= 0x3f8 && p < 0x400) ||
	       (p >= 0x40 && p <= 0x43) || p == 0x61 || p == 0x64 || p == 0x70 || p == 0x71 ||
	       p == 0x4d0 || p == 0x4d1 || (p >= 0x600 && p < 0x60c) || p == 0x510 ||
	       p == 0x511 || (p >= 0xcf8 && p < 0xd00) || (p >= 0xe0 && p < 0xec) ||
	       (p >= 0x2000 && p < 0x2018);
}

/* Ports that end the machine (exit, reset, power off) or flush its pages:
 * not written. */
static bool exit_port(unsigned p, bool sprig)
{
	return (sprig ? p == 0xf4 : p >= 0xf1 && p < 0xf8) || p == 0x64 || p == 0xcf9 ||
	       p == 0x604 || p == 0x605 || (p >= 0xe4 && p < 0xe8);
}

static int mode_ports(const struct mb1_info *mbi)
{
	(void)mbi;
	bool sprig = under_sprig();
	unsigned odd = 0, odd_wide = 0, reads = 0, writes = 0;
	uint8_t pic_masks[2] = { inb(0x21), inb(0xa1) };

	for (unsigned p = 0; p < 0x10000; p++) {
		uint8_t v = inb((uint16_t)p);

		reads++;
		if (v != 0xff && !emulated_port(p) && odd++ < 4)
			printf("ports: port 0x%x reads 0x%02x\n", p, v);
		if (!exit_port(p, sprig)) {
			outb((uint16_t)p, v);
			writes++;
		}
	}
	/* Words and doublewords, every 257th port up to 0xffff. */
	for (unsigned p = 0; p < 0x10000; p += 257) {
		uint16_t w;
		uint32_t l;

		asm volatile("inw %w1, %0" : "=a"(w) : "Nd"((uint16_t)p));
		asm volatile("inl %w1, %0" : "=a"(l) : "Nd"((uint16_t)p));
		reads += 2;
		if (!emulated_port(p) && !emulated_port(p + 3) && (w != 0xffff || l != ~0u) &&
		    odd_wide++ < 4)
			printf("ports: port 0x%x reads word 0x%x, doubleword 0x%x\n", p, w, l);
		if (exit_port(p, sprig) || exit_port(p + 1, sprig) || exit_port(p + 2, sprig) ||
		    exit_port(p + 3, sprig))
			continue;
		asm volatile("outw %0, %w1" : : "a"(w), "Nd"((uint16_t)p));
		asm volatile("outl %0, %w1" : : "a"(l), "Nd"((uint16_t)p));
		writes += 2;
	}
	/* The byte written to COM1's data port went out as a character. */
	printf("\n");
	check(!odd && !odd_wide, "%u port reads, %u writes: every port but COM1 and the "
	      "chipset's reads all ones", reads, writes);
	check(inb(0x21) == pic_masks[0] && inb(0xa1) == pic_masks[1] && inb(0x3fd) == 0x60,
	      "the PIC masks and COM1's line status still read as before");
	return failures ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* modes */

static int mode_modes(const struct mb1_info *mbi)
{
	struct trip t;

	(void)mbi;
	trip_run(&t, false, false, true);
	check(t.stage == 6, "long -> compatibility -> protected (paging off) -> real -> protected "
	      "-> long mode (stage %d)", t.stage);
	check(t.paged == trip_paging_modes(), "on the way, %s with CR0, CR3 and CR4 writes (%u "
	      "of %u)", trip_paging_modes() == 2 ? "32-bit and PAE paging" : "PAE paging (no PSE)",
	      t.paged, trip_paging_modes());
	check(t.rm_gp == 1, "WRMSR of an all-ones PAT in real mode: #GP through the IVT "
	      "(%u times)", t.rm_gp);
	check(t.rm_sig == 0x69727073, "CPUID 0x40000000 in real mode: EBX 0x%x (\"spri\")",
	      t.rm_sig);
	check((t.efer & (EFER_LME | EFER_LMA)) == (EFER_LME | EFER_LMA), "EFER back in long mode "
	      "0x%lx", t.efer);
	check(rdmsr(MSR_PAT) == PAT_DEFAULT, "PAT unchanged by the refused write");

	/* Again, and this time a triple fault in real mode. */
	printf("modes: again, to a triple fault in real mode; expect sprig to stop the VM\n");
	trip_run(&t, false, true, true);
	check(false, "survived a triple fault in real mode (stage %d)", t.stage);
	return 1;
}

/* ------------------------------------------------------------------ */

/* The n-th word (from 0) of the arguments, copied into buf. */
static const char *arg_word(const struct mb1_info *mbi, int n, char *buf, size_t len)
{
	const char *p = mbi->args;
	size_t i = 0;

	for (; n > 0 && *p; n--) {
		while (*p && *p != ' ')
			p++;
		while (*p == ' ')
			p++;
	}
	while (*p && *p != ' ' && i + 1 < len)
		buf[i++] = *p++;
	buf[i] = 0;
	return buf;
}

/* The value of the argument key=VALUE (key given with its "="), copied into
 * buf; "" if absent. */
static const char *arg_text(const struct mb1_info *mbi, const char *key, char *buf, size_t len)
{
	size_t klen = 0, i = 0;

	while (key[klen])
		klen++;
	for (int n = 0;; n++) {
		arg_word(mbi, n, buf, len);
		if (!buf[0])
			return buf;
		for (i = 0; i < klen && buf[i] == key[i]; i++)
			;
		if (i == klen)
			break;
	}
	for (i = 0; buf[klen + i]; i++)
		buf[i] = buf[klen + i];
	buf[i] = 0;
	return buf;
}

static int mode_mmio(const struct mb1_info *mbi)
{
	const char *how = word1;
	uint64_t end = ram_end(mbi);
	volatile uint32_t *past_ram = (volatile uint32_t *)end;

	/* As on a PC, an address nothing claims reads all ones and drops
	 * writes; with strict_mmio=on sprig stops the guest. */
	if (streq(how, "read")) {
		printf("mmio: reading 0x%lx (the end of RAM)\n", end);
		check(*past_ram == 0xffffffffu, "unclaimed read gives all ones");
		return 0;
	} else if (streq(how, "write")) {
		printf("mmio: writing 0x%lx (the end of RAM)\n", end);
		*past_ram = 0xdeadbeef;
		check(*past_ram == 0xffffffffu, "unclaimed write dropped");
		return 0;
	} else if (streq(how, "fetch")) {
		printf("mmio: calling 0xfed00000 (an HPET's page); expect a stop\n");
		((void (*)(void))0xfed00000ul)();
	} else {
		printf("mmio: read, write or fetch\n");
		return 2;
	}
	check(false, "survived running code outside guest memory");
	return 1;
}

static int mode_spin(const struct mb1_info *mbi)
{
	(void)mbi;
	printf("spin: cli; jmp . for ever\n");
	asm volatile("cli; 1: jmp 1b");
	__builtin_unreachable();
}

static int mode_exits(const struct mb1_info *mbi)
{
	(void)mbi;
	printf("exits: out to port 0x80 for ever\n");
	asm volatile("1: outb %%al, $0x80; jmp 1b" : : "a"(0));
	__builtin_unreachable();
}

static int mode_storm(const struct mb1_info *mbi);

static const struct {
	const char *name;
	int (*run)(const struct mb1_info *mbi);
} modes[] = {
	{ "hypercall", mode_hypercall }, { "usercall", mode_usercall },
	{ "msr", mode_msr }, { "msr-policy", mode_msr_policy }, { "cpuid", mode_cpuid },
	{ "priv", mode_priv }, { "ports", mode_ports }, { "mmio", mode_mmio },
	{ "spin", mode_spin }, { "exits", mode_exits }, { "modes", mode_modes },
	{ "storm", mode_storm },
};

static int (*mode_named(const char *name))(const struct mb1_info *mbi)
{
	for (unsigned i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (streq(name, modes[i].name))
			return modes[i].run;
	return NULL;
}

/* storm: the storm on every CPU, main=MODE on the BSP first (a mode that
 * takes no second word). */
static int mode_storm(const struct mb1_info *mbi)
{
	static char main_mode[32];
	int (*run)(const struct mb1_info *mbi) = NULL;

	if (arg_text(mbi, "main=", main_mode, sizeof(main_mode))[0]) {
		run = mode_named(main_mode);
		if (!run || run == mode_storm || run == mode_priv || run == mode_mmio) {
			printf("storm: main=%s is not a mode of its own\n", main_mode);
			return 2;
		}
		mode = main_mode;
	}
	return storm(mbi, run);
}

int main(const struct mb1_info *mbi)
{
	static char word0[32];
	int (*run)(const struct mb1_info *mbi);

	mode = arg_word(mbi, 0, word0, sizeof(word0));
	arg_word(mbi, 1, word1, sizeof(word1));
	printf("hostile: %s%s%s\n", mode, word1[0] ? " " : "", word1);
	idt_install(hostile_trap);
	trip_setup();
	if (!under_sprig() && !first_arg_is(mbi, "ports") && !first_arg_is(mbi, "cpuid"))
		printf("hostile: not under sprig; the results mean little\n");
	run = mode_named(mode);
	if (run)
		return run(mbi);
	printf("hostile: unknown mode \"%s\" (hypercall usercall msr msr-policy cpuid priv "
	       "ports mmio spin exits modes storm)\n", mbi->args);
	return 2;
}
