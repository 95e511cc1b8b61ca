/* The post-write barrier's slow path and the remembered-set transfer thread.
 *
 * A cross-region store whose source is not in eden is queued as <slot,
 * value> in the mutator's buffer. Full buffers go to a list that the
 * transfer thread files into the target regions' remembered sets. Eden
 * sources are skipped: every collection collects all of eden, so their
 * slots are found by tracing. Before a collection reads remembered sets,
 * rh_barrier_drain() files everything still queued, so no entry is missed.
 */
#include <stdlib.h>

#include "runtime/internal.h"

void rh_remember(rh_heap *h, uintptr_t slot, uintptr_t target)
{
	rh_region *tr = rh_region_head(h, rh_region_of(h, target));
	uint64_t card = (slot - h->base) >> RH_CARD_SHIFT;
	int added = rh_remset_add(&tr->remset, card, (target - tr->start) >> 3,
	                          (tr->kind == RH_REGION_HUMONGOUS ? tr->span : 1) *
	                                  h->region_size / 8);
	if (added < 0)
		rh_panic("remembered set: out of memory");
	h->remset_cards += (uint64_t)added;
}

static void file_buffer(rh_heap *h, rh_bqbuf *b)
{
	for (size_t i = 0; i < b->n; i++) {
		uintptr_t slot = b->e[i][0], val = b->e[i][1];
		/* The target may have been freed since the store (the slot then
		 * no longer holds it, or the object died); nothing to file. */
		rh_region *tr = rh_region_of(h, val);
		if (tr->kind == RH_REGION_FREE)
			continue;
		rh_remember(h, slot, val);
	}
	b->n = 0;
}

static void *transfer_main(void *arg)
{
	rh_heap *h = arg;
	pthread_mutex_lock(&h->remset_lock);
	while (!h->transfer_stop) {
		rh_bqbuf *b = h->bq_full;
		if (!b) {
			pthread_cond_wait(&h->bq_cond, &h->remset_lock);
			continue;
		}
		h->bq_full = b->next;
		file_buffer(h, b);
		b->next = h->bq_spare;
		h->bq_spare = b;
	}
	pthread_mutex_unlock(&h->remset_lock);
	return NULL;
}

int rh_barrier_start(rh_heap *h)
{
	if (pthread_create(&h->transfer, NULL, transfer_main, h) != 0)
		return RH_EIO;
	return RH_OK;
}

void rh_barrier_stop(rh_heap *h)
{
	if (!h->transfer)
		return;
	pthread_mutex_lock(&h->remset_lock);
	h->transfer_stop = true;
	pthread_cond_broadcast(&h->bq_cond);
	pthread_mutex_unlock(&h->remset_lock);
	pthread_join(h->transfer, NULL);
	h->transfer = 0;
	rh_bqbuf *lists[2] = {h->bq_full, h->bq_spare};
	for (int i = 0; i < 2; i++)
		while (lists[i]) {
			rh_bqbuf *b = lists[i];
			lists[i] = b->next;
			free(b);
		}
	h->bq_full = h->bq_spare = NULL;
}

void rh_bq_flush(rh_mutator *m)
{
	rh_heap *h = m->heap;
	if (!m->bq || m->bq->n == 0)
		return;
	pthread_mutex_lock(&h->remset_lock);
	m->bq->next = h->bq_full;
	h->bq_full = m->bq;
	m->bq = h->bq_spare;
	if (m->bq)
		h->bq_spare = m->bq->next;
	pthread_cond_signal(&h->bq_cond);
	pthread_mutex_unlock(&h->remset_lock);
}

void rh_barrier_slow(rh_mutator *m, void **slot, void *val)
{
	rh_heap *h = m->heap;
	rh_region *sr = rh_region_of(h, (uintptr_t)slot);
	/* rset.R1: eden sources are found by tracing; the rest are filed. */
	if (sr->kind == RH_REGION_EDEN)
		return;
	if (!m->bq) {
		m->bq = malloc(sizeof *m->bq);
		if (!m->bq)
			rh_panic("write barrier: out of memory");
		m->bq->n = 0;
	}
	m->bq->e[m->bq->n][0] = (uintptr_t)slot;
	m->bq->e[m->bq->n][1] = (uintptr_t)val;
	if (++m->bq->n == RH_BQ_CAP)
		rh_bq_flush(m);
	m->barrier_slow++;
}

void rh_barrier_drain(rh_heap *h)
{
	while (h->bq_full) {
		rh_bqbuf *b = h->bq_full;
		h->bq_full = b->next;
		file_buffer(h, b);
		b->next = h->bq_spare;
		h->bq_spare = b;
	}
	for (rh_mutator *m = h->mutators; m; m = m->next)
		if (m->bq)
			file_buffer(h, m->bq);
}
