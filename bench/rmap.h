/* The rmap fork benchmarks (`bench rmap`, bench/rmap.c; with
 * guest=linux, bench/rmap_linux.c): a parent VM, a family of clones made
 * from it, and what the family's rmaps grew to. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "virt/vm.h"

#define RMAP_MAX_COUNTS 8      /* clone counts in one `bench rmap` */
#define LINUX_FORK_MIB_MAX 128 /* half the Linux guest's 256 MiB */

/* n clones of the paused parent into clones[], named PREFIX-cI; false (the
 * reason printed for `bench NAME`, every clone made so far destroyed) if one
 * cannot be made. */
bool rmap_make_clones(struct vm *parent, struct vm **clones, uint64_t n, const char *prefix,
		      const char *bench);
void rmap_destroy_clones(struct vm **clones, uint64_t n);
/* The largest rmap any VM of the family produced (installs count in the VM
 * that made them). */
uint64_t rmap_family_max(struct vm *parent, struct vm **clones, uint64_t n);

/* `bench rmap guest=linux`: the counts as parsed, mib= the workload's MiB. */
int rmap_linux(const uint64_t *counts, unsigned n_counts, uint64_t mib);
