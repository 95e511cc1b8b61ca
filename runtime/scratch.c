/* Scratch buffers of the collector's pauses (docs/collector.md, "Scratch
 * buffers"). The lists a pause builds grow to about the same size from one
 * pause to the next (the remembered cards' slots, the copying threads'
 * stacks); freed at each pause's end, glibc gave their pages back to the
 * kernel (large blocks are mapped apart, and a thread's arena is trimmed),
 * and the next pause took a page fault for each page again: 500-4,900 a
 * pause in cc, at 10-14 µs each on this class of virtual machine. */
#include <stdlib.h>

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
	*b = (rh_scratch_buf){0};
	return p;
}

void rh_scratch_put(rh_scratch *s, unsigned id, void *p, size_t cap, size_t elem)
{
	rh_scratch_buf *b = &s->buf[id];
	if (!p)
		return;
	/* scratch.K1: one holder at a time; a buffer never put twice. */
	if (b->p)
		free(b->p);
	s->held -= b->bytes;
	size_t bytes = cap * elem;
	/* scratch.K2: past the limit, the buffer goes back to the allocator;
	 * the next pause that needs it grows it again. */
	if (s->held + bytes > s->limit) {
		free(p);
		*b = (rh_scratch_buf){0};
		s->dropped++;
		return;
	}
	*b = (rh_scratch_buf){.p = p, .cap = cap, .bytes = bytes};
	s->held += bytes;
}
