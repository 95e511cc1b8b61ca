#include <stdio.h>
#include <stdlib.h>

#include <gc/gc.h>

#include "bdwgc_env.h"

/* The collector calls back without a context argument. */
static gcb_pauses *pauses;

/* START/END bracket a whole collection: stopping the world, marking (with
 * the parallel markers if bdwgc started them), reclaim setup and
 * restarting the world. With one mutator thread all of it is pause. */
static void on_event(GC_EventType ev)
{
	if (ev == GC_EVENT_START)
		gcb_pauses_begin(pauses, gcb_now_ns());
	else if (ev == GC_EVENT_END)
		gcb_pauses_end(pauses, gcb_now_ns());
}

void bdw_env_init(gcb_pauses *p)
{
	pauses = p;
	GC_INIT();
	GC_set_on_collection_event(on_event);
}

void bdw_env_report(gcb_json *j)
{
	struct GC_prof_stats_s st;
	GC_get_prof_stats(&st, sizeof st);
	unsigned v = GC_get_version();
	char version[32];
	snprintf(version, sizeof version, "%u.%u.%u", v >> 16, (v >> 8) & 0xff, v & 0xff);
	gcb_json_obj_begin(j, "bdwgc");
	gcb_json_str(j, "version", version);
	gcb_json_u64(j, "gc_no", st.gc_no);
	gcb_json_u64(j, "heap_size", st.heapsize_full);
	gcb_json_u64(j, "obtained_from_os_bytes", st.obtained_from_os_bytes);
	gcb_json_u64(j, "total_bytes", GC_get_total_bytes());
	gcb_json_u64(j, "full_gc_total_ms", GC_get_full_gc_total_time());
	gcb_json_u64(j, "markers", (uint64_t)st.markers_m1 + 1);
	gcb_json_u64(j, "all_interior_pointers", (uint64_t)GC_get_all_interior_pointers());
	gcb_json_u64(j, "free_space_divisor", GC_get_free_space_divisor());
	gcb_json_obj_end(j);
}

void bdw_oom(void)
{
	fprintf(stderr, "bdwgc: out of memory\n");
	exit(1);
}
