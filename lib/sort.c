#include "lib/sort.h"
#include "lib/string.h"

void sort_u64(uint64_t *v, size_t n)
{
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
			uint64_t t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
}

struct spread spread_of(const uint64_t *values, size_t n)
{
	uint64_t v[SPREAD_MAX];

	if (n > SPREAD_MAX)
		n = SPREAD_MAX;
	if (!n)
		return (struct spread){ 0 };
	memcpy(v, values, n * sizeof(v[0]));
	sort_u64(v, n);
	return (struct spread){ .median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2,
				.min = v[0], .max = v[n - 1] };
}
