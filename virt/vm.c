/* VM life cycle and the run loop: enter the guest through the backend, hand
 * each decoded exit to its handler, and stop with a report when the guest ends
 * or misbehaves. sprig and the other VMs go on in every case. */
#include "virt/vm.h"
#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpuinfo.h"
#include "arch/x86/regs.h"
#include "arch/x86/tsc.h"
#include "lib/print.h"
#include "lib/string.h"
#include "mm/mmu_config.h"
#include "svm/svm.h"
#include "virt/emulate.h"
#include "virt/fpu.h"
#include "virt/mb1_loader.h"
#include "virt/mmio.h"
#include "virt/shell.h"
#include "virt/vcpu_state.h"
#include "vmx/vmx.h"
#include <stdarg.h>

const struct virt_backend *backend;
/* Each VM takes a block of frames while it exists: clones make many VMs, and
 * a static table of VM_MAX would cost VM_MAX structs for ever. */
static struct vm *vms[VM_MAX];

const char *const vexit_kind_names[VEXIT_KINDS] = {
	[VEXIT_NPF] = "npf",         [VEXIT_IO] = "io",        [VEXIT_HYPERCALL] = "hypercall",
	[VEXIT_CPUID] = "cpuid",     [VEXIT_RDMSR] = "rdmsr",  [VEXIT_WRMSR] = "wrmsr",
	[VEXIT_HLT] = "hlt",         [VEXIT_XSETBV] = "xsetbv", [VEXIT_INTR] = "intr",
	[VEXIT_SHUTDOWN] = "shutdown", [VEXIT_INSN] = "insn", [VEXIT_WINDOW] = "window",
	[VEXIT_HANDLED] = "handled",
	[VEXIT_FAILED] = "failed",   [VEXIT_UNKNOWN] = "unknown",
};

/* The iTLB-multihit erratum (a machine check when a page's size changes under
 * an executable translation): Intel CPUs have it unless IA32_ARCH_CAPABILITIES
 * reports PSCHANGE_MC_NO; AMD's do not. It decides nx_huge_pages=auto. */
static bool cpu_has_itlb_multihit(void)
{
	return cpuinfo.is_intel &&
	       !(cpuinfo.has_arch_caps && (cpuinfo.arch_caps & ARCH_CAP_PSCHANGE_MC_NO));
}

bool virt_init(void)
{
	char err[96], err2[96];

	if (cpuinfo_has_npt() && svm_backend.cpu_enable(err, sizeof(err))) {
		backend = &svm_backend;
	} else if (cpuinfo_has_ept() && vmx_backend.cpu_enable(err2, sizeof(err2))) {
		backend = &vmx_backend;
	} else {
		kprintf("virt: no usable SVM with NPT nor VMX with EPT; VMs cannot run\n");
		return false;
	}
	fpu_init();
	mmu_config.itlb_multihit = cpu_has_itlb_multihit();
	mmu_config.tsc_khz = tsc_khz(); /* mm/ prints its lock waits in ns */
	kprintf("virt: %s with %s\n", backend->name, backend->tdp->name);
	return true;
}

struct vm *vm_find(const char *name)
{
	for (int i = 0; i < VM_MAX; i++)
		if (vms[i] && strcmp(vms[i]->name, name) == 0)
			return vms[i];
	return NULL;
}

struct vm *vm_next(const struct vm *prev)
{
	for (int i = prev ? prev->id + 1 : 0; i < VM_MAX; i++)
		if (vms[i])
			return vms[i];
	return NULL;
}

void vm_fail(struct vm *vm, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	kvsnprintf(vm->stop_reason, sizeof(vm->stop_reason), fmt, ap);
	va_end(ap);
	vm->state = VM_FAILED;
}

void vm_exit(struct vm *vm, int status)
{
	vm->exit_status = status;
	vm->state = VM_EXITED;
}

void vm_pause(struct vm *vm, const char *reason)
{
	vm->pause_reason = reason;
	vm->state = VM_PAUSED;
}

static unsigned vm_order(void)
{
	unsigned order = 0;

	while ((PAGE_SIZE << order) < sizeof(struct vm))
		order++;
	return order;
}

/* Undo whatever part of creation was done: the MMU frees every table and
 * frame the VM owned. */
