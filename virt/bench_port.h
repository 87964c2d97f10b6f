/* The bench port: how a guest's user-space workload (guests/linux-bench/,
 * inside Linux, where hypercalls are the kernel's alone) and a benchmark
 * scenario on the console (bench/linux_*.c) take turns. A root process
 * reaches the ports with ioperm(2); 32-bit accesses:
 *   BENCH_PORT_CMD   read:  BENCH_PORT_MAGIC, so that the workload knows it
 *                           runs under sprig (a PC without the device reads
 *                           all ones) and can run bare;
 *                    write: a command (1..BENCH_CMD_MAX): the VM pauses after
 *                           the write, as at a snapshot point, for the
 *                           scenario to read it and act (`vm run` continues);
 *   BENCH_PORT_DATA  write: one word for the scenario (its figures, or the
 *                           frames it wrote); words outside a scenario are
 *                           dropped.
 * The commands: BEGIN a round, MARK the end of a phase inside it, END it;
 * what a round is and what the words mean is each scenario's protocol with
 * its workload (guests/linux-bench/sprig-bench.c). */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#define BENCH_PORT_CMD 0x5f0u
#define BENCH_PORT_DATA 0x5f4u
#define BENCH_PORT_MAGIC 0x53505247u /* "GRPS": "SPRG" in memory order */
#define BENCH_CMD_BEGIN 1u
#define BENCH_CMD_MARK 2u
#define BENCH_CMD_END 3u
#define BENCH_CMD_MAX 15u
#define VM_PAUSE_BENCH_POINT "bench point"

/* A VM's side of the port: the command its last bench point paused for,
 * for the scenario to read while the VM is paused. */
struct bench_port {
	uint32_t cmd;
};

struct vcpu;

/* A 32-bit access at one of the bench ports: true if it was one (handled),
 * with *retry set when the command lost to another stop and the instruction
 * must run again once the VM resumes. */
bool bench_port_io(struct vcpu *v, uint16_t port, unsigned size, bool in, uint32_t *val,
		   bool *retry);
