/* The object graph PageRank and CC run on, the Java port of
 * benchmarks/suite/graph.c: a vertex array in id order, then edges drawn
 * in random order, each appended to its source's int[] of neighbour ids,
 * which is replaced by one twice the size when full. A vertex's value is
 * a box object, replaced on every update. */
final class Graph {
	static final class Vertex {
		int[] edges; /* ids; its length is the capacity */
		Box value;
		long id;
		long deg; /* ids used in edges */
	}

	/* C's rs_box is a union of a double and a uint64_t: here the bits, read
	 * as a double through Double.longBitsToDouble where PageRank needs one. */
	static final class Box {
		long bits;
	}

	final Vertex[] vertices;
	final int n;

	/* h.size vertices with deg edges each on average (both directions when
	 * undirected); every vertex's box holds 0. */
	Graph(Harness h, long deg, boolean undirected)
	{
		if (h.size > Integer.MAX_VALUE - 8)
			h.fail(2, "--size is at most " + (Integer.MAX_VALUE - 8));
		n = (int)h.size;
		vertices = new Vertex[n];
		for (int i = 0; i < n; i++) {
			Vertex v = new Vertex();
			v.id = i;
			vertices[i] = v;
			set(i, 0);
		}
		SplitMix rng = new SplitMix(h.seed * 7919 + 1);
		long edges = (long)n * deg;
		for (long k = 0; k < edges; k++) {
			int src = (int)Long.remainderUnsigned(rng.next(), n);
			double x = rng.unit();
			/* Skewed towards low ids (x^2): a few vertices are hubs. */
			int dst = (int)((double)n * x * x);
			append(src, dst);
			if (undirected)
				append(dst, src);
		}
	}

	private void append(int v, int u)
	{
		Vertex x = vertices[v];
		int cap = x.edges != null ? x.edges.length : 0;
		if (x.deg == cap) {
			int[] na = new int[cap != 0 ? 2 * cap : 4];
			if (cap != 0)
				System.arraycopy(x.edges, 0, na, 0, cap);
			x.edges = na;
		}
		x.edges[(int)x.deg++] = u;
	}

	/* A fresh box holding bits, stored into vertex i. */
	void set(int i, long bits)
	{
		Box b = new Box();
		b.bits = bits;
		vertices[i].value = b;
	}
}
