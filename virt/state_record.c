/* State records (state_record.h). */
#include "virt/state_record.h"
#include "lib/print.h"

static uint8_t scratch[RECORD_MODEL_MAX] __attribute__((aligned(64)));

uint32_t record_type_bytes(const struct record_type *t)
{
	struct field_io io = field_saver(NULL, 0);

	memset(scratch, 0, t->model_bytes);
	t->fields(scratch, &io);
	return io.pos;
}

bool record_put(void *buf, uint32_t cap, uint32_t *pos, const struct record_type *t,
		unsigned instance, void *model)
{
	uint32_t bytes = record_type_bytes(t);
	uint32_t need = (uint32_t)sizeof(struct record_header) + record_padded(bytes);
	struct record_header h = {
		.id = t->id, .version = t->version, .instance = (uint16_t)instance, .length = bytes,
	};
	struct field_io io;

	if (!buf) {
		*pos += need;
		return true;
	}
	if (cap < *pos || cap - *pos < need)
		return false;
	memcpy((uint8_t *)buf + *pos, &h, sizeof(h));
	memset((uint8_t *)buf + *pos + sizeof(h), 0, record_padded(bytes));
	io = field_saver((uint8_t *)buf + *pos + sizeof(h), bytes);
	t->fields(model, &io);
	*pos += need;
	return !io.overrun;
}

bool record_next(const void *blob, uint32_t len, uint32_t *pos, const struct record_header **h,
		 const void **payload, char *err, size_t errlen)
{
	const struct record_header *r = (const void *)((const uint8_t *)blob + *pos);

	err[0] = 0;
	if (*pos == len)
		return false;
	if ((*pos & (RECORD_ALIGN - 1)) || len - *pos < sizeof(*r)) {
		ksnprintf(err, errlen, "a record header at byte %u would run past the %u-byte state", *pos,
			  len);
		return false;
	}
	if (r->reserved || record_padded(r->length) < r->length ||
	    record_padded(r->length) > len - *pos - (uint32_t)sizeof(*r)) {
		ksnprintf(err, errlen, "record %u at byte %u: its %u bytes run past the %u-byte state%s", r->id,
			  *pos, r->length, len, r->reserved ? " (reserved bits set)" : "");
		return false;
	}
	*h = r;
	*payload = r + 1;
	*pos += (uint32_t)sizeof(*r) + record_padded(r->length);
	return true;
}

bool record_check(const struct record_type *t, const struct record_header *h, const void *payload,
		  const struct record_limits *lim, const void **model, char *err, size_t errlen)
{
	uint32_t bytes = record_type_bytes(t);
	struct field_io io = field_loader(payload, h->length);
	char why[160] = "";
	char name[24];

	if (t->per_vcpu)
		ksnprintf(name, sizeof(name), "%s %u", t->name, h->instance);
	else
		ksnprintf(name, sizeof(name), "%s", t->name);
	if (h->version != t->version) {
		ksnprintf(err, errlen, "record %s: version %u, this sprig reads %u", name, h->version,
			  t->version);
		return false;
	}
	if (h->length != bytes) {
		ksnprintf(err, errlen, "record %s: %u bytes, this sprig's are %u", name, h->length,
			  bytes);
		return false;
	}
	memset(scratch, 0, t->model_bytes);
	t->fields(scratch, &io);
	if (io.bad) {
		ksnprintf(err, errlen, "record %s: %s is not 0 or 1", name, io.bad);
		return false;
	}
	if (!t->check(scratch, lim, why, sizeof(why))) {
		ksnprintf(err, errlen, "record %s: %s", name, why);
		return false;
	}
	*model = scratch;
	return true;
}

void record_load(const struct record_type *t, const void *payload, uint32_t len, void *model)
{
	struct field_io io = field_loader(payload, len);

	t->fields(model, &io);
}
