/* What watches a VM run: a benchmark scenario (bench/) or a self-test
 * (shell/selftest.c) hooks itself in between sprig and the guest. A VM has
 * one observer at a time (struct vm's observer, with its context), set while
 * the VM does not run; each hook may be NULL. */
#pragma once
#include <stdint.h>

struct vm;
struct vexit;

struct vm_observer {
	/* Called after every exit while the VM runs (benchmark scenarios zap
	 * or discard memory between exits), on the exiting vCPU's CPU: with
	 * several vCPUs, on several CPUs at once. */
	void (*on_exit)(struct vm *vm, const struct vexit *e, void *ctx);
	/* Called by the console CPU about once a millisecond while the VM
	 * runs (a benchmark's host-side thread). */
	void (*on_watch)(struct vm *vm, void *ctx);
	/* Called with each line the guest prints on COM1, without its end
	 * (selftest compares hello's lines). */
	void (*on_line)(struct vm *vm, const char *line, unsigned len, void *ctx);
	/* Called with each data word the guest writes to the bench port
	 * (virt/bench_port.h); without it the words are dropped. */
	void (*on_bench_word)(struct vm *vm, uint32_t word, void *ctx);
};
