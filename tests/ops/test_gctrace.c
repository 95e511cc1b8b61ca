/* The GC trace (operations.G1): at info level one well-formed, timestamped
 * line per collection, as many as rh_stats counts, with the kinds, pauses
 * and heap sizes the stats agree with; faults on a disaggregated heap. A
 * RHEAP_LOG_LEVEL that is not a level is named in a warning.
 *
 * usage: test-gctrace TRACERD local|shm
 *        test-gctrace --child   (the program: a heap from RHEAP_CONFIG or a
 *                                local 64 MiB one; prints its stats)
 */
#include "tests/ops/ops.h"
#include "tests/swap/proc.h"

static int child(void)
{
	rh_config c;
	rh_config_default(&c);
	c.heap_size = 64ull << 20;
	rh_error err;
	rh_heap *h = rh_heap_open(&c, &err);
	if (!h) {
		fprintf(stderr, "child: %s\n", err.msg);
		return 4;
	}
	rh_type_id node, blob;
	ops_node_types(h, &node, &blob, &err);
	rh_mutator *m = rh_mutator_attach(h, &err);
	void *slots[1] = {0};
	rh_frame f;
	rh_push_frame(m, &f, slots, 1);
	/* About 24 MiB kept, as much again garbage: partial collections, and
	 * with a small cache, evicted old regions. */
	ops_keep_list(m, node, blob, &slots[0], 24000, 1, 1000);
	rh_collect(m, 1);
	rh_collect(m, 0);
	slots[0] = NULL;
	rh_collect(m, 1);
	rh_pop_frame(m, &f);
	rh_stats s;
	rh_stats_get(h, &s);
	rh_mutator_detach(m);
	rh_heap_close(h);
	fprintf(stderr, "stats: %llu %llu %llu %llu %llu %llu\n", (unsigned long long)s.collections,
	        (unsigned long long)s.full_collections, (unsigned long long)s.csscs,
	        (unsigned long long)s.full_collections_remote, (unsigned long long)s.gc_ns,
	        (unsigned long long)s.heap_size);
	return 0;
}

static const char *self;

/* The child's stdout and stderr, with RHEAP_LOG_LEVEL=level and the
 * config (NULL: a local heap). */
static int run_child(const char *level, const char *config, char *out, size_t cap)
{
	setenv("RHEAP_LOG_LEVEL", level, 1);
	if (config)
		setenv("RHEAP_CONFIG", config, 1);
	else
		unsetenv("RHEAP_CONFIG");
	char *argv[] = {(char *)self, "--child", NULL};
	return proc_run(argv, PROC_BOTH, NULL, out, cap);
}

