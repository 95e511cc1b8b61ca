/* GCBench (Ellis, Kovac and Boehm's shape), the Java port of
 * benchmarks/suite/gcbench.c (the schedule of benchmarks/gc/gcb_workload.h,
 * same checksum: the nodes counted): a stretch tree two deeper than
 * --size, a long-lived tree of depth --size built top-down and 500,000
 * long-lived doubles; then 4 rounds of, for each depth d in 4, 6, ...
 * --size, as many trees built top-down and bottom-up as keep the
 * allocation per depth about twice the stretch tree's. Every tree is
 * counted and its nodes checked. */
public final class GCBench {
	static final int MIN_DEPTH = 4;
	static final int MAX_DEPTH = 24;
	static final int ARRAY_SIZE = 500000;
	static final int ROUNDS = 4;

	static final class Node {
		Node left, right;
		int i, j; /* i = height of the subtree, j = a function of it */

		/* The stores of null are what gb_new_node does too. */
		Node(long height)
		{
			left = null;
			right = null;
			i = (int)height;
			j = (int)(height * 7 + 3);
		}
	}

	static long badNodes;

	/* Top-down: gives node its subtrees, both children allocated first. */
	static void populate(Node node, long height)
	{
		if (height == 0)
			return;
		Node l = new Node(height - 1);
		Node r = new Node(height - 1);
		node.left = l;
		node.right = r;
		populate(l, height - 1);
		populate(r, height - 1);
	}

	/* Bottom-up: children first, the parent last. */
	static Node make(long height)
	{
		if (height == 0)
			return new Node(0);
		Node l = make(height - 1);
		Node r = make(height - 1);
		Node n = new Node(height);
		n.left = l;
		n.right = r;
		return n;
	}

	/* A wrong node is counted in badNodes and its subtree not visited. */
	static long count(Node n, long height)
	{
		if (n.i != height || n.j != (int)(height * 7 + 3) || (height == 0) != (n.left == null)
		    || (height == 0) != (n.right == null)) {
			badNodes++;
			return 1;
		}
		if (height == 0)
			return 1;
		return 1 + count(n.left, height - 1) + count(n.right, height - 1);
	}

	static long iteration(long height)
	{
		Node t = new Node(height);
		populate(t, height);
		long sum = count(t, height);
		t = make(height);
		sum += count(t, height);
		return sum;
	}

	static long treeNodes(long depth)
	{
		return (2L << depth) - 1;
	}

	public static void main(String[] argv)
	{
		Harness h = Harness.parse("gcbench", "GCBench", 16, 1, argv);
		if (h.size + 2 > MAX_DEPTH || h.size < MIN_DEPTH)
			h.fail(2, "--size must be in " + MIN_DEPTH + ".." + (MAX_DEPTH - 2));
		long stretch = h.size + 2, longDepth = h.size, max = h.size;
		long perRound = 0;
		for (long d = MIN_DEPTH; d <= max; d += 2)
			perRound += 2 * (2 * treeNodes(stretch) / treeNodes(d)) * treeNodes(d);
		long expected = treeNodes(stretch) + ROUNDS * perRound + treeNodes(longDepth);

		Node t = make(stretch);
		long sum = count(t, stretch);
		t = new Node(longDepth);
		populate(t, longDepth);
		Node longLived = t;
		t = null;
		double[] array = new double[ARRAY_SIZE];
		for (int i = 0; i < ARRAY_SIZE; i++)
			array[i] = i * 0.5;
		for (int round = 0; round < ROUNDS; round++) {
			for (long d = MIN_DEPTH; d <= max; d += 2) {
				long iters = 2 * treeNodes(stretch) / treeNodes(d);
				for (long i = 0; i < iters; i++)
					sum += iteration(d);
			}
			h.progress("round %d/%d", round + 1, ROUNDS);
		}
		sum += count(longLived, longDepth);
		boolean ok = badNodes == 0 && array.length == ARRAY_SIZE;
		for (int i = 0; ok && i < ARRAY_SIZE; i++)
			ok = array[i] == i * 0.5;
		ok = ok && sum == expected;
		if (!ok)
			System.err.printf("gcbench: %d nodes counted (expected %d), %d bad%n", sum,
			                  expected, badNodes);
		h.finish(sum, ok);
	}
}
