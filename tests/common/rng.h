/* Deterministic randomness for tests and the benchmarks that share their
 * workloads: the same seed gives the same run, so a failure can be
 * replayed. */
#ifndef RH_TESTS_RNG_H
#define RH_TESTS_RNG_H

#include <stdint.h>

/* xorshift64*: *s must start non-zero. Cheap enough for mutators' inner
 * loops. */
static inline uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* A 64-bit finaliser (MurmurHash3's): every bit of x changes about half of
 * the result, so a checksum stored with an id catches a stale copy or
 * another object's fields. */
static inline uint64_t rng_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

#endif
