/* PageRank, the Java port of benchmarks/suite/pagerank.c (same graph,
 * sizes, seed and checksum: the id of the highest-ranked vertex): each
 * iteration pushes every vertex's rank along its out-edges into a fresh
 * contribution array, then gives every vertex a new rank box. --size is the
 * number of vertices; 16 edges each on average. */
public final class PageRank {
	static final int DEGREE = 16;
	static final int ITERATIONS = 10;
	static final double DAMPING = 0.85;

	static double rank(Graph.Vertex v)
	{
		return Double.longBitsToDouble(v.value.bits);
	}

	public static void main(String[] argv)
	{
		Harness h = Harness.parse("pagerank", "PageRank", 1000000, 1, argv);
		Graph g = new Graph(h, DEGREE, false);
		int n = g.n;
		/* In place, as the C workload writes its boxes' double. */
		double init = 1.0 / (double)n;
		for (int i = 0; i < n; i++)
			g.vertices[i].value.bits = Double.doubleToRawLongBits(init);
		h.progress("built %d vertices, %d edges", n, (long)n * DEGREE);

		boolean ok = true;
		double total = 0;
		for (int it = 0; it < ITERATIONS; it++) {
			double[] contrib = new double[n];
			double dangling = 0;
			for (int i = 0; i < n; i++) {
				Graph.Vertex v = g.vertices[i];
				double r = rank(v);
				if (v.deg == 0) {
					dangling += r;
					continue;
				}
				double share = r / (double)v.deg;
				int[] ids = v.edges;
				for (int k = 0; k < v.deg; k++)
					contrib[ids[k]] += share;
			}
			double base = (1.0 - DAMPING + DAMPING * dangling) / (double)n;
			total = 0;
			for (int i = 0; i < n; i++) {
				double r = base + DAMPING * contrib[i];
				total += r;
				g.set(i, Double.doubleToRawLongBits(r));
			}
			contrib = null;
			h.progress("iteration %d/%d, rank sum %.6f", it + 1, ITERATIONS, total);
		}
		/* Dangling mass is spread, so the ranks stay a distribution. */
		if (!(Math.abs(total - 1.0) < 1e-6)) {
			System.err.printf("pagerank: ranks sum to %.9f, expected 1%n", total);
			ok = false;
		}
		long best = 0;
		double bestR = -1;
		for (int i = 0; i < n; i++) {
			double r = rank(g.vertices[i]);
			if (r > bestR) {
				bestR = r;
				best = i;
			}
		}
		h.finish(best, ok);
	}
}
