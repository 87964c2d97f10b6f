/* VMX capabilities (vmx/caps.c): the controls sprig asks for, adjusted to the
 * capability MSRs of two CPUs, the refusals when something needed is missing,
 * the preemption timer's arithmetic and the MSR bitmap's layout; and the EPT
 * misconfiguration rules (vmx/ept.c).
 *
 * Bochs 2.7 (Debian 12), cpu model corei7_skylake_x: the MSRs as that model
 * reports them, read with RDMSR by sprig under Bochs (tests/e2e/machine.py
 * run_bochs) and matching ../shared/PLATFORM.md (EPT_VPID_CAP 0xf0106334141,
 * CR0 fixed-0 0x80000021, CR4 fixed-0 0x2000).
 *
 * Intel Core i5-3570 (Ivy Bridge), a real CPU: VirtualBox's CPU database entry
 * src/VBox/VMM/VMMR3/cpus/Intel_Core_i5_3570.h ("Generated at
 * 2013-12-13T16:13:56Z by VBoxCpuReport v4.3.53r91216 on linux.amd64"), the
 * "value=" of each IA32_VMX_* MSR there. It has no EPT A/D bits, no INVPCID
 * control and a preemption timer that ticks every 2^5 TSC cycles. */
#include "check.h"
#include "arch/x86/cpuinfo.h"
#include "arch/x86/msr.h"
#include "vmx/caps.h"
#include "vmx/ept.h"
#include "vmx/vmcs.h"
#include <string.h>

static const struct vmx_cap_msrs bochs_skylake_x = {
	.basic = 0x00d810000000002bull,
	.pin = 0x0000007f00000016ull,   /* 0x48d, TRUE_PINBASED */
	.proc = 0xf7f9fffe04006172ull,  /* 0x48e, TRUE_PROCBASED */
	.proc2 = 0x02177fff00000000ull, /* 0x48b */
	.exit = 0x007fffff00036dfbull,  /* 0x48f, TRUE_EXIT */
	.entry = 0x0000ffff000011fbull, /* 0x490, TRUE_ENTRY */
	.misc = 0x00000000600401e0ull,
	.cr0_fixed0 = 0x80000021ull,
	.cr0_fixed1 = 0xffffffffull,
	.cr4_fixed0 = 0x2000ull,
	.cr4_fixed1 = 0x3727ffull,
	.ept_vpid_cap = 0x00000f0106334141ull,
};

static const struct vmx_cap_msrs core_i5_3570 = {
	.basic = 0x00da040000000010ull,
	.pin = 0x0000007f00000016ull,
	.proc = 0xfff9fffe04006172ull,
	.proc2 = 0x000008ff00000000ull,
	.exit = 0x007fffff00036dfbull,
	.entry = 0x0000ffff000011fbull,
	.misc = 0x00000000100401e5ull,
	.cr0_fixed0 = 0x80000021ull,
	.cr0_fixed1 = 0xffffffffull,
	.cr4_fixed0 = 0x2000ull,
	.cr4_fixed1 = 0x1767ffull,
	.ept_vpid_cap = 0x00000f0106114141ull,
};

/* What sprig always asks for (vmx/caps.c). */
#define PROC_NEED (PROC_HLT_EXITING | PROC_UNCOND_IO_EXITING | PROC_USE_MSR_BITMAPS |     \
		   PROC_SECONDARY_CONTROLS | PROC_USE_TSC_OFFSETTING | PROC_CR8_LOAD_EXITING | \
		   PROC_CR8_STORE_EXITING)
#define PROC_WANT (PROC_RDPMC_EXITING | PROC_MWAIT_EXITING | PROC_MONITOR_EXITING)

