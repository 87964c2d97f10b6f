/* A virtual CPU, vendor-neutral, and the interface the SVM and VMX backends
 * implement. A backend loads the registers below into its VMCB or VMCS before
 * entry, stores them after the exit, and decodes the exit into a struct vexit;
 * everything that follows (I/O, CPUID, MSRs, hypercalls, nested page faults)
 * is handled once, in virt/, for both. */
#pragma once
#include "mm/spte.h"
#include "virt/guest_mode.h"
#include "virt/kvm_pv.h"
#include "virt/kick.h"
#include "virt/msr_policy.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lapic;
struct mmu;
struct spte_format;
struct tdp_table_cache;
struct vcpu;
struct vm;

struct vcpu_regs {
	uint64_t rax, rbx, rcx, rdx, rsi, rdi, rbp, r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rsp, rip, rflags;
};

/* A general register by its number in an instruction or exit qualification. */
static inline uint64_t *vcpu_gpr(struct vcpu_regs *r, unsigned n)
{
	uint64_t *const by_number[16] = {
		&r->rax, &r->rcx, &r->rdx, &r->rbx, &r->rsp, &r->rbp, &r->rsi, &r->rdi,
		&r->r8,  &r->r9,  &r->r10, &r->r11, &r->r12, &r->r13, &r->r14, &r->r15,
	};

	return by_number[n & 15];
}

/* The longest x86 instruction (SDM vol. 2A, 2.3.11). */
#define VCPU_INSN_MAX_LEN 15

/* Why the guest stopped running, decoded. */
enum vexit_kind {
	VEXIT_NPF,        /* nested page fault / EPT violation */
	VEXIT_IO,         /* IN / OUT */
	VEXIT_HYPERCALL,  /* VMMCALL / VMCALL */
	VEXIT_CPUID,
	VEXIT_RDMSR,
	VEXIT_WRMSR,
	VEXIT_HLT,
	VEXIT_XSETBV,
	VEXIT_INTR,       /* a host interrupt arrived; the guest resumes after it */
	VEXIT_SHUTDOWN,   /* triple fault */
	VEXIT_INSN,       /* an instruction the virtual CPU treats apart (enum vexit_insn) */
	VEXIT_WINDOW,     /* the guest can take the interrupt or NMI that waited for it */
	VEXIT_PAUSE,      /* the guest spins on PAUSE (struct vcpu's spin_exits) */
	VEXIT_HANDLED,    /* the backend handled it itself (e.g. CR access under VMX) */
	/* The backend finishes it outside the entry window (finish_exit): its
	 * work may take locks or wait, which no CPU may do while its vCPU
	 * counts as in the guest (docs/locking.md). Never seen by handlers. */
	VEXIT_BACKEND,
	VEXIT_FAILED,     /* the backend could not enter or continue: reason in text */
	VEXIT_UNKNOWN,    /* an exit virt/ has no handler for */
	VEXIT_KINDS
};

/* VEXIT_INSN: which instruction. */
enum vexit_insn {
	VEXIT_INSN_INVD,          /* would drop the host's cached writes: never run */
	VEXIT_INSN_RDPMC,         /* would read the host's counters; no PMU is offered */
	VEXIT_INSN_MONITOR_MWAIT, /* not offered (CPUID hides MONITOR) */
	VEXIT_INSN_VIRT,          /* SVM's or VMX's own instructions: not offered to guests */
};

struct vexit {
	enum vexit_kind kind;
	/* The exit interrupted the delivery of event `vector` through the IDT
	 * (SVM EXITINTINFO, VMX IDT-vectoring information): vectoring. Queued
	 * again for the next entry: requeued (not a software interrupt, whose
	 * instruction runs again). */
	bool vectoring;
	bool requeued;
	uint8_t vector;
	/* Length of the exiting instruction, for skipping it; 0 if unknown. */
	unsigned insn_len;
	union {
		struct {
			uint64_t gpa;
			unsigned access; /* TDP_ACC_* of the access */
			bool present;    /* the entry was present: a permission fault */
			/* The instruction's first bytes where the CPU has decode
			 * assists (SVM), else 0 of them: virt/ fetches them. */
			uint8_t insn_bytes[VCPU_INSN_MAX_LEN];
			uint8_t insn_bytes_len;
		} npf;
		struct {
			uint16_t port;
			uint8_t size; /* 1, 2 or 4 */
			bool in;
			bool string;  /* INS/OUTS: not emulated, stops the guest */
		} io;
		enum vexit_insn insn;
	};
	/* The backend's own exit code and qualification, for reports. */
	uint64_t code, info1, info2;
	char text[96];
};

