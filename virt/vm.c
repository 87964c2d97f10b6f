/* VM life cycle: create a VM with its memory, vCPUs and chipset, run it
 * (virt/sched.c runs the vCPUs, virt/vcpu_run.c each one's exits) until the
 * first stop, report how it ended, destroy it. */
#include "virt/vm.h"
#include "virt/virt_cpu.h"
#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpuinfo.h"
#include "arch/x86/regs.h"
#include "arch/x86/smp.h"
#include "arch/x86/tsc.h"
#include "lib/print.h"
#include "lib/string.h"
#include "mm/mmu_config.h"
#include "mm/cow.h"
#include "virt/msr.h"
#include "virt/fpu.h"
#include "virt/live_regs.h"
#include "loader/bzimage_loader.h"
#include "loader/mb1_loader.h"
#include "virt/msr_policy.h"
#include "virt/sched.h"
#include "virt/vcpu_run.h"
#include "virt/vcpu_state.h"
#include <stdarg.h>

/* Each VM takes a block of frames while it exists: clones make many VMs, and
 * a static table of VM_MAX would cost VM_MAX structs for ever. */
static struct vm *vms[VM_MAX];

const char *const vexit_kind_names[VEXIT_KINDS] = {
	[VEXIT_NPF] = "npf",         [VEXIT_IO] = "io",        [VEXIT_HYPERCALL] = "hypercall",
	[VEXIT_CPUID] = "cpuid",     [VEXIT_RDMSR] = "rdmsr",  [VEXIT_WRMSR] = "wrmsr",
	[VEXIT_HLT] = "hlt",         [VEXIT_XSETBV] = "xsetbv", [VEXIT_INTR] = "intr",
	[VEXIT_SHUTDOWN] = "shutdown", [VEXIT_INSN] = "insn", [VEXIT_WINDOW] = "window",
	[VEXIT_HANDLED] = "handled", [VEXIT_BACKEND] = "backend", [VEXIT_PAUSE] = "pause",
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
	if (!backend_probe()) {
		kprintf("virt: no usable SVM with NPT nor VMX with EPT; VMs cannot run\n");
		return false;
	}
	fpu_init();
	mmu_config.itlb_multihit = cpu_has_itlb_multihit();
	mmu_config.tsc_khz = tsc_khz(); /* mm/ prints its lock waits in ns */
	kprintf("virt: %s with %s\n", backend->name, backend->tdp->name);
	smp_on_online(virt_cpu_init);
	return true;
}

struct vm *vm_find(const char *name)
{
	for (int i = 0; i < VM_MAX; i++)
		if (vms[i] && strcmp(vms[i]->name, name) == 0)
			return vms[i];
	return NULL;
}

/* The guest needs the union of what it lost, not the history: a range that
 * overlaps or touches one not yet collected joins it, so that discarding the
 * same range again and again, or rolling across memory, takes one entry. */
static void lost_add(struct vm_lost *l, uint64_t gpa, uint64_t len)
{
	for (unsigned i = 0; i < l->count; i++) {
		struct hc_range *r = &l->range[i];
		uint64_t end = gpa + len > r->gpa + r->len ? gpa + len : r->gpa + r->len;

		if (gpa <= r->gpa + r->len && r->gpa <= gpa + len) {
			r->gpa = gpa < r->gpa ? gpa : r->gpa;
			r->len = end - r->gpa;
			return;
		}
	}
	if (l->count == VM_LOST_MAX)
		l->overflow = true;
	else
		l->range[l->count++] = (struct hc_range){ gpa, len };
}

void vm_discard(struct vm *vm, uint64_t gpa, uint64_t len)
{
	mmu_discard(&vm->mmu, gpa, len);
	vm_lock(vm);
	lost_add(&vm->lost, gpa, len);
	vm_unlock(vm, vm_current_vcpu());
}

const char *vm_state_name(enum vm_state state)
{
	static const char *const names[] = {
		[VM_READY] = "ready", [VM_RUNNING] = "running", [VM_PAUSED] = "paused",
		[VM_EXITED] = "exited", [VM_FAILED] = "stopped",
	};

	return (unsigned)state < sizeof(names) / sizeof(names[0]) ? names[state] : "?";
}

