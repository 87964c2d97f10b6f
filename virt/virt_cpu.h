/* Virtualization on each CPU (virt_cpu.c). */
#pragma once
#include <stdbool.h>
#include <stddef.h>

/* On an application processor once virt_init ran on the BSP: the backend's
 * cpu_enable, the FPU's control bits; false with the reason. */
bool virt_cpu_init(char *err, size_t len);
