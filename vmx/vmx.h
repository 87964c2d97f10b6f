/* The Intel VMX backend (virt/backend.h's struct virt_backend). Its tdp format
 * (EPT with or without A/D bits) is chosen when cpu_enable reads the
 * capability MSRs. */
#pragma once
#include "virt/backend.h"

extern struct virt_backend vmx_backend;
