/* The AP trampoline (arch/x86/trampoline.S): the code an application processor
 * runs from the STARTUP IPI (real mode, CS:IP = vector << 8 : 0) to sprig's C
 * (ap_main, in long mode on its own stack with the kernel's page tables).
 *
 * It runs from a page below 1 MiB, where a STARTUP IPI can point: one 4 KiB
 * page that the memory map calls usable and that no boot data lies in
 * (init/main.c picks it; the first MiB never reaches the frame allocator, so
 * the page stays free). The BSP copies the trampoline there before each AP's
 * start and fills its parameter block: the layout below is shared with the
 * assembly, hence the offsets as numbers. */
#pragma once

#define TRAMPOLINE_PARAMS 8 /* the parameter block, after a short jump */
#define TP_GDTR (TRAMPOLINE_PARAMS + 0)    /* LGDT operand: limit (16), base (32) */
#define TP_PM32 (TRAMPOLINE_PARAMS + 8)    /* far pointer to the 32-bit code: offset (32), selector (16) */
#define TP_EFER (TRAMPOLINE_PARAMS + 16)   /* EFER's low half: LME, and NXE as the BSP has it */
#define TP_CR0 (TRAMPOLINE_PARAMS + 20)    /* the BSP's CR0 (PG and PE among it) */
#define TP_CR3 (TRAMPOLINE_PARAMS + 24)    /* the kernel's page tables */
#define TP_STACK (TRAMPOLINE_PARAMS + 32)  /* the AP's stack top */
#define TP_PERCPU (TRAMPOLINE_PARAMS + 40) /* ap_main's argument */
#define TRAMPOLINE_PARAMS_END (TRAMPOLINE_PARAMS + 48)
#define TRAMPOLINE_GDT 64                  /* 32-bit code, data, 64-bit code */
#define TRAMPOLINE_SEL_CODE32 0x08
#define TRAMPOLINE_SEL_DATA 0x10
#define TRAMPOLINE_SEL_CODE64 0x18

#ifndef __ASSEMBLY__
#include <stdint.h>

/* Where the trampoline runs (a 4 KiB-aligned physical address below 1 MiB),
 * or 0 if the memory map offers no such page: no AP can start then. */
void trampoline_set_page(uint64_t pa);
uint64_t trampoline_page(void);

/* Copy the trampoline to its page for the next AP to start: it will load
 * cr3, take stack_top and call ap_main(percpu). Returns the STARTUP IPI's
 * vector; -1 without a page, or if the page did not keep the copy. */
int trampoline_prepare(uint64_t cr3, uint64_t stack_top, void *percpu);
#endif
