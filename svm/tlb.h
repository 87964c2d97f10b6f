/* ASIDs recycled by generation and the TLB_CONTROL each VMRUN needs (AMD APM
 * vol. 2, 15.16). Pure code, also built for the host. vmx/tlb.h is its
 * mirror. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

/* One CPU's ASIDs: 1 .. limit - 1 are for guests. */
struct svm_asid_space {
	uint32_t limit;      /* CPUID 0x8000000A EBX */
	uint32_t next;       /* the next ASID to hand out */
	uint64_t generation; /* bumped whenever the ASIDs run out */
	unsigned cpu;        /* whose ASIDs these are */
};

/* A vCPU's tag: valid on the CPU that assigned it, while its generation is
 * that CPU's. */
struct svm_asid {
	uint32_t asid;
	uint64_t generation; /* 0: never assigned */
	unsigned cpu;        /* the CPU that assigned it */
};

/* CPU cpu with asids ASIDs (at least 2). Generation 0 is what a new vCPU
 * holds: the space starts at 1, with no ASID left, so that the first entry
 * starts a generation and assigns one. */
void svm_asid_space_init(struct svm_asid_space *s, uint32_t asids, unsigned cpu);

/* A vCPU keeps its ASID while it runs on the CPU that assigned it and that
 * CPU's generation stands; on another CPU it takes one of that CPU's (every
 * CPU has its own TLB and hands out its ASIDs on its own). When the ASIDs run
 * out a new generation starts, and every TLB entry is flushed since old ASIDs
 * are handed out again. *flush_pending (the MMU's request, or set here for a
 * new ASID) is consumed. Returns the TLB_CONTROL this entry needs;
 * flush_by_asid: CPUID 0x8000000A EDX bit 6. */
uint8_t svm_asid_assign(struct svm_asid_space *s, struct svm_asid *a, bool *flush_pending,
			bool flush_by_asid);
