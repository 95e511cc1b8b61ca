// mtree (benchmarks/suite/mtree.c) in plain Java 17: N threads, each with
// its own long-lived tree and its own churn; total work and live data do
// not depend on N. Same sizes, seed, splitmix64 sequence and checksum as
// the C workload:
//   java -cp DIR MTree --size N [--seed S] [--threads T]
// prints one line "checksum <unsigned decimal>" and exits 1 when its own
// check fails (a count differs from the closed form or a subtree's size).
public final class MTree {
	static final long MIN_TREE = 32, SPREAD = 2016, MEAN_TREE = 1039;
	static final long CHURN = 16, RING = 16, CHECKS = 5;

	static final class Node {
		Node left, right;
		long size;
	}

	static long rand(long state) {
		long z = state + 0x9e3779b97f4a7c15L;
		z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
		z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
		return z ^ (z >>> 31);
	}

	static long treeSize(long seed, long j) {
		return MIN_TREE + Long.remainderUnsigned(rand(seed + j * 0x9e3779b97f4a7c15L), SPREAD);
	}

	static long share(long total, int n, int i) {
		return total / n + (i < total % n ? 1 : 0);
	}

	static Node make(long n) {
		if (n == 0)
			return null;
		long left = (n - 1) / 2;
		Node l = make(left), r = make(n - 1 - left);
		Node p = new Node();
		p.size = n;
		p.left = l;
		p.right = r;
		return p;
	}

	final long seed, size, trees;
	final int threads;
	final long[] sums, bads;

	MTree(long size, long seed, int threads) {
		this.size = size;
		this.seed = seed;
		this.threads = threads;
		this.trees = CHURN * size / MEAN_TREE;
		this.sums = new long[threads];
		this.bads = new long[threads];
	}

	// Nodes counted; bad[0] counts nodes whose size field disagrees.
	static long count(Node p, long[] bad) {
		if (p == null)
			return 0;
		long c = 1 + count(p.left, bad) + count(p.right, bad);
		if (c != p.size)
			bad[0]++;
		return c;
	}

	static void checkTree(Node p, long[] bad) {
		if (p != null && count(p, bad) != p.size)
			bad[0]++;
	}

	void work(int i) {
		long nodes = share(size, threads, i), ringLen = share(RING, threads, i);
		long[] sum = {0}, bad = {0};
		Node longLived = make(nodes);
		Node[] rs = new Node[(int) ringLen];
		checkLong(longLived, nodes, sum, bad);
		long mine = share(trees, threads, i), k = 0;
		long quarter = 1;
		for (long j = i; j < trees; j += threads, k++) {
			long n = treeSize(seed, j);
			Node tree = make(n);
			long c = count(tree, bad);
			sum[0] += c;
			if (c != n)
				bad[0]++;
			int slot = (int) (k % ringLen);
			checkTree(rs[slot], bad);
			rs[slot] = tree;
			for (; quarter < CHECKS && k + 1 >= quarter * mine / (CHECKS - 1); quarter++)
				checkLong(longLived, nodes, sum, bad);
		}
		for (; quarter < CHECKS; quarter++)
			checkLong(longLived, nodes, sum, bad);
		for (Node p : rs)
			checkTree(p, bad);
		sums[i] = sum[0];
		bads[i] = bad[0];
	}

	static void checkLong(Node root, long nodes, long[] sum, long[] bad) {
		long c = count(root, bad);
		sum[0] += c;
		if (c != nodes)
			bad[0]++;
	}

	static long parse(String opt, String v) {
		try {
			long x = Long.parseUnsignedLong(v);
			return x;
		} catch (NumberFormatException e) {
			System.err.println("MTree: " + opt + ": '" + v + "' is not a non-negative integer");
			System.exit(2);
			return 0;
		}
	}

	public static void main(String[] args) throws InterruptedException {
		long t0 = System.nanoTime(); /* as Harness: work_ns from main's start */
		long size = 2000000, seed = 42, threads = 1;
		for (int a = 0; a < args.length; a += 2) {
			if (a + 1 >= args.length) {
				System.err.println("usage: MTree --size N [--seed S] [--threads T]");
				System.exit(2);
			}
			switch (args[a]) {
			case "--size" -> size = parse(args[a], args[a + 1]);
			case "--seed" -> seed = parse(args[a], args[a + 1]);
			case "--threads" -> threads = parse(args[a], args[a + 1]);
			default -> {
				System.err.println("usage: MTree --size N [--seed S] [--threads T]");
				System.exit(2);
			}
			}
		}
		if (size < 64 * MEAN_TREE || size > (1L << 40) || threads < 1 || threads > RING) {
			System.err.println("MTree: --size must be in " + 64 * MEAN_TREE + ".." + (1L << 40)
			                   + " and --threads in 1.." + RING);
			System.exit(2);
		}
		MTree mt = new MTree(size, seed, (int) threads);
		Thread[] ts = new Thread[mt.threads];
		for (int i = 1; i < mt.threads; i++) {
			final int idx = i;
			ts[i] = new Thread(() -> mt.work(idx));
			ts[i].start();
		}
		mt.work(0);
		for (int i = 1; i < mt.threads; i++)
			ts[i].join();
		long expected = CHECKS * size, sum = 0, bad = 0;
		for (long j = 0; j < mt.trees; j++)
			expected += treeSize(seed, j);
		for (int i = 0; i < mt.threads; i++) {
			sum += mt.sums[i];
			bad += mt.bads[i];
		}
		System.err.println("work_ns " + (System.nanoTime() - t0));
		System.out.println("checksum " + Long.toUnsignedString(sum));
		if (sum != expected || bad != 0) {
			System.err.println("MTree: counted " + Long.toUnsignedString(sum) + " nodes (expected "
			                   + Long.toUnsignedString(expected) + "), " + bad + " bad");
			System.exit(1);
		}
	}
}
