/* virt/'s side of the backend interface (virt/backend.h): the backends that
 * the image holds (their probes, in the .backends section), the one that
 * registered, and what virt/ does for them: the local APIC's TPR as CR8, the
 * VM's memory and TDP tables, the instruction at RIP, the guest MSRs neither
 * control block holds, the CR4 bits the guest's CPUID allows. */
#include "virt/backend.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpuinfo.h"
#include "arch/x86/msr.h"
#include "arch/x86/percpu.h"
#include "mm/tdp_mmu.h"
#include "virt/cpuid.h"
#include "virt/msr.h"
#include "virt/insn.h"
#include "virt/mmio.h"

_Static_assert(VCPU_INSN_MAX_LEN == INSN_MAX_LEN, "the decoder takes what fits a vexit");

extern const backend_probe_fn __backends_start[], __backends_end[];

static struct virt_backend registered;
const struct virt_backend *backend;

void backend_register(const struct virt_backend *ops)
{
	registered = *ops;
	backend = &registered;
}

bool backend_probe(void)
{
	char err[96];

	for (const backend_probe_fn *p = __backends_start; p < __backends_end && !backend; p++)
		(*p)(err, sizeof(err));
	return backend != NULL;
}

/* A guest MSR each CPU holds, once sprig wrote it (sprig itself never uses
 * it): the guest's goes in only when it differs. */
struct cpu_msr_cache {
	bool valid;
	uint32_t val;
};

static struct cpu_msr_cache cpu_tsc_aux[CPU_MAX], cpu_pkrs[CPU_MAX];

static void load_cached(struct cpu_msr_cache *c, uint32_t msr, uint32_t val)
{
	if (c->valid && c->val == val)
		return;
	wrmsr(msr, val);
	c->valid = true;
	c->val = val;
}

void vcpu_load_tsc_aux(const struct vcpu *v)
{
	if (cpu_has_tsc_aux())
		load_cached(&cpu_tsc_aux[this_cpu()->id], MSR_TSC_AUX, v->tsc_aux);
}

void vcpu_load_pkrs(const struct vcpu *v)
{
	if (cpuinfo.pks)
		load_cached(&cpu_pkrs[this_cpu()->id], MSR_PKRS, v->pkrs);
}

uint64_t vcpu_cr4_allowed(struct vcpu *v)
{
	struct cpuid_host h = vcpu_cpuid_host(v);

	return cpuid_guest_cr4_allowed(&h);
}

bool vcpu_cr4_write_ok(struct vcpu *v, uint64_t old, uint64_t cr4, uint64_t efer, uint64_t cr3)
{
	return cpuid_cr4_write_ok(vcpu_cr4_allowed(v), old, cr4, efer, cr3);
}

uint64_t vcpu_cr8(const struct vcpu *v)
{
	return lapic_tpr(v->apic) >> 4;
}

void vcpu_set_cr8(struct vcpu *v, uint64_t cr8)
{
	lapic_set_tpr(v->apic, (uint32_t)(cr8 & 0xf) << 4);
}

uint64_t vcpu_tdp_root(const struct vcpu *v)
{
	return mmu_root_pointer(v->mmu);
}

int vcpu_tdp_walk(struct vcpu *v, uint64_t gpa, uint64_t sptes[TDP_ROOT_LEVEL + 1])
{
	return tdp_get_walk(v->mmu, gpa, sptes);
}

int vcpu_read_guest(struct vcpu *v, uint64_t gpa, void *buf, size_t len)
{
	return mmu_read_guest(v->mmu, gpa, buf, len);
}

size_t vcpu_fetch_at_rip(struct vcpu *v, uint8_t *buf, size_t len, unsigned *code_bits)
{
	struct guest_mode m;

	backend->guest_mode(v, &m);
	*code_bits = m.code_bits;
	return fetch_at_rip(v, &m, buf, len);
}
