/* Mutator threads and the stop-the-world handshake.
 *
 * Protocol (docs/runtime.md): a collector sets stw_active under heap->lock
 * and raises every mutator's poll flag; a RUNNING mutator that polls captures
 * its stack and registers, becomes STOPPED and waits; PARKED mutators
 * captured theirs when they parked. The collector proceeds once no mutator
 * is RUNNING. Unpark and the end of a safepoint wait until stw_active is
 * clear, so no mutator runs heap code during a collection.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/internal.h"

static void check_mutator(rh_mutator *m, const char *fn)
{
#if RH_DEBUG_CHECKS
	if (!m)
		rh_panic("%s: mutator is NULL", fn);
	if (m->magic == RH_MUTATOR_DEAD)
		rh_panic("%s: mutator %p was detached", fn, (void *)m);
	if (m->magic != RH_MUTATOR_MAGIC)
		rh_panic("%s: %p is not an attached mutator", fn, (void *)m);
	if (!pthread_equal(m->thread, pthread_self()))
		rh_panic("%s: mutator %p used from a thread other than the one that attached it",
		         fn, (void *)m);
#else
	(void)m;
	(void)fn;
#endif
}

rh_mutator *rh_mutator_attach(rh_heap *h, rh_error *err)
{
	rh_mutator *m = calloc(1, sizeof *m);
	if (!m) {
		rh_err_set(err, RH_ENOMEM, "rh_mutator_attach: out of memory");
		return NULL;
	}
	pthread_attr_t attr;
	void *stack_lo = NULL;
	size_t stack_size = 0;
	if (pthread_getattr_np(pthread_self(), &attr) != 0 ||
	    pthread_attr_getstack(&attr, &stack_lo, &stack_size) != 0) {
		free(m);
		rh_err_set(err, RH_EIO, "rh_mutator_attach: cannot find this thread's stack");
		return NULL;
	}
	pthread_attr_destroy(&attr);
	m->stack_hi = (uintptr_t)stack_lo + stack_size;
	m->magic = RH_MUTATOR_MAGIC;
	m->heap = h;
	m->thread = pthread_self();
	m->fast.region_shift = h->region_shift;
	m->fast.heap_lo = h->base;
	m->fast.heap_size = h->size;
	m->fast.checks = RH_DEBUG_CHECKS;

	pthread_mutex_lock(&h->lock);
#if RH_DEBUG_CHECKS
	for (rh_mutator *o = h->mutators; o; o = o->next)
		if (pthread_equal(o->thread, m->thread))
			rh_panic("rh_mutator_attach: this thread already has mutator %p attached",
			         (void *)o);
#endif
	/* Joining during a collection would race with it: wait. */
	while (h->stw_active)
		pthread_cond_wait(&h->cond, &h->lock);
	if (!h->types_closed && h->remote) {
		/* Tracers trace with this table: it is final now. */
		char *json = rh_typetab_to_json(&h->types);
		rh_error e;
		int rc = json ? rh_remote_send_types(h->remote, json, &e)
		              : rh_err_set(&e, RH_ENOMEM, "out of memory");
		free(json);
		if (rc != RH_OK) {
			pthread_mutex_unlock(&h->lock);
			free(m);
			rh_err_set(err, rc, "rh_mutator_attach: shipping the type table: %s",
			           e.msg);
			return NULL;
		}
	}
	h->types_closed = true;
	m->fast.satb = h->satb_on;
	m->fast.types = h->types.sizes;
	m->fast.n_types = h->types.n;
	m->state = RH_M_RUNNING;
	m->next = h->mutators;
	if (h->mutators)
		h->mutators->prev = m;
	h->mutators = m;
	h->n_mutators++;
	pthread_mutex_unlock(&h->lock);
	return m;
}

void rh_mutator_detach(rh_mutator *m)
{
	check_mutator(m, "rh_mutator_detach");
	RH_CHECK(m->state == RH_M_RUNNING,
	         "rh_mutator_detach: mutator %p is parked; unpark it first", (void *)m);
	RH_CHECK(m->frames == NULL,
	         "rh_mutator_detach: mutator %p still has shadow-stack frames pushed (roots held)",
	         (void *)m);
	rh_heap *h = m->heap;
	pthread_mutex_lock(&h->lock);
	while (h->stw_active) {
		/* A collection is starting: it may wait for us; take part. */
		pthread_mutex_unlock(&h->lock);
		rh_safepoint_slow(m);
		pthread_mutex_lock(&h->lock);
	}
	rh_tlab_retire(m);
	if (m->prev)
		m->prev->next = m->next;
	else
		h->mutators = m->next;
	if (m->next)
		m->next->prev = m->prev;
	h->n_mutators--;
	pthread_mutex_lock(&h->stats_lock);
	h->stats.bytes_allocated += m->bytes_allocated;
	h->stats.slow_allocs += m->slow_allocs;
	h->stats.barrier_slow += m->barrier_slow;
	pthread_mutex_unlock(&h->stats_lock);
	pthread_mutex_unlock(&h->lock);
	rh_bq_flush(m);
	rh_satb_flush(m);
	free(m->bq);
	m->bq = NULL;
	m->magic = RH_MUTATOR_DEAD;
#if RH_DEBUG_CHECKS
	/* Keep the memory so that a use after detach is reported, not UB. */
	pthread_mutex_lock(&h->lock);
	m->next = h->graveyard;
	h->graveyard = m;
	pthread_mutex_unlock(&h->lock);
#else
	free(m->segs);
	free(m);
#endif
}

