/* KVM's paravirtual clock (Linux Documentation/virt/kvm/x86/msr.rst and
 * cpuid.rst), offered so that a Linux guest knows its TSC rate and keeps time
 * without an exit per clock read: under QEMU's TCG an exit takes longer than
 * Linux's PIT and PM-timer calibrations tolerate between two reads (about
 * 20 us), so they fail and Linux falls back to reading the PM timer.
 *
 * CPUID 0x40000100 says "KVMKVMKVM\0\0\0" (Linux scans the hypervisor range
 * in steps of 0x100; 0x40000000 stays sprig's), 0x40000101 EAX offers the
 * new clock MSRs (KVM_FEATURE_CLOCKSOURCE2) and the stable bit. The guest
 * writes the gpa of a 32-byte pvclock_vcpu_time_info (bit 0: enable) to
 * MSR_KVM_SYSTEM_TIME_NEW on each vCPU and of a 12-byte pvclock_wall_clock to
 * MSR_KVM_WALL_CLOCK_NEW; sprig writes them once then. The system time is the
 * guest TSC scaled to ns (tsc_timestamp and system_time 0): every vCPU's TSC
 * is the same function of the host's, so one formula serves all, flagged
 * PVCLOCK_TSC_STABLE_BIT. The wall clock is the time at guest TSC 0. Also
 * built for the host (tests/unit/test_pvclock.c). */
#pragma once
#include <stdint.h>

struct mmu;

#define MSR_KVM_WALL_CLOCK_NEW 0x4b564d00u
#define MSR_KVM_SYSTEM_TIME_NEW 0x4b564d01u
#define PVCLOCK_CPUID_BASE 0x40000100u
#define PVCLOCK_CPUID_SIGNATURE "KVMKVMKVM\0\0\0"
#define KVM_FEATURE_CLOCKSOURCE2 (1u << 3)
#define KVM_FEATURE_CLOCKSOURCE_STABLE_BIT (1u << 24)
#define PVCLOCK_TSC_STABLE_BIT 0x01u
#define PVCLOCK_TIME_INFO_SIZE 32
#define PVCLOCK_WALL_CLOCK_SIZE 12

/* ns = ((tsc << shift) * mul) >> 32 (a negative shift shifts right). */
struct pvclock_scale {
	uint32_t mul;
	int8_t shift;
};

/* The scale for a TSC of tsc_khz (> 0): mul in [2^31, 2^32), as KVM makes it. */
void pvclock_scale_for(uint64_t tsc_khz, struct pvclock_scale *s);
/* What the guest computes from the scale for a TSC delta. */
uint64_t pvclock_scaled_ns(uint64_t tsc, const struct pvclock_scale *s);
/* pvclock_vcpu_time_info: version, tsc_timestamp 0, system_time 0, the
 * scale, flags PVCLOCK_TSC_STABLE_BIT. */
void pvclock_time_info(uint8_t out[PVCLOCK_TIME_INFO_SIZE], uint32_t version,
		       const struct pvclock_scale *s);
/* pvclock_wall_clock: version, seconds and nanoseconds since 1970 at system time 0. */
void pvclock_wall_clock(uint8_t out[PVCLOCK_WALL_CLOCK_SIZE], uint32_t version, uint32_t sec,
			uint32_t nsec);

/* Write the system time structure at gpa (the MSR's value without bit 0):
 * first with the odd version *version + 1, then whole with *version + 2,
 * which *version becomes. As KVM, whose gfn_to_pfn_cache takes an access
 * within one page, a structure that crosses a page boundary or lies partly
 * outside guest memory is not used: nothing is written, -1. Else 0. */
int pvclock_publish_time_info(struct mmu *mmu, uint64_t gpa, uint32_t *version,
			      const struct pvclock_scale *s);
/* Write the wall clock (version 2, sec) at gpa, whole or (outside guest
 * memory) not at all: 0 or -1. It may cross a page, as KVM's
 * kvm_write_guest of it may. */
int pvclock_publish_wall_clock(struct mmu *mmu, uint64_t gpa, uint32_t sec);
