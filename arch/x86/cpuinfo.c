/* CPU identification and virtualization capabilities. Every MSR read here is
 * guarded by the CPUID bit (or capability MSR bit) that says the MSR exists. */
#include "arch/x86/cpuinfo.h"
#include "arch/x86/regs.h"
#include "arch/x86/cpu.h"
#include "lib/print.h"
#include "lib/string.h"

struct cpuinfo cpuinfo;

static void read_vendor(void)
{
	struct cpuid_regs r = cpuid(0, 0);

	cpuinfo.max_leaf = r.eax;
	memcpy(cpuinfo.vendor + 0, &r.ebx, 4);
	memcpy(cpuinfo.vendor + 4, &r.edx, 4);
	memcpy(cpuinfo.vendor + 8, &r.ecx, 4);
	cpuinfo.vendor[12] = '\0';
	cpuinfo.is_intel = strcmp(cpuinfo.vendor, "GenuineIntel") == 0;
	cpuinfo.is_amd = strcmp(cpuinfo.vendor, "AuthenticAMD") == 0 ||
			 strcmp(cpuinfo.vendor, "HygonGenuine") == 0;
	cpuinfo.max_ext_leaf = cpuid(0x80000000, 0).eax;
	/* Without extended leaves, EAX echoes something below 0x80000000. */
	if (cpuinfo.max_ext_leaf < 0x80000000)
		cpuinfo.max_ext_leaf = 0;
}

static void read_signature(void)
{
	uint32_t eax = cpuid(1, 0).eax;
	uint32_t base_family = (eax >> 8) & 0xf;
	uint32_t base_model = (eax >> 4) & 0xf;

	cpuinfo.stepping = eax & 0xf;
	cpuinfo.family = base_family;
	if (base_family == 0xf)
		cpuinfo.family += (eax >> 20) & 0xff;
	cpuinfo.model = base_model;
	if (base_family == 0x6 || base_family == 0xf)
		cpuinfo.model |= ((eax >> 16) & 0xf) << 4;
}

static void read_brand(void)
{
	char raw[48];
	const char *p = raw;

	if (cpuinfo.max_ext_leaf < 0x80000004) {
		cpuinfo.brand[0] = '\0';
		return;
	}
	for (uint32_t i = 0; i < 3; i++) {
		struct cpuid_regs r = cpuid(0x80000002 + i, 0);
		memcpy(raw + 16 * i + 0, &r.eax, 4);
		memcpy(raw + 16 * i + 4, &r.ebx, 4);
		memcpy(raw + 16 * i + 8, &r.ecx, 4);
		memcpy(raw + 16 * i + 12, &r.edx, 4);
	}
	/* Some vendors right-justify the string with leading spaces. */
	while (p < raw + sizeof(raw) && *p == ' ')
		p++;
	size_t n = strnlen(p, (size_t)(raw + sizeof(raw) - p));
	memcpy(cpuinfo.brand, p, n);
	cpuinfo.brand[n] = '\0';
}

static void read_features(void)
{
	struct cpuid_regs l1 = cpuid(1, 0);

	cpuinfo.x2apic = l1.ecx & (1u << 21);
	cpuinfo.xsave = l1.ecx & (1u << 26);
	cpuinfo.hypervisor = l1.ecx & (1u << 31);
	if (cpuinfo.hypervisor) {
		/* With the bit set, leaf 0x40000000 names the hypervisor
		 * ("KVMKVMKVM", "TCGTCGTCGTCG", "VMwareVMware", ...). */
		struct cpuid_regs h = cpuid(0x40000000, 0);

		memcpy(cpuinfo.hypervisor_id, &h.ebx, 4);
		memcpy(cpuinfo.hypervisor_id + 4, &h.ecx, 4);
		memcpy(cpuinfo.hypervisor_id + 8, &h.edx, 4);
		for (int i = 0; i < 12; i++)
			if (cpuinfo.hypervisor_id[i] && (cpuinfo.hypervisor_id[i] < 0x20 ||
							 cpuinfo.hypervisor_id[i] > 0x7e))
				cpuinfo.hypervisor_id[i] = '?';
	}
	cpuinfo.svm.supported = false;
	cpuinfo.vmx.supported = l1.ecx & (1u << 5);

	if (cpuinfo.max_ext_leaf >= 0x80000001) {
		struct cpuid_regs e1 = cpuid(0x80000001, 0);
		cpuinfo.nx = e1.edx & (1u << 20);
		cpuinfo.pages_1g = e1.edx & (1u << 26);
		cpuinfo.svm.supported = e1.ecx & (1u << 2);
	}

	if (cpuinfo.xsave && cpuinfo.max_leaf >= 0xd) {
		struct cpuid_regs d = cpuid(0xd, 0);
		cpuinfo.xcr0_supported = ((uint64_t)d.edx << 32) | d.eax;
		cpuinfo.xsave_size_enabled = d.ebx;
		cpuinfo.xsave_size_max = d.ecx;
	}

	cpuinfo.phys_bits = cpuinfo.max_ext_leaf >= 0x80000008 ? cpuid(0x80000008, 0).eax & 0xff : 36;
	cpuinfo.cr4_allowed = CR4_BASE_BITS | (l1.ecx & (1u << 17) ? CR4_PCIDE : 0) |
			      (cpuinfo.xsave ? CR4_OSXSAVE : 0) |
			      (cpuinfo.vmx.supported ? CR4_VMXE : 0);
	cpuinfo.va_bits = 48;
	if (cpuinfo.max_leaf >= 7) {
		struct cpuid_regs l7 = cpuid(7, 0);
		cpuinfo.cr4_allowed |= (l7.ebx & (1u << 0) ? CR4_FSGSBASE : 0) |
				       (l7.ebx & (1u << 7) ? CR4_SMEP : 0) |
				       (l7.ebx & (1u << 20) ? CR4_SMAP : 0) |
				       (l7.ecx & (1u << 2) ? CR4_UMIP : 0) |
				       (l7.ecx & (1u << 3) ? CR4_PKE : 0) |
				       (l7.ecx & (1u << 16) ? CR4_LA57 : 0) |
				       (l7.ecx & (1u << 31) ? CR4_PKS : 0);
		cpuinfo.pks = l7.ecx & (1u << 31);
		cpuinfo.has_arch_caps = l7.edx & (1u << 29);
		cpuinfo.va_bits = x86_va_bits(cpuinfo.cr4_allowed);
		if (cpuinfo.has_arch_caps)
			cpuinfo.arch_caps = rdmsr(MSR_ARCH_CAPABILITIES);
	}
}