static inline void vexit_insn(struct vexit *e, enum vexit_insn insn)
{
	e->kind = VEXIT_INSN;
	e->insn = insn;
}

/* The interface of a hardware backend (svm/svm.c, vmx/vmx.c). */
struct virt_backend {
	const char *name;                  /* "svm" or "vmx" */
	const struct spte_format *tdp;     /* NPT or EPT entries */
	/* The largest leaf the CPU's NPT or EPT takes (2: 2 MiB, 3: 1 GiB), from
	 * its capability bits; valid once cpu_enable succeeded. */
	int (*tdp_max_leaf_level)(void);
	/* Turn virtualization on for this CPU; false with a reason. */
	bool (*cpu_enable)(char *err, size_t len);
	/* Build the vCPU's control block in 32-bit protected mode with paging
	 * off and flat 4 GiB segments, as multiboot requires; 0 or -1. */
	int (*vcpu_create)(struct vcpu *v);
	void (*vcpu_destroy)(struct vcpu *v);
	/* Enter the guest until the next exit. Interrupts arriving meanwhile are
	 * taken by sprig before run returns. */
	void (*run)(struct vcpu *v, struct vexit *e);
	/* A VEXIT_BACKEND exit, after kick_sync_exit, the control block still
	 * current: do its work (a CR access, a walk of the TDP tables for a
	 * report) and leave e as the exit it is (VEXIT_HANDLED, VEXIT_FAILED
	 * with a reason, ...). */
	void (*finish_exit)(struct vcpu *v, struct vexit *e);
	/* Load or store the guest's value of an MSR the control block holds
	 * (MSR_HOME_BACKEND in virt/msr_policy.h: EFER without SVME, the
	 * syscall, sysenter and segment-base MSRs, PAT). virt/msr.c has
	 * checked a written value against the policy; false only for an MSR
	 * the backend does not hold. */
	bool (*msr_read)(struct vcpu *v, uint32_t msr, uint64_t *val);
	bool (*msr_write)(struct vcpu *v, uint32_t msr, uint64_t val);
	/* Raise exception vector (arch/x86/regs.h X86_VEC_*) at the next entry,
	 * with error_code where the vector and the mode push one. */
	void (*inject_exception)(struct vcpu *v, unsigned vector, uint32_t error_code);
	/* An instruction virt/ completed for the guest (skipped or emulated)
	 * began with RFLAGS.TF set: the single-step trap it owes, #DB with
	 * DR6.BS, before the guest's next instruction (SDM vol. 3B 17.3.1.4). */
	void (*single_step_trap)(struct vcpu *v);
	/* The guest's current privilege level. */
	unsigned (*guest_cpl)(struct vcpu *v);
	/* Control registers, code width and segment bases, for instruction
	 * emulation (virt/mmio.c). */
	void (*guest_mode)(struct vcpu *v, struct guest_mode *m);
	/* Load a segment register (SEG_TR too) with what an emulated segment
	 * load read from its descriptor; the CPL stays. */
	void (*set_segment)(struct vcpu *v, enum guest_seg seg, const struct guest_segment *g);
	/* The instruction just emulated (MOV SS) blocks interrupts, NMIs and
	 * debug traps until the next one completes. */
	void (*interrupt_shadow)(struct vcpu *v);
	/* Events. Could an external interrupt be delivered at the next entry:
	 * RFLAGS.IF set, no STI or MOV SS shadow, no event queued for that
	 * entry already (a re-injected one, an exception, an NMI)? */
	bool (*irq_allowed)(struct vcpu *v);
	void (*inject_irq)(struct vcpu *v, uint8_t vector);
	/* Could an NMI be delivered: not blocked by an NMI still in its
	 * handler (until IRET), nor by MOV SS, nor queued behind another event? */
	bool (*nmi_allowed)(struct vcpu *v);
	/* Does the guest block NMIs: one in its handler (until its IRET), or
	 * one queued for the next entry? */
	bool (*nmi_masked)(struct vcpu *v);
	void (*inject_nmi)(struct vcpu *v);
	/* Exit (VEXIT_WINDOW) as soon as the guest can take an interrupt (irq)
	 * or an NMI (nmi); false stops asking. */
	void (*event_window)(struct vcpu *v, bool irq, bool nmi);
	/* CR0 as the guest sees it (the MSR policy checks EFER writes by it). */
	uint64_t (*guest_cr0)(struct vcpu *v);
	/* CR4 as the guest sees it (CPUID's OSXSAVE bit reflects it). */
	uint64_t (*guest_cr4)(struct vcpu *v);
	/* Does the guest's IA32_PKRS reach the CPU while it runs? CPUID offers
	 * PKS (CR4.PKS, the MSR) only then. */
	bool (*pks_switched)(void);
	/* Does the control block hold the guest's DR6 and CR2 (SVM's VMCB
	 * does; VMX leaves them in the CPU, as DR0-DR3 on both:
	 * virt/live_regs.c)? */
	bool dr6_cr2_in_control_block;
	/* Make the vCPU's control block usable on this CPU, and let it go
	 * again: around each CPU's run of the vCPU and around every access
	 * from another CPU (state save and load, dumps). VMX: VMPTRLD, and
	 * VMCLEAR before another CPU may load it (SDM vol. 3C, 24.1, 24.11).
	 * NULL when any CPU may use it between runs (SVM's VMCB). */
	void (*vcpu_load)(struct vcpu *v);
	void (*vcpu_put)(struct vcpu *v);
	/* INIT (SDM vol. 3A, table 9-1; APM vol. 2, 14.1.3): the control
	 * block's state after it, real mode at CS F000 (base FFFF0000);
	 * virt/ sets the registers of struct vcpu_regs. */
	void (*init_state)(struct vcpu *v);
	/* A start-up IPI to a vCPU in the INIT state: CS = vector << 8, base
	 * vector << 12 (virt/ sets RIP 0). */
	void (*sipi)(struct vcpu *v, uint8_t vector);
	/* The state vcpu_create made, with a GDT in guest memory and the
	 * selectors that name its flat descriptors (the Linux boot protocol's
	 * 32-bit entry): GDTR = {gdt_base, gdt_limit}, CS = cs, the data
	 * segments ds. */
	void (*boot_selectors)(struct vcpu *v, uint32_t gdt_base, uint16_t gdt_limit, uint16_t cs,
			       uint16_t ds);
	/* Control registers, segments and exit state for a report. */
	void (*dump)(struct vcpu *v);
	/* The architectural guest state the backend holds (SVM: the VMCB save
	 * area; VMX: the VMCS guest-state fields, read shadows and the MSRs it
	 * switches), for snapshots and clones: state_save fills buf (at most
	 * VCPU_ARCH_STATE_MAX bytes) and returns the bytes used; state_load
	 * takes what state_save of the same backend gave, false if refused.
	 * Call between runs; virt/ keeps the registers of struct vcpu_regs. */
	size_t (*state_save)(struct vcpu *v, void *buf);
	bool (*state_load)(struct vcpu *v, const void *buf, size_t len);
	/* Would this CPU enter a guest with that state (len bytes of it, plus
	 * RIP, RSP and RFLAGS from regs)? False with a reason. state_load
	 * takes only states that passed. */
	bool (*state_check)(const void *buf, size_t len, const struct vcpu_regs *regs, char *err,
			    size_t errlen);
};