TEST(vmx_caps_adjust_rule)
{
	uint32_t out = 0xdead;
	char err[160] = "";

	/* Must-be-1 bits come in unasked; wanted bits only where allowed. */
	CHECK(vmx_adjust_controls(0x481, 0x0000007f00000016ull, 0, 0, &out, "pin-based", err,
				  sizeof(err)));
	CHECK_EQ_U64(out, 0x16);
	CHECK(vmx_adjust_controls(0x481, 0x0000007f00000016ull, 0x1, 0x80 | 0x40, &out,
				  "pin-based", err, sizeof(err)));
	CHECK_EQ_U64(out, 0x57); /* 0x80 (posted interrupts) is not allowed: dropped */
	/* A needed bit that may not be 1 is refused, and nothing is written. */
	out = 0xdead;
	CHECK(!vmx_adjust_controls(0x481, 0x0000007e00000016ull, 0x1, 0, &out, "pin-based", err,
				   sizeof(err)));
	CHECK_EQ_U64(out, 0xdead);
	CHECK(strcmp(err, "VMX pin-based controls 0x1 not allowed (MSR 0x481 allows 0x7e)") == 0);
}

TEST(vmx_caps_bochs_skylake_x)
{
	struct vmx_caps c;
	char err[160] = "";

	REQUIRE(vmx_caps_init(&c, &bochs_skylake_x, err, sizeof(err)));
	CHECK_EQ_U64(c.pin, 0x16 | PIN_EXT_INTR_EXITING | PIN_NMI_EXITING | PIN_VIRTUAL_NMIS |
				    PIN_PREEMPTION_TIMER);
	/* Virtual NMIs, and the windows that wait for the guest to take events. */
	CHECK(c.irq_window && c.nmi_window);
	CHECK_EQ_U64(c.proc, 0x04006172 | PROC_NEED | PROC_WANT);
	CHECK_EQ_U64(c.proc2, PROC2_ENABLE_EPT | PROC2_UNRESTRICTED_GUEST | PROC2_ENABLE_RDTSCP |
				      PROC2_ENABLE_INVPCID | PROC2_ENABLE_VPID);
	CHECK_EQ_U64(c.exit, 0x36dfb | EXIT_HOST_ADDR_SPACE_SIZE | EXIT_SAVE_EFER | EXIT_LOAD_EFER |
				     EXIT_SAVE_PREEMPTION_TIMER);
	/* IA-32e mode guest is needed but left clear: guests start in 32-bit mode. */
	CHECK_EQ_U64(c.entry, 0x11fb | ENTRY_LOAD_EFER);
	CHECK(!(c.entry & ENTRY_IA32E_MODE_GUEST));
	CHECK(c.ept_ad);
	CHECK(!c.regions_below_4g);
	CHECK_EQ_U64(c.invept_type, INVEPT_SINGLE_CONTEXT);
	CHECK_EQ_U64(c.invvpid_type, INVVPID_SINGLE_CONTEXT);
	/* NE is the one forced CR0 bit (PE and PG are the guest's under
	 * unrestricted guest); VMXE and every CR4 bit fixed to 0 are the host's. */
	CHECK_EQ_U64(c.cr0_host_owned, 0x20);
	CHECK_EQ_U64(c.cr4_host_owned, 0xffc8f800);
	CHECK_EQ_U64(c.misc & VMX_MISC_TIMER_RATE_MASK, 0);
	CHECK(c.misc & VMX_MISC_STORES_LMA);
}

TEST(vmx_caps_core_i5_3570)
{
	struct vmx_caps c;
	char err[160] = "";

	REQUIRE(vmx_caps_init(&c, &core_i5_3570, err, sizeof(err)));
	CHECK_EQ_U64(c.pin, 0x7f);
	CHECK(c.irq_window && c.nmi_window);
	CHECK_EQ_U64(c.proc, 0x04006172 | PROC_NEED | PROC_WANT);
	/* No INVPCID control on Ivy Bridge: the wanted bit is dropped. */
	CHECK_EQ_U64(c.proc2, PROC2_ENABLE_EPT | PROC2_UNRESTRICTED_GUEST | PROC2_ENABLE_RDTSCP |
				      PROC2_ENABLE_VPID);
	CHECK_EQ_U64(c.exit, 0x36dfb | EXIT_HOST_ADDR_SPACE_SIZE | EXIT_SAVE_EFER | EXIT_LOAD_EFER |
				     EXIT_SAVE_PREEMPTION_TIMER);
	CHECK_EQ_U64(c.entry, 0x11fb | ENTRY_LOAD_EFER);
	CHECK(!c.ept_ad); /* EPT_VPID_CAP bit 21 clear: the "ept" format, not "ept-ad" */
	CHECK(ept_format(c.ept_ad)->accessed == 0);
	CHECK_EQ_U64(c.invept_type, INVEPT_SINGLE_CONTEXT);
	CHECK_EQ_U64(c.invvpid_type, INVVPID_SINGLE_CONTEXT);
	CHECK_EQ_U64(c.cr0_host_owned, 0x20);
	CHECK_EQ_U64(c.cr4_host_owned, 0xffe8b800);
	CHECK_EQ_U64(c.misc & VMX_MISC_TIMER_RATE_MASK, 5);
}

