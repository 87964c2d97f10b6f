/* Intel EPT entries: R, W and X rights (present means any of them), a leaf
 * memory type of write-back with the guest PAT ignored, bit 7 for 2 MiB and
 * 1 GiB leaves. A and D (bits 8, 9) exist only when the EPTP enables them; the
 * MMU then builds leaves with them set, as it does for NPT. */
#include "vmx/ept.h"
#include "lib/print.h"

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
