/* SVM capabilities (svm/caps.c): what sprig refuses to run without. The
 * values are those of PLATFORM.md: QEMU 7.2's TCG SVM offers nested paging
 * and 16 ASIDs, without flush-by-ASID. */
#include "check.h"
#include "arch/x86/cpuinfo.h"
#include "svm/caps.h"
#include "svm/npt.h"
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

/* NPT entries a nested walk refuses with RSV (APM 5.3, 5.4), on a host with
 * 40 physical address bits, NX, and 1 GiB pages or not. */
TEST(svm_npt_reserved_bits)
{
	struct cpuinfo cpu = { .phys_bits = 40, .nx = true, .pages_1g = true };
	uint64_t table = NPT_P | NPT_RW | NPT_US | 0x5000, huge = NPT_P | NPT_RW | NPT_US | NPT_PS;
	uint64_t sptes[TDP_ROOT_LEVEL + 1];
	char buf[96];

	CHECK(!npt_entry_reserved(table, 4, &cpu));
	CHECK(!npt_entry_reserved(table | NPT_NX, 1, &cpu));
	CHECK(!npt_entry_reserved(1ull << 45, 1, &cpu));          /* not present */
	CHECK(npt_entry_reserved(table | (1ull << 40), 1, &cpu)); /* above MAXPHYADDR */
	CHECK(!npt_entry_reserved(table | (1ull << 39), 1, &cpu));
	CHECK(npt_entry_reserved(table | NPT_PS, 4, &cpu));       /* PS in a PML4E */
	CHECK(!npt_entry_reserved(huge | 0x40000000, 3, &cpu));
	CHECK(npt_entry_reserved(huge | 0x40002000, 3, &cpu)); /* bit 13 of a 1 GiB page */
	CHECK(!npt_entry_reserved(huge | 0x200000, 2, &cpu));
	CHECK(npt_entry_reserved(huge | 0x100000, 2, &cpu));   /* bit 20 of a 2 MiB page */
	CHECK(!npt_entry_reserved(table | NPT_PS | (1ull << 12), 1, &cpu)); /* PAT bit of a 4 KiB page */
	cpu.pages_1g = false;
	CHECK(npt_entry_reserved(huge | 0x40000000, 3, &cpu));
	cpu.nx = false;
	CHECK(npt_entry_reserved(table | NPT_NX, 1, &cpu));

	/* The report names the first entry that sets one, else the last read. */
	sptes[4] = table;
	sptes[3] = huge | 0x40000000; /* a 1 GiB page the host lacks */
	npt_describe_reserved(sptes, 3, 0x40001000, &cpu, buf, sizeof(buf));
	CHECK(strcmp(buf, "NPT reserved bit at gpa 0x40001000: level 3 entry 0x0000000040000087") == 0);
	sptes[3] = table;
	sptes[2] = 0;
	npt_describe_reserved(sptes, 2, 0x40001000, &cpu, buf, sizeof(buf));
	CHECK(strcmp(buf, "NPT reserved bit at gpa 0x40001000: level 2 entry 0x0000000000000000") == 0);
}

TEST(svm_npt_max_leaf_level)
{
	CHECK_EQ_U64(svm_npt_max_leaf_level(true), 3);
	CHECK_EQ_U64(svm_npt_max_leaf_level(false), 2);
}