#define VCPU_ARCH_STATE_MAX 1024
#define VCPU_IO_PORTS_TRACKED 8

struct vcpu_port_count {
	uint16_t port;
	uint64_t count;
};

/* Counted at each exit by the vCPU's own CPU; `stats NAME` sums them. */
struct vcpu_stats {
	uint64_t exits;
	uint64_t exits_by_kind[VEXIT_KINDS];
	uint64_t hypercalls;
	uint64_t io_other;    /* accesses to ports nothing emulates */
	uint64_t msr_unknown; /* accesses to MSRs sprig does not offer: #GP */
	uint64_t msr_refused; /* writes the MSR policy refused: #GP */
	uint64_t irq_injected;      /* external interrupts injected */
	uint64_t nmi_injected;
	uint64_t events_requeued;   /* deliveries an exit interrupted, delivered again */
	uint64_t irq_window_exits;  /* exits when an interrupt or NMI window opened */
	uint64_t timer_late_max_ns; /* the latest a guest timer fired after its deadline */
	uint64_t mmio_exits;        /* faults outside guest memory, emulated */
	uint64_t mmio_unclaimed;    /* of them, accesses no device claims */
	uint64_t decode_failures;   /* instructions at such faults sprig could not emulate */
	/* KVM's paravirtual hypercalls (virt/kvm_pv.h); the yields as KVM counts them. */
	uint64_t pv_send_ipi;               /* KVM_HC_SEND_IPI calls */
	uint64_t pv_ipi_delivered;          /* the IPIs they delivered */
	uint64_t pv_kick_cpu;               /* KVM_HC_KICK_CPU calls */
	uint64_t directed_yield_attempted;  /* KVM_HC_SCHED_YIELD and KICK_CPU */
	uint64_t directed_yield_successful; /* the target got the CPU */
	uint64_t steal_records;             /* steal-time records written */
	uint64_t pv_tlb_flushes;            /* flushes preempted vCPUs took instead of an IPI */
	uint64_t pv_eois;                   /* EOIs the guest signalled through its PV EOI word */
	uint64_t run_tsc;                   /* host TSC cycles its CPU ran it (its slices) */
	struct vcpu_port_count io_ports[VCPU_IO_PORTS_TRACKED];
};

