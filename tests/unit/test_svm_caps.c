/* SVM capabilities (svm/caps.c): what sprig refuses to run without. The
 * values are those of PLATFORM.md: QEMU 7.2's TCG SVM offers nested paging
 * and 16 ASIDs, without flush-by-ASID. */
#include "check.h"
#include "arch/x86/cpuinfo.h"
#include "svm/caps.h"
#include <string.h>

static bool refused(bool supported, bool disabled, uint32_t features, uint32_t asids,
		    const char *want)
{
	char err[160] = "";
	bool ok = svm_caps_check(supported, disabled, features, asids, err, sizeof(err));

	if (!ok && strcmp(err, want) != 0)
		printf("  got \"%s\"\n", err);
	return !ok && strcmp(err, want) == 0;
}

TEST(svm_caps_check)
{
	char err[160];

	CHECK(svm_caps_check(true, false, SVM_FEAT_NP, 16, err, sizeof(err)));
	CHECK(svm_caps_check(true, false, SVM_FEAT_NP | SVM_FEAT_NRIPS | SVM_FEAT_FLUSH_BY_ASID,
			     2, err, sizeof(err)));
	CHECK(refused(false, false, SVM_FEAT_NP, 16, "the CPU has no SVM"));
	CHECK(refused(true, true, SVM_FEAT_NP, 16,
		      "SVM is disabled by the firmware (VM_CR.SVMDIS)"));
	CHECK(refused(true, false, SVM_FEAT_NRIPS, 16,
		      "SVM without nested paging (CPUID 0x8000000A EDX bit 0)"));
	CHECK(refused(true, false, SVM_FEAT_NP, 1, "SVM reports 1 ASIDs"));
}