static void check_trace(const char *out, int disaggregated)
{
	unsigned long long parts = 0, fulls = 0, csscs = 0, remote = 0, gc_ns = 0, heap = 0;
	const char *st = strstr(out, "stats: ");
	REQUIRE(st && sscanf(st, "stats: %llu %llu %llu %llu %llu %llu", &parts, &fulls, &csscs,
	                     &remote, &gc_ns, &heap) == 6,
	        "the child ran and printed its stats: %.2000s", out);
	unsigned long long lines = 0, n_full = 0, n_remote = 0, n_cssc = 0;
	double pauses_ms = 0, last_t = 0;
	int ordered = 1, shaped = 1, faults_ok = 1, stamped = 1;
	for (const char *l = out; (l = strstr(l, "info gc: gc ")); l++) {
		const char *bol = l;
		while (bol > out && bol[-1] != '\n')
			bol--;
		const char *eol = strchr(l, '\n');
		char line[512], bad[256];
		snprintf(line, sizeof line, "%.*s", (int)(eol ? eol - bol : (long)strlen(bol)),
		         bol);
		stamped &= ops_log_well_formed(line, bad, sizeof bad);
		int pid;
		double t = -1;
		sscanf(line, "rheap[%d] [%lf", &pid, &t);
		ordered &= t >= last_t;
		last_t = t;
		unsigned long long idx;
		char kind[32];
		double ms, before, after, size;
		int k = sscanf(l,
		               "info gc: gc %llu %31[^:]: pause %lf ms, %lf -> %lf MiB of %lf MiB",
		               &idx, kind, &ms, &before, &after, &size);
		int ok = k == 6 && idx == lines && ms > 0 && before >= 0 && after >= 0 &&
		         before <= size && after <= size && size == (double)(heap >> 20);
		ok &= !strcmp(kind, "partial") || !strcmp(kind, "partial+cssc") ||
		      !strcmp(kind, "full") || !strcmp(kind, "full-by-tracers") ||
		      !strcmp(kind, "compaction"); /* a partial one (cssc.E3) */
		if (!ok && shaped)
			CHECK(0, "line %llu is well formed: %s", lines, line);
		shaped &= ok;
		faults_ok &= (strstr(line, ", faults ") != NULL) == disaggregated;
		n_full += !strncmp(kind, "full", 4);
		n_remote += !strcmp(kind, "full-by-tracers");
		n_cssc += !strcmp(kind, "partial+cssc");
		pauses_ms += ms;
		lines++;
	}
	NOTE("%llu lines; stats: %llu partial, %llu full (%llu by tracers), %llu CSSCs, %.2f ms of "
	     "pauses (%.2f in the lines)",
	     lines, parts, fulls, remote, csscs, (double)gc_ns / 1e6, pauses_ms);
	CHECK(lines > 3 && lines == parts + fulls,
	      "one line per collection: %llu lines, rh_stats %llu + %llu", lines, parts, fulls);
	CHECK(shaped, "every line has its index in order, a kind, a pause and the heap's size");
	CHECK(stamped && ordered, "every line has a timestamp, in order");
	CHECK(n_full == fulls && n_remote == remote && n_cssc == csscs,
	      "kinds as rh_stats counts them: full %llu/%llu, by tracers %llu/%llu, CSSC "
	      "%llu/%llu",
	      n_full, fulls, n_remote, remote, n_cssc, csscs);
	/* The lines split the pauses rh_stats records, no more, no less. */
	double want = (double)gc_ns / 1e6;
	CHECK(pauses_ms > want * 0.99 - 0.01 * (double)lines &&
	              pauses_ms < want * 1.01 + 0.01 * (double)lines,
	      "the lines' pauses add up to rh_stats' gc_ns (%.3f against %.3f ms)", pauses_ms,
	      want);
	CHECK(faults_ok, "faults on every line of a disaggregated heap, on none of a local one");
	if (disaggregated)
		CHECK(n_remote > 0, "the tracers' full collections are named as theirs");
}

int main(int argc, char **argv)
{
	self = argv[0];
	if (argc == 2 && !strcmp(argv[1], "--child"))
		return child();
	if (argc < 3) {
		fprintf(stderr, "usage: %s TRACERD local|shm\n", argv[0]);
		return 2;
	}
	static char out[1 << 20];
	cluster cl = {0};
	const char *config = NULL;
	int disagg = strcmp(argv[2], "local") != 0;
	if (disagg) {
		REQUIRE(cluster_start(&cl, argv[1], argv[2], 2, 64, 0.1, 3000, NULL) == 0,
		        "start two %s tracers", argv[2]);
		config = cl.config;
	}
	CHECK(run_child("info", config, out, sizeof out) == 0, "the child at info level: %.2000s",
	      out);
	check_trace(out, disagg);
	if (!disagg) {
		/* A level that is not one: a warning naming it and the levels,
		 * once, and the default (warn) kept: no info lines. */
		CHECK(run_child("verbose", NULL, out, sizeof out) == 0, "the child at 'verbose'");
		const char *w = strstr(out, "warn log: RHEAP_LOG_LEVEL 'verbose'");
		CHECK(w && strstr(w, "error, warn, info, debug") &&
		              !strstr(strstr(w, "RHEAP_LOG_LEVEL") + 1, "RHEAP_LOG_LEVEL") &&
		              !strstr(out, " info "),
		      "RHEAP_LOG_LEVEL=verbose: one warning naming it and the levels, logging at "
		      "warn: %.1000s",
		      out);
		CHECK(run_child("warn", NULL, out, sizeof out) == 0 && !strstr(out, "info gc"),
		      "at warn: no trace");
	}
	cluster_stop(&cl);
	return check_done();
}
