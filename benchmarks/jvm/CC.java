/* Connected components by label propagation, the Java port of
 * benchmarks/suite/cc.c (same graph, sizes, seed and checksum: the number
 * of components): every vertex takes the smallest label among itself and
 * its neighbours, in place, until nothing changes; a changed label is a
 * new box. --size is the number of vertices; 4 undirected edges each on
 * average. */
public final class CC {
	static final int DEGREE = 4;
	static final int MAX_ROUNDS = 200;

	static long label(Graph.Vertex v)
	{
		return v.value.bits;
	}

	public static void main(String[] argv)
	{
		Harness h = Harness.parse("cc", "CC", 1000000, 1, argv);
		Graph g = new Graph(h, DEGREE, true);
		int n = g.n;
		Graph.Vertex[] vs = g.vertices;
		for (int i = 0; i < n; i++)
			g.set(i, i);
		h.progress("built %d vertices, %d undirected edges", n, (long)n * DEGREE);

		int round = 0;
		long changed = 1;
		while (changed != 0 && round < MAX_ROUNDS) {
			changed = 0;
			for (int i = 0; i < n; i++) {
				Graph.Vertex v = vs[i];
				long l = label(v);
				int[] ids = v.edges;
				for (int k = 0; k < v.deg; k++) {
					long m = label(vs[ids[k]]);
					if (Long.compareUnsigned(m, l) < 0)
						l = m;
				}
				if (Long.compareUnsigned(l, label(v)) < 0) {
					g.set(i, l);
					changed++;
				}
			}
			round++;
			h.progress("round %d: %d labels changed", round, changed);
		}
		/* A fixpoint: every edge joins equal labels, every label is a vertex
		 * id no larger than the vertex's own. */
		boolean ok = changed == 0;
		long components = 0;
		for (int i = 0; i < n && ok; i++) {
			Graph.Vertex v = vs[i];
			long l = label(v);
			if (l == i)
				components++;
			if (Long.compareUnsigned(l, i) > 0)
				ok = false;
			int[] ids = v.edges;
			for (int k = 0; k < v.deg && ok; k++)
				ok = label(vs[ids[k]]) == l;
		}
		if (!ok)
			System.err.printf("cc: labels are not a fixpoint after %d rounds%n", round);
		h.finish(components, ok);
	}
}