struct vm *vm_next(const struct vm *prev)
{
	for (int i = prev ? prev->id + 1 : 0; i < VM_MAX; i++)
		if (vms[i])
			return vms[i];
	return NULL;
}

/* The first stop of a run wins: it records who stopped it, and every vCPU
 * is kicked out of the guest to see it. */
static bool vm_stop_first(struct vm *vm)
{
	struct vcpu *v = vm_current_vcpu();

	if (__atomic_exchange_n(&vm->stopping, 1, __ATOMIC_ACQ_REL))
		return false;
	vm->stopped_by = v && v->vm == vm ? (int)v->index : -1;
	return true;
}

static void vm_stop(struct vm *vm, enum vm_state state)
{
	__atomic_store_n(&vm->state, state, __ATOMIC_RELEASE);
	vm_kick_all(vm);
}

void vm_fail(struct vm *vm, const char *fmt, ...)
{
	va_list ap;

	if (!vm_stop_first(vm))
		return;
	va_start(ap, fmt);
	kvsnprintf(vm->stop_reason, sizeof(vm->stop_reason), fmt, ap);
	va_end(ap);
	vm_stop(vm, VM_FAILED);
}

void vm_exit(struct vm *vm, int status)
{
	if (!vm_stop_first(vm))
		return;
	vm->exit_status = status;
	vm_stop(vm, VM_EXITED);
}

void vm_pause(struct vm *vm, const char *reason)
{
	if (!vm_stop_first(vm))
		return;
	vm->pause_reason = reason;
	vm_stop(vm, VM_PAUSED);
}

uint64_t vm_guest_tsc(const struct vm *vm)
{
	return guest_tsc(vm->vcpus[0]);
}

static unsigned order_for(size_t bytes)
{
	unsigned order = 0;

	while ((PAGE_SIZE << order) < bytes)
		order++;
	return order;
}

void vcpu_load(struct vcpu *v)
{
	if (backend->vcpu_load)
		backend->vcpu_load(v);
}

void vcpu_put(struct vcpu *v)
{
	if (backend->vcpu_put)
		backend->vcpu_put(v);
}

/* A vCPU and what virt/ keeps of it beside struct vcpu, which the backends
 * see: its local APIC and the page tables its faults take. One allocation. */
struct vcpu_alloc {
	struct vcpu vcpu; /* first: the allocation's address */
	struct lapic apic;
	struct tdp_table_cache table_cache;
};

static void vcpu_free(struct vcpu *v)
{
	if (v->arch)
		backend->vcpu_destroy(v);
	fpu_vcpu_free(v);
	live_regs_forget(v);
	tdp_table_cache_release(v->table_cache);
	frame_free(va_to_pa(v), order_for(sizeof(struct vcpu_alloc)));
}

/* Undo whatever part of creation was done: the MMU frees every table and
 * frame the VM owned. */
static void vm_teardown(struct vm *vm, bool mmu_ready)
{
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		vcpu_free(vm->vcpus[i]);
	platform_destroy(vm);
	if (mmu_ready)
		mmu_destroy(&vm->mmu);
	vms[vm->id] = NULL;
	frame_free(va_to_pa(vm), order_for(sizeof(struct vm)));
}

/* The VM's memory: one slot at guest-physical 0, and its aliases. */
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
		return -1;
	}
	for (unsigned i = 0; i < a->aliases; i++) {
		const struct vm_alias *al = &a->alias[i];

		if (mmu_alias_add(&vm->mmu, al->gpa, al->size, al->target_gpa)) {
			ksnprintf(err, errlen, "alias 0x%llx:0x%llx@0x%llx: the target must be guest "
				  "memory (backing=eager), the alias outside it",
				  (unsigned long long)al->gpa, (unsigned long long)al->size,
				  (unsigned long long)al->target_gpa);
			return -1;
		}
	}
	return 0;
}

/* n vCPUs, each in frames of its own with its APIC on the VM's bus, the
 * first the BSP; their control blocks stay loaded on this CPU until
 * vm_create puts them. */
