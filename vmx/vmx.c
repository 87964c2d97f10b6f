/* The Intel VMX backend: VMXON per CPU, one VMCS per vCPU, the entry loop
 * (vmx_entry.S) and exit decoding into vendor-neutral events. svm/svm.c is its
 * AMD mirror.
 *
 * Every control is adjusted to what the capability MSRs allow (SDM vol. 3C
 * appendix A); what sprig cannot do without (EPT with 4-level write-back
 * tables, INVEPT, unrestricted guest, the EFER load/save controls) is refused
 * when virtualization is enabled, with the reason. Guests start as multiboot
 * requires, in 32-bit protected mode with paging off, and switch themselves
 * to long mode: with unrestricted guest the CPU does that in VMX non-root
 * operation, and the backend keeps the IA-32e-mode-guest entry control equal
 * to EFER.LMA. Only the CR0/CR4 bits that VMX forces (the fixed-bit MSRs) are
 * owned by the host, behind read shadows. */
#include "vmx/vmx.h"
#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpuinfo.h"
#include "arch/x86/regs.h"
#include "arch/x86/tsc.h"
#include "lib/print.h"
#include "lib/string.h"
#include "mm/frame.h"
#include "mm/mmu.h"
#include "mm/spte.h"
#include "virt/vm.h"
#include "vmx/ept.h"
#include "vmx/saved_state.h"
#include "vmx/vmcs.h"
#include "vmx/vmx_errors.h"

#define VMX_MAX_CPUS 8
#define VMX_MAX_VPIDS 256 /* tags 1 .. 256 */
/* A guest that never exits gives the CPU back at least this often, should no
 * host interrupt arrive first. */
#define PREEMPTION_BUDGET_US 10000

#define CR3_PCID_NOFLUSH (1ull << 63)
#define PDPTE_PRESENT 1ull
#define PDPTE_RESERVED 0x1e6ull /* bits 2:1 and 8:5 */
/* Interruptibility state: blocking by STI, blocking by MOV SS. */
#define INTERRUPTIBILITY_STI_MOVSS 3ull

_Static_assert(offsetof(struct vcpu_regs, rax) == VCPU_REGS_RAX, "vcpu_regs layout");
_Static_assert(offsetof(struct vcpu_regs, rbx) == VCPU_REGS_RBX, "vcpu_regs layout");
_Static_assert(offsetof(struct vcpu_regs, rcx) == VCPU_REGS_RCX, "vcpu_regs layout");
_Static_assert(offsetof(struct vcpu_regs, rdx) == VCPU_REGS_RDX, "vcpu_regs layout");
_Static_assert(offsetof(struct vcpu_regs, rsi) == VCPU_REGS_RSI, "vcpu_regs layout");
_Static_assert(offsetof(struct vcpu_regs, rdi) == VCPU_REGS_RDI, "vcpu_regs layout");
_Static_assert(offsetof(struct vcpu_regs, rbp) == VCPU_REGS_RBP, "vcpu_regs layout");
_Static_assert(offsetof(struct vcpu_regs, r8) == VCPU_REGS_R8, "vcpu_regs layout");
_Static_assert(offsetof(struct vcpu_regs, r9) == VCPU_REGS_R9, "vcpu_regs layout");
_Static_assert(offsetof(struct vcpu_regs, r10) == VCPU_REGS_R10, "vcpu_regs layout");
_Static_assert(offsetof(struct vcpu_regs, r11) == VCPU_REGS_R11, "vcpu_regs layout");
_Static_assert(offsetof(struct vcpu_regs, r12) == VCPU_REGS_R12, "vcpu_regs layout");
_Static_assert(offsetof(struct vcpu_regs, r13) == VCPU_REGS_R13, "vcpu_regs layout");
_Static_assert(offsetof(struct vcpu_regs, r14) == VCPU_REGS_R14, "vcpu_regs layout");
_Static_assert(offsetof(struct vcpu_regs, r15) == VCPU_REGS_R15, "vcpu_regs layout");

int vmx_enter(struct vcpu_regs *regs, int launched);
void vmx_exit_point(void);

/* MSRs that VMX neither saves nor loads and that sprig itself never uses (no
 * SYSCALL, no SWAPGS): each entry loads the guest's values from a VM-entry
 * MSR-load list and each exit stores them back into the same list, so that
 * they need no exit and nothing restores the host's. */
static const uint32_t switched_msrs[] = {
	MSR_KERNEL_GS_BASE, MSR_STAR, MSR_LSTAR, MSR_CSTAR, MSR_SFMASK,
};
#define SWITCHED_MSRS (sizeof(switched_msrs) / sizeof(switched_msrs[0]))

struct vmx_msr_entry {
	uint32_t index;
	uint32_t reserved;
	uint64_t value;
};

/* A CPU in VMX operation. */
struct vmx_cpu {
	uint32_t apic_id;
	paddr_t vmxon_region;
	paddr_t current_vmcs; /* what VMPTRLD last made current; 0 for none */
};

/* A vCPU's VMX state, in a frame of its own (the MSR list comes first: it
 * must be 16-byte aligned). */
struct vmx_vcpu {
	struct vmx_msr_entry msrs[SWITCHED_MSRS];
	paddr_t vmcs;
	struct vmx_cpu *cpu; /* where the VMCS is active */
	uint16_t vpid;       /* 0 without VPIDs */
	bool launched;
	bool vpid_flush;     /* INVVPID before the next entry */
	uint64_t eptp;
	uint64_t cr8;        /* the guest's task priority, never the host APIC's */
	uint64_t pat;        /* kept for the guest to read; EPT leaves ignore it (IPAT) */
	uint64_t exit_rip;   /* RIP at the last exit: moved means virt/ skipped the instruction */
	uint64_t host_cr0, host_cr3, host_cr4;
	uint64_t slice_end;  /* TSC at which the preemption timer's budget runs out */
	uint32_t exit_reason;
	uint64_t exit_qualification;
	uint32_t entry_error; /* VM-instruction error of a refused VMLAUNCH/VMRESUME */
};

/* What this CPU model allows, read once from the capability MSRs. */
static struct {
	bool probed;
	bool regions_below_4g; /* IA32_VMX_BASIC bit 48 */
	uint32_t pin, proc, proc2, exit, entry;
	uint64_t cr0_fixed0, cr0_fixed1, cr4_fixed0, cr4_fixed1;
	uint64_t cr0_host_owned, cr4_host_owned; /* guest/host masks */
	uint64_t misc;
	unsigned invept_type, invvpid_type;
	uint64_t preemption_budget_tsc;
	paddr_t msr_bitmap;
} caps;

static struct vmx_cpu vmx_cpus[VMX_MAX_CPUS];
static unsigned vmx_cpu_count;
static bool vpid_used[VMX_MAX_VPIDS];

/* A zeroed frame that VMX may reference (below 4 GiB when BASIC says so). */
static paddr_t vmx_frame_alloc(void)
{
	paddr_t pa = frame_alloc_zeroed(0);

	if (pa && caps.regions_below_4g && pa + PAGE_SIZE > (1ull << 32)) {
		frame_free(pa, 0);
		return 0;
	}
	return pa;
}

/* The allowed-0/allowed-1 rule: the low half of the MSR has the bits that
 * must be 1, the high half the bits that may be 1. */
static bool adjust_controls(uint32_t msr, uint32_t need, uint32_t want, uint32_t *out,
			    const char *what, char *err, size_t len)
{
	uint64_t cap = rdmsr(msr);
	uint32_t must = (uint32_t)cap, may = (uint32_t)(cap >> 32);

	if (need & ~may) {
		ksnprintf(err, len, "VMX %s controls 0x%x not allowed (MSR 0x%x allows 0x%x)", what,
			  need & ~may, msr, may);
		return false;
	}
	*out = must | need | (want & may);
	return true;
}

static void msr_bitmap_pass_through(uint8_t *bitmap, uint32_t msr)
{
	/* Read bitmaps for MSRs 0-0x1fff and 0xc0000000-0xc0001fff at 0 and
	 * 1024, the write bitmaps at 2048 and 3072. */
	unsigned half = msr >= 0xc0000000 ? 1024 : 0;
	unsigned bit = msr & 0x1fff;

	bitmap[half + bit / 8] &= (uint8_t)~(1u << (bit % 8));
	bitmap[2048 + half + bit / 8] &= (uint8_t)~(1u << (bit % 8));
}

