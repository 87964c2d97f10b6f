#include "arch/x86/mce.h"
#include "arch/x86/cpu.h"
#include "lib/print.h"

#define CR4_MCE (1ull << 6)
#define CPUID_1_EDX_MCE (1u << 7)
#define CPUID_1_EDX_MCA (1u << 14)

#define MSR_MC_STATUS(i) (0x401 + 4 * (i))
#define MSR_MC_ADDR(i) (0x402 + 4 * (i))
#define MSR_MC_MISC(i) (0x403 + 4 * (i))
#define MCG_CAP_COUNT(cap) ((unsigned)(cap) & 0xff)
#define MCG_STATUS_RIPV (1ull << 0)
#define MCG_STATUS_EIPV (1ull << 1)
#define MCG_STATUS_MCIP (1ull << 2)
#define MCI_STATUS_VAL (1ull << 63)
#define MCI_STATUS_OVER (1ull << 62)
#define MCI_STATUS_UC (1ull << 61)
#define MCI_STATUS_MISCV (1ull << 59)
#define MCI_STATUS_ADDRV (1ull << 58)
#define MCI_STATUS_PCC (1ull << 57)

void mce_cpu_init(void)
{
	if (cpuid(1, 0).edx & CPUID_1_EDX_MCE)
		write_cr4(read_cr4() | CR4_MCE);
}

void mce_report(void)
{
	if (!(cpuid(1, 0).edx & CPUID_1_EDX_MCA)) {
		kprintf("mce: no machine-check architecture: no banks to read\n");
		return;
	}
	uint64_t cap = rdmsr(MSR_MCG_CAP), status = rdmsr(MSR_MCG_STATUS);
	unsigned banks = MCG_CAP_COUNT(cap), valid = 0;

	kprintf("mce: %u banks, mcg_status 0x%llx%s%s%s\n", banks, (unsigned long long)status,
		status & MCG_STATUS_RIPV ? " ripv" : "", status & MCG_STATUS_EIPV ? " eipv" : "",
		status & MCG_STATUS_MCIP ? " mcip" : "");
	for (unsigned i = 0; i < banks; i++) {
		uint64_t st = rdmsr(MSR_MC_STATUS(i));

		if (!(st & MCI_STATUS_VAL))
			continue;
		valid++;
		kprintf("mce: bank %u status 0x%016llx%s%s%s", i, (unsigned long long)st,
			st & MCI_STATUS_UC ? " uc" : "", st & MCI_STATUS_PCC ? " pcc" : "",
			st & MCI_STATUS_OVER ? " over" : "");
		if (st & MCI_STATUS_ADDRV)
			kprintf(" addr 0x%llx", (unsigned long long)rdmsr(MSR_MC_ADDR(i)));
		if (st & MCI_STATUS_MISCV)
			kprintf(" misc 0x%llx", (unsigned long long)rdmsr(MSR_MC_MISC(i)));
		kprintf("\n");
		wrmsr(MSR_MC_STATUS(i), 0);
	}
	if (!valid)
		kprintf("mce: no bank holds a valid error\n");
	wrmsr(MSR_MCG_STATUS, 0);
}
