/* list-scan, the Java port of benchmarks/suite/listscan.c (same shape, sizes,
 * seed and checksum): a data set of PARTITIONS linked lists of elements,
 * each with a PAYLOAD-byte array, built in shuffled partition order and
 * scanned SCANS times; every other scan replaces each payload, every scan
 * allocates a short-lived tuple per element. --size is the number of
 * elements. */
public final class ListScan {
	static final int PARTITIONS = 64;
	static final int PAYLOAD = 48;
	static final int SCANS = 10;

	static final class Elem {
		Elem next;
		byte[] payload;
		long key;
		long version;
	}

	static final class Tuple {
		long key, sum;
	}

	/* The tuple is stored here so that it is allocated: C2's escape
	 * analysis would otherwise remove an object that never leaves the
	 * loop, while the C workload allocates one per element. */
	static Tuple lastTuple;

	static void fill(byte[] b, long key, long version)
	{
		for (int i = 0; i < PAYLOAD; i++)
			b[i] = (byte)((key >>> (i % 8 * 8)) ^ (version + i));
	}

	static long payloadSum(byte[] b)
	{
		long s = 0;
		for (int i = 0; i < PAYLOAD; i++)
			s += b[i] & 0xff;
		return s;
	}

	public static void main(String[] argv)
	{
		Harness h = Harness.parse("listscan", "ListScan", 2000000, 1, argv);
		Elem[] heads = new Elem[PARTITIONS];
		Elem[] tails = new Elem[PARTITIONS];
		SplitMix rng = new SplitMix(h.seed);
		long keySum = 0;
		for (long i = 0; i < h.size; i++) {
			long key = rng.next();
			keySum += key;
			Elem e = new Elem();
			e.key = key;
			byte[] p = new byte[PAYLOAD];
			fill(p, key, 0);
			e.payload = p;
			int b = (int)Long.remainderUnsigned(key, PARTITIONS);
			if (tails[b] != null)
				tails[b].next = e;
			else
				heads[b] = e;
			tails[b] = e;
		}
		tails = null; /* the tails were only for building */
		h.progress("built %d elements in %d partitions", h.size, PARTITIONS);

		boolean ok = true;
		long check = 0;
		for (int s = 0; s < SCANS; s++) {
			boolean transform = s % 2 == 1;
			long n = 0, keys = 0, sum = 0;
			for (int b = 0; b < PARTITIONS; b++) {
				for (Elem e = heads[b]; e != null; e = e.next) {
					long ps = payloadSum(e.payload);
					keys += e.key;
					sum += ps;
					n++;
					Tuple t = new Tuple(); /* the action's output: dies at once */
					t.key = e.key;
					t.sum = ps;
					lastTuple = t;
					if (transform) {
						byte[] p = new byte[PAYLOAD];
						fill(p, e.key, e.version + 1);
						e.version++;
						e.payload = p;
					}
				}
			}
			if (n != h.size || keys != keySum) {
				System.err.printf("listscan: scan %d saw %d elements (expected %d)%s%n", s, n,
				                  h.size, keys != keySum ? ", key sum differs" : "");
				ok = false;
			}
			check += sum;
			h.progress("scan %d/%d%s", s + 1, SCANS, transform ? " (transform)" : "");
		}
		lastTuple = null;
		h.finish(check ^ keySum, ok);
	}
}
