#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

uint64_t rs_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static _Noreturn void usage(const char *workload, int code)
{
	fprintf(code ? stderr : stdout,
	        "usage: rh-suite-%s [--size N] [--config FILE] [--json FILE] [--status-dir DIR]\n"
	        "       [--mode LABEL] [--sample-ms N] [--seed N] [--threads T]\n"
	        "Prints a short summary; --json FILE writes the whole result as JSON\n"
	        "there (benchmarks/run reads it), --json - to stdout instead of the summary.\n"
	        "The heap comes from --config, or from RHEAP_CONFIG (set by `rheapctl run`),\n"
	        "which wins. --status-dir names the directory of the tracers' status files\n"
	        "(rheapctl's --state-dir). --threads runs T mutator threads (workloads that\n"
	        "have them). See docs/benchmarks.md, \"Benchmark suite\".\n",
	        workload);
	exit(code);
}

static uint64_t parse_u64(const char *workload, const char *opt, const char *v)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 0);
	if (errno || end == v || *end || v[0] == '-') {
		fprintf(stderr, "rh-suite-%s: %s: '%s' is not a non-negative integer\n", workload,
		        opt, v);
		exit(2);
	}
	return x;
}

void rs_init(rs_env *e, const char *workload, uint64_t default_size, int argc, char **argv)
{
	*e = (rs_env){.workload = workload,
	              .size = default_size,
	              .seed = 42,
	              .sample_ms = 100,
	              .threads = 1};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help"))
			usage(workload, 0);
		if (i + 1 >= argc)
			usage(workload, 2);
		const char *v = argv[++i];
		if (!strcmp(a, "--size"))
			e->size = parse_u64(workload, a, v);
		else if (!strcmp(a, "--seed"))
			e->seed = parse_u64(workload, a, v);
		else if (!strcmp(a, "--sample-ms"))
			e->sample_ms = parse_u64(workload, a, v);
		else if (!strcmp(a, "--config"))
			e->config_path = v;
		else if (!strcmp(a, "--json"))
			e->json_path = v;
		else if (!strcmp(a, "--status-dir"))
			e->status_dir = v;
		else if (!strcmp(a, "--mode"))
			e->mode = v;
		else if (!strcmp(a, "--threads"))
			e->threads = (unsigned)parse_u64(workload, a, v);
		else
			usage(workload, 2);
	}
	if (e->sample_ms == 0)
		e->sample_ms = 100;
	if (e->threads < 1 || e->threads > RS_MAX_THREADS) {
		fprintf(stderr, "rh-suite-%s: --threads must be in 1..%d\n", workload,
		        RS_MAX_THREADS);
		exit(2);
	}
	const char *env = getenv("RHEAP_CONFIG");
	if (env && *env)
		e->config_path = env;
	if (!e->config_path) {
		fprintf(stderr, "rh-suite-%s: no heap config: give --config or RHEAP_CONFIG\n",
		        workload);
		exit(2);
	}
}

static _Noreturn void die(const char *what, const rh_error *err)
{
	fprintf(stderr, "rh-suite: %s: %s (%s)\n", what, err->msg, rh_status_name(err->code));
	exit(1);
}

_Noreturn void rs_oom(void)
{
	const rh_error *err = rh_last_error();
	fprintf(stderr, "rh-suite: allocation failed: %s\n", err ? err->msg : "no error recorded");
	exit(1);
}

void rs_open(rs_env *e)
{
	rh_error err = {0};
	if (rh_config_load(e->config_path, &e->cfg, &err) != RH_OK)
		die("cannot load the config", &err); /* err->msg names the file */
	e->pauses = calloc(RS_MAX_PAUSES, sizeof *e->pauses);
	if (!e->pauses) {
		fprintf(stderr, "rh-suite: out of memory\n");
		exit(1);
	}
	/* rheapctl reports the tracers ready once they listen; a connection
	 * refused in between is retried, anything else is final. */
	for (int attempt = 0; attempt < 100; attempt++) {
		e->h = rh_heap_open_file(e->config_path, &err);
		if (e->h ||
		    (err.code != RH_EIO && err.code != RH_EPEER && err.code != RH_ETIMEDOUT))
			break;
		usleep(50000);
	}
	if (!e->h)
		die("cannot open the heap", &err);
}

rh_type_id rs_type(rs_env *e, const rh_type_desc *d)
{
	rh_error err = {0};
	rh_type_id t = rh_type_register(e->h, d, &err);
	if (t == 0)
		die(d->name, &err);
	return t;
}

