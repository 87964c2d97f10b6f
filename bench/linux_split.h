/* `bench exec guest=linux` and `bench dirty guest=linux` (linux_split.c). */
#pragma once
#include <stdint.h>

#define LINUX_SPLIT_MEM (512ull << 20)     /* the guest's memory unless mem= */
#define LINUX_SPLIT_MEM_MIN (256ull << 20) /* what Debian's kernel boots in */

/* The workload's mib MiB in a Linux guest of mem bytes on vcpus vCPUs (0: one). */
int exec_linux(uint64_t mib, uint64_t mem, unsigned vcpus);
int dirty_linux(uint64_t mib, uint64_t mem, unsigned vcpus, uint64_t writes);