static void vm_teardown(struct vm *vm, bool mmu_ready, bool vcpu_ready)
{
	if (vcpu_ready)
		backend->vcpu_destroy(&vm->vcpu);
	fpu_vcpu_free(&vm->vcpu);
	platform_destroy(vm);
	tdp_table_cache_release(&vm->vcpu.table_cache);
	if (mmu_ready)
		mmu_destroy(&vm->mmu);
	vms[vm->id] = NULL;
	frame_free(va_to_pa(vm), vm_order());
}

/* The VM's memory: one slot at guest-physical 0, and its aliases. On failure
 * the VM is gone. */
static int vm_add_memory(struct vm *vm, const struct vm_create_args *a, char *err, size_t errlen)
{
	struct memslot_config slot = {
		.gpa = 0,
		.size = a->mem_bytes,
		.backing = { .kind = a->backing, .image = a->restore_image,
			     .image_bytes = a->restore_bytes, .chunk_pages = a->chunk_pages },
	};

	if (mmu_slot_add(&vm->mmu, &slot)) {
		ksnprintf(err, errlen, "out of memory for %llu MiB of guest memory",
			  (unsigned long long)(a->mem_bytes >> 20));
		vm_teardown(vm, true, false);
		return -1;
	}
	for (unsigned i = 0; i < a->aliases; i++) {
		const struct vm_alias *al = &a->alias[i];

		if (mmu_alias_add(&vm->mmu, al->gpa, al->size, al->target_gpa)) {
			ksnprintf(err, errlen, "alias 0x%llx:0x%llx@0x%llx: the target must be guest "
				  "memory (backing=eager), the alias outside it",
				  (unsigned long long)al->gpa, (unsigned long long)al->size,
				  (unsigned long long)al->target_gpa);
			vm_teardown(vm, true, false);
			return -1;
		}
	}
	return 0;
}

struct vm *vm_create(const struct vm_create_args *a, char *err, size_t errlen)
{
	struct vm *vm = NULL;
	struct mb1_entry entry;

	if (!backend) {
		ksnprintf(err, errlen, "no hardware virtualization on this CPU");
		return NULL;
	}
	if (!name_valid(a->name)) {
		ksnprintf(err, errlen, "bad VM name '%s' (%s)", a->name, NAME_RULE);
		return NULL;
	}
	if (vm_find(a->name)) {
		ksnprintf(err, errlen, "a VM named '%s' exists", a->name);
		return NULL;
	}
	/* The ACPI tables' area stays out of the guest's usable memory. */
	const struct mb1_mem_range acpi = { PLATFORM_ACPI_GPA, PLATFORM_ACPI_SIZE, MB1_MEM_RESERVED };
	const struct mb1_boot boot = { .image = a->image, .size = a->image_size,
				       .guest_mem = a->mem_bytes, .cmdline = a->cmdline,
				       .ranges = &acpi, .n_ranges = 1 };

	if (!a->vcpu_state && mb1_check_boot(&boot, err, errlen))
		return NULL;
	for (int i = 0; i < VM_MAX && !vm; i++) {
		paddr_t pa;

		if (vms[i])
			continue;
		if (!(pa = frame_alloc_zeroed(vm_order()))) {
			ksnprintf(err, errlen, "out of memory for the VM");
			return NULL;
		}
		vm = vms[i] = pa_to_va(pa);
		vm->id = i;
	}
	if (!vm) {
		ksnprintf(err, errlen, "all %d VM slots are in use", VM_MAX);
		return NULL;
	}
	memcpy(vm->name, a->name, strlen(a->name) + 1);
	if (a->args)
		memcpy(vm->args, a->args, strnlen(a->args, VM_ARGS_MAX - 1));
	vm->mem_bytes = a->mem_bytes;
	vm->strict_mmio = a->strict_mmio;
	vm->vcpu.vm = vm;
	vm->vcpu.mmu = &vm->mmu;
	vm->created_tsc = rdtsc();
	/* The guest's TSC starts near zero, as on a machine that just booted
	 * (a restored vCPU state sets its own). */
	vm->vcpu.tsc_offset = -(int64_t)vm->created_tsc;
	lapic_init(&vm->vcpu.apic, &vm->apic_bus, VCPU_APIC_ID, true, tsc_khz());
	if (platform_init(vm, !a->no_testdev)) {
		ksnprintf(err, errlen, "out of memory for the chipset");
		vm_teardown(vm, false, false);
		return NULL;
	}