static void read_svm(void)
{
	if (!cpuinfo.svm.supported)
		return;
	if (cpuinfo.max_ext_leaf >= 0x8000000a) {
		struct cpuid_regs r = cpuid(0x8000000a, 0);
		cpuinfo.svm.revision = r.eax & 0xff;
		cpuinfo.svm.asids = r.ebx;
		cpuinfo.svm.features = r.edx;
	}
	cpuinfo.svm.disabled_by_bios = rdmsr(MSR_VM_CR) & (1u << 4);
}

static void read_vmx(void)
{
	if (!cpuinfo.vmx.supported)
		return;
	uint64_t fc = rdmsr(MSR_FEATURE_CONTROL);
	cpuinfo.vmx.feature_control = fc;
	cpuinfo.vmx.disabled_by_bios = (fc & FEATURE_CONTROL_LOCK) &&
				       !(fc & FEATURE_CONTROL_VMX_OUTSIDE_SMX);

	uint64_t basic = rdmsr(MSR_VMX_BASIC);
	cpuinfo.vmx.revision_id = basic & 0x7fffffff;
	cpuinfo.vmx.vmcs_size = (basic >> 32) & 0x1fff;
	cpuinfo.vmx.true_ctls = basic & VMX_BASIC_TRUE_CTLS;

	/* The allowed-1 settings are the high half; bit 31 of the primary
	 * processor-based controls activates the secondary ones, and
	 * IA32_VMX_PROCBASED_CTLS2 exists only if that bit may be 1. */
	cpuinfo.vmx.secondary_ctls = rdmsr(MSR_VMX_PROCBASED_CTLS) & (1ull << 63);
	if (!cpuinfo.vmx.secondary_ctls)
		return;
	cpuinfo.vmx.ctls2_allowed1 = rdmsr(MSR_VMX_PROCBASED_CTLS2) >> 32;
	if (cpuinfo.vmx.ctls2_allowed1 & (VMX_CTLS2_EPT | VMX_CTLS2_VPID))
		cpuinfo.vmx.ept_vpid_cap = rdmsr(MSR_VMX_EPT_VPID_CAP);
}

void cpuinfo_init(void)
{
	memset(&cpuinfo, 0, sizeof(cpuinfo));
	read_vendor();
	read_signature();
	read_brand();
	read_features();
	read_svm();
	read_vmx();
}

static const char *yes_no(bool b)
{
	return b ? "yes" : "no";
}

