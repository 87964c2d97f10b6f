/* Virtual machines: a name, the MMU with the guest's memory, the vCPUs, the
 * emulated devices, and how the VM ended. */
#pragma once
#include "arch/x86/lock.h"
#include "lib/parse.h"
#include "mm/mmu.h"
#include "virt/hypercall.h"
#include "dev/platform.h"
#include "virt/backend.h"
#include "dev/bus.h"
#include "dev/com1.h"
#include "virt/bench_port.h"
#include "virt/vm_observer.h"
#include "arch/x86/smp.h"

struct snapshot_image;

/* Ranges sprig discarded behind the guest's back (vm_discard), kept until the
 * guest collects them with HC_LOST_RANGES. */
#define VM_LOST_MAX 64
struct vm_lost {
	struct hc_range range[VM_LOST_MAX];
	unsigned count;
	bool overflow; /* more were discarded than range[] holds */
};

/* VMs are allocated from frames as they are created (clones make many). */
#define VM_MAX 1024
#define VM_NAME_MAX (NAME_LEN_MAX + 1)
#define VM_ARGS_MAX 4096 /* the guest's command line, as the console's lines */
/* Every vCPU's APIC is on the VM's bus. On any number of host CPUs: those that
 * share a CPU take it in turns (virt/sched.c). */
#define VM_VCPUS_MAX LAPIC_BUS_MAX

enum vm_state {
	VM_READY,   /* created, never run */
	VM_RUNNING, /* inside vm_run */
	VM_PAUSED,  /* stopped at an exit (timeout, Ctrl-C, snapshot point); can run again */
	VM_EXITED,  /* the guest ended itself (exit port or hypercall) */
	VM_FAILED,  /* sprig stopped the guest: triple fault, bad access, ... */
};

struct vm {
	int id;
	char name[VM_NAME_MAX];
	enum vm_state state;
	uint64_t mem_bytes;
	struct mmu mmu;
	struct vcpu *vcpus[VM_VCPUS_MAX]; /* each in a frame of its own */
	unsigned nr_vcpus;
	struct kick_sync *kicks[VM_VCPUS_MAX]; /* each vCPU's, for the remote flush */
	/* The interrupt fabric and the chipset, which every vCPU's CPU
	 * reaches: the local APICs (an IPI writes another's, lowest priority
	 * reads them all, the I/O APIC and the PIC deliver into them), the
	 * devices, COM1 and the lost ranges. Never taken between a vCPU's
	 * kick_sync_enter and kick_sync_exit. */
	struct spinlock lock;
	struct lapic_bus apic_bus; /* the vCPUs' local APICs, for IPIs */
	bool strict_mmio;          /* accesses no device claims stop the guest */
	bool no_kvm_pv;            /* pv=off: KVM's paravirtual features not offered */
	struct platform platform;  /* the chipset: I/O APIC, PIC, PIT, RTC, ... */
	struct vm_com1 com1;       /* COM1 (dev/com1.h) */
	/* Every device once, and the buses that reach them: fixed from
	 * creation (platform_init) on, so lookups need no lock. */
	struct vm_devices devices;
	struct bus port_bus, mmio_bus;
	uint64_t created_tsc;
	uint32_t stopping;        /* a vCPU or the console ended the run: the first wins */
	int stopped_by;           /* the vCPU whose exit ended it, -1 for the console */
	int exit_status;
	const char *exit_note;    /* how it ended, after the status (a literal), or NULL */
	char stop_reason[160];
	const char *pause_reason; /* why a VM_PAUSED VM paused */
	char args[VM_ARGS_MAX];   /* the guest's arguments, for HC_ARGS */
	const struct snapshot_image *restored_from; /* its memory's image, or NULL */
	/* What watches the VM run (virt/vm_observer.h) and the context its
	 * hooks get; NULL when nothing does. Set with vm_observe. */
	const struct vm_observer *observer;
	void *observer_ctx;
	struct vm_lost lost;
	struct bench_port bench_port; /* virt/bench_port.h */
	/* NMIs the host CPUs took while they ran the VM (in the guest or
	 * handling its exits), counted and survived. */
	uint64_t host_nmis;
	/* Halt polls (virt/sched.c) that found a vCPU wanting the CPU, and that
	 * ended in a halt. */
	uint64_t halt_polls_ok, halt_polls_failed;
	uint64_t pvclock_wall_msr; /* MSR_KVM_WALL_CLOCK_NEW as last written */
};

/* [gpa, gpa + size) maps the guest memory at target_gpa (mmu_alias_add). */
struct vm_alias {
	uint64_t gpa, size, target_gpa;
};
#define VM_ALIASES_MAX 4

