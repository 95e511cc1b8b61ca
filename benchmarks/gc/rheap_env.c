#include <stdio.h>
#include <stdlib.h>

#include "rheap_env.h"

void rhb_opts_default(rhb_opts *o)
{
	*o = (rhb_opts){.heap_mib = RHB_DEFAULT_HEAP_MIB};
}

int rhb_opts_table(rhb_opts *o, gcb_opt *out)
{
	const gcb_opt t[] = {
	        {"heap-mib", GCB_OPT_U64, &o->heap_mib, NULL, 16, 1 << 20,
	         "rheap heap size in MiB (address space reserved; RSS grows with use)"},
	        {"region-kib", GCB_OPT_U64, &o->region_kib, NULL, 0, 1 << 20,
	         "rheap region size in KiB, 0 = chosen from the heap size"},
	        {"young-fraction", GCB_OPT_F64, NULL, &o->young_fraction, 0, 0.99,
	         "eden share of free regions, 0 = rheap's default"},
	        {"pause-budget-ms", GCB_OPT_F64, NULL, &o->pause_budget_ms, 0, 1000,
	         "gc.pause_budget_ms, 0 = rheap's default"},
	        {"copy-threads", GCB_OPT_U64, &o->copy_threads, NULL, 0, 8,
	         "gc.copy_threads, 0 = rheap's default (one per CPU, at most 4)"},
	        {"conservative", GCB_OPT_FLAG, &o->conservative, NULL, 0, 1,
	         "keep conservative native-stack scanning on (off: precise roots only)"},
	        {"verify", GCB_OPT_FLAG, &o->verify, NULL, 0, 1,
	         "run rheap's heap verifier after every collection (slow)"},
	};
	_Static_assert(sizeof t / sizeof t[0] == RHB_N_OPTS, "RHB_N_OPTS is stale");
	int n = RHB_N_OPTS;
	for (int i = 0; i < n; i++)
		out[i] = t[i];
	return n;
}

static _Noreturn void die(const char *what, const rh_error *err)
{
	fprintf(stderr, "rheap: %s: %s (%s)\n", what, err->msg, rh_status_name(err->code));
	exit(1);
}

void rhb_oom(void)
{
	const rh_error *err = rh_last_error();
	fprintf(stderr, "rheap: allocation failed: %s\n", err ? err->msg : "no error recorded");
	exit(1);
}

/* Every event of one collection arrives on the collecting thread while the
 * mutator is stopped, so the pause runs from the first event of a
 * gc_index to the last one. A collection is closed when the next one
 * begins or the run ends: the runtime names no single "last" phase. A
 * collection that begins within 50 us of the last one's end (a full
 * collection following a partial one with the mutator still stopped)
 * extends that pause: the mutator saw one. */
#define MERGE_NS 50000
static void on_event(const rh_event *ev, void *data)
{
	rhb_env *e = data;
	uint64_t now = gcb_now_ns();
	if (e->open && ev->gc_index != e->gc_index && now - e->last_ns < MERGE_NS) {
		e->gc_index = ev->gc_index;
	} else if (!e->open || ev->gc_index != e->gc_index) {
		if (e->open)
			gcb_pauses_end(&e->pauses, e->last_ns);
		gcb_pauses_begin(&e->pauses, now);
		e->gc_index = ev->gc_index;
		e->open = true;
	}
	e->last_ns = now;
}

void rhb_open(rhb_env *e, const rhb_opts *o)
{
	*e = (rhb_env){0};
	gcb_pauses_init(&e->pauses);
	uint64_t t0 = gcb_now_ns();
	rh_error err = {0};
	rh_config_default(&e->cfg);
	e->cfg.heap_size = o->heap_mib << 20;
	e->cfg.region_size = o->region_kib << 10;
	if (o->young_fraction > 0)
		e->cfg.young_fraction = o->young_fraction;
	if (o->pause_budget_ms > 0)
		e->cfg.pause_budget_us = (uint32_t)(o->pause_budget_ms * 1000.0);
	e->cfg.copy_threads = (int)o->copy_threads;
	e->cfg.verify = o->verify ? 1 : 0;
	if (rh_config_check(&e->cfg, &err) != RH_OK)
		die("bad heap settings", &err);
	e->h = rh_heap_open(&e->cfg, &err);
	if (!e->h)
		die("cannot open the heap", &err);
	e->setup_ns = gcb_now_ns() - t0;
}

rh_type_id rhb_type(rhb_env *e, const rh_type_desc *d)
{
	rh_error err = {0};
	rh_type_id t = rh_type_register(e->h, d, &err);
	if (t == 0)
		die(d->name, &err);
	return t;
}

void rhb_start(rhb_env *e, const rhb_opts *o)
{
	uint64_t t0 = gcb_now_ns();
	rh_error err = {0};
	e->conservative = o->conservative != 0;
	rh_set_conservative(e->h, e->conservative);
	rh_on_event(e->h, on_event, e);
	e->m = rh_mutator_attach(e->h, &err);
	if (!e->m)
		die("cannot attach the mutator", &err);
	e->setup_ns += gcb_now_ns() - t0;
}

void rhb_summarize(rhb_env *e, gcb_pause_summary *s)
{
	if (e->open) {
		gcb_pauses_end(&e->pauses, e->last_ns);
		e->open = false;
	}
	gcb_pauses_summarize(&e->pauses, s);
	rh_stats st;
	rh_stats_get(e->h, &st);
	uint64_t rt_count = st.collections + st.full_collections;
	if (s->count == 0 && rt_count > 0) {
		fprintf(stderr,
		        "rheap: no collection events arrived although the runtime "
		        "counted %llu collections; reporting rh_stats pauses instead\n",
		        (unsigned long long)rt_count);
		*s = (gcb_pause_summary){"rh_stats",
		                         rt_count,
		                         st.gc_ns,
		                         st.max_pause_ns,
		                         rh_stats_pause_percentile(e->h, 50.0),
		                         rh_stats_pause_percentile(e->h, 99.0),
		                         0};
	}
}

void rhb_report(rhb_env *e, gcb_json *j)
{
	rh_stats st;
	rh_stats_get(e->h, &st);
	gcb_json_obj_begin(j, "rheap");
	gcb_json_u64(j, "heap_size", e->cfg.heap_size);
	gcb_json_u64(j, "region_size", e->cfg.region_size);
	gcb_json_f64(j, "young_fraction", e->cfg.young_fraction);
	gcb_json_bool(j, "conservative", e->conservative);
	/* The runtime's own pause accounting, to cross-check the events. */
	gcb_json_u64(j, "rt_collections", st.collections);
	gcb_json_u64(j, "rt_full_collections", st.full_collections);
	gcb_json_u64(j, "rt_gc_ns", st.gc_ns);
	gcb_json_u64(j, "rt_max_pause_ns", st.max_pause_ns);
	gcb_json_u64(j, "rt_p99_pause_ns", rh_stats_pause_percentile(e->h, 99.0));
	gcb_json_u64(j, "peak_used_bytes", st.peak_used_bytes);
	gcb_json_obj_end(j);
	char *js = rh_stats_json(e->h);
	if (js) {
		gcb_json_raw(j, "rh_stats", js);
		free(js);
	}
}

void rhb_close(rhb_env *e)
{
	rh_mutator_detach(e->m);
	rh_heap_close(e->h);
	gcb_pauses_free(&e->pauses);
}
