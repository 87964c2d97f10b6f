/* AMD NPT entries are ordinary long-mode PTEs. The nested walk is a user-mode
 * access, so U/S must be set at every level; read access is implied by P;
 * execution is allowed unless NX is set (the host's EFER.NXE must be on for the
 * NX bit to be legal). The hardware sets A and D itself. */
#include "svm/npt.h"
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
