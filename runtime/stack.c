/* Capturing and scanning a stopped mutator's native stack.
 *
 * A mutator captures its own registers and stack layout when it stops at a
 * safepoint or parks (a thread cannot be unwound from another thread). With
 * no VM frame ranges registered, the whole stack above the capture point is
 * one conservative segment; otherwise libunwind splits it into frames and
 * frames whose IP lies in a registered range become precise segments, handed
 * to the VM's callback instead of being scanned word by word.
 */
#include <stdlib.h>

#include "runtime/internal.h"

static void add_seg(rh_mutator *m, uintptr_t lo, uintptr_t hi, int precise)
{
	if (hi <= lo)
		return;
	if (m->n_segs == m->cap_segs) {
		size_t cap = m->cap_segs ? m->cap_segs * 2 : 32;
		rh_stack_seg *s = realloc(m->segs, cap * sizeof *s);
		if (!s)
			rh_panic("stack capture: out of memory");
		m->segs = s;
		m->cap_segs = cap;
	}
	m->segs[m->n_segs++] = (rh_stack_seg){lo, hi, precise};
}

static int range_of(rh_heap *h, size_t n_ranges, uintptr_t ip)
{
	for (size_t i = 0; i < n_ranges; i++)
		if (ip >= h->ranges[i].lo && ip < h->ranges[i].hi)
			return (int)i + 1;
	return 0;
}

__attribute__((noinline)) void rh_stack_capture(rh_mutator *m)
{
	rh_heap *h = m->heap;
	unw_getcontext(&m->regs);
	m->n_segs = 0;
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	pthread_mutex_lock(&h->lock);
	size_t n_ranges = h->n_ranges;
	pthread_mutex_unlock(&h->lock);
	if (n_ranges == 0) {
		add_seg(m, here, m->stack_hi, 0);
		return;
	}
	unw_cursor_t cur;
	if (unw_init_local(&cur, &m->regs) < 0) {
		add_seg(m, here, m->stack_hi, 0);
		return;
	}
	unw_word_t ip, sp;
	unw_get_reg(&cur, UNW_REG_SP, &sp);
	uintptr_t lo = (uintptr_t)sp;
	while (unw_step(&cur) > 0) {
		unw_get_reg(&cur, UNW_REG_IP, &ip);
		unw_word_t next_sp;
		unw_get_reg(&cur, UNW_REG_SP, &next_sp);
		/* After a step the cursor describes the caller: its frame is
		 * [sp, next frame's sp); the range it ran in is decided by ip. */
		if ((uintptr_t)next_sp < lo || (uintptr_t)next_sp > m->stack_hi)
			break; /* unwind went astray: the rest is scanned conservatively */
		lo = (uintptr_t)next_sp;
		unw_cursor_t probe = cur;
		unw_word_t caller_sp = 0;
		int p = range_of(h, n_ranges, (uintptr_t)ip - 1);
		if (p && unw_step(&probe) > 0 && unw_get_reg(&probe, UNW_REG_SP, &caller_sp) == 0 &&
		    (uintptr_t)caller_sp > lo && (uintptr_t)caller_sp <= m->stack_hi) {
			add_seg(m, lo, (uintptr_t)caller_sp, p);
		}
	}
	/* Everything not claimed by a precise frame is conservative. */
	size_t n_precise = m->n_segs;
	uintptr_t at = here;
	for (size_t i = 0; i < n_precise; i++) {
		add_seg(m, at, m->segs[i].lo, 0);
		at = m->segs[i].hi;
	}
	add_seg(m, at, m->stack_hi, 0);
}

/* Reading another thread's stack is deliberate: it is stopped (or parked
 * and forbidden to touch its heap references). */
__attribute__((no_sanitize("address", "thread"))) static void scan_words(uintptr_t lo, uintptr_t hi,
                                                                         rh_word_fn fn, void *ctx)
{
	for (uintptr_t p = (lo + 7) & ~(uintptr_t)7; p + 8 <= hi; p += 8)
		fn(ctx, *(volatile uintptr_t *)p);
}

void rh_stack_scan(rh_mutator *m, rh_word_fn conservative, rh_slot_visitor precise, void *ctx)
{
	rh_heap *h = m->heap;
	for (rh_frame *f = m->frames; f; f = f->prev)
		for (size_t i = 0; i < f->n; i++)
			precise(ctx, &f->slots[i]);
	for (size_t i = 0; i < m->n_segs; i++) {
		rh_stack_seg *s = &m->segs[i];
		if (s->precise) {
			rh_frame_range *r = &h->ranges[s->precise - 1];
			r->fn(s->lo, s->hi, precise, ctx, r->data);
		} else if (h->conservative) {
			scan_words(s->lo, s->hi, conservative, ctx);
		}
	}
	if (h->conservative)
		scan_words((uintptr_t)&m->regs, (uintptr_t)&m->regs + sizeof m->regs, conservative,
		           ctx);
}
