/* VM state capture and load (vcpu_state.h). The console is the one caller:
 * the staging copies below are shared. */
#include "virt/vcpu_state.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpuinfo.h"
#include "arch/x86/tsc.h"
#include "lib/print.h"
#include "lib/string.h"
#include "virt/msr.h"
#include "virt/fpu.h"
#include "virt/state_check.h"

static struct vcpu_state cpu_stage;

/* The device of the VM's table with that record, or NULL. */
static struct vm_device *device_of(struct vm *vm, uint32_t id)
{
	for (unsigned i = 0; i < vm->devices.count; i++)
		if (vm->devices.dev[i].record && vm->devices.dev[i].record->id == id)
			return &vm->devices.dev[i];
	return NULL;
}

static bool stage_cpu(struct vcpu *v, uint64_t now, char *err, size_t errlen)
{
	struct vcpu_state *st = &cpu_stage;

	memset(st, 0, sizeof(*st));
	memcpy(st->backend, backend->name, strnlen(backend->name, sizeof(st->backend) - 1));
	vcpu_load(v);
	st->arch_bytes = (uint32_t)backend->state_save(v, st->arch);
	vcpu_put(v);
	if (!st->arch_bytes) {
		ksnprintf(err, errlen, "the %s backend could not read vCPU %u's state", backend->name,
			  v->index);
		return false;
	}
	st->regs = v->regs;
	st->xcr0 = v->xcr0;
	memcpy(st->db, v->db, sizeof(st->db));
	st->dr6 = v->dr6;
	st->cr2 = v->cr2;
	st->guest_tsc = now + (uint64_t)v->tsc_offset;
	/* A kicked halt has ended, as KVM's KVM_GET_MP_STATE reports it. */
	st->halted = v->halted && !v->pv_unhalted;
	st->wait_sipi = v->wait_sipi;
	st->xsave_bytes = fpu_vcpu_area_bytes();
	memcpy(st->xsave, v->xsave, st->xsave_bytes);
	return true;
}

/* Every record of vm, in the order a load expects; buf NULL only counts. */
static bool put_records(struct vm *vm, void *buf, uint32_t cap, uint32_t *pos, char *err,
			size_t errlen)
{
	/* One instant for every vCPU: their TSCs keep their distances. */
	uint64_t now = rdtsc();
	struct vm_saved vs = {
		.nr_vcpus = vm->nr_vcpus, .uart = vm->com1.out, .lost = vm->lost,
		.pvclock_wall_msr = vm->pvclock_wall_msr,
	};
	bool ok = record_put(buf, cap, pos, &vm_record, 0, &vs);

	for (unsigned i = 0; ok && i < vm->nr_vcpus; i++) {
		struct vcpu *v = vm->vcpus[i];
		struct vcpu_msrs msrs = {
			.pvclock_msr = v->pvclock_msr, .pvclock_version = v->pvclock_version,
			.tsc_aux = v->tsc_aux, .misc_enable = v->misc_enable, .pkrs = v->pkrs,
			.mce = v->mce,
			.steal_time_msr = v->steal.msr,
			.pv_eoi_msr = v->pv_eoi.msr,
		};

		if (buf && !stage_cpu(v, now, err, errlen))
			return false;
		ok = record_put(buf, cap, pos, &cpu_record, i, &cpu_stage) &&
		     record_put(buf, cap, pos, &lapic_record, i, v->apic) &&
		     record_put(buf, cap, pos, &msrs_record, i, &msrs);
	}
	for (unsigned i = 0; ok && i < vm->devices.count; i++)
		if (vm->devices.dev[i].record)
			ok = record_put(buf, cap, pos, vm->devices.dev[i].record, 0,
					vm->devices.dev[i].model);
	if (!ok)
		ksnprintf(err, errlen, "the state outgrew its %u bytes", cap);
	return ok;
}

uint32_t vm_state_bytes(struct vm *vm)
{
	uint32_t pos = 0;
	char err[8];

	put_records(vm, NULL, 0, &pos, err, sizeof(err));
	return pos;
}

bool vm_state_save(struct vm *vm, void *buf, uint32_t cap, uint32_t *len, char *err,
		   size_t errlen)
{
	*len = 0;
	if (vm->state == VM_RUNNING) {
		ksnprintf(err, errlen, "'%s' is running", vm->name);
		return false;
	}
	if (vm->platform.disk.blk.bytes) {
		ksnprintf(err, errlen, "'%s' has a virtio disk, whose state snapshots and clones "
			  "do not carry yet", vm->name);
		return false;
	}
	if (vm->platform.balloon.on) {
		ksnprintf(err, errlen, "'%s' has a virtio balloon, whose state snapshots and clones "
			  "do not carry yet", vm->name);
		return false;
	}
	if (fpu_vcpu_area_bytes() > VCPU_XSAVE_MAX) {
		ksnprintf(err, errlen, "the FPU area takes %u bytes", fpu_vcpu_area_bytes());
		return false;
	}
	return put_records(vm, buf, cap, len, err, errlen);
}

bool vm_state_check(const void *state, uint32_t len, uint64_t mem_bytes, unsigned *nr_vcpus,
		    char *err, size_t errlen)
{
	struct fpu_limits fpu;
	struct record_limits lim = {
		.mem_bytes = mem_bytes, .phys_bits = cpuinfo.phys_bits, .fpu = &fpu, .backend = backend->name,
		.arch_check = backend->state_check,
	};

	fpu_limits(&fpu);
	return vm_records_check(state, len, &lim, nr_vcpus, err, errlen);
}

