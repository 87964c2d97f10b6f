/* State records: a VM's state, as a snapshot image or a clone carries it, is
 * a sequence of records {id, version, instance, length} each followed by its
 * bytes, one record a device (instance 0) or a per-vCPU piece (instance: the
 * vCPU's index). Each device declares its record type next to its code: the
 * id and version, the one field list that saves and loads it (lib/fields.h)
 * and the check that a loaded copy is one the device could be in. A restore
 * runs every record's check before it loads anything (virt/vcpu_state.c).
 * Pure code, built for the host and fuzzed. Format: docs/snapshot.md. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "lib/fields.h"

/* Record ids: stable, never reused for another meaning. */
enum record_id {
	REC_VM = 1,   /* the VM's own: vCPU count, COM1's partial line, lost ranges */
	REC_CPU,      /* per vCPU: registers, XSAVE, the backend's state, run flags */
	REC_LAPIC,    /* per vCPU: the local APIC and its timer */
	REC_MSRS,     /* per vCPU: MSRs virt/ keeps (the paravirtual clock, TSC_AUX) */
	REC_IOAPIC,
	REC_PIC,      /* the 8259 pair with the ELCRs */
	REC_PIT,      /* with channel 2's gate and port 0x61 */
	REC_RTC,
	REC_ACPI_PM,  /* PM1 status/enable/control, reset control (the PM timer is the TSC) */
	REC_FWCFG,
	REC_PCI,
	REC_TESTDEV,
	REC_UART,     /* COM1's 16550: registers, FIFOs, its IRQ line */
};

struct fpu_limits;
struct vcpu_regs;

/* What a record's check compares against: the loading VM's shape. */
struct record_limits {
	unsigned nr_vcpus;
	uint64_t mem_bytes;
	unsigned phys_bits; /* MAXPHYADDR */
	unsigned instance;  /* a per-vCPU record's vCPU */
	/* For the vCPU's own record (REC_CPU): the FPU switching this machine
	 * does, its backend's name and the backend's check of its state. */
	const struct fpu_limits *fpu;
	const char *backend;
	bool (*arch_check)(const void *arch, size_t len, const struct vcpu_regs *regs, char *err,
			   size_t errlen);
};

struct record_type {
	uint32_t id;         /* enum record_id */
	uint16_t version;    /* changes with the field list */
	bool per_vcpu;       /* one record per vCPU, instance = its index */
	const char *name;    /* in refusals: "record pic: ..." */
	uint32_t model_bytes; /* sizeof the structure the field list walks */
	/* The one field list: saves from or loads into a model. */
	void (*fields)(void *model, struct field_io *io);
	/* A model loaded from a record (into zeroes): one the device could be in?
	 * False with the field and the reason (without the record's name). */
	bool (*check)(const void *model, const struct record_limits *lim, char *err,
		      size_t errlen);
};

/* On the wire, 8-byte aligned; the payload follows, padded to 8 bytes. */
struct record_header {
	uint32_t id;
	uint16_t version;
	uint16_t instance;
	uint32_t length;   /* payload bytes, without the padding */
	uint32_t reserved; /* zero */
};

#define RECORD_ALIGN 8
static inline uint32_t record_padded(uint32_t n)
{
	return (n + RECORD_ALIGN - 1) & ~(uint32_t)(RECORD_ALIGN - 1);
}

/* The largest model a record type may walk (struct vcpu_state). */
#define RECORD_MODEL_MAX 12288

/* The payload bytes of a type's record (its field list's walk). */
uint32_t record_type_bytes(const struct record_type *t);
/* Append t's record of model at *pos in buf (cap bytes); the bytes it takes
 * when buf is NULL. False when it does not fit. */
bool record_put(void *buf, uint32_t cap, uint32_t *pos, const struct record_type *t,
		unsigned instance, void *model);
/* The record at *pos of a blob of len bytes: its header and payload, whole
 * inside the blob; *pos moves past it. False at the end (*err empty) or on
 * a malformed header (the reason in err). */
bool record_next(const void *blob, uint32_t len, uint32_t *pos, const struct record_header **h,
		 const void **payload, char *err, size_t errlen);
/* Load a record's payload into a zeroed scratch model of its type and check
 * it: its length, the field list's byte checks, the type's check. On
 * success *model is the scratch copy (valid until the next call; the console
 * is the one caller). False with "record NAME[ i]: reason". */
bool record_check(const struct record_type *t, const struct record_header *h, const void *payload,
		  const struct record_limits *lim, const void **model, char *err, size_t errlen);
/* Load a checked record into a live model. */
void record_load(const struct record_type *t, const void *payload, uint32_t len, void *model);
