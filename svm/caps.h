/* What sprig needs of the CPU's SVM (AMD APM vol. 2, 15.4): CPUID 0x8000000A
 * and VM_CR come in as numbers (arch/x86/cpuinfo.c reads them), so this is
 * pure code, also built for the host. vmx/caps.h is its mirror. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* False, with the reason in err, when SVM is missing, disabled by the
 * firmware (VM_CR.SVMDIS), without nested paging, or offers fewer than two
 * ASIDs (ASID 0 is the host's). features: CPUID 0x8000000A EDX (SVM_FEAT_*). */
bool svm_caps_check(bool supported, bool disabled_by_bios, uint32_t features, uint32_t asids,
		    char *err, size_t len);

/* The largest NPT leaf: the nested walk runs in the host's paging mode, with
 * 2 MiB pages always and 1 GiB pages where CPUID 0x80000001 EDX bit 26
 * (Page1GB) says so: 2 or 3. The mirror of vmx_ept_max_leaf_level. */
int svm_npt_max_leaf_level(bool pages_1g);
