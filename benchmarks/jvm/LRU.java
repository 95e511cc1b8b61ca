/* A key-value cache with LRU eviction, the Java port of
 * benchmarks/suite/lru.c (same shape, sizes, seed and checksum): a chained
 * hash table plus a doubly-linked recency list through the same entries;
 * Zipf(0.99) requests over four times as many keys as the cache holds, 95 %
 * gets (a miss loads the value and may evict the least recently used
 * entry), 5 % sets. --size is the capacity in entries; values are 64 to
 * 512 bytes; 10 x size requests. */
public final class LRU {
	static final class Entry {
		Entry prev, next; /* recency list; the sentinel closes it */
		Entry chain;      /* next in the hash bucket */
		byte[] value;
		long key;
		long version; /* of the value */
	}

	static Entry[] table;
	static Entry sentinel;

	static int bucket(long key)
	{
		long hash = key * 0x9e3779b97f4a7c15L;
		return (int)Long.remainderUnsigned(hash >>> 20, table.length);
	}

	static void unlink(Entry e)
	{
		e.prev.next = e.next;
		e.next.prev = e.prev;
	}

	static void pushFront(Entry e)
	{
		Entry s = sentinel;
		e.next = s.next;
		e.prev = s;
		s.next.prev = e;
		s.next = e;
	}

	static int valueSize(long key)
	{
		return 64 + (int)Long.remainderUnsigned(key * 2654435761L, 449);
	}

	/* A value's bytes are a function of its key and version. */
	static byte[] makeValue(long key, long version)
	{
		byte[] b = new byte[valueSize(key)];
		for (int i = 0; i < b.length; i++)
			b[i] = (byte)(key + version + i);
		return b;
	}

	static Entry lookup(long key)
	{
		for (Entry e = table[bucket(key)]; e != null; e = e.chain)
			if (e.key == key)
				return e;
		return null;
	}

	static void evictLru()
	{
		Entry victim = sentinel.prev;
		unlink(victim);
		int b = bucket(victim.key);
		if (table[b] == victim) {
			table[b] = victim.chain;
			return;
		}
		Entry p = table[b];
		while (p.chain != victim)
			p = p.chain;
		p.chain = victim.chain;
	}

	/* Zipf over ranks 1..n by inverting the CDF. The C workload keeps this
	 * table outside its heap (malloc); a Java array is all there is. */
	static double[] zipfCdf(int n, double s)
	{
		double[] c = new double[n];
		double sum = 0;
		for (int i = 0; i < n; i++)
			c[i] = (sum += 1.0 / Math.pow((double)(i + 1), s));
		for (int i = 0; i < n; i++)
			c[i] /= sum;
		return c;
	}

	static long zipfRank(double[] c, double u)
	{
		int lo = 0, hi = c.length - 1;
		while (lo < hi) {
			int mid = (lo + hi) >>> 1;
			if (c[mid] < u)
				lo = mid + 1;
			else
				hi = mid;
		}
		return lo;
	}

	public static void main(String[] argv)
	{
		Harness h = Harness.parse("lru", "LRU", 500000, 1, argv);
		if (h.size > Integer.MAX_VALUE / 4)
			h.fail(2, "--size is at most " + Integer.MAX_VALUE / 4);
		long cap = h.size != 0 ? h.size : 1, keys = 4 * cap, requests = 10 * cap;
		double[] cdf = zipfCdf((int)keys, 0.99);
		table = new Entry[(int)cap];
		Entry s = new Entry();
		s.prev = s;
		s.next = s;
		sentinel = s;

		SplitMix rng = new SplitMix(h.seed);
		long count = 0, hits = 0, check = 0, bad = 0;
		long step = requests / 5 != 0 ? requests / 5 : 1;
		for (long r = 0; r < requests; r++) {
			double u = rng.unit();
			/* Rank r maps to a scattered key, so popular keys are not
			 * neighbours in the table. */
			long key = (zipfRank(cdf, u) * 0x2545F4914F6CDD1DL) & ((1L << 40) - 1);
			boolean set = Long.remainderUnsigned(rng.next(), 100) < 5;
			Entry e = lookup(key);
			if (e != null) {
				hits++;
				int first = e.value[0] & 0xff;
				if (first != ((key + e.version) & 0xff))
					bad++;
				check += first;
				unlink(e);
				pushFront(e);
				if (set) {
					byte[] v = makeValue(key, r);
					e.version = r;
					e.value = v;
				}
			} else {
				byte[] v = makeValue(key, 0);
				e = new Entry();
				e.key = key;
				e.value = v;
				int b = bucket(key);
				e.chain = table[b];
				table[b] = e;
				pushFront(e);
				if (++count > cap) {
					evictLru();
					count--;
				}
			}
			if ((r + 1) % step == 0)
				h.progress("%d/%d requests, hit ratio %.3f", r + 1, requests,
				           (double)hits / (double)(r + 1));
		}
		/* The recency list and the table hold the same count entries. */
		long listed = 0;
		for (Entry e = sentinel.next; e != sentinel; e = e.next) {
			listed++;
			if (lookup(e.key) != e || e.value.length != valueSize(e.key))
				bad++;
		}
		boolean ok = listed == count && bad == 0;
		if (!ok)
			System.err.printf("lru: %d entries listed, %d counted, %d bad%n", listed, count,
			                  bad);
		h.finish(check ^ hits, ok);
	}
}
