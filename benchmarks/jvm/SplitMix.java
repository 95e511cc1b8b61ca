/* splitmix64, bit for bit the suite's rs_rand (benchmarks/suite/harness.h):
 * Java's long arithmetic wraps as C's uint64_t does, and >>> is the
 * unsigned shift. Unsigned division and comparison go through Long's
 * *Unsigned methods at the call sites. */
final class SplitMix {
	private long state;

	SplitMix(long seed)
	{
		state = seed;
	}

	long next()
	{
		long z = (state += 0x9e3779b97f4a7c15L);
		z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
		z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
		return z ^ (z >>> 31);
	}

	/* A double in [0, 1) from the top 53 bits, as the C workloads draw one. */
	double unit()
	{
		return (double)(next() >>> 11) / 9007199254740992.0;
	}
}
