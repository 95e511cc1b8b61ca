#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gcb_pauses.h"

uint64_t gcb_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void gcb_pauses_init(gcb_pauses *p)
{
	*p = (gcb_pauses){0};
	/* calloc maps untouched pages lazily: only pauses actually recorded
	 * count towards peak RSS, and that cost is the same on both sides. */
	p->ns = calloc(GCB_PAUSES_CAP, sizeof *p->ns);
	if (!p->ns) {
		fprintf(stderr, "gc-bench: cannot reserve the pause array\n");
		exit(1);
	}
}

void gcb_pauses_free(gcb_pauses *p)
{
	free(p->ns);
	p->ns = NULL;
}

void gcb_pauses_begin(gcb_pauses *p, uint64_t now_ns)
{
	p->open_ns = now_ns;
}

void gcb_pauses_end(gcb_pauses *p, uint64_t now_ns)
{
	if (p->open_ns == 0)
		return; /* an end without a begin: the collector's bug, not a pause */
	uint64_t d = now_ns - p->open_ns;
	p->open_ns = 0;
	if (p->count < GCB_PAUSES_CAP)
		p->ns[p->count] = d;
	p->count++;
	p->total_ns += d;
	if (d > p->max_ns)
		p->max_ns = d;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

uint64_t gcb_pauses_percentile(gcb_pauses *p, double pct)
{
	uint64_t n = p->count < GCB_PAUSES_CAP ? p->count : GCB_PAUSES_CAP;
	if (n == 0)
		return 0;
	qsort(p->ns, n, sizeof *p->ns, cmp_u64);
	uint64_t rank = (uint64_t)ceil(pct / 100.0 * (double)n);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return p->ns[rank - 1];
}

void gcb_pauses_summarize(gcb_pauses *p, gcb_pause_summary *s)
{
	s->source = "events";
	s->count = p->count;
	s->total_ns = p->total_ns;
	s->max_ns = p->max_ns;
	s->p50_ns = gcb_pauses_percentile(p, 50.0);
	s->p99_ns = gcb_pauses_percentile(p, 99.0);
	s->dropped = p->count > GCB_PAUSES_CAP ? p->count - GCB_PAUSES_CAP : 0;
}
