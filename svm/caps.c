/* SVM capabilities: what sprig cannot do without. */
#include "svm/caps.h"
#include "arch/x86/cpuinfo.h"
#include "lib/print.h"

bool svm_caps_check(bool supported, bool disabled_by_bios, uint32_t features, uint32_t asids,
		    char *err, size_t len)
{
	if (!supported) {
		ksnprintf(err, len, "the CPU has no SVM");
		return false;
	}
	if (disabled_by_bios) {
		ksnprintf(err, len, "SVM is disabled by the firmware (VM_CR.SVMDIS)");
		return false;
	}
	if (!(features & SVM_FEAT_NP)) {
		ksnprintf(err, len, "SVM without nested paging (CPUID 0x8000000A EDX bit 0)");
		return false;
	}
	if (asids < 2) {
		ksnprintf(err, len, "SVM reports %u ASIDs", asids);
		return false;
	}
	return true;
}

int svm_npt_max_leaf_level(bool pages_1g)
{
	return pages_1g ? 3 : 2;
}