bool vm_state_has(const void *state, uint32_t len, uint32_t id)
{
	const struct record_header *h;
	const void *payload;
	uint32_t pos = 0;
	char err[8];

	while (record_next(state, len, &pos, &h, &payload, err, sizeof(err)))
		if (h->id == id && !h->instance)
			return true;
	return false;
}

/* Each device of the VM's chipset has its record, and each record a device. */
static bool devices_match(struct vm *vm, const void *state, uint32_t len, char *err,
			  size_t errlen)
{
	const struct record_header *h;
	const void *payload;
	uint32_t pos = 0;

	for (unsigned i = 0; i < vm->devices.count; i++)
		if (vm->devices.dev[i].record && !vm_state_has(state, len, vm->devices.dev[i].record->id)) {
			ksnprintf(err, errlen, "no record for the VM's %s", vm->devices.dev[i].name);
			return false;
		}
	while (record_next(state, len, &pos, &h, &payload, err, errlen))
		if (h->id > REC_MSRS && !device_of(vm, h->id)) {
			ksnprintf(err, errlen, "a record (id %u) for a device this VM does not have",
				  h->id);
			return false;
		}
	return true;
}

static bool load_cpu(struct vcpu *v, const struct vcpu_state *st, uint64_t now)
{
	if (!backend->state_load(v, st->arch, st->arch_bytes))
		return false;
	v->regs = st->regs;
	v->xcr0 = st->xcr0;
	memcpy(v->db, st->db, sizeof(v->db));
	v->dr6 = st->dr6;
	v->cr2 = st->cr2;
	memcpy(v->xsave, st->xsave, st->xsave_bytes);
	v->halted = st->halted;
	v->wait_sipi = st->wait_sipi;
	/* The vCPU's clock goes on from where it was captured. */
	v->tsc_offset = (int64_t)(st->guest_tsc - now);
	return true;
}

/* One checked record of the VM's or a vCPU's own state, or a device's. */
static void load_record(struct vm *vm, const struct record_header *h, const void *payload)
{
	struct vcpu *v = h->instance < vm->nr_vcpus ? vm->vcpus[h->instance] : NULL;
	struct vm_device *d;
	struct vm_saved vs;
	struct vcpu_msrs msrs;

	switch (h->id) {
	case REC_VM:
		record_load(&vm_record, payload, h->length, &vs);
		vm->com1.out = vs.uart;
		vm->lost = vs.lost;
		vm->pvclock_wall_msr = vs.pvclock_wall_msr;
		return;
	case REC_LAPIC:
		/* After the backend's state: the APIC's TPR is whole, VMX's CR8
		 * only its bits 7:4. The APIC keeps this VM's bus and TSC rate. */
		record_load(&lapic_record, payload, h->length, v->apic);
		return;
	case REC_MSRS:
		record_load(&msrs_record, payload, h->length, &msrs);
		v->pvclock_msr = msrs.pvclock_msr;
		v->pvclock_version = msrs.pvclock_version;
		v->tsc_aux = msrs.tsc_aux;
		v->misc_enable = msrs.misc_enable;
		v->pkrs = msrs.pkrs;
		v->mce = msrs.mce;
		/* The record keeps the guest's sum; sprig's wait counts anew. */
		v->steal = (struct kvm_steal){ .msr = msrs.steal_time_msr };
		/* The word was settled at the exit before the save. */
		v->pv_eoi = (struct kvm_pv_eoi){ .msr = msrs.pv_eoi_msr };
		msr_pvclock_resume(v);
		return;
	default:
		d = device_of(vm, h->id); /* devices_match found it */
		record_load(d->record, payload, h->length, d->model);
	}
}

bool vm_state_load(struct vm *vm, const void *state, uint32_t len, char *err, size_t errlen)
{
	uint64_t now = rdtsc();
	const struct record_header *h;
	const void *payload;
	uint32_t pos = 0;
	unsigned n;

	if (!vm_state_check(state, len, vm->mem_bytes, &n, err, errlen) ||
	    !devices_match(vm, state, len, err, errlen))
		return false;
	if (vm->nr_vcpus != n) {
		ksnprintf(err, errlen, "a state of %u vCPUs for %u", n, vm->nr_vcpus);
		return false;
	}
	/* The vCPUs' own records first: the others load over them. */
	while (record_next(state, len, &pos, &h, &payload, err, errlen)) {
		if (h->id != REC_CPU)
			continue;
		record_load(&cpu_record, payload, h->length, &cpu_stage);
		if (!load_cpu(vm->vcpus[h->instance], &cpu_stage, now)) {
			ksnprintf(err, errlen, "the %s backend could not load vCPU %u's state",
				  backend->name, h->instance);
			return false;
		}
		/* The VM's clock (HC_TIME_NS) is vCPU 0's. */
		if (!h->instance)
			vm->created_tsc = now - cpu_stage.guest_tsc;
	}
	for (pos = 0; record_next(state, len, &pos, &h, &payload, err, errlen);)
		if (h->id != REC_CPU)
			load_record(vm, h, payload);
	/* Then what follows from each device's state (its IRQ line, its clock). */
	for (unsigned i = 0; i < vm->devices.count; i++)
		if (vm->devices.dev[i].record && vm->devices.dev[i].loaded)
			vm->devices.dev[i].loaded(vm, vm->devices.dev[i].model);
	return true;
}
