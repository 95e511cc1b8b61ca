import java.util.Locale;

/* What every port shares with the C harness (benchmarks/suite/harness.c):
 * the options --size, --seed (default 42) and --threads, progress lines on
 * stderr, and the end of a run. The contract benchmarks/run-jvm-compare
 * and the jvm test rely on: stdout gets exactly one line, "checksum N"
 * (unsigned decimal), and the exit status is 0; a failed self-check
 * prints why on stderr and exits 1; bad options exit 2. The last stderr
 * line, "work_ns N", is the time from main's start to the result: the
 * work alone, without the JVM's start-up, as the C e2e_ns leaves out the
 * heap's opening. */
final class Harness {
	final String name; /* the C workload's, as in its progress lines */
	private final String cls;
	final long t0 = System.nanoTime();
	long size;
	long seed = 42;
	int threads = 1;

	private Harness(String name, String cls, long size)
	{
		this.name = name;
		this.cls = cls;
		this.size = size;
	}

	/* maxThreads 1: a single-threaded workload, which refuses --threads 2
	 * rather than run something other than what was asked. */
	static Harness parse(String name, String cls, long defaultSize, int maxThreads, String[] argv)
	{
		Harness h = new Harness(name, cls, defaultSize);
		for (int i = 0; i < argv.length; i++) {
			String a = argv[i];
			if (a.equals("-h") || a.equals("--help"))
				h.usage(0);
			if (i + 1 >= argv.length)
				h.usage(2);
			String v = argv[++i];
			if (a.equals("--size"))
				h.size = h.number(a, v);
			else if (a.equals("--seed"))
				h.seed = h.number(a, v);
			else if (a.equals("--threads")) {
				long t = h.number(a, v);
				if (t < 1 || t > maxThreads)
					h.fail(2, "--threads must be in 1.." + maxThreads);
				h.threads = (int)t;
			} else
				h.usage(2);
		}
		return h;
	}

	private long number(String opt, String v)
	{
		try {
			if (!v.startsWith("-") && !v.startsWith("+"))
				return Long.parseUnsignedLong(v);
		} catch (NumberFormatException e) {
			/* reported below */
		}
		fail(2, opt + ": '" + v + "' is not a non-negative integer");
		return 0;
	}

	private void usage(int code)
	{
		(code == 0 ? System.out : System.err)
		        .printf("usage: java %s [--size N] [--seed N] [--threads N]%n"
		                        + "The Java port of rh-suite-%s: prints \"checksum N\" on stdout,"
		                        + " progress on stderr.%n",
		                cls, name);
		System.exit(code);
	}

	void fail(int code, String why)
	{
		System.err.println(name + ": " + why);
		System.exit(code);
	}

	void progress(String fmt, Object... args)
	{
		System.err.printf(Locale.ROOT, "[%s %7.2fs] %s%n", name, (System.nanoTime() - t0) / 1e9,
		                  String.format(Locale.ROOT, fmt, args));
	}

	/* Never returns. */
	void finish(long checksum, boolean ok)
	{
		long ns = System.nanoTime() - t0;
		System.err.println("work_ns " + ns);
		if (!ok)
			fail(1, "result check FAILED (checksum " + Long.toUnsignedString(checksum) + ")");
		System.out.println("checksum " + Long.toUnsignedString(checksum));
		System.out.flush();
		System.exit(0);
	}
}
