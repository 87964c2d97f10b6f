/* `cpus=LIST` (cpu_list.h). */
#include "virt/cpu_list.h"
#include "lib/parse.h"
#include "lib/print.h"
#include "lib/string.h"
#include <stdbool.h>

#define ITEM_MAX 16 /* one number or range, as written */

/* One number of an item, [from, to) of the whole text. */
static bool cpu_number(const char *from, size_t len, unsigned limit, unsigned *cpu)
{
	char buf[ITEM_MAX];
	uint64_t n;

	if (!len || len >= sizeof(buf))
		return false;
	memcpy(buf, from, len);
	buf[len] = 0;
	if (!parse_u64_in(buf, 0, limit - 1, &n))
		return false;
	*cpu = (unsigned)n;
	return true;
}

unsigned cpu_list_parse(const char *s, unsigned limit, uint8_t *list, unsigned cap, char *err,
			size_t errlen)
{
	unsigned count = 0;
	bool seen[256] = { false };

	if (limit > sizeof(seen))
		limit = sizeof(seen);
	for (const char *item = s;; item++) {
		const char *end = strchr(item, ',');
		size_t len = end ? (size_t)(end - item) : strlen(item);
		const char *dash = NULL;
		unsigned first, last;

		for (size_t i = 0; i < len && !dash; i++)
			if (item[i] == '-')
				dash = item + i;
		if (!(dash ? cpu_number(item, (size_t)(dash - item), limit, &first) &&
				     cpu_number(dash + 1, len - (size_t)(dash - item) - 1, limit, &last)
			   : cpu_number(item, len, limit, &first) && (last = first, true)) ||
		    last < first) {
			ksnprintf(err, errlen, "bad CPU list '%s' (numbers below %u and ranges, as 1,3 "
				  "or 1-3)", s, limit);
			return 0;
		}
		for (unsigned c = first; c <= last; c++) {
			if (seen[c] || count == cap) {
				ksnprintf(err, errlen, seen[c] ? "CPU %u is listed twice"
							       : "more than %u CPUs listed",
					  seen[c] ? c : cap);
				return 0;
			}
			seen[c] = true;
			list[count++] = (uint8_t)c;
		}
		if (!end)
			return count;
		item = end;
	}
}
