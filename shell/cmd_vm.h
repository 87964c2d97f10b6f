/* The vm command (shell/cmd_vm.c): what its subcommands in other files share. */
#pragma once
#include "virt/vm.h"

/* `vm run|console NAME [timeout=S]`, argv as the vm command got it: 0 with
 * the VM, which can run, and its timeout; else the command's status, after
 * saying what is wrong. */
int vm_run_args(int argc, char **argv, struct vm **vm, uint64_t *timeout_s);
