/* Names for what VMX reports in numbers: VM-instruction errors (SDM vol. 3C
 * 31.4), exit reasons (appendix C) and VM-entry failures (26.8). */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* "VMRESUME with non-launched VMCS" for 5; "unknown" outside 1-28. */
const char *vmx_instruction_error_name(uint32_t error);
/* "EPT violation" for 48; "unknown" for numbers the SDM does not define. */
const char *vmx_exit_reason_name(uint32_t basic_reason);
/* An exit reason with bit 31 set (VM entry failed while or after loading guest
 * state), with its qualification, as one line of text in buf. */
void vmx_entry_failure_describe(uint32_t exit_reason, uint64_t qualification, char *buf,
				size_t len);
