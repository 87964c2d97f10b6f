/* A multiboot test guest for a benchmark scenario: the ISO's module of that
 * name, created with the guest's arguments as QEMU's -append would give them. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "virt/vm.h"

/* The VM vm_name running module with args on vcpus vCPUs in mem bytes of
 * backing; NULL (the reason printed, as "bench SCENARIO: ...") if the ISO
 * lacks the module or the VM cannot be created. */
struct vm *bench_guest_create(const char *scenario, const char *vm_name, const char *module,
			      const char *args, uint64_t mem, unsigned vcpus,
			      enum backing_kind backing);
/* The VM paused where its guest called HC_SNAPSHOT_POINT. */
bool bench_guest_at_point(const struct vm *vm);
/* Exits of all the VM's vCPUs so far. */
uint64_t bench_vm_exits(const struct vm *vm);