struct vcpu {
	struct vm *vm;         /* virt/'s: the backends see only this file */
	unsigned index;        /* in its VM; also its APIC ID. vCPU 0 boots the kernel */
	struct mmu *mmu;       /* its VM's: the backends reach it through the services below */
	struct vcpu_regs regs;
	void *arch;            /* the backend's state: VMCB or VMCS and friends */
	uint8_t *xsave;        /* the guest's FPU/SSE/AVX state, 64-byte aligned */
	uint64_t xcr0;         /* the guest's XCR0 */
	/* The guest's DR0-DR3, and DR6 and CR2 where the control block does not
	 * hold them (VMX), while they are not in a CPU (virt/live_regs.h). */
	uint64_t db[4], dr6, cr2;
	int64_t tsc_offset;    /* guest TSC = host TSC + tsc_offset */
	uint32_t tsc_aux;      /* the guest's TSC_AUX: RDTSCP and RDPID read it */
	uint32_t pkrs;         /* the guest's IA32_PKRS: supervisor protection keys */
	uint64_t misc_enable;  /* the guest's MSR_MISC_ENABLE (virt/msr_policy.h) */
	struct mce_msrs mce;   /* its machine-check MSRs (virt/msr_policy.h) */
	uint64_t pvclock_msr;  /* MSR_KVM_SYSTEM_TIME_NEW as written (virt/pvclock.h) */
	uint32_t pvclock_version; /* of the structure it names: odd while sprig writes it */
	bool flush_pending;    /* the MMU asked for a TLB flush */
	bool halted;           /* after HLT: waits for an interrupt */
	bool wait_sipi;        /* after INIT: runs only once a start-up IPI arrives */
	bool pv_unhalted;      /* KVM_HC_KICK_CPU came: the current or next HLT ends */
	bool yielded;          /* gave its CPU away (vm_yield_to): the slice ends */
	/* It shares its host CPU with other vCPUs of its VM (sched_run sets
	 * it): a spin on PAUSE should give the CPU to one of them. The backend
	 * exits on PAUSE then (VEXIT_PAUSE): after a loop of them where the
	 * CPU has a pause filter (SVM) or PAUSE-loop exiting (VMX), as KVM,
	 * else at every PAUSE; never when the vCPU has its CPU alone. */
	bool spin_exits;
	struct kvm_steal steal; /* MSR_KVM_STEAL_TIME and its wait (virt/steal_time.h) */
	struct kvm_pv_eoi pv_eoi; /* MSR_KVM_PV_EOI_EN and its word (virt/pv_eoi.h) */
	struct kick_sync kick; /* its entries, requests, and the host CPU it runs on */
	uint64_t arrivals_kicked; /* its APIC's arrivals another CPU kicked it for */
	struct vcpu_stats stats;
	/* virt/'s (virt/vm.c allocates them with the vCPU): */
	struct lapic *apic;    /* its local APIC (dev/lapic.c) */
	struct tdp_table_cache *table_cache; /* page tables for its faults, filled before mmu_lock */
};

