/* Intel EPT entries: R, W and X rights (present means any of them), a leaf
 * memory type of write-back with the guest PAT ignored, bit 7 for 2 MiB and
 * 1 GiB leaves. A and D (bits 8, 9) exist only when the EPTP enables them; the
 * MMU then builds leaves with them set, as it does for NPT. */
#include "vmx/ept.h"
#include "lib/print.h"
#include "mm/frame.h"

static uint64_t ept_root_pointer(const struct spte_format *fmt, paddr_t root)
{
	return (root & EPT_ADDR) | EPTP_MEMTYPE_WB | EPTP_WALK_4 | (fmt->accessed ? EPTP_AD : 0);
}

static int ept_describe(const struct spte_format *fmt, uint64_t spte, char *buf, size_t size)
{
	(void)fmt;
	return ksnprintf(buf, size, "%016llx%s%s%s mt%u%s%s%s%s", (unsigned long long)spte,
			 spte & EPT_R ? " R" : "", spte & EPT_W ? " W" : "",
			 spte & EPT_X ? " X" : "", (unsigned)((spte >> 3) & 7),
			 spte & EPT_IPAT ? " IPAT" : "", spte & EPT_LARGE ? " L" : "",
			 spte & EPT_A ? " A" : "", spte & EPT_D ? " D" : "");
}

#define EPT_FORMAT(name_, ad_)                                                 \
	{                                                                      \
		.name = name_,                                                 \
		.present = EPT_R | EPT_W | EPT_X,                              \
		.readable = EPT_R,                                             \
		.writable = EPT_W,                                             \
		.executable = EPT_X,                                           \
		.nx = 0,                                                       \
		.huge = EPT_LARGE,                                             \
		.accessed = (ad_) ? EPT_A : 0,                                 \
		.dirty = (ad_) ? EPT_D : 0,                                    \
		.addr = EPT_ADDR,                                              \
		.table = EPT_R | EPT_W | EPT_X,                                \
		.leaf = EPT_MEMTYPE_WB | EPT_IPAT,                             \
		.root_pointer = ept_root_pointer,                              \
		.describe = ept_describe,                                      \
	}

static const struct spte_format ept_formats[2] = {
	EPT_FORMAT("ept", false),
	EPT_FORMAT("ept-ad", true),
};

const struct spte_format *ept_format(bool ad_enabled)
{
	return &ept_formats[ad_enabled];
}

/* The SDM's misconfiguration rules (28.3.3.1) for one entry at level. */
bool ept_entry_misconfigured(uint64_t entry, int level, bool exec_only)
{
	uint64_t memtype = (entry >> 3) & 7;

	if ((entry & EPT_W) && !(entry & EPT_R))
		return true;
	if ((entry & (EPT_R | EPT_W | EPT_X)) == EPT_X && !exec_only)
		return true;
	if (level == 4 && (entry & EPT_LARGE))
		return true;
	if (level == 1 || (entry & EPT_LARGE))
		return memtype == 2 || memtype == 3 || memtype == 7;
	return (entry & 0xf8) != 0; /* bits 7:3 of a non-leaf are reserved */
}

int ept_describe_misconfig(const uint64_t sptes[TDP_ROOT_LEVEL + 1], int last, uint64_t gpa,
			   bool exec_only, char *buf, size_t size)
{
	int level = TDP_ROOT_LEVEL;

	while (level > last && !ept_entry_misconfigured(sptes[level], level, exec_only))
		level--;
	return ksnprintf(buf, size, "EPT misconfiguration at gpa 0x%llx: level %d entry 0x%016llx",
			 (unsigned long long)gpa, level, (unsigned long long)sptes[level]);
}
