/* The hypercall ABI, shared by sprig (virt/hypercall.c) and its guests
 * (guests/). A guest executes VMMCALL (AMD) or VMCALL (Intel) with
 *   RAX = hypercall number, RBX, RCX, RDX, RSI = arguments;
 * the result comes back in RAX, and every other register is preserved.
 * Errors are small negative numbers. An unknown number stops the guest:
 * a guest that calls what does not exist is broken. Guest-physical ranges
 * passed as arguments are checked against the guest's memslots. */
#pragma once

#define HC_VERSION 0          /* () -> HC_ABI_VERSION */
#define HC_EXIT 1             /* (status) -> does not return: the VM exits with status */
#define HC_BALLOON_RELEASE 2  /* (gpa, len) -> 0: the host drops the pages' backing and
			       * mappings; the next access gets zeroed (or restored) pages */
#define HC_TSC_KHZ 3          /* () -> the guest TSC's frequency in kHz */
#define HC_TIME_NS 4          /* () -> nanoseconds since the VM was created */
#define HC_PUTS 5             /* (gpa, len) -> 0: write len bytes (at most 4096) to the console */
#define HC_COUNT 6

#define HC_ABI_VERSION 0x00010000 /* major << 16 | minor */

#define HC_EINVAL (-22) /* a bad argument (length, alignment, or range outside guest memory) */
