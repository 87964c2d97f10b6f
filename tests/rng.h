#ifndef SPRIG_TESTS_RNG_H
#define SPRIG_TESTS_RNG_H
/* The one random-number generator of the host tests and benchmarks:
 * xorshift64* (Vigna), seeded explicitly so that a failure or a benchmark
 * run replays exactly. A zero seed would stay zero, so it is replaced. */
#include <stdint.h>

struct rng {
	uint64_t s;
};

static inline struct rng rng_seeded(uint64_t seed)
{
	return (struct rng){ seed ? seed : 0x9e3779b97f4a7c15ull };
}

static inline uint64_t rng_next(struct rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545f4914f6cdd1dull;
}

/* Uniform enough below n (n > 0) for test choices; the modulo bias of a
 * 64-bit draw is far below anything a test could see. */
static inline uint64_t rng_below(struct rng *r, uint64_t n)
{
	return rng_next(r) % n;
}

/* A stateless hash of x (splitmix64's finalizer): the same x gives the same
 * choice whatever was drawn before, so two programs can make the same
 * choices for the same items. */
static inline uint64_t rng_mix(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

#endif
