/* The device tests' record helpers (virt/state_record.h): a model saved
 * through its type's field list and loaded into another, and a saved model
 * checked as a restore checks it (loaded into zeroes). */
#pragma once
#include "check.h"
#include "virt/state_record.h"
#include <stdio.h>
#include <string.h>

/* Save `from` and load it into `to` (set up by the model's init). */
static inline void record_copy(const struct record_type *t, void *from, void *to)
{
	static uint8_t buf[4096];
	struct field_io out = field_saver(buf, sizeof buf), in;

	t->fields(from, &out);
	CHECK(!out.overrun);
	in = field_loader(buf, out.pos);
	t->fields(to, &in);
	CHECK(!in.overrun && !in.bad && in.pos == out.pos);
}

/* The record of `from` loaded into zeroes at z, as a restore checks it. */
static inline void record_loaded(const struct record_type *t, void *from, void *z)
{
	memset(z, 0, t->model_bytes);
	record_copy(t, from, z);
}

/* Does the check accept `from`'s record? (A refusal is printed.) */
static inline bool record_saved_ok(const struct record_type *t, void *from)
{
	static uint8_t z[RECORD_MODEL_MAX] __attribute__((aligned(64)));
	char err[160] = "";
	bool ok;

	record_loaded(t, from, z);
	ok = t->check(z, NULL, err, sizeof err);
	if (!ok)
		fprintf(stderr, "  refused: %s\n", err);
	return ok;
}

/* `model`'s record into buf (cap bytes): its length. */
static inline uint32_t record_save(const struct record_type *t, void *model, uint8_t *buf,
				   uint32_t cap)
{
	struct field_io io = field_saver(buf, cap);

	t->fields(model, &io);
	CHECK(!io.overrun);
	return io.pos;
}

/* Two records of len bytes that differ in one bool, 0 in `off`, 1 in `on`:
 * that byte made 2 and loaded into `into`, the loader names `field`. */
static inline void record_bool_byte_refused(const struct record_type *t, const uint8_t *off,
					    uint8_t *on, uint32_t len, void *into,
					    const char *field)
{
	struct field_io in;
	unsigned at = 0, diffs = 0;

	for (unsigned i = 0; i < len; i++)
		if (off[i] != on[i]) {
			at = i;
			diffs++;
		}
	CHECK(diffs == 1 && on[at] == 1);
	on[at] = 2;
	in = field_loader(on, len);
	t->fields(into, &in);
	CHECK(in.bad && strstr(in.bad, field));
}
