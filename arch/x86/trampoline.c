/* The trampoline's page and its parameters (arch/x86/trampoline.h). */
#include "arch/x86/trampoline.h"
#include "arch/x86/cpu.h"
#include "arch/x86/direct_map.h"
#include "lib/string.h"

extern const char trampoline_start[], trampoline_pm32[], trampoline_end[];

static uint64_t page;

void trampoline_set_page(uint64_t pa)
{
	page = pa;
}

uint64_t trampoline_page(void)
{
	return page;
}

static void put32(uint8_t *t, unsigned off, uint32_t v)
{
	memcpy(t + off, &v, sizeof(v));
}

static void put64(uint8_t *t, unsigned off, uint64_t v)
{
	memcpy(t + off, &v, sizeof(v));
}

int trampoline_prepare(uint64_t cr3, uint64_t stack_top, void *percpu)
{
	uint8_t *t = pa_to_va(page);
	uint16_t gdt_limit = 4 * 8 - 1, sel = TRAMPOLINE_SEL_CODE32;

	if (!page)
		return -1;
	memcpy(t, trampoline_start, trampoline_end - trampoline_start);
	memcpy(t + TP_GDTR, &gdt_limit, sizeof(gdt_limit));
	put32(t, TP_GDTR + 2, (uint32_t)page + TRAMPOLINE_GDT);
	put32(t, TP_PM32, (uint32_t)page + (uint32_t)(trampoline_pm32 - trampoline_start));
	memcpy(t + TP_PM32 + 4, &sel, sizeof(sel));
	put32(t, TP_EFER, (uint32_t)(rdmsr(MSR_EFER) & (EFER_LME | EFER_NXE)) | EFER_LME);
	put32(t, TP_CR0, (uint32_t)read_cr0());
	put64(t, TP_CR3, cr3);
	put64(t, TP_STACK, stack_top);
	put64(t, TP_PERCPU, (uint64_t)percpu);
	/* Memory that does not keep what was written is no RAM. */
	if (memcmp(t + TRAMPOLINE_GDT, trampoline_start + TRAMPOLINE_GDT,
		   trampoline_end - trampoline_start - TRAMPOLINE_GDT) != 0)
		return -1;
	return (int)(page >> 12);
}
