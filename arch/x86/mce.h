/* Machine checks (SDM vol. 3B, chapter 16; APM vol. 2, chapter 9): CR4.MCE on
 * every CPU, so that one raises #MC instead of shutting the processor down,
 * and the report of the error-reporting banks, for a #MC sprig takes itself
 * and one that a guest's run ended with. Kernel only. */
#pragma once

#define VEC_MACHINE_CHECK 18

/* CR4.MCE on this CPU, where CPUID says it has the machine-check exception. */
void mce_cpu_init(void);
/* Print MCG_CAP's bank count, MCG_STATUS, and every bank whose status is
 * valid with its address and miscellaneous registers where they are valid;
 * then clear those statuses and MCG_STATUS (its MCIP bit set, a second
 * machine check would shut the processor down). Nothing without MCA. */
void mce_report(void);