/* All events of one collection arrive on the collecting thread, mutators
 * stopped, so a pause runs from the first event of its gc_index to the
 * last; it is closed when the next one begins or the run ends. */
static void on_event(const rh_event *ev, void *data)
{
	rs_env *e = data;
	uint64_t now = rs_now_ns();
	if (!e->open || ev->gc_index != e->cur_gc) {
		if (e->n_pauses == RS_MAX_PAUSES) {
			e->dropped_pauses++;
			e->open = false;
			return;
		}
		rs_pause *p = &e->pauses[e->n_pauses++];
		p->start_ns = now - e->t0_ns;
		p->dur_ns = 0;
		e->cur_gc = ev->gc_index;
		e->open = true;
	}
	rs_pause *p = &e->pauses[e->n_pauses - 1];
	p->dur_ns = now - e->t0_ns - p->start_ns;
	p->full |= ev->kind == RH_GC_FULL;
	p->remote |= ev->phase == RH_PHASE_REMOTE;
}

static bool status_file(const char *name)
{
	size_t n = strlen(name);
	return n > 7 && !strcmp(name + n - 7, ".status");
}

/* newer_than_ns (CLOCK_REALTIME): return -1 if a file is older, so the
 * caller can wait for a fresh one. */
static int read_tracers(const char *dir, rs_tracers *t, uint64_t newer_than_ns)
{
	*t = (rs_tracers){0};
	if (!dir)
		return 0;
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int stale = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!status_file(de->d_name))
			continue;
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		struct stat st;
		if (newer_than_ns && stat(path, &st) == 0 &&
		    (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec <
		            newer_than_ns)
			stale = -1;
		json_t *j = json_load_file(path, 0, NULL);
		if (!j)
			continue;
		uint64_t mark = (uint64_t)json_integer_value(json_object_get(j, "mark_ns"));
		t->n++;
		/* With replication, the copies a tracer keeps are its memory too. */
		t->bytes_held +=
		        (uint64_t)json_integer_value(json_object_get(j, "bytes_held")) +
		        (uint64_t)json_integer_value(json_object_get(j, "copy_bytes_held"));
		t->bytes_traced += (uint64_t)json_integer_value(json_object_get(j, "bytes_traced"));
		t->regions_evacuated +=
		        (uint64_t)json_integer_value(json_object_get(j, "regions_evacuated"));
		t->mark_ns += mark;
		if (mark > t->max_mark_ns)
			t->max_mark_ns = mark;
		json_decref(j);
	}
	closedir(d);
	return stale;
}

static void take_sample(rs_env *e)
{
	rh_stats st;
	rh_stats_get(e->h, &st);
	rs_tracers tr;
	read_tracers(e->status_dir, &tr, 0);
	rs_mem mem;
	rs_mem_read(&mem, e->cfg.heap_base, e->cfg.heap_size);
	rs_sample s = {rs_now_ns() - e->t0_ns,
	               st.faults,
	               st.readahead_pages,
	               st.bytes_fetched,
	               st.bytes_evicted,
	               st.gc_ns,
	               st.collections + st.full_collections,
	               tr.bytes_held,
	               mem.rss_anon_kib,
	               mem.heap_rss_kib};
	pthread_mutex_lock(&e->lock);
	rs_mem_max(&e->mem_peak, &mem);
	if (tr.bytes_held > e->max_tracer_held)
		e->max_tracer_held = tr.bytes_held;
	if (e->n_samples == e->cap_samples) {
		size_t cap = e->cap_samples ? 2 * e->cap_samples : 1024;
		rs_sample *p = realloc(e->samples, cap * sizeof *p);
		if (p) {
			e->samples = p;
			e->cap_samples = cap;
		}
	}
	if (e->n_samples < e->cap_samples)
		e->samples[e->n_samples++] = s;
	pthread_mutex_unlock(&e->lock);
}

/* Not a mutator: rh_stats_get may be called from any thread, and this one
 * never touches heap objects, so it never holds up a collection. */
static void *sampler_main(void *arg)
{
	rs_env *e = arg;
	pthread_mutex_lock(&e->lock);
	while (!e->stop) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t ns = (uint64_t)ts.tv_nsec + e->sample_ms * 1000000ull;
		ts.tv_sec += (time_t)(ns / 1000000000ull);
		ts.tv_nsec = (long)(ns % 1000000000ull);
		pthread_cond_timedwait(&e->wake, &e->lock, &ts);
		if (e->stop)
			break;
		pthread_mutex_unlock(&e->lock);
		take_sample(e);
		pthread_mutex_lock(&e->lock);
	}
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