struct vm_create_args {
	const char *name;
	const void *image; /* a multiboot kernel or a Linux bzImage */
	uint64_t image_size;
	const char *cmdline; /* what a multiboot guest sees: "MODULE ARGS", as QEMU gives */
	const void *initrd;  /* a bzImage's initrd, or NULL */
	uint64_t initrd_size;
	uint64_t mem_bytes;
	enum backing_kind backing;
	const void *restore_image; /* BACKING_RESTORE: the memory image */
	uint64_t restore_bytes;
	uint32_t chunk_pages;
	const char *args; /* the guest's arguments alone, for HC_ARGS; a bzImage's command line */
	unsigned vcpus;   /* 1 to VM_VCPUS_MAX (0 counts as 1) */
	/* Host CPUs to place the vCPUs on in turn (vm_place_vcpus); none:
	 * spread over the online CPUs. */
	uint8_t cpu_list[CPU_MAX];
	unsigned cpu_list_len;
	/* A snapshot's VM state, of `vcpus` vCPUs: the VM resumes from it
	 * instead of booting `image` (which is then unused), its memory
	 * restored from restore_image. */
	const void *state; /* its records (virt/vcpu_state.h) */
	uint32_t state_bytes;
	struct vm_alias alias[VM_ALIASES_MAX];
	unsigned aliases;
	/* A clone: the memory is this VM's, shared copy-on-write, instead of a
	 * new slot (state is then the parent's). */
	struct vm *clone_of;
	bool strict_mmio;
	bool no_testdev; /* leave out QEMU's pc-testdev */
	bool no_kvm_pv;  /* offer KVM's clock alone, none of its other PV features */
	struct disk_args disk; /* a virtio disk (dev/disk.h); bytes 0: none */
	bool balloon; /* a virtio balloon (dev/balloon.h) */
};

/* Pick the backend and enable virtualization on this CPU, and have each AP
 * enable it as it comes online (virt_cpu_init); false if the CPU offers
 * neither SVM with NPT nor VMX with EPT (the reason is printed). */
bool virt_init(void);
/* Create a VM and load its kernel; NULL with a reason in err, and nothing
 * left allocated. */
struct vm *vm_create(const struct vm_create_args *a, char *err, size_t errlen);
void vm_destroy(struct vm *vm);
/* Run the guest until it exits, fails, or (timeout_ms > 0) the time runs out
 * or Ctrl-C arrives on the console; the last two pause it. Prints the outcome. */
void vm_run(struct vm *vm, uint64_t timeout_ms);

/* Make a vCPU's control block usable on this CPU, and let it go
 * (backend.h): around every access from the console. */
void vcpu_load(struct vcpu *v);
void vcpu_put(struct vcpu *v);

/* The VM of that name, or NULL. */
struct vm *vm_find(const char *name);
/* Each existing VM in id order; NULL after the last. */
struct vm *vm_next(const struct vm *prev);
/* The state as the console names it: "ready", "running", "paused",
 * "exited", "stopped". */
const char *vm_state_name(enum vm_state state);

/* Ask the run loops to stop the guest at their next exits with a report. The
 * first of vm_fail, vm_exit and vm_pause in a run decides how it ends; each
 * kicks every vCPU out of the guest. v: the vCPU whose exit this is, NULL for
 * the console. */
void vm_fail(struct vm *vm, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The guest ended itself with status. */
void vm_exit(struct vm *vm, int status);
/* Discard guest memory (mmu_discard) and tell the guest: it learns the range
 * from HC_LOST_RANGES (virt/hypercall.c). */
void vm_discard(struct vm *vm, uint64_t gpa, uint64_t len);
/* Stop the run loop at this exit, leaving the VM paused (reason: a literal). */
void vm_pause(struct vm *vm, const char *reason);
/* The VM is inside vm_run and no stop was asked for. */
static inline bool vm_running(const struct vm *vm)
{
	return __atomic_load_n(&vm->state, __ATOMIC_ACQUIRE) == VM_RUNNING;
}
/* The VM's clock for its chipset: vCPU 0's guest TSC. */
uint64_t vm_guest_tsc(const struct vm *vm);
/* Let observer (NULL: none) watch the VM, its hooks given ctx; while the VM
 * does not run, as the run loops read it unlocked. */
static inline void vm_observe(struct vm *vm, const struct vm_observer *observer, void *ctx)
{
	vm->observer = observer;
	vm->observer_ctx = ctx;
}


extern const char *const vexit_kind_names[VEXIT_KINDS];