	if (mmu_init(&vm->mmu, backend->tdp, backend->flush_tlb, &vm->vcpu)) {
		ksnprintf(err, errlen, "out of memory for the page tables");
		vm_teardown(vm, false, false);
		return NULL;
	}
	vm->mmu.share.id = (uint32_t)vm->id; /* the order cross-VM operations lock in */
	vm->mmu.max_leaf_level = backend->tdp_max_leaf_level();
	if (a->clone_of) {
		if (mmu_clone(&a->clone_of->mmu, &vm->mmu)) {
			ksnprintf(err, errlen, "out of memory for the clone's memory");
			vm_teardown(vm, true, false);
			return NULL;
		}
	} else if (vm_add_memory(vm, a, err, errlen)) {
		return NULL;
	}
	if (fpu_vcpu_init(&vm->vcpu) || backend->vcpu_create(&vm->vcpu)) {
		ksnprintf(err, errlen, "out of memory for the vCPU");
		vm_teardown(vm, true, false);
		return NULL;
	}
	if (a->vcpu_state) {
		if (!vcpu_state_load(vm, a->vcpu_state, err, errlen)) {
			vm_teardown(vm, true, true);
			return NULL;
		}
		vm->state = VM_READY;
		return vm;
	}
	if (mb1_load_boot(&vm->mmu, &boot, &entry, err, errlen)) {
		vm_teardown(vm, true, true);
		return NULL;
	}
	if (platform_write_acpi(vm)) {
		ksnprintf(err, errlen, "the ACPI tables do not fit in guest memory");
		vm_teardown(vm, true, true);
		return NULL;
	}
	vm->vcpu.regs.rip = entry.eip;
	vm->vcpu.regs.rax = entry.eax;
	vm->vcpu.regs.rbx = entry.ebx;
	vm->vcpu.regs.rflags = 0x2;
	vm->state = VM_READY;
	return vm;
}

void vm_destroy(struct vm *vm)
{
	vm_teardown(vm, true, true);
}

static const char *access_name(unsigned access)
{
	return access & TDP_ACC_EXEC ? "fetch" : access & TDP_ACC_WRITE ? "write" : "read";
}

static bool handle_npf(struct vm *vm, const struct vexit *e)
{
	switch (tdp_map_cached(&vm->mmu, &vm->vcpu.table_cache, e->npf.gpa, e->npf.access)) {
	case TDP_FIXED:
	case TDP_SPURIOUS:
	case TDP_RETRY:
		break;
	case TDP_NO_SLOT:
		mmio_exit(vm, e);
		break;
	case TDP_PERMISSION:
		vm_fail(vm, "%s to gpa 0x%llx is not allowed by its memslot",
			access_name(e->npf.access), (unsigned long long)e->npf.gpa);
		break;
	case TDP_NO_MEMORY:
		vm_fail(vm, "out of host memory backing gpa 0x%llx", (unsigned long long)e->npf.gpa);
		break;
	}
	return false; /* the faulting instruction runs again */
}

/* The instructions a backend hands over rather than runs: true when the
 * instruction is done (skipped), false when it faults. */
static bool emulate_insn(struct vcpu *v, enum vexit_insn insn)
{
	switch (insn) {
	case VEXIT_INSN_INVD:
		/* As KVM: nothing to invalidate that the guest could tell from
		 * keeping it; never the host's caches. */
		return true;
	case VEXIT_INSN_RDPMC:
		/* No counters are offered: every ECX is out of range. */
		backend->inject_exception(v, X86_VEC_GP);
		return false;
	case VEXIT_INSN_MONITOR_MWAIT:
	case VEXIT_INSN_VIRT:
		break;
	}
	backend->inject_exception(v, X86_VEC_UD);
	return false;
}