/* The backend virt_init chose; NULL when none can run. */
extern const struct virt_backend *backend;

/* How a backend offers itself, as KVM's vendor modules call kvm_init: its
 * probe, placed in the .backends section by BACKEND_PROBE, checks what the
 * CPU offers and enables virtualization on this CPU, then registers its ops
 * with backend_register, which copies them: from then on they are constant.
 * False, with the reason, when the CPU cannot run it. */
typedef bool (*backend_probe_fn)(char *err, size_t len);
#define BACKEND_PROBE(fn)                                                          \
	static const backend_probe_fn fn##_entry                                   \
		__attribute__((section(".backends"), used, aligned(sizeof(void *)))) = fn
void backend_register(const struct virt_backend *ops);
/* virt_init: run the probes in link order until one registers; false when
 * none did (a CPU offers SVM or VMX, not both). */
bool backend_probe(void);

/* virt/'s services to the backends (virt/backend.c): all they take of the
 * vCPU's local APIC, its VM's memory and TDP tables, its CPUID and virt/'s
 * instruction fetch. */

/* CR8, the local APIC's TPR[7:4] (SDM vol. 3A, 10.8.6.1): a MOV to CR8
 * clears TPR[3:0]. */
uint64_t vcpu_cr8(const struct vcpu *v);
void vcpu_set_cr8(struct vcpu *v, uint64_t cr8);
/* The VMCB's nCR3 or the VMCS's EPTP for the root of the VM's TDP tables. */
uint64_t vcpu_tdp_root(const struct vcpu *v);
/* The entries a walk of gpa through the TDP tables reads (tdp_get_walk),
 * sptes[TDP_ROOT_LEVEL] down to the level returned; for reports of faults the
 * CPU blames on the tables. Not while the vCPU counts as in the guest. */
int vcpu_tdp_walk(struct vcpu *v, uint64_t gpa, uint64_t sptes[TDP_ROOT_LEVEL + 1]);
/* len bytes of guest memory at gpa (mmu_read_guest): 0, or -1 where no
 * memory slot holds them. Not while the vCPU counts as in the guest. */
int vcpu_read_guest(struct vcpu *v, uint64_t gpa, void *buf, size_t len);
/* Up to len bytes of the instruction at the guest's CS:RIP, read through its
 * own page tables (exits that come without the bytes: a #UD, a MOV to CR4
 * without decode assists), and the code width it runs in; the bytes read.
 * Not while the vCPU counts as in the guest. */
size_t vcpu_fetch_at_rip(struct vcpu *v, uint8_t *buf, size_t len, unsigned *code_bits);

/* Load v's TSC_AUX into this CPU's before entering it. RDTSCP and RDPID run
 * unintercepted and read the CPU's: neither the VMCB nor the VMCS holds it. */
void vcpu_load_tsc_aux(const struct vcpu *v);
/* The same for IA32_PKRS on SVM, whose VMCB does not hold it either. sprig
 * never sets CR4.PKS, so the guest's value left in the CPU binds nothing. */
void vcpu_load_pkrs(const struct vcpu *v);
/* The CR4 bits v's CPUID allows (cpuid_guest_cr4_allowed); a MOV to CR4
 * setting any other raises #GP. */
uint64_t vcpu_cr4_allowed(struct vcpu *v);
/* Would the CPU of v's CPUID take a MOV to CR4 of cr4 over old, with EFER
 * and CR3 as they are (cpuid_cr4_write_ok)? False: #GP. */
bool vcpu_cr4_write_ok(struct vcpu *v, uint64_t old, uint64_t cr4, uint64_t efer, uint64_t cr3);
