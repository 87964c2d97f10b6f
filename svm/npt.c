/* AMD NPT entries are ordinary long-mode PTEs. The nested walk is a user-mode
 * access, so U/S must be set at every level; read access is implied by P;
 * execution is allowed unless NX is set (the host's EFER.NXE must be on for the
 * NX bit to be legal). The hardware sets A and D itself. */
#include "svm/npt.h"
#include "arch/x86/cpuinfo.h"
#include "lib/print.h"

static uint64_t npt_root_pointer(const struct spte_format *fmt, paddr_t root)
{
	(void)fmt;
	return root & NPT_ADDR; /* nCR3: write-back, no PWT/PCD */
}

static int npt_describe(const struct spte_format *fmt, uint64_t spte, char *buf, size_t size)
{
	(void)fmt;
	return ksnprintf(buf, size, "%016llx%s%s%s%s%s%s%s", (unsigned long long)spte,
			 spte & NPT_P ? " P" : "", spte & NPT_RW ? " RW" : "",
			 spte & NPT_US ? " US" : "", spte & NPT_A ? " A" : "",
			 spte & NPT_D ? " D" : "", spte & NPT_PS ? " PS" : "",
			 spte & NPT_NX ? " NX" : "");
}

const struct spte_format npt_format = {
	.name = "npt",
	.present = NPT_P,
	.readable = NPT_P,
	.writable = NPT_RW,
	.executable = 0,
	.nx = NPT_NX,
	.huge = NPT_PS,
	.accessed = NPT_A,
	.dirty = NPT_D,
	.addr = NPT_ADDR,
	.table = NPT_P | NPT_RW | NPT_US,
	.leaf = NPT_P | NPT_US,
	.root_pointer = npt_root_pointer,
	.describe = npt_describe,
};

/* APM 5.3 and 5.4: the bits a long-mode entry at level must leave clear. */
bool npt_entry_reserved(uint64_t entry, int level, const struct cpuinfo *cpu)
{
	uint64_t rsvd = NPT_ADDR & ~((1ull << cpu->phys_bits) - 1);

	if (!(entry & NPT_P))
		return false;
	if (!cpu->nx)
		rsvd |= NPT_NX;
	if (level == 4 || (level == 3 && !cpu->pages_1g))
		rsvd |= NPT_PS;
	else if (level == 3 && (entry & NPT_PS))
		rsvd |= 0x3fffe000ull; /* bits 29:13 of a 1 GiB page */
	else if (level == 2 && (entry & NPT_PS))
		rsvd |= 0x1fe000ull;   /* bits 20:13 of a 2 MiB page */
	return entry & rsvd;
}

int npt_describe_reserved(const uint64_t sptes[TDP_ROOT_LEVEL + 1], int last, uint64_t gpa,
			  const struct cpuinfo *cpu, char *buf, size_t size)
{
	int level = TDP_ROOT_LEVEL;

	while (level > last && !npt_entry_reserved(sptes[level], level, cpu))
		level--;
	return ksnprintf(buf, size, "NPT reserved bit at gpa 0x%llx: level %d entry 0x%016llx",
			 (unsigned long long)gpa, level, (unsigned long long)sptes[level]);
}
