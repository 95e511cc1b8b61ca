/* window, the Java port of benchmarks/suite/window.c (same shape, sizes,
 * seed and checksum): a streaming join over a sliding window of WINDOW
 * batches. Each step a batch of --size records arrives (a key, a value and
 * a PAYLOAD-byte array each), partitioned by key into PARTS small hash
 * tables; every new record is joined against one of the SPAN batches
 * before it, and a record that matches leaves its batch; the oldest
 * batch is aggregated and dropped as its window closes. Batches outlive
 * many young collections and die in the old generation. */
public final class Window {
	static final int WINDOW = 16;
	static final int STEPS = 40;
	static final int SPAN = 4;   /* the join looks back this many batches */
	static final int PROBES = 1; /* of them, each new record is joined against */
	static final int PARTS = 64;
	static final int PAYLOAD = 48;

	static final class Rec {
		Rec chain; /* next in the hash bucket */
		byte[] payload;
		long key;
		long val;
	}

	static final class Batch {
		Rec[][] parts; /* PARTS tables of buckets */
		long id;
		long n, keySum;          /* records built, their key sum */
		long matched, matchedKeys; /* records the join took out */
	}

	static final Batch[] window = new Batch[WINDOW];
	static long joined, bad;

	/* A payload's bytes are a function of its key and its batch. */
	static byte payloadByte(long key, long id, int i)
	{
		return (byte)((key >>> (i % 8 * 8)) ^ (id + i));
	}

	static Rec[] partOf(Batch b, long key)
	{
		return b.parts[(int)Long.remainderUnsigned(key, PARTS)];
	}

	static int bucket(Rec[] t, long key)
	{
		long h = key * 0x9e3779b97f4a7c15L;
		return (int)Long.remainderUnsigned(h >>> 20, t.length);
	}

	static Batch newBatch(long id, long records)
	{
		Batch b = new Batch();
		b.id = id;
		b.parts = new Rec[PARTS][];
		long nb = records / PARTS != 0 ? records / PARTS : 1;
		for (int p = 0; p < PARTS; p++)
			b.parts[p] = new Rec[(int)nb];
		return b;
	}

	static void addRecord(Batch b, long key, long val)
	{
		Rec r = new Rec();
		r.key = key;
		r.val = val;
		byte[] p = new byte[PAYLOAD];
		for (int i = 0; i < PAYLOAD; i++)
			p[i] = payloadByte(key, b.id, i);
		r.payload = p;
		Rec[] t = partOf(b, key);
		int k = bucket(t, key);
		r.chain = t[k];
		t[k] = r;
		b.n++;
		b.keySum += key;
	}

	/* The newest record of b with this key, if any, joins and leaves b. */
	static boolean join(Batch b, long key)
	{
		Rec[] t = partOf(b, key);
		int k = bucket(t, key);
		Rec prev = null, r = t[k];
		while (r != null && r.key != key) {
			prev = r;
			r = r.chain;
		}
		if (r == null)
			return false;
		int i = (int)Long.remainderUnsigned(r.val, PAYLOAD);
		if (r.payload[i] != payloadByte(key, b.id, i))
			bad++;
		joined += r.val + (r.payload[i] & 0xff);
		if (prev == null)
			t[k] = r.chain;
		else
			prev.chain = r.chain;
		b.matched++;
		b.matchedKeys += key;
		return true;
	}

	/* The window closes over b: aggregate what the join left of it. */
	static long close(Batch b)
	{
		long n = 0, keys = 0, agg = 0;
		for (int p = 0; p < PARTS; p++) {
			for (Rec head : b.parts[p]) {
				for (Rec r = head; r != null; r = r.chain) {
					int i = (int)Long.remainderUnsigned(r.key, PAYLOAD);
					if (r.payload[i] != payloadByte(r.key, b.id, i)
					    || Long.remainderUnsigned(r.key, PARTS) != p)
						bad++;
					agg += r.val ^ (r.payload[i] & 0xff);
					keys += r.key;
					n++;
				}
			}
		}
		if (n + b.matched != b.n || keys + b.matchedKeys != b.keySum) {
			System.err.printf("window: batch %d closed with %d records and %d matched (built "
			                          + "%d)%s%n",
			                  b.id, n, b.matched, b.n,
			                  keys + b.matchedKeys != b.keySum ? ", key sum differs" : "");
			bad++;
		}
		return agg;
	}

	public static void main(String[] argv)
	{
		Harness h = Harness.parse("window", "Window", 110000, 1, argv);
		if (h.size > Integer.MAX_VALUE)
			h.fail(2, "--size is at most " + Integer.MAX_VALUE);
		SplitMix rng = new SplitMix(h.seed);
		long keys = h.size != 0 ? h.size : 1;
		long hits = 0, closed = 0;
		for (int s = 0; s < STEPS; s++) {
			/* The oldest batch leaves the window before the new one comes. */
			if (s >= WINDOW) {
				Batch old = window[s % WINDOW];
				window[s % WINDOW] = null;
				closed += close(old);
			}
			Batch b = newBatch(s, h.size);
			int older = s < SPAN ? s : SPAN;
			for (long i = 0; i < h.size; i++) {
				long key = Long.remainderUnsigned(rng.next(), keys);
				long val = rng.next();
				addRecord(b, key, val);
				for (int q = 0; q < PROBES; q++) {
					long pick = rng.next();
					if (older != 0
					    && join(window[(int)((s - 1 - Long.remainderUnsigned(pick, older))
					                         % WINDOW)],
					            key))
						hits++;
				}
			}
			window[s % WINDOW] = b;
			if ((s + 1) % (STEPS / 8) == 0)
				h.progress("step %d/%d, %d join hits, %d bad", s + 1, STEPS, hits, bad);
		}
		/* The end of the stream closes the window over the batches left. */
		for (int s = STEPS > WINDOW ? STEPS - WINDOW : 0; s < STEPS; s++)
			closed += close(window[s % WINDOW]);
		boolean ok = bad == 0;
		if (!ok)
			System.err.printf("window: %d records failed their checks%n", bad);
		h.finish(joined ^ closed ^ hits, ok);
	}
}