static bool vmx_probe(char *err, size_t len)
{
	uint64_t basic = rdmsr(MSR_VMX_BASIC);
	uint64_t ept = cpuinfo.vmx.ept_vpid_cap;
	uint32_t ctls2 = cpuinfo.vmx.ctls2_allowed1;
	bool true_ctls = basic & VMX_BASIC_TRUE_CTLS;
	uint32_t proc2_want = PROC2_ENABLE_RDTSCP | PROC2_ENABLE_INVPCID;
	unsigned memtype = (basic >> VMX_BASIC_MEMTYPE_SHIFT) & 0xf;

	if (cpuinfo.vmx.vmcs_size > PAGE_SIZE) {
		ksnprintf(err, len, "VMCS of %u bytes", cpuinfo.vmx.vmcs_size);
		return false;
	}
	if (memtype != VMX_BASIC_MEMTYPE_WB) {
		ksnprintf(err, len, "VMCS memory type %u is not write-back", memtype);
		return false;
	}
	if (!cpuinfo.vmx.secondary_ctls || !(ctls2 & VMX_CTLS2_EPT)) {
		ksnprintf(err, len, "VMX without EPT");
		return false;
	}
	if (!(ctls2 & VMX_CTLS2_UNRESTRICTED)) {
		ksnprintf(err, len, "VMX without unrestricted guest");
		return false;
	}
	if (!(ept & EPT_CAP_WALK_4) || !(ept & EPT_CAP_WB)) {
		ksnprintf(err, len, "EPT without 4-level write-back tables (EPT_VPID_CAP 0x%llx)",
			  (unsigned long long)ept);
		return false;
	}
	if (!(ept & EPT_CAP_INVEPT) || !(ept & (EPT_CAP_INVEPT_SINGLE | EPT_CAP_INVEPT_ALL))) {
		ksnprintf(err, len, "EPT without INVEPT (EPT_VPID_CAP 0x%llx)",
			  (unsigned long long)ept);
		return false;
	}
	caps.invept_type = ept & EPT_CAP_INVEPT_SINGLE ? INVEPT_SINGLE_CONTEXT : INVEPT_ALL_CONTEXT;
	/* VPIDs only with a way to flush what a reused tag left behind. */
	if ((ctls2 & VMX_CTLS2_VPID) && (ept & EPT_CAP_INVVPID) &&
	    (ept & (VPID_CAP_INVVPID_SINGLE | VPID_CAP_INVVPID_ALL))) {
		proc2_want |= PROC2_ENABLE_VPID;
		caps.invvpid_type = ept & VPID_CAP_INVVPID_SINGLE ? INVVPID_SINGLE_CONTEXT
								  : INVVPID_ALL_CONTEXT;
	}
	caps.regions_below_4g = basic & VMX_BASIC_PA_32BIT;

	/* Host interrupts and NMIs exit (and are not acknowledged: sprig takes
	 * them when it opens its interrupt window); I/O, HLT, CR8 and MSRs
	 * exit; RDTSC runs with the TSC offset. */
	if (!adjust_controls(true_ctls ? MSR_VMX_TRUE_PINBASED_CTLS : MSR_VMX_PINBASED_CTLS,
			     PIN_EXT_INTR_EXITING, PIN_NMI_EXITING | PIN_PREEMPTION_TIMER,
			     &caps.pin, "pin-based", err, len) ||
	    !adjust_controls(true_ctls ? MSR_VMX_TRUE_PROCBASED_CTLS : MSR_VMX_PROCBASED_CTLS,
			     PROC_HLT_EXITING | PROC_UNCOND_IO_EXITING | PROC_USE_MSR_BITMAPS |
				     PROC_SECONDARY_CONTROLS | PROC_USE_TSC_OFFSETTING |
				     PROC_CR8_LOAD_EXITING | PROC_CR8_STORE_EXITING,
			     PROC_RDPMC_EXITING | PROC_MWAIT_EXITING | PROC_MONITOR_EXITING,
			     &caps.proc, "processor-based", err, len) ||
	    !adjust_controls(MSR_VMX_PROCBASED_CTLS2, PROC2_ENABLE_EPT | PROC2_UNRESTRICTED_GUEST,
			     proc2_want, &caps.proc2, "secondary", err, len) ||
	    !adjust_controls(true_ctls ? MSR_VMX_TRUE_EXIT_CTLS : MSR_VMX_EXIT_CTLS,
			     EXIT_HOST_ADDR_SPACE_SIZE | EXIT_SAVE_EFER | EXIT_LOAD_EFER,
			     EXIT_SAVE_PREEMPTION_TIMER,
			     &caps.exit, "VM-exit", err, len) ||
	    !adjust_controls(true_ctls ? MSR_VMX_TRUE_ENTRY_CTLS : MSR_VMX_ENTRY_CTLS,
			     ENTRY_LOAD_EFER | ENTRY_IA32E_MODE_GUEST, 0, &caps.entry,
			     "VM-entry", err, len))
		return false;
	/* Guests start outside long mode; run() sets it as EFER.LMA says. */
	caps.entry &= ~ENTRY_IA32E_MODE_GUEST;

	caps.misc = rdmsr(MSR_VMX_MISC);
	caps.cr0_fixed0 = rdmsr(MSR_VMX_CR0_FIXED0);
	caps.cr0_fixed1 = rdmsr(MSR_VMX_CR0_FIXED1);
	caps.cr4_fixed0 = rdmsr(MSR_VMX_CR4_FIXED0);
	caps.cr4_fixed1 = rdmsr(MSR_VMX_CR4_FIXED1);
	/* Unrestricted guest exempts PE and PG from CR0_FIXED0. */
	caps.cr0_host_owned = (caps.cr0_fixed0 & ~(CR0_PE | CR0_PG)) | (~caps.cr0_fixed1 & 0xffffffff);
	caps.cr4_host_owned = caps.cr4_fixed0 | (~caps.cr4_fixed1 & 0xffffffff);

	caps.preemption_budget_tsc = tsc_khz() * PREEMPTION_BUDGET_US / 1000;

	/* Every MSR exits except the segment bases, which live in the VMCS
	 * (FS, GS) or in the switched list (KERNEL_GS_BASE): the CPU checks
	 * their writes by the MSR policy's rule itself (canonical at the width
	 * CPUID reports), so they need no exit. */
	if (!(caps.msr_bitmap = vmx_frame_alloc())) {
		ksnprintf(err, len, "out of memory for the MSR bitmap");
		return false;
	}
	uint8_t *bitmap = pa_to_va(caps.msr_bitmap);
	memset(bitmap, 0xff, PAGE_SIZE);
	msr_bitmap_pass_through(bitmap, MSR_FS_BASE);
	msr_bitmap_pass_through(bitmap, MSR_GS_BASE);
	msr_bitmap_pass_through(bitmap, MSR_KERNEL_GS_BASE);

	vmx_backend.tdp = ept_format(ept & EPT_CAP_AD);
	caps.probed = true;
	return true;
}

static struct vmx_cpu *this_cpu(void)
{
	uint32_t id = apic_id();

	for (unsigned i = 0; i < vmx_cpu_count; i++)
		if (vmx_cpus[i].apic_id == id)
			return &vmx_cpus[i];
	return NULL;
}

