/* `vm console` (shell/cmd_console.c): the vm command's subcommand, and what
 * the console CPU does instead of watching for Ctrl-C while it is attached. */
#pragma once
#include "virt/vm.h"

/* `vm console NAME [timeout=S]`, argv as the vm command got it. */
int vm_console_cmd(int argc, char **argv);
/* About once a millisecond while attached: the keys typed go to the guest's
 * COM1 receiver as it has room; true when Ctrl-] asks to detach. */
bool vm_console_poll(struct vm *vm);
/* The console's poll while vm runs (sched_set_console_poll): "Ctrl-C" typed
 * on sprig's console, or "detached" when Ctrl-] ends `vm console`; else
 * NULL. */
const char *vm_run_console_poll(struct vm *vm);