/* Handle one exit; true when the exiting instruction completed. */
static bool handle_exit(struct vm *vm, const struct vexit *e)
{
	struct vcpu *v = &vm->vcpu;

	switch (e->kind) {
	case VEXIT_NPF:
		return handle_npf(vm, e);
	case VEXIT_IO:
		return emulate_io(vm, e);
	case VEXIT_HYPERCALL:
		return emulate_hypercall(vm);
	case VEXIT_CPUID:
		return emulate_cpuid(v);
	case VEXIT_RDMSR:
		return emulate_rdmsr(v);
	case VEXIT_WRMSR:
		return emulate_wrmsr(v);
	case VEXIT_XSETBV:
		if (fpu_guest_xsetbv(v, (uint32_t)v->regs.rcx,
				     (v->regs.rdx << 32) | (uint32_t)v->regs.rax))
			return true;
		backend->inject_exception(v, X86_VEC_GP);
		return false;
	case VEXIT_INSN:
		return emulate_insn(v, e->insn);
	case VEXIT_HLT:
		/* With interrupts off only an NMI could wake it, and nothing
		 * sends this vCPU one: that is the guest's end. */
		if (!(v->regs.rflags & RFLAGS_IF)) {
			vm_fail(vm, "halted with interrupts off");
			return false;
		}
		v->halted = true;
		return true;
	case VEXIT_WINDOW:
		vm->stats.irq_window_exits++;
		return false;
	case VEXIT_SHUTDOWN:
		vm_fail(vm, "triple fault (shutdown)");
		return false;
	case VEXIT_FAILED:
		vm_fail(vm, "%s", e->text);
		return false;
	case VEXIT_UNKNOWN:
		vm_fail(vm, "unexpected exit: %s", e->text);
		return false;
	case VEXIT_INTR:
	case VEXIT_HANDLED:
	case VEXIT_KINDS:
		break;
	}
	return false;
}

static void report_registers(struct vcpu *v)
{
	struct vcpu_regs *r = &v->regs;

	kprintf("  RIP=%016llx RSP=%016llx RFLAGS=%016llx\n", (unsigned long long)r->rip,
		(unsigned long long)r->rsp, (unsigned long long)r->rflags);
	kprintf("  RAX=%016llx RBX=%016llx RCX=%016llx RDX=%016llx\n",
		(unsigned long long)r->rax, (unsigned long long)r->rbx,
		(unsigned long long)r->rcx, (unsigned long long)r->rdx);
	kprintf("  RSI=%016llx RDI=%016llx RBP=%016llx R8 =%016llx\n",
		(unsigned long long)r->rsi, (unsigned long long)r->rdi,
		(unsigned long long)r->rbp, (unsigned long long)r->r8);
	kprintf("  R9 =%016llx R10=%016llx R11=%016llx R12=%016llx\n",
		(unsigned long long)r->r9, (unsigned long long)r->r10,
		(unsigned long long)r->r11, (unsigned long long)r->r12);
	kprintf("  R13=%016llx R14=%016llx R15=%016llx\n", (unsigned long long)r->r13,
		(unsigned long long)r->r14, (unsigned long long)r->r15);
	backend->dump(v);
}

/* Fire what the guest's APIC timer has due by now, noting how late. */
static void update_timer(struct vm *vm, uint64_t now)
{
	struct lapic *a = &vm->vcpu.apic;
	uint64_t due = lapic_timer_next(a);

	platform_update(vm, now);
	if (!due || now < due)
		return;
	lapic_timer_update(a, now);
	if (tsc_to_ns(now - due) > vm->stats.timer_late_max_ns)
		vm->stats.timer_late_max_ns = tsc_to_ns(now - due);
}

/* Make sprig's timer interrupt come by the guest's next timer deadline: it
 * needs an exit then (or a wake-up from the halt). */
static void arm_host_timer(struct vcpu *v, uint64_t now)
{
	uint64_t due = lapic_timer_next(&v->apic);
	uint64_t chipset = platform_next_event(v->vm, now);

	if (chipset && (!due || chipset < due))
		due = chipset;
	if (due)
		apic_timer_wake_by(due - (uint64_t)v->tsc_offset);
}

static bool wakes_halted(struct vcpu *v)
{
	return v->apic.nmi_pending || lapic_pending_irq(&v->apic) >= 0 ||
	       platform_extint_pending(v->vm);
}

