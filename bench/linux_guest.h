/* A Linux guest for the benchmark scenarios (`bench ... guest=linux`): the
 * ISO's modules vmlinuz and initrd, Debian's kernel and the initramfs with
 * guests/linux-bench/sprig-bench, which runs the workload named on the kernel
 * command line and takes turns with the scenario through the bench port
 * (virt/bench_port.h). */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "virt/vm.h"

#define LINUX_WORDS_MAX 16

struct linux_run {
	struct vm *vm;
	/* The workload's data words since the VM last resumed. */
	uint32_t words[LINUX_WORDS_MAX];
	unsigned nwords;
	bool ok; /* every bench point came as expected; the audit passed */
};

/* linux_run_create's flags. */
#define LINUX_RUN_BALLOON 1u   /* a virtio balloon (dev/balloon.h) */
#define LINUX_RUN_NO_KVM_PV 2u /* KVM's clock alone: none of virt/kvm_pv.h's features */

/* Boot a Linux VM of mem bytes with the backing (eager: huge second-level
 * pages where the CPU has them; lazy: 4 KiB pages, one frame a fault) on
 * vcpus vCPUs, as flags ask (LINUX_RUN_*), whose init runs `sprig-bench
 * WORKLOAD`; false (with the reason printed) if it cannot be created. */
bool linux_run_create(struct linux_run *r, unsigned vcpus, uint64_t mem, enum backing_kind backing,
		      unsigned flags, const char *workload);
/* Run to the workload's next command; false, marking the run bad, if the VM
 * stopped anywhere else or sent another command. */
bool linux_run_until(struct linux_run *r, uint32_t cmd);
/* Data words go to r->words again (after a scenario took them with an
 * observer of its own), and the VM has no other observer. */
void linux_run_keep_words(struct linux_run *r);
/* One data word to r->words (for a scenario's observer that passes them on). */
void linux_run_add_word(struct linux_run *r, uint32_t word);
/* The 64-bit figure in data words i and i + 1 (0 if the workload sent fewer). */
uint64_t linux_word64(const struct linux_run *r, unsigned i);
/* Audit the MMU and destroy the VM; whether the whole run went as expected
 * (if not, says so for `bench NAME`). */
bool linux_run_finish(struct linux_run *r, const char *bench);