static bool refused(const struct vmx_cap_msrs *m, const char *want)
{
	struct vmx_caps c;
	char err[160] = "";
	bool ok = vmx_caps_init(&c, m, err, sizeof(err));

	if (!ok && strcmp(err, want) != 0)
		printf("  got \"%s\"\n", err);
	return !ok && strcmp(err, want) == 0;
}

TEST(vmx_caps_refusals)
{
	struct vmx_cap_msrs m;

	/* A required exit control the CPU does not allow: named with the MSR
	 * it came from (the TRUE_ one, BASIC bit 55 being set). */
	m = bochs_skylake_x;
	m.exit &= ~((uint64_t)EXIT_LOAD_EFER << 32);
	CHECK(refused(&m, "VMX VM-exit controls 0x200000 not allowed (MSR 0x48f allows 0x5fffff)"));
	/* Without TRUE_ MSRs the plain one is named. */
	m = core_i5_3570;
	m.basic &= ~VMX_BASIC_TRUE_CTLS;
	m.pin = 0x0000007e00000016ull;
	CHECK(refused(&m, "VMX pin-based controls 0x1 not allowed (MSR 0x481 allows 0x7e)"));
	m = core_i5_3570;
	m.proc2 &= ~((uint64_t)PROC2_UNRESTRICTED_GUEST << 32);
	CHECK(refused(&m, "VMX without unrestricted guest"));
	m = core_i5_3570;
	m.proc &= ~(1ull << 63); /* no secondary controls, so no EPT */
	CHECK(refused(&m, "VMX without EPT"));
	m = bochs_skylake_x;
	m.ept_vpid_cap &= ~(1ull << 14); /* no write-back EPT tables */
	CHECK(refused(&m, "EPT without 4-level write-back tables (EPT_VPID_CAP 0xf0106330141)"));
	m = bochs_skylake_x;
	m.ept_vpid_cap &= ~(3ull << 25); /* INVEPT of neither type */
	CHECK(refused(&m, "EPT without INVEPT (EPT_VPID_CAP 0xf0100334141)"));
	m = bochs_skylake_x;
	m.basic = (m.basic & ~(0xfull << 50)) | (0ull << 50); /* uncacheable VMCS */
	CHECK(refused(&m, "VMCS memory type 0 is not write-back"));
	m = bochs_skylake_x;
	m.basic = (m.basic & ~(0x1fffull << 32)) | (5000ull << 32); /* bits 44:32, at most 4096 by the SDM */
	CHECK(refused(&m, "VMCS of 5000 bytes"));
}

