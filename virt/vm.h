/* Virtual machines: a name, the MMU with the guest's memory, one vCPU, the
 * emulated devices, and how the VM ended. */
#pragma once
#include "lib/parse.h"
#include "mm/mmu.h"
#include "virt/hypercall.h"
#include "virt/platform.h"
#include "virt/backend.h"

struct snapshot_image;
struct vcpu_state;

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
#define VM_IO_PORTS_TRACKED 8
#define VM_ARGS_MAX 4096 /* the guest's command line, as the console's lines */

enum vm_state {
	VM_READY,   /* created, never run */
	VM_RUNNING, /* inside vm_run */
	VM_PAUSED,  /* stopped at an exit (timeout, Ctrl-C, snapshot point); can run again */
	VM_EXITED,  /* the guest ended itself (exit port or hypercall) */
	VM_FAILED,  /* sprig stopped the guest: triple fault, bad access, ... */
};

/* The emulated 16550 on COM1: enough for polled transmit. */
struct vm_uart {
	uint8_t ier, lcr, mcr, scr, dll, dlm;
	char line[160];
	unsigned len;
};

struct vm_port_count {
	uint16_t port;
	uint64_t count;
};

struct vm_stats {
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
	struct vm_port_count io_ports[VM_IO_PORTS_TRACKED];
};

struct vm {
	int id;
	char name[VM_NAME_MAX];
	enum vm_state state;
	uint64_t mem_bytes;
	struct mmu mmu;
	struct vcpu vcpu;
	struct lapic_bus apic_bus; /* the vCPUs' local APICs, for IPIs */
	bool strict_mmio;          /* accesses no device claims stop the guest */
	struct platform platform;  /* the chipset: I/O APIC, PIC, PIT, RTC, ... */
	struct vm_uart uart;
	struct vm_stats stats;
	uint64_t created_tsc;
	int exit_status;
	const char *exit_note;    /* how it ended, after the status (a literal), or NULL */
	char stop_reason[160];
	const char *pause_reason; /* why a VM_PAUSED VM paused */
	char args[VM_ARGS_MAX];   /* the guest's arguments, for HC_ARGS */
	const struct snapshot_image *restored_from; /* its memory's image, or NULL */
	/* Called after every exit while the VM runs (benchmark scenarios zap
	 * or discard memory between exits); NULL when unused. */
	void (*on_exit)(struct vm *vm, const struct vexit *e, void *ctx);
	void *on_exit_ctx;
	struct vm_lost lost;
};

/* [gpa, gpa + size) maps the guest memory at target_gpa (mmu_alias_add). */
struct vm_alias {
	uint64_t gpa, size, target_gpa;
};
#define VM_ALIASES_MAX 4

struct vm_create_args {
	const char *name;
	const void *image; /* a multiboot kernel */
	uint64_t image_size;
	const char *cmdline; /* what the guest sees: "MODULE ARGS", as QEMU gives */
	uint64_t mem_bytes;
	enum backing_kind backing;
	const void *restore_image; /* BACKING_RESTORE: the memory image */
	uint64_t restore_bytes;
	uint32_t chunk_pages;
	const char *args; /* the guest's arguments alone, for HC_ARGS */
	/* A snapshot's vCPU state: the VM resumes from it instead of booting
	 * `image` (which is then unused), its memory restored from restore_image. */
	const struct vcpu_state *vcpu_state;
	struct vm_alias alias[VM_ALIASES_MAX];
	unsigned aliases;
	/* A clone: the memory is this VM's, shared copy-on-write, instead of a
	 * new slot (vcpu_state is then the parent's). */
	struct vm *clone_of;
	bool strict_mmio;
	bool no_testdev; /* leave out QEMU's pc-testdev */
};

/* Pick the backend and enable virtualization on this CPU; false if the CPU
 * offers neither SVM with NPT nor VMX with EPT (the reason is printed). */
bool virt_init(void);
/* The same on an application processor once virt_init ran on the BSP (the
 * backend's cpu_enable, the FPU's control bits); false with the reason. */
bool virt_cpu_init(char *err, size_t len);
/* Create a VM and load its kernel; NULL with a reason in err, and nothing
 * left allocated. */
struct vm *vm_create(const struct vm_create_args *a, char *err, size_t errlen);
void vm_destroy(struct vm *vm);
/* Run the guest until it exits, fails, or (timeout_ms > 0) the time runs out
 * or Ctrl-C arrives on the console; the last two pause it. Prints the outcome. */
void vm_run(struct vm *vm, uint64_t timeout_ms);

/* The VM of that name, or NULL. */
struct vm *vm_find(const char *name);
/* Each existing VM in id order; NULL after the last. */
struct vm *vm_next(const struct vm *prev);

/* Ask the run loop to stop the guest at its next exit with a report. */
void vm_fail(struct vm *vm, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The guest ended itself with status. */
void vm_exit(struct vm *vm, int status);
/* Discard guest memory (mmu_discard) and tell the guest: it learns the range
 * from HC_LOST_RANGES (virt/hypercall.c). */
void vm_discard(struct vm *vm, uint64_t gpa, uint64_t len);
/* Stop the run loop at this exit, leaving the VM paused (reason: a literal). */
void vm_pause(struct vm *vm, const char *reason);

extern const char *const vexit_kind_names[VEXIT_KINDS];
