/* The AMD SVM backend (virt/vcpu.h's struct virt_backend). */
#pragma once
#include "virt/vcpu.h"

extern const struct virt_backend svm_backend;
