/* One field list drives both directions of a state record (as bhyve's
 * SNAPSHOT_VAR_OR_LEAVE): a model's `X_fields(model, io)` names each field
 * once, and the same walk copies them out of the model (save) or back in
 * (load). A count-only save (buf NULL) sizes the record. Loads are checked
 * byte by byte where the C type allows fewer values than its bytes hold
 * (bool): the first such field is named in io->bad and left as it was. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "lib/string.h"

struct field_io {
	bool load;       /* false: model -> buf; true: buf -> model */
	uint8_t *buf;    /* save: NULL counts the bytes only */
	uint32_t len;    /* bytes in buf (load) or room in it (save) */
	uint32_t pos;    /* bytes walked so far */
	bool overrun;    /* the walk went past len: nothing more was copied */
	const char *bad; /* load: the first field whose bytes no model holds */
};

static inline struct field_io field_saver(void *buf, uint32_t len)
{
	return (struct field_io){ .buf = buf, .len = len };
}

static inline struct field_io field_loader(const void *buf, uint32_t len)
{
	return (struct field_io){ .load = true, .buf = (uint8_t *)(uintptr_t)buf, .len = len };
}

static inline void field_bytes(struct field_io *io, void *p, uint32_t n)
{
	if (io->overrun || (io->buf && n > io->len - io->pos)) {
		io->overrun = true;
		return;
	}
	if (io->load)
		memcpy(p, io->buf + io->pos, n);
	else if (io->buf)
		memcpy(io->buf + io->pos, p, n);
	io->pos += n;
}

static inline void field_bool(struct field_io *io, bool *p, const char *name)
{
	uint8_t b;

	memcpy(&b, p, 1); /* as bytes: a model may hold what a bad image put there */
	field_bytes(io, &b, 1);
	if (!io->load || io->overrun)
		return;
	if (b > 1) {
		if (!io->bad)
			io->bad = name;
		return;
	}
	*p = b;
}

/* n bytes at p, or, where the model has none (p NULL: a model being
 * checked holds no memory of its own), n bytes passed over: zeros saved,
 * nothing loaded. */
static inline void field_memory(struct field_io *io, void *p, uint32_t n)
{
	static const uint8_t zeros[256];

	if (p) {
		field_bytes(io, p, n);
		return;
	}
	for (uint32_t done = 0; done < n && !io->overrun;) {
		uint32_t k = n - done < sizeof(zeros) ? n - done : (uint32_t)sizeof(zeros);
		uint8_t skip[sizeof(zeros)];

		memcpy(skip, zeros, k);
		field_bytes(io, skip, k);
		done += k;
	}
}

/* A field of any plain type (integers, arrays of them, structs of them). */
#define FIELD(io, x) field_bytes((io), &(x), (uint32_t)sizeof(x))
/* A bool (or bool array element): saved as one byte, loaded only as 0 or 1. */
#define FIELD_BOOL(io, x) field_bool((io), &(x), #x)