/* Before an entry: inject what the APIC holds for the vCPU when it can take
 * it, otherwise ask for an exit when it can (the window). */
static void deliver_events(struct vm *vm)
{
	struct vcpu *v = &vm->vcpu;
	bool want_nmi = false, want_irq = false;
	int vector;

	if (v->apic.nmi_pending) {
		if (backend->nmi_allowed(v)) {
			backend->inject_nmi(v);
			v->apic.nmi_pending = false;
			vm->stats.nmi_injected++;
		} else {
			want_nmi = true;
		}
	}
	if ((vector = lapic_pending_irq(&v->apic)) >= 0) {
		if (backend->irq_allowed(v)) {
			backend->inject_irq(v, (uint8_t)vector);
			lapic_ack_irq(&v->apic, (uint8_t)vector);
			vm->stats.irq_injected++;
		} else {
			want_irq = true;
		}
	} else if (platform_extint_pending(vm)) {
		/* The 8259's interrupt through LINT0: the vector is the PIC's,
		 * taken (its INTA cycle) only when it is delivered. */
		if (backend->irq_allowed(v)) {
			backend->inject_irq(v, platform_extint_ack(vm));
			vm->stats.irq_injected++;
		} else {
			want_irq = true;
		}
	}
	backend->event_window(v, want_irq, want_nmi);
}

/* Between exits, whatever their kind: a guest that exits without pause (or
 * sleeps in HLT) must still meet its deadline and hear Ctrl-C. The console
 * is read once a millisecond, the clock every time. */
static void check_pause(struct vm *vm, uint64_t deadline, uint64_t *next_poll)
{
	uint64_t now = rdtsc();

	if (deadline && now >= deadline) {
		vm_pause(vm, "timeout");
	} else if (now >= *next_poll) {
		*next_poll = now + tsc_khz();
		if (console_poll())
			vm_pause(vm, "Ctrl-C");
	}
}

void vm_run(struct vm *vm, uint64_t timeout_ms)
{
	struct vcpu *v = &vm->vcpu;
	uint64_t start = rdtsc(), next_poll = start;
	uint64_t deadline = timeout_ms ? start + timeout_ms * tsc_khz() : 0;
	struct vexit e;

	vm->state = VM_RUNNING;
	cli();
	while (vm->state == VM_RUNNING) {
		/* The guest's clock, once for the timers of this round. */
		uint64_t now = guest_tsc(v);

		update_timer(vm, now);
		if (v->halted && !wakes_halted(v)) {
			/* Sleep until an interrupt: sprig's tick, or the
			 * one-shot armed for the guest's timer. */
			arm_host_timer(v, now);
			sti_hlt_cli();
			check_pause(vm, deadline, &next_poll);
			continue;
		}
		v->halted = false;
		deliver_events(vm);
		arm_host_timer(v, now);
		fpu_enter(v);
		backend->run(v, &e);
		fpu_exit(v);
		vm->stats.exits++;
		vm->stats.exits_by_kind[e.kind]++;
		vm->stats.events_requeued += e.requeued;
		if (handle_exit(vm, &e))
			v->regs.rip += e.insn_len;
		if (vm->on_exit && vm->state == VM_RUNNING)
			vm->on_exit(vm, &e, vm->on_exit_ctx);
		if (e.kind == VEXIT_INTR) {
			/* Let sprig's own interrupts (the timer) in. */
			sti();
			__asm__ volatile("nop");
			cli();
		}
		if (vm->state == VM_RUNNING)
			check_pause(vm, deadline, &next_poll);
	}
	sti();
	uart_flush_line(vm);

	switch (vm->state) {
	case VM_EXITED:
		kprintf("vm %s exited: status %d%s\n", vm->name, vm->exit_status,
			vm->exit_note ? vm->exit_note : "");
		break;
	case VM_PAUSED:
		kprintf("vm %s stopped: %s after %llu ms (paused; 'vm run %s' continues it)\n",
			vm->name, vm->pause_reason, (unsigned long long)(tsc_to_ns(rdtsc() - start) / 1000000),
			vm->name);
		break;
	default:
		kprintf("vm %s stopped: %s\n", vm->name, vm->stop_reason);
		report_registers(v);
		break;
	}
}