void rs_start(rs_env *e)
{
	rh_error err = {0};
	if (e->threads > 1 && !e->multi) {
		fprintf(stderr, "rh-suite-%s: runs one mutator thread: --threads must be 1\n",
		        e->workload);
		exit(2);
	}
	/* Every workload keeps its references in shadow-stack frames and
	 * globals, as a precise VM does. */
	rh_set_conservative(e->h, false);
	rh_on_event(e->h, on_event, e);
	e->m = rh_mutator_attach(e->h, &err);
	if (!e->m)
		die("cannot attach the mutator", &err);
	pthread_mutex_init(&e->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->wake, &ca);
	pthread_condattr_destroy(&ca);
	e->t0_ns = rs_now_ns();
	take_sample(e);
	if (pthread_create(&e->sampler, NULL, sampler_main, e) != 0) {
		fprintf(stderr, "rh-suite: cannot start the sampler thread\n");
		exit(1);
	}
}

void rs_progress(const rs_env *e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "[%s %7.2fs] ", e->workload, (double)(rs_now_ns() - e->t0_ns) / 1e9);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static json_t *u64(uint64_t v)
{
	return json_integer((json_int_t)v);
}

static json_t *config_json(const rh_config *c)
{
	return json_pack("{s:f, s:o, s:s, s:b, s:s, s:b, s:o, s:o, s:f}", "cache_fraction",
	                 c->cache_fraction, "n_servers", u64(c->n_servers), "provider", c->provider,
	                 "offload", c->offload != 0, "order",
	                 c->order == RH_ORDER_BFS          ? "bfs"
	                 : c->order == RH_ORDER_DFS_STRICT ? "dfs-strict"
	                                                   : "dfs",
	                 "reorder", c->reorder != 0, "heap_size", u64(c->heap_size), "region_size",
	                 u64(c->region_size), "pause_budget_ms", c->pause_budget_us / 1000.0);
}

/* To the microsecond: the clock's jitter is larger, and 17 digits of it
 * only made the JSON hard to read. */
static json_t *ms_json(uint64_t ns)
{
	return json_real((double)((ns + 500) / 1000) / 1e3);
}

/* MB/s to one decimal. */
static json_t *mbps_json(double v)
{
	return json_real(round(v * 10) / 10);
}

static json_t *series_json(const rs_env *e)
{
	static const char *const names[] = {
	        "t_ms",  "faults", "readahead_pages",   "bytes_fetched", "bytes_evicted",
	        "gc_ns", "pauses", "tracer_bytes_held", "rss_anon_kib",  "heap_rss_kib"};
	enum { N = sizeof names / sizeof names[0] };
	json_t *o = json_object();
	json_t *a[N];
	for (int k = 0; k < N; k++) {
		a[k] = json_array();
		json_object_set_new(o, names[k], a[k]);
	}
	for (size_t i = 0; i < e->n_samples; i++) {
		const rs_sample *s = &e->samples[i];
		json_array_append_new(a[0], ms_json(s->t_ns));
		json_array_append_new(a[1], u64(s->faults));
		json_array_append_new(a[2], u64(s->readahead_pages));
		json_array_append_new(a[3], u64(s->bytes_fetched));
		json_array_append_new(a[4], u64(s->bytes_evicted));
		json_array_append_new(a[5], u64(s->gc_ns));
		json_array_append_new(a[6], u64(s->pauses));
		json_array_append_new(a[7], u64(s->tracer_bytes_held));
		json_array_append_new(a[8], u64(s->rss_anon_kib));
		json_array_append_new(a[9], u64(s->heap_rss_kib));
	}
	return o;
}

static double rate_mbps(uint64_t bytes, uint64_t ns)
{
	return ns ? (double)bytes * 1e3 / (double)ns : 0.0; /* 10^6 bytes per second */
}

/* Peaks of the samples (every --sample-ms and one at the end: a peak
 * between two samples is missed), the cache the config asked for, and
 * the kernel's own high-water mark of the whole resident set. */
static json_t *memory_json(const rs_env *e)
{
	const rs_mem *p = &e->mem_peak;
	uint64_t cache = e->cfg.n_servers
	                         ? (uint64_t)((double)e->cfg.heap_size * e->cfg.cache_fraction)
	                         : e->cfg.heap_size;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "peak_rss_anon_kib",
	                 u64(p->rss_anon_kib), "peak_heap_rss_kib", u64(p->heap_rss_kib),
	                 "peak_nonheap_anon_kib", u64(p->nonheap_anon_kib), "peak_rss_shmem_kib",
	                 u64(p->rss_shmem_kib), "peak_rss_file_kib", u64(p->rss_file_kib),
	                 "cache_kib", u64(cache / 1024), "max_rss_kib", u64((uint64_t)ru.ru_maxrss),
	                 "major_faults", u64((uint64_t)ru.ru_majflt));
}

