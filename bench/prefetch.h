/* What `bench prefetch` (prefetch.c) and `bench prefetch guest=linux`
 * (prefetch_linux.c) share: the chunk sizes a restore copies per fault (the
 * userfaultfd handler's copy size) and how a restored VM's run is counted. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "virt/vm.h"

struct restore_chunk {
	const char *name;
	uint32_t pages;
};

#define N_RESTORE_CHUNKS 4
extern const struct restore_chunk restore_chunks[N_RESTORE_CHUNKS];

struct prefetch_run {
	uint64_t ns, faults, called, pages, mapped, unused;
	bool data_ok, audit_ok;
};

/* After a restored VM's run: its fault and prefetch counters into r, the
 * audit, then (memory discarded, so that prefetched pages the guest never
 * used show as unused) the VM destroyed. */
void prefetch_run_end(struct vm *vm, struct prefetch_run *r);

/* `bench prefetch guest=linux ARGS` (argv[0] is guest=linux). */
int prefetch_linux(int argc, char **argv);
