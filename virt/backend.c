/* virt/'s side of the backend interface (virt/backend.h): the backends that
 * the image holds (their probes, in the .backends section), the one that
 * registered, and what virt/ does for them: the guest MSRs neither control
 * block holds, the CR4 bits the guest's CPUID allows. */
#include "virt/backend.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpuinfo.h"
#include "arch/x86/msr.h"
#include "arch/x86/percpu.h"
#include "virt/emulate.h"

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
