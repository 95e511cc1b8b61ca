/* binary-trees, the Java port of benchmarks/suite/binary_trees.c (the
 * schedule of benchmarks/gc/gcb_workload.h, same checksum: the nodes
 * counted): a stretch tree of depth max+1, a long-lived tree of depth max
 * kept to the end, and for each depth d in 4, 6, ... max, 2^(max-d+4)
 * short-lived trees of depth d, each counted right after it is built.
 * --size is the maximum depth. */
public final class BinaryTrees {
	static final int MIN_DEPTH = 4;
	static final int MAX_DEPTH = 26;

	static final class Node {
		Node left, right;

		Node(Node left, Node right)
		{
			this.left = left;
			this.right = right;
		}
	}

	/* Children first, then the parent, as bt_make allocates them. */
	static Node make(long depth)
	{
		if (depth == 0)
			return new Node(null, null);
		Node l = make(depth - 1);
		Node r = make(depth - 1);
		return new Node(l, r);
	}

	static long count(Node n)
	{
		long c = 1;
		if (n.left != null)
			c += count(n.left);
		if (n.right != null)
			c += count(n.right);
		return c;
	}

	static long treeNodes(long depth)
	{
		return (2L << depth) - 1;
	}

	static long iterations(long max, long depth)
	{
		return 1L << (max - depth + MIN_DEPTH);
	}

	public static void main(String[] argv)
	{
		Harness h = Harness.parse("binary-trees", "BinaryTrees", 19, 1, argv);
		if (h.size > MAX_DEPTH - 1)
			h.fail(2, "--size is at most " + (MAX_DEPTH - 1));
		/* At least one round above the minimum, as bt_params_fix. */
		long max = Math.max(h.size, MIN_DEPTH + 2);
		long expected = treeNodes(max + 1) + treeNodes(max);
		for (long d = MIN_DEPTH; d <= max; d += 2)
			expected += iterations(max, d) * treeNodes(d);

		Node tree = make(max + 1);
		long sum = count(tree);
		tree = null;
		Node longLived = make(max);
		for (long d = MIN_DEPTH; d <= max; d += 2) {
			long iters = iterations(max, d);
			for (long i = 0; i < iters; i++) {
				tree = make(d);
				sum += count(tree);
				tree = null;
			}
			h.progress("%d trees of depth %d", iters, d);
		}
		sum += count(longLived);
		boolean ok = sum == expected;
		if (!ok)
			System.err.printf("binary-trees: counted %d nodes, expected %d%n", sum, expected);
		h.finish(sum, ok);
	}
}