TEST(vmx_caps_optional_features)
{
	struct vmx_cap_msrs m = core_i5_3570;
	struct vmx_caps c;
	char err[160];

	/* VPIDs only with INVVPID to flush a reused tag. */
	m.ept_vpid_cap &= ~(1ull << 32);
	REQUIRE(vmx_caps_init(&c, &m, err, sizeof(err)));
	CHECK(!(c.proc2 & PROC2_ENABLE_VPID));
	CHECK_EQ_U64(c.invvpid_type, 0);
	/* Only all-context INVEPT and INVVPID. */
	m = core_i5_3570;
	m.ept_vpid_cap &= ~((1ull << 25) | (1ull << 41));
	REQUIRE(vmx_caps_init(&c, &m, err, sizeof(err)));
	CHECK_EQ_U64(c.invept_type, INVEPT_ALL_CONTEXT);
	CHECK_EQ_U64(c.invvpid_type, INVVPID_ALL_CONTEXT);
	/* No preemption timer and no saving of it: both optional. */
	m = core_i5_3570;
	m.pin &= ~((uint64_t)PIN_PREEMPTION_TIMER << 32);
	m.exit &= ~((uint64_t)EXIT_SAVE_PREEMPTION_TIMER << 32);
	REQUIRE(vmx_caps_init(&c, &m, err, sizeof(err)));
	CHECK(!(c.pin & PIN_PREEMPTION_TIMER));
	CHECK(!(c.exit & EXIT_SAVE_PREEMPTION_TIMER));
	/* BASIC bit 48: VMX regions below 4 GiB. */
	m = core_i5_3570;
	m.basic |= 1ull << 48;
	REQUIRE(vmx_caps_init(&c, &m, err, sizeof(err)));
	CHECK(c.regions_below_4g);
}

TEST(vmx_preemption_timer)
{
	/* 10 ms at Bochs' 200.010 MHz TSC. */
	uint64_t budget = vmx_preemption_budget_tsc(200010);
	uint64_t end = 0;
	uint32_t ticks = 0;

	CHECK_EQ_U64(budget, 2000100);
	/* First entry: a new budget, in timer ticks of 2^5 TSC cycles. */
	CHECK(vmx_preemption_arm(1000, &end, false, false, budget, 0x100401e5, &ticks));
	CHECK_EQ_U64(end, 1000 + budget);
	CHECK_EQ_U64(ticks, budget >> 5);
	/* An exit for another reason halfway: the rest of the same budget. */
	CHECK(vmx_preemption_arm(1000 + 1000000, &end, false, false, budget, 0x100401e5, &ticks));
	CHECK_EQ_U64(end, 1000 + budget);
	CHECK_EQ_U64(ticks, (budget - 1000000) >> 5);
	/* Where the CPU saves the timer at exits, the VMCS already holds it. */
	ticks = 7;
	CHECK(!vmx_preemption_arm(1000 + 1000000, &end, false, true, budget, 0, &ticks));
	CHECK_EQ_U64(end, 1000 + budget);
	CHECK_EQ_U64(ticks, 7);
	/* The timer's own exit renews the budget even before slice_end (the
	 * timer counts at a coarser rate than the TSC). */
	CHECK(vmx_preemption_arm(1000 + budget - 5, &end, true, true, budget, 0, &ticks));
	CHECK_EQ_U64(end, 1000 + budget - 5 + budget);
	CHECK_EQ_U64(ticks, budget);
	/* A budget past: renewed, saved timer or not. */
	CHECK(vmx_preemption_arm(end + 1, &end, false, true, budget, 0, &ticks));
	CHECK_EQ_U64(ticks, budget);
	/* The field holds 32 bits. */
	end = 0;
	CHECK(vmx_preemption_arm(1, &end, false, false, 1ull << 40, 0, &ticks));
	CHECK_EQ_U64(ticks, 0xffffffffu);
}