static int vm_add_vcpus(struct vm *vm, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		paddr_t pa = frame_alloc_zeroed(order_for(sizeof(struct vcpu_alloc)));
		struct vcpu_alloc *va = pa_to_va(pa);
		struct vcpu *v;

		if (!pa)
			return -1;
		v = vm->vcpus[i] = &va->vcpu;
		v->apic = &va->apic;
		v->table_cache = &va->table_cache;
		vm->kicks[i] = &v->kick;
		vm->nr_vcpus++;
		v->vm = vm;
		v->index = i;
		v->mmu = &vm->mmu;
		/* The guest's TSC starts near zero, as on a machine that just
		 * booted (a restored vCPU state sets its own). */
		v->tsc_offset = -(int64_t)vm->created_tsc;
		v->misc_enable = MISC_ENABLE_RESET;
		v->dr6 = DR6_RESET;
		mce_msrs_reset(&v->mce);
		lapic_init(v->apic, &vm->apic_bus, i, i == 0, tsc_khz());
		if (fpu_vcpu_init(v) || backend->vcpu_create(v))
			return -1;
	}
	return 0;
}

/* Boot: vCPU 0 at the kernel's entry, the others in the INIT state until
 * the guest starts them with INIT and SIPI. */
static void vm_boot_vcpus(struct vm *vm, const struct mb1_entry *entry)
{
	struct vcpu *bsp = vm->vcpus[0];

	bsp->regs.rip = entry->eip;
	bsp->regs.rax = entry->eax;
	bsp->regs.rbx = entry->ebx;
	bsp->regs.rflags = RFLAGS_FIXED;
	for (unsigned i = 1; i < vm->nr_vcpus; i++) {
		vcpu_init_state(vm->vcpus[i]);
		vm->vcpus[i]->wait_sipi = true;
	}
}

/* A Linux kernel's boot: vCPU 0 at the protocol's 32-bit entry with its GDT
 * and boot_params, the others as vm_boot_vcpus leaves them. */
static void vm_boot_linux(struct vm *vm, const struct bzimage_entry *entry)
{
	struct vcpu *bsp = vm->vcpus[0];
	const struct mb1_entry none = { 0 };

	vm_boot_vcpus(vm, &none);
	bsp->regs.rip = entry->eip;
	bsp->regs.rsi = entry->esi;
	backend->boot_selectors(bsp, entry->gdt_gpa, entry->gdt_limit, entry->cs, entry->ds);
}

struct vm *vm_create(const struct vm_create_args *a, char *err, size_t errlen)
{
	struct vm *vm = NULL;
	struct mb1_entry entry;
	struct bzimage_entry bz_entry;
	unsigned nr_vcpus = a->vcpus ? a->vcpus : 1;
	const bool is_linux = !a->state && bzimage_detect(a->image, a->image_size);

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
	if (nr_vcpus > VM_VCPUS_MAX) {
		ksnprintf(err, errlen, "%u vCPUs (at most %d)", nr_vcpus, VM_VCPUS_MAX);
		return NULL;
	}
	/* The ACPI tables' area stays out of the guest's usable memory. */
	const struct mb1_mem_range acpi = { PLATFORM_ACPI_GPA, PLATFORM_ACPI_SIZE, MB1_MEM_RESERVED };
	const struct mb1_boot boot = { .image = a->image, .size = a->image_size,
				       .guest_mem = a->mem_bytes, .cmdline = a->cmdline,
				       .ranges = &acpi, .n_ranges = 1 };

	/* Linux finds the RSDP where the platform puts it, first in the area. */
	const struct bzimage_boot bz = { .image = a->image, .size = a->image_size,
					 .guest_mem = a->mem_bytes, .cmdline = a->args,
					 .initrd = a->initrd, .initrd_size = a->initrd_size,
					 .rsdp_gpa = PLATFORM_ACPI_GPA };