static bool vmx_cpu_enable(char *err, size_t len)
{
	uint64_t fc;
	paddr_t region;

	if (!cpuinfo.vmx.supported) {
		ksnprintf(err, len, "the CPU has no VMX (CPUID.1:ECX bit 5)");
		return false;
	}
	if (cpuinfo.vmx.disabled_by_bios) {
		ksnprintf(err, len, "VMX is disabled by the firmware (IA32_FEATURE_CONTROL 0x%llx)",
			  (unsigned long long)cpuinfo.vmx.feature_control);
		return false;
	}
	if (!caps.probed && !vmx_probe(err, len))
		return false;
	if (this_cpu())
		return true;
	if (vmx_cpu_count == VMX_MAX_CPUS) {
		ksnprintf(err, len, "VMX on more than %d CPUs", VMX_MAX_CPUS);
		return false;
	}

	/* Unlocked, the control is sprig's to set: allow VMXON outside SMX and
	 * lock it, as firmware would. */
	fc = rdmsr(MSR_FEATURE_CONTROL);
	if (!(fc & FEATURE_CONTROL_LOCK)) {
		wrmsr(MSR_FEATURE_CONTROL, fc | FEATURE_CONTROL_VMX_OUTSIDE_SMX | FEATURE_CONTROL_LOCK);
		fc = rdmsr(MSR_FEATURE_CONTROL);
	}
	if (!(fc & FEATURE_CONTROL_VMX_OUTSIDE_SMX)) {
		ksnprintf(err, len, "IA32_FEATURE_CONTROL 0x%llx forbids VMXON outside SMX",
			  (unsigned long long)fc);
		return false;
	}

	if (!(region = vmx_frame_alloc())) {
		ksnprintf(err, len, "out of memory for the VMXON region");
		return false;
	}
	*(uint32_t *)pa_to_va(region) = cpuinfo.vmx.revision_id;
	write_cr0((read_cr0() | caps.cr0_fixed0) & caps.cr0_fixed1);
	write_cr4((read_cr4() | caps.cr4_fixed0 | CR4_VMXE) & caps.cr4_fixed1);
	if (!vmxon(region)) {
		frame_free(region, 0);
		ksnprintf(err, len, "VMXON failed (CR0 0x%llx CR4 0x%llx)",
			  (unsigned long long)read_cr0(), (unsigned long long)read_cr4());
		return false;
	}
	vmx_cpus[vmx_cpu_count++] = (struct vmx_cpu){ .apic_id = apic_id(),
						      .vmxon_region = region };
	return true;
}

/* Make the vCPU's VMCS current on this CPU; false if it is active elsewhere
 * (a VMCS moves between CPUs only through VMCLEAR on the old one). */
static bool vmcs_make_current(struct vmx_vcpu *a)
{
	if (this_cpu() != a->cpu)
		return false;
	if (a->cpu->current_vmcs == a->vmcs)
		return true;
	if (!vmptrld(a->vmcs))
		return false;
	a->cpu->current_vmcs = a->vmcs;
	return true;
}

/* VMWRITEs of the set-up, with the first failure kept for the report. */
struct vmcs_writer {
	bool failed;
	uint32_t field;
	uint32_t error;
};

static void vmw(struct vmcs_writer *w, enum vmcs_field field, uint64_t value)
{
	if (!vmcs_write(field, value) && !w->failed) {
		w->failed = true;
		w->field = field;
		w->error = (uint32_t)vmcs_read(VMCS_INSTRUCTION_ERROR);
	}
}

struct descriptor_table_register {
	uint16_t limit;
	uint64_t base;
} __attribute__((packed));