static json_t *result_json(rs_env *e, const rh_stats *st, const rs_tracers *tr)
{
	uint64_t e2e = e->t1_ns - e->t0_ns;
	json_t *o = json_object();
	json_object_set_new(o, "workload", json_string(e->workload));
	json_object_set_new(o, "mode", json_string(e->mode ? e->mode : ""));
	json_object_set_new(o, "size", u64(e->size));
	json_object_set_new(o, "seed", u64(e->seed));
	json_object_set_new(o, "threads", u64(e->threads));
	json_object_set_new(o, "ok", json_boolean(e->ok));
	json_object_set_new(o, "checksum", u64(e->checksum));
	json_object_set_new(o, "config", config_json(&e->cfg));
	json_object_set_new(o, "e2e_ns", u64(e2e));
	json_object_set_new(o, "gc_ns", u64(st->gc_ns));
	json_object_set_new(o, "mutator_ns", u64(e2e > st->gc_ns ? e2e - st->gc_ns : 0));
	json_object_set_new(o, "pauses",
	                    json_pack("{s:o, s:o, s:o, s:o, s:o}", "count",
	                              u64(st->collections + st->full_collections), "p50_ns",
	                              u64(rh_stats_pause_percentile(e->h, 50)), "p99_ns",
	                              u64(rh_stats_pause_percentile(e->h, 99)), "max_ns",
	                              u64(st->max_pause_ns), "dropped", u64(e->dropped_pauses)));
	json_object_set_new(o, "collections", u64(st->collections));
	json_object_set_new(o, "full_collections", u64(st->full_collections));
	json_object_set_new(o, "csscs", u64(st->csscs));
	json_object_set_new(o, "faults", u64(st->faults));
	json_object_set_new(o, "readahead_pages", u64(st->readahead_pages));
	json_object_set_new(o, "bytes_fetched", u64(st->bytes_fetched));
	json_object_set_new(o, "bytes_evicted", u64(st->bytes_evicted));
	json_object_set_new(o, "bytes_allocated", u64(st->bytes_allocated));
	json_object_set_new(o, "bytes_marked_cpu", u64(st->bytes_marked_cpu));
	json_object_set_new(o, "bytes_marked_remote", u64(st->bytes_marked_remote));
	/* Partial collections mark while they copy (an empty MARK phase):
	 * the CPU side's tracing time is all three phases. */
	uint64_t cpu_trace_ns = st->phase_ns[RH_PHASE_MARK] + st->phase_ns[RH_PHASE_EVACUATE] +
	                        st->phase_ns[RH_PHASE_FIXUP];
	json_object_set_new(o, "cpu_mark_ns", u64(cpu_trace_ns));
	json_object_set_new(o, "cpu_trace_mbps",
	                    mbps_json(rate_mbps(st->bytes_marked_cpu, cpu_trace_ns)));
	json_object_set_new(o, "remote_trace_mbps",
	                    mbps_json(rate_mbps(tr->bytes_traced, tr->mark_ns)));
	json_object_set_new(o, "tracers",
	                    json_pack("{s:i, s:o, s:o, s:o, s:o, s:o}", "n", tr->n, "bytes_held",
	                              u64(tr->bytes_held), "max_bytes_held",
	                              u64(tr->bytes_held > e->max_tracer_held ? tr->bytes_held
	                                                                      : e->max_tracer_held),
	                              "bytes_traced", u64(tr->bytes_traced), "mark_ns",
	                              u64(tr->mark_ns), "regions_evacuated",
	                              u64(tr->regions_evacuated)));
	json_t *pl = json_array();
	for (size_t i = 0; i < e->n_pauses; i++) {
		const rs_pause *p = &e->pauses[i];
		json_array_append_new(pl, json_pack("[o, o, b, b]", ms_json(p->start_ns),
		                                    ms_json(p->dur_ns), p->full, p->remote));
	}
	json_object_set_new(o, "pause_list", pl);
	json_object_set_new(o, "memory", memory_json(e));
	json_object_set_new(o, "samples", series_json(e));
	char *raw = rh_stats_json(e->h);
	json_t *rs = raw ? json_loads(raw, 0, NULL) : NULL;
	free(raw);
	json_object_set_new(o, "rh_stats", rs ? rs : json_null());
	return o;
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* What a person running the workload by hand wants to see; the JSON
 * (--json) holds everything else. */
static void print_summary(const rs_env *e, const rh_stats *st)
{
	FILE *out = e->json_path && !strcmp(e->json_path, "-") ? stderr : stdout;
	uint64_t e2e = e->t1_ns - e->t0_ns;
	fprintf(out, "%s%s%s: %s, checksum %llu\n", e->workload, e->mode ? " " : "",
	        e->mode ? e->mode : "", e->ok ? "ok" : "FAILED", (unsigned long long)e->checksum);
	fprintf(out, "  time   %.2f s: mutator %.2f s, GC %.2f s\n", (double)e2e / 1e9,
	        (double)(e2e > st->gc_ns ? e2e - st->gc_ns : 0) / 1e9, (double)st->gc_ns / 1e9);
	fprintf(out, "  pauses %llu (%llu full): p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
	        (unsigned long long)(st->collections + st->full_collections),
	        (unsigned long long)st->full_collections,
	        (double)rh_stats_pause_percentile(e->h, 50) / 1e6,
	        (double)rh_stats_pause_percentile(e->h, 99) / 1e6, (double)st->max_pause_ns / 1e6);
	if (e->cfg.n_servers)
		fprintf(out,
		        "  pager  %llu faults, %llu readahead pages, %.0f MiB in, %.0f MiB out\n",
		        (unsigned long long)st->faults, (unsigned long long)st->readahead_pages,
		        (double)st->bytes_fetched / 1048576.0,
		        (double)st->bytes_evicted / 1048576.0);
}

int rs_finish(rs_env *e, uint64_t checksum, bool ok)
{
	e->t1_ns = rs_now_ns();
	e->checksum = checksum;
	e->ok = ok;
	pthread_mutex_lock(&e->lock);
	e->stop = true;
	pthread_cond_signal(&e->wake);
	pthread_mutex_unlock(&e->lock);
	pthread_join(e->sampler, NULL);
	take_sample(e);
	rh_stats st;
	rh_stats_get(e->h, &st);
	/* Tracers rewrite their status once a second: wait for one written
	 * after the run ended, so the totals cover all of it. */
	rs_tracers tr;
	uint64_t since = realtime_ns();
	for (int i = 0; i < 30 && read_tracers(e->status_dir, &tr, since) < 0; i++)
		usleep(50000);
	json_t *o = result_json(e, &st, &tr);
	int rc = 0;
	print_summary(e, &st);
	/* Ten significant digits hold a 300 s run's milliseconds to the
	 * microsecond (ms_json); "-" keeps the old JSON on stdout. */
	size_t flags = JSON_COMPACT | JSON_REAL_PRECISION(10);
	if (e->json_path && !strcmp(e->json_path, "-")) {
		json_dumpf(o, stdout, flags);
		putchar('\n');
	} else if (e->json_path) {
		if (json_dump_file(o, e->json_path, flags) != 0) {
			fprintf(stderr, "rh-suite: cannot write %s\n", e->json_path);
			rc = 1;
		} else {
			printf("results: %s\n", e->json_path);
		}
	}
	json_decref(o);
	rh_mutator_detach(e->m);
	rh_heap_close(e->h);
	free(e->pauses);
	free(e->samples);
	if (!ok)
		fprintf(stderr, "rh-suite-%s: result check FAILED\n", e->workload);
	return ok ? rc : 1;
}

typedef struct worker {
	rs_env *e;
	rs_thread_fn fn;
	void *arg;
	unsigned index;
	pthread_t tid;
} worker;

static void *worker_main(void *p)
{
	worker *w = p;
	rh_error err = {0};
	rh_mutator *m = rh_mutator_attach(w->e->h, &err);
	if (!m)
		die("cannot attach a worker's mutator", &err);
	w->fn(w->e, m, w->index, w->arg);
	rh_mutator_detach(m);
	return NULL;
}

void rs_run_threads(rs_env *e, rs_thread_fn fn, void *arg)
{
	worker w[RS_MAX_THREADS];
	for (unsigned i = 1; i < e->threads; i++) {
		w[i] = (worker){e, fn, arg, i, 0};
		if (pthread_create(&w[i].tid, NULL, worker_main, &w[i]) != 0) {
			fprintf(stderr, "rh-suite: cannot start mutator thread %u\n", i);
			exit(1);
		}
	}
	fn(e, e->m, 0, arg);
	rh_mutator_park(e->m);
	for (unsigned i = 1; i < e->threads; i++)
		pthread_join(w[i].tid, NULL);
	rh_mutator_unpark(e->m);
}