	if (!a->state && !is_linux && a->initrd) {
		ksnprintf(err, errlen, "initrd= is for a Linux kernel (bzImage); this is a "
			  "multiboot kernel");
		return NULL;
	}
	if (!a->state && (is_linux ? bzimage_check(&bz, err, errlen) : mb1_check_boot(&boot, err, errlen)))
		return NULL;
	for (int i = 0; i < VM_MAX && !vm; i++) {
		paddr_t pa;

		if (vms[i])
			continue;
		if (!(pa = frame_alloc_zeroed(order_for(sizeof(struct vm))))) {
			ksnprintf(err, errlen, "out of memory for the VM");
			return NULL;
		}
		vm = vms[i] = pa_to_va(pa);
		vm->id = i;
		vm->lock.class = LOCK_VM;
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
	vm->no_kvm_pv = a->no_kvm_pv;
	vm->created_tsc = rdtsc();

	if (mmu_init(&vm->mmu, backend->tdp, vm_flush_tlb, vm)) {
		ksnprintf(err, errlen, "out of memory for the page tables");
		vm_teardown(vm, false);
		return NULL;
	}
	vm->mmu.share.id = (uint32_t)vm->id; /* the order cross-VM operations lock in */
	vm->mmu.max_leaf_level = backend->tdp_max_leaf_level();
	if (a->clone_of) {
		if (mmu_clone(&a->clone_of->mmu, &vm->mmu)) {
			ksnprintf(err, errlen, "out of memory for the clone's memory");
			vm_teardown(vm, true);
			return NULL;
		}
	} else if (vm_add_memory(vm, a, err, errlen)) {
		vm_teardown(vm, true);
		return NULL;
	}
	if (vm_add_vcpus(vm, nr_vcpus)) {
		ksnprintf(err, errlen, "out of memory for the vCPUs");
		vm_teardown(vm, true);
		return NULL;
	}
	if (!vm_place_vcpus(vm, a->cpu_list, a->cpu_list_len, err, errlen)) {
		vm_teardown(vm, true);
		return NULL;
	}
	if (platform_init(vm, !a->no_testdev, &a->disk, a->balloon, err, errlen)) {
		vm_teardown(vm, true);
		return NULL;
	}
	if (a->state) {
		if (!vm_state_load(vm, a->state, a->state_bytes, err, errlen)) {
			vm_teardown(vm, true);
			return NULL;
		}
	} else if (platform_firmware_start(vm)) {
		/* As a BIOS: the chipset and the IVT first, the kernel over them. */
		ksnprintf(err, errlen, "the firmware's interrupt table does not fit in guest memory");
		vm_teardown(vm, true);
		return NULL;
	} else if (is_linux ? bzimage_load(&vm->mmu, &bz, &bz_entry, err, errlen) :
			   mb1_load_boot(&vm->mmu, &boot, &entry, err, errlen)) {
		vm_teardown(vm, true);
		return NULL;
	} else if (platform_write_acpi(vm)) {
		ksnprintf(err, errlen, "the ACPI tables do not fit in guest memory");
		vm_teardown(vm, true);
		return NULL;
	} else if (is_linux) {
		vm_boot_linux(vm, &bz_entry);
	} else {
		vm_boot_vcpus(vm, &entry);
	}
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		vcpu_put(vm->vcpus[i]);
	vm->state = VM_READY;
	return vm;
}

void vm_destroy(struct vm *vm)
{
	com1_flush_line(vm);	/* a paused guest's unfinished line */
	vm_teardown(vm, true);
}

static void report_registers(struct vcpu *v)
{
	struct vcpu_regs *r = &v->regs;

	kprintf("  vCPU %u\n", v->index);
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
	vcpu_load(v);
	backend->dump(v);
	vcpu_put(v);
}

void vm_run(struct vm *vm, uint64_t timeout_ms)
{
	uint64_t start = rdtsc();

	vm->stopping = 0;
	vm->stopped_by = -1;
	vm_lock(vm);
	platform_resume(vm, vm_guest_tsc(vm));
	vm_unlock(vm, NULL);
	__atomic_store_n(&vm->state, VM_RUNNING, __ATOMIC_RELEASE);
	sched_run(vm, timeout_ms ? start + timeout_ms * tsc_khz() : 0);
	/* A paused guest's unfinished line waits for its end (it is in the
	 * VM's snapshots too): printed now, one line of the guest's would come
	 * out as two, split by the pause. */
	if (vm->state == VM_PAUSED)
		com1_end_raw_line(vm);
	else
		com1_flush_line(vm);

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
		report_registers(vm->vcpus[vm->stopped_by >= 0 ? vm->stopped_by : 0]);
		break;
	}
}
