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
#define HC_SNAPSHOT_POINT 6   /* () -> 0: the VM pauses here, after the call, so that the
			       * console can snapshot it (`vm snapshot`); `vm run` continues it */
#define HC_ARGS 7             /* (gpa, len) -> length: the arguments of `vm create ... -- ARGS`
			       * as a NUL-terminated string (cut to len); for a VM restored
			       * from a snapshot, those of the restore, not of the boot */
#define HC_LOST_RANGES 8      /* (gpa, max) -> n: the ranges sprig discarded behind the
			       * guest's back (their pages now read as zero) since the last
			       * call, as n struct hc_range at gpa (at most max); the rest
			       * stay for the next call. HC_ELOST if more were discarded
			       * than sprig could remember: the guest cannot know which */
#define HC_CLONE_POINT 9      /* () -> 0 in a clone, the clone's number (> 0) in this VM:
			       * the VM pauses here, after the call, so that the console can
			       * clone it (`vm clone`), as with fork; `vm run` continues it */
#define HC_COUNT 10

#define HC_ABI_VERSION 0x00010000 /* major << 16 | minor */

#define HC_EPERM (-1)   /* called from CPL 1-3: only the guest kernel may call */
#define HC_EINVAL (-22) /* a bad argument (length, alignment, or range outside guest memory) */
#define HC_ELOST (-5)   /* HC_LOST_RANGES: discards were forgotten (too many since the last call) */

#include <stdint.h>

/* A guest-physical range, as HC_LOST_RANGES writes them. */
struct hc_range {
	uint64_t gpa;
	uint64_t len;
};