TEST(vmx_msr_bitmap_layout)
{
	static uint8_t bitmap[4096];
	unsigned other = 0;

	vmx_msr_bitmap_init(bitmap);
	/* FS_BASE, GS_BASE, KERNEL_GS_BASE (0xc0000100-2) are bits 0-2 of byte
	 * 0x20 of the high read bitmap (1024) and of the high write one (3072). */
	CHECK_EQ_U64(bitmap[1024 + 0x20], 0xf8);
	CHECK_EQ_U64(bitmap[3072 + 0x20], 0xf8);
	for (unsigned i = 0; i < sizeof(bitmap); i++)
		if (i != 1024 + 0x20 && i != 3072 + 0x20 && bitmap[i] != 0xff)
			other++;
	CHECK_EQ_U64(other, 0);
	CHECK(!vmx_msr_bitmap_exits(bitmap, MSR_FS_BASE, false));
	CHECK(!vmx_msr_bitmap_exits(bitmap, MSR_GS_BASE, true));
	CHECK(!vmx_msr_bitmap_exits(bitmap, MSR_KERNEL_GS_BASE, true));
	CHECK(vmx_msr_bitmap_exits(bitmap, MSR_EFER, false));
	CHECK(vmx_msr_bitmap_exits(bitmap, MSR_STAR, true));
	CHECK(vmx_msr_bitmap_exits(bitmap, 0x100, false)); /* low 0x100: not FS_BASE */
	CHECK(vmx_msr_bitmap_exits(bitmap, 0x40000000, false)); /* outside both ranges */
	/* A low MSR: SYSENTER_CS (0x174) is bit 4 of byte 46 of the low read
	 * bitmap (0) and of the low write one (2048). */
	vmx_msr_bitmap_pass_through(bitmap, 0x174);
	CHECK_EQ_U64(bitmap[46], 0xef);
	CHECK_EQ_U64(bitmap[2048 + 46], 0xef);
	CHECK(!vmx_msr_bitmap_exits(bitmap, 0x174, false));
	CHECK(!vmx_msr_bitmap_exits(bitmap, 0x174, true));
	CHECK(vmx_msr_bitmap_exits(bitmap, 0x175, true));
}

TEST(vmx_ept_misconfig_rules)
{
	uint64_t wb_leaf = EPT_R | EPT_W | EPT_X | EPT_MEMTYPE_WB | EPT_IPAT;

	CHECK(!ept_entry_misconfigured(wb_leaf, 1, false));
	CHECK(!ept_entry_misconfigured(wb_leaf | EPT_LARGE, 2, false));
	CHECK(ept_entry_misconfigured(EPT_W | EPT_MEMTYPE_WB, 1, true));     /* W without R */
	CHECK(ept_entry_misconfigured(EPT_X | EPT_MEMTYPE_WB, 1, false));    /* execute-only */
	CHECK(!ept_entry_misconfigured(EPT_X | EPT_MEMTYPE_WB, 1, true));
	CHECK(ept_entry_misconfigured(wb_leaf | EPT_LARGE, 4, true));        /* 512 GiB page */
	CHECK(ept_entry_misconfigured(EPT_R | (2ull << 3), 1, true));        /* memory type 2 */
	CHECK(ept_entry_misconfigured(EPT_R | (7ull << 3), 1, true));        /* memory type 7 */
	CHECK(ept_entry_misconfigured(EPT_R | EPT_W | EPT_X | (1ull << 3), 3, true)); /* reserved */
	CHECK(!ept_entry_misconfigured(EPT_R | EPT_W | EPT_X, 3, true));
}

/* The report names the first entry from the root that the rules reject, or
 * the entry where the walk ended. */
TEST(vmx_ept_misconfig_report)
{
	uint64_t table = EPT_R | EPT_W | EPT_X | 0x5000;
	uint64_t sptes[TDP_ROOT_LEVEL + 1] = { 0, 0, table, table | (1ull << 4), table };
	char buf[96];

	ept_describe_misconfig(sptes, 2, 0x40201000, true, buf, sizeof(buf));
	CHECK(strcmp(buf, "EPT misconfiguration at gpa 0x40201000: level 3 entry 0x0000000000005017") == 0);
	sptes[3] = table;
	sptes[2] = EPT_W | EPT_MEMTYPE_WB | EPT_LARGE; /* W without R, the last read */
	ept_describe_misconfig(sptes, 2, 0x40201000, true, buf, sizeof(buf));
	CHECK(strcmp(buf, "EPT misconfiguration at gpa 0x40201000: level 2 entry 0x00000000000000b2") == 0);
}

TEST(vmx_ept_max_leaf_level)
{
	CHECK_EQ_U64(vmx_ept_max_leaf_level(EPT_CAP_2M | EPT_CAP_1G), 3);
	CHECK_EQ_U64(vmx_ept_max_leaf_level(EPT_CAP_2M), 2);
	CHECK_EQ_U64(vmx_ept_max_leaf_level(EPT_CAP_1G), 3);
	CHECK_EQ_U64(vmx_ept_max_leaf_level(0), 1);
}