#define READ_SELECTOR(reg)                                                \
	({                                                                \
		uint16_t sel_;                                            \
		__asm__ volatile("mov %%" #reg ", %0" : "=r"(sel_));      \
		sel_;                                                     \
	})

/* The base of the TSS whose selector is tr, from its 16-byte descriptor. */
static uint64_t tss_base(uint64_t gdt, uint16_t tr)
{
	const uint64_t *d = (const uint64_t *)(uintptr_t)(gdt + (tr & ~7u));

	return ((d[0] >> 16) & 0xffffff) | (((d[0] >> 56) & 0xff) << 24) | (d[1] << 32);
}

/* What the CPU loads on every VM exit: sprig's own state as it is now. */
static void setup_host_state(struct vmcs_writer *w, struct vmx_vcpu *a)
{
	struct descriptor_table_register gdtr, idtr;
	uint16_t tr;

	__asm__ volatile("sgdt %0" : "=m"(gdtr));
	__asm__ volatile("sidt %0" : "=m"(idtr));
	__asm__ volatile("str %0" : "=r"(tr));

	a->host_cr0 = read_cr0();
	a->host_cr3 = read_cr3();
	a->host_cr4 = read_cr4();
	vmw(w, VMCS_HOST_CR0, a->host_cr0);
	vmw(w, VMCS_HOST_CR3, a->host_cr3);
	vmw(w, VMCS_HOST_CR4, a->host_cr4);
	vmw(w, VMCS_HOST_CS_SEL, READ_SELECTOR(cs));
	vmw(w, VMCS_HOST_SS_SEL, READ_SELECTOR(ss));
	vmw(w, VMCS_HOST_DS_SEL, READ_SELECTOR(ds));
	vmw(w, VMCS_HOST_ES_SEL, READ_SELECTOR(es));
	vmw(w, VMCS_HOST_FS_SEL, READ_SELECTOR(fs));
	vmw(w, VMCS_HOST_GS_SEL, READ_SELECTOR(gs));
	vmw(w, VMCS_HOST_TR_SEL, tr);
	vmw(w, VMCS_HOST_FS_BASE, rdmsr(MSR_FS_BASE));
	vmw(w, VMCS_HOST_GS_BASE, rdmsr(MSR_GS_BASE));
	vmw(w, VMCS_HOST_TR_BASE, tss_base(gdtr.base, tr));
	vmw(w, VMCS_HOST_GDTR_BASE, gdtr.base);
	vmw(w, VMCS_HOST_IDTR_BASE, idtr.base);
	vmw(w, VMCS_HOST_SYSENTER_CS, rdmsr(MSR_SYSENTER_CS));
	vmw(w, VMCS_HOST_SYSENTER_ESP, rdmsr(MSR_SYSENTER_ESP));
	vmw(w, VMCS_HOST_SYSENTER_EIP, rdmsr(MSR_SYSENTER_EIP));
	vmw(w, VMCS_HOST_EFER, rdmsr(MSR_EFER));
	vmw(w, VMCS_HOST_RIP, (uint64_t)vmx_exit_point); /* HOST_RSP: vmx_enter */
}

static void guest_segment(struct vmcs_writer *w, enum vmcs_seg seg, uint16_t sel, uint32_t limit,
			  uint32_t access_rights)
{
	vmw(w, VMCS_GUEST_ES_SEL + 2 * seg, sel);
	vmw(w, VMCS_GUEST_ES_BASE + 2 * seg, 0);
	vmw(w, VMCS_GUEST_ES_LIMIT + 2 * seg, limit);
	vmw(w, VMCS_GUEST_ES_AR + 2 * seg, access_rights);
}

/* Multiboot's machine state: 32-bit protected mode, paging off, flat 4 GiB
 * segments. RSP, RIP and RFLAGS come from struct vcpu_regs at each entry. */
static void setup_guest_state(struct vmcs_writer *w)
{
	uint64_t cr0 = CR0_PE | CR0_ET, cr4 = 0;

	vmw(w, VMCS_GUEST_CR0, cr0 | (caps.cr0_fixed0 & caps.cr0_host_owned));
	vmw(w, VMCS_CR0_READ_SHADOW, cr0);
	vmw(w, VMCS_GUEST_CR3, 0);
	vmw(w, VMCS_GUEST_CR4, cr4 | caps.cr4_fixed0);
	vmw(w, VMCS_CR4_READ_SHADOW, cr4);
	guest_segment(w, SEG_CS, 0x08, 0xffffffff, 0xc09b);
	guest_segment(w, SEG_SS, 0x10, 0xffffffff, 0xc093);
	guest_segment(w, SEG_DS, 0x10, 0xffffffff, 0xc093);
	guest_segment(w, SEG_ES, 0x10, 0xffffffff, 0xc093);
	guest_segment(w, SEG_FS, 0x10, 0xffffffff, 0xc093);
	guest_segment(w, SEG_GS, 0x10, 0xffffffff, 0xc093);
	guest_segment(w, SEG_LDTR, 0, 0, VMX_AR_UNUSABLE);
	/* VM entry wants a busy TSS in TR even if the guest never uses one. */
	guest_segment(w, SEG_TR, 0, 0xffff, 0x8b);
	vmw(w, VMCS_GUEST_GDTR_BASE, 0);
	vmw(w, VMCS_GUEST_GDTR_LIMIT, 0xffff);
	vmw(w, VMCS_GUEST_IDTR_BASE, 0);
	vmw(w, VMCS_GUEST_IDTR_LIMIT, 0xffff);
	vmw(w, VMCS_GUEST_DR7, 0x400);
	vmw(w, VMCS_GUEST_DEBUGCTL, 0);
	vmw(w, VMCS_GUEST_EFER, 0);
	vmw(w, VMCS_GUEST_SYSENTER_CS, 0);
	vmw(w, VMCS_GUEST_SYSENTER_ESP, 0);
	vmw(w, VMCS_GUEST_SYSENTER_EIP, 0);
	vmw(w, VMCS_GUEST_INTERRUPTIBILITY, 0);
	vmw(w, VMCS_GUEST_ACTIVITY_STATE, 0);
	vmw(w, VMCS_GUEST_PENDING_DBG, 0);
	vmw(w, VMCS_LINK_POINTER, ~0ull);
}

static void setup_controls(struct vmcs_writer *w, struct vcpu *v, struct vmx_vcpu *a)
{
	vmw(w, VMCS_PIN_CONTROLS, caps.pin);
	vmw(w, VMCS_PROC_CONTROLS, caps.proc);
	vmw(w, VMCS_PROC2_CONTROLS, a->vpid ? caps.proc2 : caps.proc2 & ~PROC2_ENABLE_VPID);
	vmw(w, VMCS_EXIT_CONTROLS, caps.exit);
	vmw(w, VMCS_ENTRY_CONTROLS, caps.entry);
	vmw(w, VMCS_EXCEPTION_BITMAP, 0);
	vmw(w, VMCS_CR3_TARGET_COUNT, 0);
	vmw(w, VMCS_CR0_GUEST_HOST_MASK, caps.cr0_host_owned);
	vmw(w, VMCS_CR4_GUEST_HOST_MASK, caps.cr4_host_owned);
	vmw(w, VMCS_MSR_BITMAP, caps.msr_bitmap);
	vmw(w, VMCS_ENTRY_MSR_LOAD_ADDR, va_to_pa(a->msrs));
	vmw(w, VMCS_ENTRY_MSR_LOAD_COUNT, SWITCHED_MSRS);
	vmw(w, VMCS_EXIT_MSR_STORE_ADDR, va_to_pa(a->msrs));
	vmw(w, VMCS_EXIT_MSR_STORE_COUNT, SWITCHED_MSRS);
	vmw(w, VMCS_EXIT_MSR_LOAD_COUNT, 0);
	vmw(w, VMCS_ENTRY_INTR_INFO, 0);
	vmw(w, VMCS_TSC_OFFSET, (uint64_t)v->tsc_offset);
	a->eptp = mmu_root_pointer(&v->vm->mmu);
	vmw(w, VMCS_EPT_POINTER, a->eptp);
	if (a->vpid)
		vmw(w, VMCS_VPID, a->vpid);
}

static uint16_t vpid_alloc(void)
{
	for (unsigned i = 0; i < VMX_MAX_VPIDS; i++) {
		if (!vpid_used[i]) {
			vpid_used[i] = true;
			return (uint16_t)(i + 1);
		}
	}
	return 0;
}

static void vmx_vcpu_free(struct vmx_vcpu *a)
{
	if (a->vmcs) {
		vmclear(a->vmcs);
		if (a->cpu && a->cpu->current_vmcs == a->vmcs)
			a->cpu->current_vmcs = 0;
		frame_free(a->vmcs, 0);
	}
	if (a->vpid)
		vpid_used[a->vpid - 1] = false;
	frame_free(va_to_pa(a), 0);
}

static int vmx_vcpu_create(struct vcpu *v)
{
	struct vmx_cpu *cpu = this_cpu();
	struct vmcs_writer w = { 0 };
	struct vmx_vcpu *a;
	paddr_t pa;

	if (!cpu) {
		kprintf("vmx: VMX is not enabled on this CPU\n");
		return -1;
	}
	if (!(pa = vmx_frame_alloc()))
		return -1;
	a = pa_to_va(pa);
	a->cpu = cpu;
	a->pat = PAT_DEFAULT;
	for (unsigned i = 0; i < SWITCHED_MSRS; i++)
		a->msrs[i].index = switched_msrs[i];
	if (caps.proc2 & PROC2_ENABLE_VPID) {
		if (!(a->vpid = vpid_alloc())) {
			kprintf("vmx: all %d VPIDs are in use\n", VMX_MAX_VPIDS);
			vmx_vcpu_free(a);
			return -1;
		}
		/* The tag may have served an earlier vCPU. */
		a->vpid_flush = true;
	}
	if (!(a->vmcs = vmx_frame_alloc())) {
		vmx_vcpu_free(a);
		return -1;
	}
	*(uint32_t *)pa_to_va(a->vmcs) = cpuinfo.vmx.revision_id;
	if (!vmclear(a->vmcs) || !vmcs_make_current(a)) {
		kprintf("vmx: VMCLEAR/VMPTRLD of a new VMCS failed\n");
		vmx_vcpu_free(a);
		return -1;
	}
	setup_controls(&w, v, a);
	setup_host_state(&w, a);
	setup_guest_state(&w);
	if (w.failed) {
		kprintf("vmx: VMWRITE to field 0x%x failed: %s\n", w.field,
			vmx_instruction_error_name(w.error));
		vmx_vcpu_free(a);
		return -1;
	}
	v->arch = a;
	/* The EPT root may be a frame an earlier VM used, with translations
	 * still cached under the same EPTP. */
	v->flush_pending = true;
	return 0;
}

static void vmx_vcpu_destroy(struct vcpu *v)
{
	if (v->arch)
		vmx_vcpu_free(v->arch);
	v->arch = NULL;
}

/* sprig may change its own CR0/CR3/CR4 (the FPU code sets CR4 bits): exits
 * must restore them as they are at the entry. */
static void refresh_host_control_registers(struct vmx_vcpu *a)
{
	uint64_t cr0 = read_cr0(), cr3 = read_cr3(), cr4 = read_cr4();

	if (cr0 != a->host_cr0)
		vmcs_write(VMCS_HOST_CR0, a->host_cr0 = cr0);
	if (cr3 != a->host_cr3)
		vmcs_write(VMCS_HOST_CR3, a->host_cr3 = cr3);
	if (cr4 != a->host_cr4)
		vmcs_write(VMCS_HOST_CR4, a->host_cr4 = cr4);
}

static void set_ia32e_mode(bool on)
{
	uint64_t ctl = vmcs_read(VMCS_ENTRY_CONTROLS);
	uint64_t want = on ? ctl | ENTRY_IA32E_MODE_GUEST : ctl & ~(uint64_t)ENTRY_IA32E_MODE_GUEST;

	if (want != ctl)
		vmcs_write(VMCS_ENTRY_CONTROLS, want);
}

/* The control registers as the guest sees them: its own bits, and the
 * host-owned ones from the read shadow. */
static uint64_t guest_cr0(void)
{
	return (vmcs_read(VMCS_GUEST_CR0) & ~caps.cr0_host_owned) |
	       (vmcs_read(VMCS_CR0_READ_SHADOW) & caps.cr0_host_owned);
}

static uint64_t guest_cr4(void)
{
	return (vmcs_read(VMCS_GUEST_CR4) & ~caps.cr4_host_owned) |
	       (vmcs_read(VMCS_CR4_READ_SHADOW) & caps.cr4_host_owned);
}

static uint64_t vmx_guest_cr0(struct vcpu *v)
{
	(void)v; /* the vCPU's VMCS is the current one */
	return guest_cr0();
}

static uint64_t vmx_guest_cr4(struct vcpu *v)
{
	(void)v; /* the vCPU's VMCS is the current one */
	return guest_cr4();
}

/* Install paging state the guest asked for through an exiting MOV to CR or
 * WRMSR: CR0 and CR4 as the guest sees them (the forced bits are added here),
 * EFER with LMA already derived. PAE paging outside long mode takes its
 * PDPTEs from the VMCS at entry, so they are read here as a MOV to CR would.
 * False, with nothing changed, when the hardware would raise #GP. */
static bool set_paging_state(struct vcpu *v, struct vmx_vcpu *a, uint64_t cr0, uint64_t cr3,
			     uint64_t cr4, uint64_t efer)
{
	uint64_t pdpte[4];

	if ((cr0 & CR0_PG) && (cr4 & CR4_PAE) && !(efer & EFER_LMA)) {
		if (mmu_read_guest(&v->vm->mmu, cr3 & 0xffffffe0, pdpte, sizeof(pdpte)))
			return false;
		for (int i = 0; i < 4; i++)
			if ((pdpte[i] & PDPTE_PRESENT) && (pdpte[i] & PDPTE_RESERVED))
				return false;
		for (int i = 0; i < 4; i++)
			vmcs_write(VMCS_GUEST_PDPTE0 + 2 * i, pdpte[i]);
	}
	vmcs_write(VMCS_GUEST_CR0, cr0 | (caps.cr0_fixed0 & caps.cr0_host_owned));
	vmcs_write(VMCS_CR0_READ_SHADOW, cr0);
	vmcs_write(VMCS_GUEST_CR3, cr3);
	vmcs_write(VMCS_GUEST_CR4, cr4 | caps.cr4_fixed0);
	vmcs_write(VMCS_CR4_READ_SHADOW, cr4);
	vmcs_write(VMCS_GUEST_EFER, efer);
	set_ia32e_mode(efer & EFER_LMA);
	/* The guest's own MOV to CR would have flushed its TLB. */
	a->vpid_flush = a->vpid != 0;
	return true;
}

static bool guest_write_cr0(struct vcpu *v, struct vmx_vcpu *a, uint64_t cr0)
{
	uint64_t old = guest_cr0(), cr4 = guest_cr4(), efer = vmcs_read(VMCS_GUEST_EFER);

	if ((cr0 >> 32) || (cr0 & ~caps.cr0_fixed1) || ((cr0 & CR0_PG) && !(cr0 & CR0_PE)))
		return false;
	if ((cr0 & CR0_PG) && !(old & CR0_PG) && (efer & EFER_LME)) {
		if (!(cr4 & CR4_PAE))
			return false;
		efer |= EFER_LMA;
	} else if (!(cr0 & CR0_PG)) {
		efer &= ~(uint64_t)EFER_LMA;
	}
	return set_paging_state(v, a, cr0, vmcs_read(VMCS_GUEST_CR3), cr4, efer);
}

static bool guest_write_cr3(struct vcpu *v, struct vmx_vcpu *a, uint64_t cr3)
{
	uint64_t cr4 = guest_cr4();

	if (cr4 & CR4_PCIDE)
		cr3 &= ~CR3_PCID_NOFLUSH;
	return set_paging_state(v, a, guest_cr0(), cr3, cr4, vmcs_read(VMCS_GUEST_EFER));
}

static bool guest_write_cr4(struct vcpu *v, struct vmx_vcpu *a, uint64_t cr4)
{
	uint64_t efer = vmcs_read(VMCS_GUEST_EFER);

	/* Guests get no VMX of their own. */
	if ((cr4 >> 32) || (cr4 & ~caps.cr4_fixed1) || (cr4 & CR4_VMXE) ||
	    ((efer & EFER_LMA) && !(cr4 & CR4_PAE)))
		return false;
	return set_paging_state(v, a, guest_cr0(), vmcs_read(VMCS_GUEST_CR3), cr4, efer);
}

/* A general register by its number in an exit qualification. */
static uint64_t *guest_gpr(struct vcpu *v, unsigned n)
{
	struct vcpu_regs *r = &v->regs;
	uint64_t *const by_number[16] = {
		&r->rax, &r->rcx, &r->rdx, &r->rbx, &r->rsp, &r->rbp, &r->rsi, &r->rdi,
		&r->r8,  &r->r9,  &r->r10, &r->r11, &r->r12, &r->r13, &r->r14, &r->r15,
	};

	return by_number[n & 15];
}

static void vmx_inject_exception(struct vcpu *v, unsigned vector);

/* MOV to or from a control register that exited: a host-owned CR0/CR4 bit
 * changed, CR8 (kept per vCPU), or CR3 where the CPU cannot stop it exiting. */
static void handle_cr_access(struct vcpu *v, struct vmx_vcpu *a, uint64_t qual, struct vexit *e)
{
	unsigned cr = CR_QUAL_CR(qual), type = CR_QUAL_TYPE(qual);
	uint64_t *gpr = guest_gpr(v, CR_QUAL_GPR(qual));
	bool ok;

	e->kind = VEXIT_HANDLED;
	e->insn_len = (unsigned)vmcs_read(VMCS_EXIT_INSTRUCTION_LEN);
	if (type == CR_TYPE_MOV_TO && (cr == 0 || cr == 3 || cr == 4 || cr == 8)) {
		uint64_t val = *gpr;
		if (!(vmcs_read(VMCS_GUEST_EFER) & EFER_LMA))
			val = (uint32_t)val;
		ok = cr == 0 ? guest_write_cr0(v, a, val)
		     : cr == 3 ? guest_write_cr3(v, a, val)
		     : cr == 4 ? guest_write_cr4(v, a, val)
		     : !(val & ~0xfull);
		if (ok && cr == 8)
			a->cr8 = val;
	} else if (type == CR_TYPE_MOV_FROM && (cr == 3 || cr == 8)) {
		*gpr = cr == 3 ? vmcs_read(VMCS_GUEST_CR3) : a->cr8;
		ok = true;
	} else {
		e->kind = VEXIT_FAILED;
		ksnprintf(e->text, sizeof(e->text),
			  "unexpected control-register access (qualification 0x%llx)",
			  (unsigned long long)qual);
		return;
	}
	if (ok)
		v->regs.rip += e->insn_len;
	else
		vmx_inject_exception(v, X86_VEC_GP);
}

/* Names the EPT entry behind a misconfiguration: the first one on the walk
 * that the SDM's misconfiguration rules (28.3.3.1) reject, or the last. */
static bool ept_entry_misconfigured(uint64_t entry, int level)
{
	uint64_t memtype = (entry >> 3) & 7;

	if ((entry & EPT_W) && !(entry & EPT_R))
		return true;
	if ((entry & (EPT_R | EPT_W | EPT_X)) == EPT_X && !(cpuinfo.vmx.ept_vpid_cap & 1))
		return true;
	if (level == 4 && (entry & EPT_LARGE))
		return true;
	if (level == 1 || (entry & EPT_LARGE))
		return memtype == 2 || memtype == 3 || memtype == 7;
	return (entry & 0xf8) != 0; /* bits 7:3 of a non-leaf are reserved */
}

static void describe_misconfig(struct vcpu *v, uint64_t gpa, struct vexit *e)
{
	paddr_t table = v->vm->mmu.root.table;
	uint64_t entry = 0;
	int level;

	for (level = TDP_ROOT_LEVEL; level >= 1; level--) {
		entry = ((const uint64_t *)pa_to_va(table))[tdp_index(gpa >> PAGE_SHIFT, level)];
		if (ept_entry_misconfigured(entry, level) || !(entry & (EPT_R | EPT_W | EPT_X)) ||
		    level == 1 || (entry & EPT_LARGE))
			break;
		table = entry & EPT_ADDR;
	}
	ksnprintf(e->text, sizeof(e->text),
		  "EPT misconfiguration at gpa 0x%llx: level %d entry 0x%016llx",
		  (unsigned long long)gpa, level < 1 ? 1 : level, (unsigned long long)entry);
}

static void decode_exit(struct vcpu *v, struct vmx_vcpu *a, struct vexit *e)
{
	uint32_t basic = a->exit_reason & EXIT_REASON_BASIC_MASK;
	uint64_t qual = a->exit_qualification;

	e->code = a->exit_reason;
	e->info1 = qual;
	if (a->exit_reason & EXIT_REASON_ENTRY_FAILURE) {
		e->kind = VEXIT_FAILED;
		vmx_entry_failure_describe(a->exit_reason, qual, e->text, sizeof(e->text));
		return;
	}
	switch (basic) {
	case EXIT_EXCEPTION_NMI:
		e->info2 = vmcs_read(VMCS_EXIT_INTR_INFO);
		if (((e->info2 & INTR_INFO_TYPE_MASK) >> INTR_INFO_TYPE_SHIFT) == INTR_TYPE_NMI) {
			/* A host NMI: sprig's own handler takes it, as if it
			 * had arrived outside the guest. */
			__asm__ volatile("int $2");
			e->kind = VEXIT_INTR;
			return;
		}
		e->kind = VEXIT_UNKNOWN;
		ksnprintf(e->text, sizeof(e->text), "exception %u in the guest",
			  (unsigned)(e->info2 & INTR_INFO_VECTOR_MASK));
		return;
	case EXIT_EXTERNAL_INTERRUPT:
	case EXIT_PREEMPTION_TIMER:
		e->kind = VEXIT_INTR;
		return;
	case EXIT_TRIPLE_FAULT:
		e->kind = VEXIT_SHUTDOWN;
		return;
	case EXIT_CR_ACCESS:
		handle_cr_access(v, a, qual, e);
		return;
	case EXIT_EPT_VIOLATION:
		e->kind = VEXIT_NPF;
		e->info2 = e->npf.gpa = vmcs_read(VMCS_GUEST_PHYSICAL_ADDRESS);
		e->npf.access = (qual & EPT_QUAL_READ ? TDP_ACC_READ : 0) |
				(qual & EPT_QUAL_WRITE ? TDP_ACC_WRITE : 0) |
				(qual & EPT_QUAL_FETCH ? TDP_ACC_EXEC : 0);
		if (!e->npf.access)
			e->npf.access = TDP_ACC_READ;
		e->npf.present = qual & EPT_QUAL_PRESENT;
		return;
	case EXIT_EPT_MISCONFIG:
		e->kind = VEXIT_FAILED;
		e->info2 = vmcs_read(VMCS_GUEST_PHYSICAL_ADDRESS);
		describe_misconfig(v, e->info2, e);
		return;
	case EXIT_IO:
		e->kind = VEXIT_IO;
		e->io.port = IO_QUAL_PORT(qual);
		e->io.size = (uint8_t)IO_QUAL_SIZE(qual);
		e->io.in = qual & IO_QUAL_IN;
		e->io.string = qual & IO_QUAL_STRING;
		break;
	case EXIT_CPUID:
		e->kind = VEXIT_CPUID;
		break;
	case EXIT_RDMSR:
		e->kind = VEXIT_RDMSR;
		break;
	case EXIT_WRMSR:
		e->kind = VEXIT_WRMSR;
		break;
	case EXIT_VMCALL:
		e->kind = VEXIT_HYPERCALL;
		break;
	case EXIT_HLT:
		e->kind = VEXIT_HLT;
		break;
	case EXIT_XSETBV:
		e->kind = VEXIT_XSETBV;
		break;
	case EXIT_INVD:
		vexit_insn(e, INSN_INVD);
		break;
	case EXIT_RDPMC:
		vexit_insn(e, INSN_RDPMC);
		break;
	case EXIT_MONITOR:
	case EXIT_MWAIT:
		vexit_insn(e, INSN_MONITOR_MWAIT);
		break;
	case EXIT_GETSEC:
	case EXIT_VMCLEAR ... EXIT_VMXON: /* VMCLEAR through VMXON, VMCALL aside */
	case EXIT_INVEPT:
	case EXIT_INVVPID:
	case EXIT_VMFUNC:
		vexit_insn(e, INSN_VIRT);
		break;
	default:
		e->kind = VEXIT_UNKNOWN;
		ksnprintf(e->text, sizeof(e->text), "VMX exit reason %u (%s)", basic,
			  vmx_exit_reason_name(basic));
		return;
	}
	/* An instruction exit: virt/ skips it once emulated. */
	e->insn_len = (unsigned)vmcs_read(VMCS_EXIT_INSTRUCTION_LEN);
}

/* An event the exit interrupted on its way into the guest (an EPT violation
 * on the guest's IDT or stack, say) is delivered again at the next entry. */
static void requeue_vectored_event(void)
{
	uint32_t info = (uint32_t)vmcs_read(VMCS_IDT_VECTORING_INFO);
	uint32_t type = (info & INTR_INFO_TYPE_MASK) >> INTR_INFO_TYPE_SHIFT;

	if (!(info & INTR_INFO_VALID))
		return;
	vmcs_write(VMCS_ENTRY_INTR_INFO, info & (INTR_INFO_VALID | INTR_INFO_DELIVER_CODE |
						  INTR_INFO_TYPE_MASK | INTR_INFO_VECTOR_MASK));
	if (info & INTR_INFO_DELIVER_CODE)
		vmcs_write(VMCS_ENTRY_EXCEPTION_ERROR_CODE,
			   vmcs_read(VMCS_IDT_VECTORING_ERROR_CODE));
	if (type == INTR_TYPE_SW_INTERRUPT || type == INTR_TYPE_PRIV_SW_EXCEPTION ||
	    type == INTR_TYPE_SW_EXCEPTION)
		vmcs_write(VMCS_ENTRY_INSTRUCTION_LEN, vmcs_read(VMCS_EXIT_INSTRUCTION_LEN));
}

/* The preemption timer bounds how long the guest runs without an exit, over
 * all its entries together: an exit does not restart the budget. Where the
 * CPU saves the timer's value at exits it counts on by itself, and only an
 * expired budget is reloaded; elsewhere each entry loads what is left. */
static void arm_preemption_timer(struct vmx_vcpu *a)
{
	uint64_t now, ticks;

	if (!(caps.pin & PIN_PREEMPTION_TIMER))
		return;
	now = rdtsc();
	if (now >= a->slice_end ||
	    (a->exit_reason & EXIT_REASON_BASIC_MASK) == EXIT_PREEMPTION_TIMER) {
		a->slice_end = now + caps.preemption_budget_tsc;
	} else if (caps.exit & EXIT_SAVE_PREEMPTION_TIMER) {
		return;
	}
	ticks = (a->slice_end - now) >> (caps.misc & VMX_MISC_TIMER_RATE_MASK);
	vmcs_write(VMCS_PREEMPTION_TIMER, ticks > UINT32_MAX ? UINT32_MAX : ticks);
}

static void vmx_run(struct vcpu *v, struct vexit *e)
{
	struct vmx_vcpu *a = v->arch;
	int status;

	memset(e, 0, sizeof(*e));
	if (!vmcs_make_current(a)) {
		e->kind = VEXIT_FAILED;
		ksnprintf(e->text, sizeof(e->text), "the vCPU's VMCS cannot be loaded on this CPU");
		return;
	}
	refresh_host_control_registers(a);
	if (v->flush_pending) {
		invept(caps.invept_type, a->eptp);
		v->flush_pending = false;
	}
	if (a->vpid_flush) {
		invvpid(caps.invvpid_type, a->vpid);
		a->vpid_flush = false;
	}
	/* virt/ skipped the exiting instruction: an STI or MOV SS before it no
	 * longer blocks anything. */
	if (v->regs.rip != a->exit_rip)
		vmcs_write(VMCS_GUEST_INTERRUPTIBILITY,
			   vmcs_read(VMCS_GUEST_INTERRUPTIBILITY) & ~INTERRUPTIBILITY_STI_MOVSS);
	arm_preemption_timer(a);
	vmcs_write(VMCS_TSC_OFFSET, (uint64_t)v->tsc_offset);
	vmcs_write(VMCS_GUEST_RSP, v->regs.rsp);
	vmcs_write(VMCS_GUEST_RIP, v->regs.rip);
	vmcs_write(VMCS_GUEST_RFLAGS, v->regs.rflags | RFLAGS_FIXED);

	status = vmx_enter(&v->regs, a->launched);
	if (status != VMX_ENTER_EXITED) {
		const char *insn = a->launched ? "VMRESUME" : "VMLAUNCH";

		e->kind = VEXIT_FAILED;
		if (status == VMX_ENTER_FAIL_VALID) {
			e->code = a->entry_error = (uint32_t)vmcs_read(VMCS_INSTRUCTION_ERROR);
			ksnprintf(e->text, sizeof(e->text), "%s failed: %s", insn,
				  vmx_instruction_error_name(a->entry_error));
		} else {
			ksnprintf(e->text, sizeof(e->text), "%s failed: no current VMCS", insn);
		}
		return;
	}

	a->entry_error = 0;
	a->exit_reason = (uint32_t)vmcs_read(VMCS_EXIT_REASON);
	a->exit_qualification = vmcs_read(VMCS_EXIT_QUALIFICATION);
	if (!(a->exit_reason & EXIT_REASON_ENTRY_FAILURE))
		a->launched = true;
	v->regs.rsp = vmcs_read(VMCS_GUEST_RSP);
	v->regs.rip = a->exit_rip = vmcs_read(VMCS_GUEST_RIP);
	v->regs.rflags = vmcs_read(VMCS_GUEST_RFLAGS);
	/* The guest may have entered or left long mode by itself. */
	if (!(caps.misc & VMX_MISC_STORES_LMA))
		set_ia32e_mode(vmcs_read(VMCS_GUEST_EFER) & EFER_LMA);
	decode_exit(v, a, e);
	if (!(a->exit_reason & EXIT_REASON_ENTRY_FAILURE))
		requeue_vectored_event();
}

static struct vmx_msr_entry *switched_msr(struct vmx_vcpu *a, uint32_t msr)
{
	for (unsigned i = 0; i < SWITCHED_MSRS; i++)
		if (a->msrs[i].index == msr)
			return &a->msrs[i];
	return NULL;
}

static bool vmx_msr_read(struct vcpu *v, uint32_t msr, uint64_t *val)
{
	struct vmx_vcpu *a = v->arch;
	struct vmx_msr_entry *m;

	if (!vmcs_make_current(a))
		return false;
	switch (msr) {
	case MSR_EFER:
		*val = vmcs_read(VMCS_GUEST_EFER);
		return true;
	case MSR_FS_BASE:
		*val = vmcs_read(VMCS_GUEST_ES_BASE + 2 * SEG_FS);
		return true;
	case MSR_GS_BASE:
		*val = vmcs_read(VMCS_GUEST_ES_BASE + 2 * SEG_GS);
		return true;
	case MSR_SYSENTER_CS:
		*val = vmcs_read(VMCS_GUEST_SYSENTER_CS);
		return true;
	case MSR_SYSENTER_ESP:
		*val = vmcs_read(VMCS_GUEST_SYSENTER_ESP);
		return true;
	case MSR_SYSENTER_EIP:
		*val = vmcs_read(VMCS_GUEST_SYSENTER_EIP);
		return true;
	case MSR_PAT:
		*val = a->pat;
		return true;
	}
	if (!(m = switched_msr(a, msr)))
		return false;
	*val = m->value;
	return true;
}

/* EFER as the MSR policy let it through: LMA as it was, LME unchanged while
 * paging, so the IA-32e-mode-guest control and the PDPTEs still hold. */
static void write_efer(struct vmx_vcpu *a, uint64_t val)
{
	/* Translations cached under the old NXE go. */
	if ((val ^ vmcs_read(VMCS_GUEST_EFER)) & EFER_NXE)
		a->vpid_flush = a->vpid != 0;
	vmcs_write(VMCS_GUEST_EFER, val);
	set_ia32e_mode(val & EFER_LMA);
}

/* Values the MSR policy (virt/msr_policy.c) let through: canonical where
 * the VMCS or the MSR-load list needs it, SYSENTER_CS and SFMASK 32 bits. */
static bool vmx_msr_write(struct vcpu *v, uint32_t msr, uint64_t val)
{
	struct vmx_vcpu *a = v->arch;
	struct vmx_msr_entry *m;

	if (!vmcs_make_current(a))
		return false;
	switch (msr) {
	case MSR_EFER:
		write_efer(a, val);
		return true;
	case MSR_FS_BASE:
	case MSR_GS_BASE:
		vmcs_write(VMCS_GUEST_ES_BASE + 2 * (msr == MSR_FS_BASE ? SEG_FS : SEG_GS), val);
		return true;
	case MSR_SYSENTER_CS:
		vmcs_write(VMCS_GUEST_SYSENTER_CS, val);
		return true;
	case MSR_SYSENTER_ESP:
		vmcs_write(VMCS_GUEST_SYSENTER_ESP, val);
		return true;
	case MSR_SYSENTER_EIP:
		vmcs_write(VMCS_GUEST_SYSENTER_EIP, val);
		return true;
	case MSR_PAT:
		a->pat = val;
		return true;
	}
	if (!(m = switched_msr(a, msr)))
		return false;
	m->value = val;
	return true;
}

static void vmx_inject_exception(struct vcpu *v, unsigned vector)
{
	struct vmx_vcpu *a = v->arch;
	uint32_t info = INTR_INFO_VALID | (INTR_TYPE_HW_EXCEPTION << INTR_INFO_TYPE_SHIFT) | vector;

	if (!vmcs_make_current(a))
		return;
	/* Real mode (unrestricted guest with CR0.PE clear) pushes no error code. */
	if ((vmcs_read(VMCS_GUEST_CR0) & CR0_PE) && x86_vector_has_error_code(vector)) {
		info |= INTR_INFO_DELIVER_CODE;
		vmcs_write(VMCS_ENTRY_EXCEPTION_ERROR_CODE, 0);
	}
	vmcs_write(VMCS_ENTRY_INTR_INFO, info);
}

/* CPL is SS.DPL (SDM vol. 3C, 26.3.1.2), as the VMCS keeps it. */
static unsigned vmx_guest_cpl(struct vcpu *v)
{
	if (!vmcs_make_current(v->arch))
		return 0;
	return (vmcs_read(VMCS_GUEST_ES_AR + 2 * SEG_SS) >> 5) & 3;
}

static void vmx_flush_tlb(void *vcpu)
{
	/* INVEPT runs before the next entry, on the CPU that enters. */
	((struct vcpu *)vcpu)->flush_pending = true;
}

static void vmx_dump(struct vcpu *v)
{
	struct vmx_vcpu *a = v->arch;
	uint32_t basic = a->exit_reason & EXIT_REASON_BASIC_MASK;

	if (!vmcs_make_current(a)) {
		kprintf("  (the VMCS cannot be loaded on this CPU)\n");
		return;
	}
	kprintf("  CR0=%llx (reads %llx) CR3=%llx CR4=%llx (reads %llx) EFER=%llx\n",
		(unsigned long long)vmcs_read(VMCS_GUEST_CR0), (unsigned long long)guest_cr0(),
		(unsigned long long)vmcs_read(VMCS_GUEST_CR3),
		(unsigned long long)vmcs_read(VMCS_GUEST_CR4), (unsigned long long)guest_cr4(),
		(unsigned long long)vmcs_read(VMCS_GUEST_EFER));
	kprintf("  CS=%04llx/%llx base %llx SS=%04llx base %llx DS=%04llx base %llx\n",
		(unsigned long long)vmcs_read(VMCS_GUEST_ES_SEL + 2 * SEG_CS),
		(unsigned long long)vmcs_read(VMCS_GUEST_ES_AR + 2 * SEG_CS),
		(unsigned long long)vmcs_read(VMCS_GUEST_ES_BASE + 2 * SEG_CS),
		(unsigned long long)vmcs_read(VMCS_GUEST_ES_SEL + 2 * SEG_SS),
		(unsigned long long)vmcs_read(VMCS_GUEST_ES_BASE + 2 * SEG_SS),
		(unsigned long long)vmcs_read(VMCS_GUEST_ES_SEL + 2 * SEG_DS),
		(unsigned long long)vmcs_read(VMCS_GUEST_ES_BASE + 2 * SEG_DS));
	kprintf("  RIP=%llx RSP=%llx RFLAGS=%llx interruptibility %llx\n",
		(unsigned long long)vmcs_read(VMCS_GUEST_RIP),
		(unsigned long long)vmcs_read(VMCS_GUEST_RSP),
		(unsigned long long)vmcs_read(VMCS_GUEST_RFLAGS),
		(unsigned long long)vmcs_read(VMCS_GUEST_INTERRUPTIBILITY));
	if (a->entry_error)
		kprintf("  %s refused: VM-instruction error %u (%s)\n",
			a->launched ? "VMRESUME" : "VMLAUNCH", a->entry_error,
			vmx_instruction_error_name(a->entry_error));
	else
		kprintf("  exit reason %u (%s) qualification 0x%llx\n", basic,
			vmx_exit_reason_name(basic), (unsigned long long)a->exit_qualification);
	kprintf("  VPID %u EPTP %llx\n", a->vpid, (unsigned long long)a->eptp);
}

/* Where each VMCS guest-state field of the saved state lives. The read
 * shadows are what the guest sees of the host-owned CR0/CR4 bits; the PDPTEs
 * matter for PAE paging outside long mode; interruptibility and activity
 * state say whether an STI shadow or a halt was pending at the exit. */
#define SAVED(field, member) { field, offsetof(struct vmx_saved_state, member) }
#define SAVED_SEG(seg) SAVED(VMCS_GUEST_ES_SEL + 2 * seg, selector[seg]), \
	SAVED(VMCS_GUEST_ES_LIMIT + 2 * seg, limit[seg]), \
	SAVED(VMCS_GUEST_ES_AR + 2 * seg, access[seg]), \
	SAVED(VMCS_GUEST_ES_BASE + 2 * seg, base[seg])
static const struct {
	uint16_t field;
	uint16_t offset;
} saved_fields[] = {
	SAVED_SEG(VMX_ES), SAVED_SEG(VMX_CS), SAVED_SEG(VMX_SS), SAVED_SEG(VMX_DS),
	SAVED_SEG(VMX_FS), SAVED_SEG(VMX_GS), SAVED_SEG(VMX_LDTR), SAVED_SEG(VMX_TR),
	SAVED(VMCS_GUEST_GDTR_LIMIT, gdtr_limit), SAVED(VMCS_GUEST_GDTR_BASE, gdtr_base),
	SAVED(VMCS_GUEST_IDTR_LIMIT, idtr_limit), SAVED(VMCS_GUEST_IDTR_BASE, idtr_base),
	SAVED(VMCS_GUEST_CR0, cr0), SAVED(VMCS_GUEST_CR3, cr3), SAVED(VMCS_GUEST_CR4, cr4),
	SAVED(VMCS_CR0_READ_SHADOW, cr0_shadow), SAVED(VMCS_CR4_READ_SHADOW, cr4_shadow),
	SAVED(VMCS_GUEST_DR7, dr7), SAVED(VMCS_GUEST_RSP, rsp), SAVED(VMCS_GUEST_RIP, rip),
	SAVED(VMCS_GUEST_RFLAGS, rflags), SAVED(VMCS_GUEST_PENDING_DBG, pending_dbg),
	SAVED(VMCS_GUEST_SYSENTER_CS, sysenter_cs), SAVED(VMCS_GUEST_SYSENTER_ESP, sysenter_esp),
	SAVED(VMCS_GUEST_SYSENTER_EIP, sysenter_eip), SAVED(VMCS_GUEST_DEBUGCTL, debugctl),
	SAVED(VMCS_GUEST_EFER, efer), SAVED(VMCS_GUEST_PDPTE0, pdpte[0]),
	SAVED(VMCS_GUEST_PDPTE0 + 2, pdpte[1]), SAVED(VMCS_GUEST_PDPTE0 + 4, pdpte[2]),
	SAVED(VMCS_GUEST_PDPTE0 + 6, pdpte[3]),
	SAVED(VMCS_GUEST_INTERRUPTIBILITY, interruptibility),
	SAVED(VMCS_GUEST_ACTIVITY_STATE, activity),
};
#define SAVED_FIELDS (sizeof(saved_fields) / sizeof(saved_fields[0]))
_Static_assert(sizeof(struct vmx_saved_state) <= VCPU_ARCH_STATE_MAX, "VMX saved state");
_Static_assert(VMX_SWITCHED_MSRS == SWITCHED_MSRS, "switched MSR list");

static uint64_t *saved_field(struct vmx_saved_state *st, unsigned i)
{
	return (uint64_t *)((char *)st + saved_fields[i].offset);
}

static size_t vmx_state_save(struct vcpu *v, void *buf)
{
	struct vmx_vcpu *a = v->arch;
	struct vmx_saved_state st;

	if (!vmcs_make_current(a))
		return 0;
	for (unsigned i = 0; i < SAVED_FIELDS; i++)
		*saved_field(&st, i) = vmcs_read(saved_fields[i].field);
	for (unsigned i = 0; i < SWITCHED_MSRS; i++)
		st.switched_msr[i] = a->msrs[i].value;
	st.cr8 = a->cr8;
	st.pat = a->pat;
	memcpy(buf, &st, sizeof(st));
	return sizeof(st);
}

static bool vmx_state_check(const void *buf, size_t len, const struct vcpu_regs *regs, char *err,
			    size_t errlen)
{
	const struct vmx_state_limits lim = {
		.phys_bits = cpuinfo.phys_bits,
		.cr0_fixed0 = caps.cr0_fixed0,
		.cr0_fixed1 = caps.cr0_fixed1,
		.cr4_fixed0 = caps.cr4_fixed0,
		.cr4_fixed1 = caps.cr4_fixed1,
		.cr4_allowed = cpuinfo.cr4_allowed,
		.efer_allowed = EFER_SCE | EFER_LME | EFER_LMA | (cpuinfo.nx ? EFER_NXE : 0),
		.misc = caps.misc,
		.va_bits = cpuinfo.va_bits,
	};
	struct vmx_saved_state st;

	if (len != sizeof(st)) {
		ksnprintf(err, errlen, "VMX state of %zu bytes, not %zu", len, sizeof(st));
		return false;
	}
	memcpy(&st, buf, sizeof(st));
	return vmx_saved_state_check(&st, regs, &lim, err, errlen);
}

static bool vmx_state_load(struct vcpu *v, const void *buf, size_t len)
{
	struct vmx_vcpu *a = v->arch;
	struct vmcs_writer w = { 0 };
	struct vmx_saved_state st;

	if (len != sizeof(st) || !vmcs_make_current(a))
		return false;
	memcpy(&st, buf, sizeof(st));
	for (unsigned i = 0; i < SAVED_FIELDS; i++)
		vmw(&w, saved_fields[i].field, *saved_field(&st, i));
	if (w.failed) {
		kprintf("vmx: VMWRITE to field 0x%x failed: %s\n", w.field,
			vmx_instruction_error_name(w.error));
		return false;
	}
	for (unsigned i = 0; i < SWITCHED_MSRS; i++)
		a->msrs[i].value = st.switched_msr[i];
	a->cr8 = st.cr8;
	a->pat = st.pat;
	set_ia32e_mode(vmcs_read(VMCS_GUEST_EFER) & EFER_LMA);
	/* The saved RIP is where the guest stopped: its interruptibility holds. */
	a->exit_rip = vmcs_read(VMCS_GUEST_RIP);
	return true;
}

/* Not const: cpu_enable picks the EPT format (with A/D bits when the CPU has
 * them) before any VM's MMU is created with it. */
struct virt_backend vmx_backend = {
	.name = "vmx",
	.tdp = NULL,
	.cpu_enable = vmx_cpu_enable,
	.vcpu_create = vmx_vcpu_create,
	.vcpu_destroy = vmx_vcpu_destroy,
	.run = vmx_run,
	.msr_read = vmx_msr_read,
	.msr_write = vmx_msr_write,
	.inject_exception = vmx_inject_exception,
	.guest_cpl = vmx_guest_cpl,
	.guest_cr0 = vmx_guest_cr0,
	.guest_cr4 = vmx_guest_cr4,
	.flush_tlb = vmx_flush_tlb,
	.dump = vmx_dump,
	.state_save = vmx_state_save,
	.state_load = vmx_state_load,
	.state_check = vmx_state_check,
};