void rh_mutator_park(rh_mutator *m)
{
	check_mutator(m, "rh_mutator_park");
	RH_CHECK(m->state == RH_M_RUNNING, "rh_mutator_park: mutator %p is already parked",
	         (void *)m);
	rh_heap *h = m->heap;
	rh_stack_capture(m);
	pthread_mutex_lock(&h->lock);
	m->state = RH_M_PARKED;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
}

void rh_mutator_unpark(rh_mutator *m)
{
	check_mutator(m, "rh_mutator_unpark");
	RH_CHECK(m->state == RH_M_PARKED, "rh_mutator_unpark: mutator %p is not parked", (void *)m);
	rh_heap *h = m->heap;
	pthread_mutex_lock(&h->lock);
	/* stw.S1: no RUNNING mutator while a collector is active. */
	while (h->stw_active)
		pthread_cond_wait(&h->cond, &h->lock);
	m->state = RH_M_RUNNING;
	__atomic_store_n(&m->fast.poll, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&h->lock);
}

void rh_safepoint_slow(rh_mutator *m)
{
	check_mutator(m, "rh_safepoint");
	rh_heap *h = m->heap;
	rh_stack_capture(m);
	pthread_mutex_lock(&h->lock);
	/* stw.S1: a polling mutator stops until the collector is done. */
	if (h->stw_active) {
		m->state = RH_M_STOPPED;
		pthread_cond_broadcast(&h->cond);
		while (h->stw_active)
			pthread_cond_wait(&h->cond, &h->lock);
		m->state = RH_M_RUNNING;
	}
	__atomic_store_n(&m->fast.poll, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&h->lock);
}

bool rh_stw_begin(rh_heap *h, rh_mutator *self)
{
	if (self)
		rh_stack_capture(self);
	pthread_mutex_lock(&h->lock);
	if (h->stw_active) {
		if (self) {
			self->state = RH_M_STOPPED;
			pthread_cond_broadcast(&h->cond);
		}
		while (h->stw_active)
			pthread_cond_wait(&h->cond, &h->lock);
		if (self) {
			self->state = RH_M_RUNNING;
			__atomic_store_n(&self->fast.poll, 0, __ATOMIC_RELAXED);
		}
		pthread_mutex_unlock(&h->lock);
		return false;
	}
	/* stw.S2: tested and set under heap->lock, so one collector. */
	h->stw_active = true;
	if (self)
		self->state = RH_M_COLLECTING;
	for (rh_mutator *m = h->mutators; m; m = m->next)
		__atomic_store_n(&m->fast.poll, 1, __ATOMIC_RELEASE);
	for (;;) {
		bool running = false;
		for (rh_mutator *m = h->mutators; m; m = m->next)
			running |= m->state == RH_M_RUNNING;
		if (!running)
			break;
		pthread_cond_wait(&h->cond, &h->lock);
	}
	pthread_mutex_unlock(&h->lock);
	return true;
}

void rh_stw_end(rh_heap *h)
{
	pthread_mutex_lock(&h->lock);
	h->stw_active = false;
	for (rh_mutator *m = h->mutators; m; m = m->next) {
		__atomic_store_n(&m->fast.poll, 0, __ATOMIC_RELAXED);
		if (m->state == RH_M_COLLECTING)
			m->state = RH_M_RUNNING;
	}
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
}

void rh_push_frame(rh_mutator *m, rh_frame *f, void **slots, size_t n)
{
	check_mutator(m, "rh_push_frame");
	RH_CHECK(f && (slots || n == 0), "rh_push_frame: NULL frame or slots");
	f->slots = slots;
	f->n = n;
	f->prev = m->frames;
	m->frames = f;
}

void rh_pop_frame(rh_mutator *m, rh_frame *f)
{
	check_mutator(m, "rh_pop_frame");
	RH_CHECK(m->frames == f,
	         "rh_pop_frame: frame %p is not the innermost frame (%p): frames must be popped in "
	         "LIFO order",
	         (void *)f, (void *)m->frames);
	m->frames = f->prev;
}

void rh_checked_alloc(void *mv, uint32_t t)
{
	rh_mutator *m = mv;
	check_mutator(m, "rh_alloc");
	if (m->state != RH_M_RUNNING)
		rh_panic("rh_alloc: mutator %p is parked; unpark before allocating", (void *)m);
	if (t == 0 || t >= m->fast.n_types)
		rh_panic("rh_alloc: type id %u is not registered", t);
}

void rh_checked_barrier(void *mv, void **slot)
{
	rh_mutator *m = mv;
	check_mutator(m, "rh_write_ref");
	if (m->state != RH_M_RUNNING)
		rh_panic("rh_write_ref: mutator %p is parked; unpark before touching the heap",
		         (void *)m);
	if ((uintptr_t)slot & 7)
		rh_panic("rh_write_ref: slot %p is not 8-byte aligned", (void *)slot);
	rh_heap *h = m->heap;
	if (!rh_in_heap(h, (uintptr_t)slot))
		rh_panic("rh_write_ref: slot %p is not in the heap; store into frame and global "
		         "slots directly",
		         (void *)slot);
	rh_region *r = rh_region_head(h, rh_region_of(h, (uintptr_t)slot));
	if (r->kind == RH_REGION_FREE || (uintptr_t)slot < r->start || (uintptr_t)slot >= r->top)
		rh_panic("rh_write_ref: slot %p is not inside an allocated object", (void *)slot);
}