static void print_svm(void)
{
	uint32_t f = cpuinfo.svm.features;

	if (!cpuinfo.svm.supported) {
		kprintf("svm: no\n");
		return;
	}
	kprintf("svm: yes%s rev %u asids %u npt %s nrips %s flush-by-asid %s "
		"decode-assists %s vmcb-clean %s\n",
		cpuinfo.svm.disabled_by_bios ? " (disabled by BIOS)" : "",
		cpuinfo.svm.revision, cpuinfo.svm.asids,
		yes_no(f & SVM_FEAT_NP), yes_no(f & SVM_FEAT_NRIPS),
		yes_no(f & SVM_FEAT_FLUSH_BY_ASID),
		yes_no(f & SVM_FEAT_DECODE_ASSISTS),
		yes_no(f & SVM_FEAT_VMCB_CLEAN));
	kprintf("svm-more: lbrv %s svml %s tsc-rate %s pause-filter %s "
		"pause-threshold %s avic %s vmsave-virt %s vgif %s\n",
		yes_no(f & SVM_FEAT_LBRV), yes_no(f & SVM_FEAT_SVML),
		yes_no(f & SVM_FEAT_TSC_RATE_MSR),
		yes_no(f & SVM_FEAT_PAUSE_FILTER),
		yes_no(f & SVM_FEAT_PAUSE_FILTER_THRESHOLD),
		yes_no(f & SVM_FEAT_AVIC), yes_no(f & SVM_FEAT_VMSAVE_VIRT),
		yes_no(f & SVM_FEAT_VGIF));
}

static void print_vmx(void)
{
	static const struct {
		uint64_t bit;
		const char *name;
	} ept_caps[] = {
		{ EPT_CAP_WB, "wb" },
		{ EPT_CAP_WALK_4, "4-level" },
		{ EPT_CAP_2M, "2m" },
		{ EPT_CAP_1G, "1g" },
		{ EPT_CAP_AD, "ad" },
		{ EPT_CAP_INVEPT, "invept" },
		{ EPT_CAP_INVEPT_SINGLE, "invept-single" },
		{ EPT_CAP_INVEPT_ALL, "invept-all" },
		{ EPT_CAP_INVVPID, "invvpid" },
	};
	uint32_t c2 = cpuinfo.vmx.ctls2_allowed1;

	if (!cpuinfo.vmx.supported) {
		kprintf("vmx: no\n");
		return;
	}
	kprintf("vmx: yes%s ept %s vpid %s unrestricted %s ept-caps",
		cpuinfo.vmx.disabled_by_bios ? " (disabled by BIOS)" : "",
		yes_no(c2 & VMX_CTLS2_EPT), yes_no(c2 & VMX_CTLS2_VPID),
		yes_no(c2 & VMX_CTLS2_UNRESTRICTED));
	for (size_t i = 0; i < sizeof(ept_caps) / sizeof(ept_caps[0]); i++)
		if (cpuinfo.vmx.ept_vpid_cap & ept_caps[i].bit)
			kprintf(" %s", ept_caps[i].name);
	if (!cpuinfo.vmx.ept_vpid_cap)
		kprintf(" none");
	kprintf("\n");
	kprintf("vmx-basic: revision 0x%x vmcs-size %u true-ctls %s "
		"secondary-ctls %s feature-control 0x%llx\n",
		cpuinfo.vmx.revision_id, cpuinfo.vmx.vmcs_size,
		yes_no(cpuinfo.vmx.true_ctls), yes_no(cpuinfo.vmx.secondary_ctls),
		(unsigned long long)cpuinfo.vmx.feature_control);
}

void cpuinfo_print(unsigned cpu_count)
{
	kprintf("cpu: %s family 0x%x model 0x%x stepping %u \"%s\"\n",
		cpuinfo.vendor, cpuinfo.family, cpuinfo.model, cpuinfo.stepping,
		cpuinfo.brand);
	kprintf("leaves: max 0x%x ext 0x%x hypervisor %s\n", cpuinfo.max_leaf,
		cpuinfo.max_ext_leaf, yes_no(cpuinfo.hypervisor));
	if (cpuinfo.hypervisor)
		kprintf("hypervisor: \"%s\" (CPUID 0x40000000)\n", cpuinfo.hypervisor_id);
	else
		kprintf("hypervisor: none in CPUID (bare metal, or Bochs, which sets no bit)\n");
	kprintf("features: nx %s x2apic %s xsave %s", yes_no(cpuinfo.nx),
		yes_no(cpuinfo.x2apic), yes_no(cpuinfo.xsave));
	if (cpuinfo.xsave)
		kprintf(" (xcr0-supported 0x%llx size %u max %u)",
			(unsigned long long)cpuinfo.xcr0_supported,
			cpuinfo.xsave_size_enabled, cpuinfo.xsave_size_max);
	kprintf(" pschange-mc-no %s\n",
		yes_no(cpuinfo.has_arch_caps && (cpuinfo.arch_caps & ARCH_CAP_PSCHANGE_MC_NO)));
	print_svm();
	print_vmx();
	kprintf("tdp: %s\n", cpuinfo_has_npt() ? "npt" : cpuinfo_has_ept() ? "ept" : "none");
	kprintf("1g-pages: %s\n", yes_no(cpuinfo.pages_1g));
	kprintf("cpus: %u\n", cpu_count);
}
