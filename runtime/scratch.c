/* Scratch buffers of the collector's pauses (docs/collector.md, "Scratch
 * buffers"). The lists a pause builds grow to about the same size from one
 * pause to the next (the remembered cards' slots, the copying threads'
 * stacks); freed at each pause's end, glibc gave their pages back to the
 * kernel (large blocks are mapped apart, and a thread's arena is trimmed),
 * and the next pause took a page fault for each page again: 500-4,900 a
 * pause in cc, at 10-14 µs each on this class of virtual machine. */
#include <stdlib.h>

#include "common/common.h"
#include "gc/layout.h"

#include "runtime/scratch.h"

void rh_scratch_init(rh_scratch *s, size_t limit)
{
	*s = (rh_scratch){.limit = limit};
}

void rh_scratch_fini(rh_scratch *s)
{
	for (unsigned i = 0; i < RH_SCR_N; i++)
		free(s->buf[i].p);
	*s = (rh_scratch){.limit = s->limit};
}

void *rh_scratch_take(rh_scratch *s, unsigned id, size_t *cap)
{
	rh_scratch_buf *b = &s->buf[id];
	void *p = b->p;
	*cap = p ? b->cap : 0;
	s->held -= b->bytes;
	*b = (rh_scratch_buf){.taken_cap = *cap};
	return p;
}

void rh_scratch_put(rh_scratch *s, unsigned id, void *p, size_t cap, size_t elem)
{
	rh_scratch_buf *b = &s->buf[id];
	if (!p)
		return;
	/* scratch.K1: one holder at a time, so the slot is empty (taken). */
	if (b->p)
		rh_panic("scratch buffer %u put while another is held", id);
	size_t bytes = cap * elem;
	/* scratch.K2: past the limit, the buffer goes back to the allocator;
	 * the next pause that needs it grows it again. */
	if (s->held + bytes > s->limit) {
		free(p);
		*b = (rh_scratch_buf){0};
		s->dropped++;
		return;
	}
	/* scratch.K4: a list that grew in this pause faulted its new pages
	 * in; the next pause finds twice the room written ahead. */
	size_t ahead = cap > b->taken_cap ? 2 * bytes : 0;
	*b = (rh_scratch_buf){.p = p, .cap = cap, .bytes = bytes, .ahead = ahead};
	s->held += bytes;
}

/* scratch.K4: the buffer grown to b->ahead bytes, unless that would pass
 * K2's limit. Its content is dead between pauses, but realloc keeps the
 * pages the pause wrote (a large block is remapped, a small one copied):
 * writing them again costs no fault. Every page is written, since the
 * pause may have left part of its room unused. */
static bool enlarge(rh_scratch *s, rh_scratch_buf *b)
{
	size_t elem = b->bytes / b->cap;
	if (s->held - b->bytes + b->ahead > s->limit)
		return false;
	void *n = realloc(b->p, b->ahead);
	if (!n)
		return false;
	s->held += b->ahead - b->bytes;
	b->p = n;
	b->bytes = b->ahead;
	b->touched = 0;
	b->cap = b->ahead / elem;
	return true;
}

bool rh_scratch_ahead_step(rh_scratch *s)
{
	for (unsigned i = 0; i < RH_SCR_N; i++) {
		rh_scratch_buf *b = &s->buf[i];
		if (!b->ahead || !b->p)
			continue;
		if (b->bytes < b->ahead && !enlarge(s, b)) {
			b->ahead = 0;
			continue;
		}
		/* One write a page: the page's first write, the costly one on
		 * this class of virtual machine (region.P2), happens here. */
		size_t end = b->touched + RH_SCRATCH_STEP < b->bytes ? b->touched + RH_SCRATCH_STEP
		                                                     : b->bytes;
		for (size_t o = b->touched; o < end; o += RH_PAGE_SIZE)
			((volatile char *)b->p)[o] = 0;
		b->touched = end;
		if (end == b->bytes)
			b->ahead = 0;
		return true;
	}
	return false;
}
