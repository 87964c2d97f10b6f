/* The AMD SVM backend (virt/backend.h's struct virt_backend). */
#pragma once
#include "virt/backend.h"

extern const struct virt_backend svm_backend;
