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

/* The region whose remembered set takes a reference to target (a
 * humongous object's head region) and target's word in it. */
static rh_region *target_region(rh_heap *h, uintptr_t target, size_t *word)
{
	rh_region *tr = rh_region_head(h, rh_region_of(h, target));
	*word = (target - tr->start) >> 3;
	return tr;
}

void rh_remember(rh_heap *h, uintptr_t slot, uintptr_t target)
{
	size_t word;
	rh_region *tr = target_region(h, target, &word);
	uint64_t card = rh_card_of(h, slot);
	/* rset.D3: the target bit only for the tracers. */
	int added = h->offload_on ? rh_remset_add(&tr->remset, card, word, rh_remset_words(h, tr))
	                          : rh_remset_add_card(&tr->remset, card);
	if (added < 0)
		rh_panic("remembered set: out of memory");
	h->remset_cards += (uint64_t)added;
}

/* rset.D3: how many entries ahead file_buffer starts loading. */
#define FILE_AHEAD 8

static void prefetch_entry(rh_heap *h, uintptr_t slot, uintptr_t target)
{
	size_t word;
	rh_region *tr = target_region(h, target, &word);
	rh_remset_prefetch(&tr->remset, rh_card_of(h, slot), word);
}

static void file_buffer(rh_heap *h, rh_bqbuf *b)
{
	for (size_t i = 0; i < b->n && i < FILE_AHEAD; i++)
		prefetch_entry(h, b->e[i][0], b->e[i][1]);
	for (size_t i = 0; i < b->n; i++) {
		if (i + FILE_AHEAD < b->n)
			prefetch_entry(h, b->e[i + FILE_AHEAD][0], b->e[i + FILE_AHEAD][1]);
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

/* scratch.K3: spare buffers are kept for reuse up to what the last pauses'
 * lists took (rset.D1), at least SPARE_MIN. A pause that re-records the
 * references of 400,000 promoted objects (cc, after its graph is built)
 * lists 400 buffers; with 64 kept, the rest were freed after filing, and
 * every such pause faulted 6 MiB of fresh pages in again. */
#define SPARE_MIN 64

static void spare(rh_heap *h, rh_bqbuf *b)
{
	if (h->bq_n_spare >= (h->bq_spare_max > SPARE_MIN ? h->bq_spare_max : SPARE_MIN)) {
		free(b);
		return;
	}
	b->n = 0;
	b->next = h->bq_spare;
	h->bq_spare = b;
	h->bq_n_spare++;
}

rh_bqbuf *rh_bq_new(void)
{
	rh_bqbuf *b = malloc(sizeof *b);
	if (!b)
		rh_panic("write barrier: out of memory for a buffer");
	b->n = 0;
	b->next = NULL;
	return b;
}

static rh_bqbuf *take_spare(rh_heap *h)
{
	rh_bqbuf *b = h->bq_spare;
	if (!b)
		return rh_bq_new();
	h->bq_spare = b->next;
	h->bq_n_spare--;
	b->n = 0;
	return b;
}

/* A filled buffer to the transfer thread's list (remset_lock held). */
static void queue_full(rh_heap *h, rh_bqbuf *b)
{
	b->next = h->bq_full;
	h->bq_full = b;
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
		uint64_t t0 = rh_now_ns();
		h->transfer_entries += b->n;
		file_buffer(h, b);
		h->transfer_ns += rh_now_ns() - t0;
		spare(h, b);
		/* rset.D1: one buffer per hold, so that a mutator's hand-over
		 * never waits behind a pause's backlog. */
		pthread_mutex_unlock(&h->remset_lock);
		pthread_mutex_lock(&h->remset_lock);
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
	/* What filing cost outside the pauses (rset.D1): the pauses' times
	 * leave it out, as the JVM's leave out G1's refinement threads. */
	rh_log(RH_LOG_DEBUG, "gc", "transfer thread: %llu entries filed in %.2f ms",
	       (unsigned long long)h->transfer_entries, (double)h->transfer_ns / 1e6);
	rh_bqbuf *lists[3] = {h->bq_full, h->bq_spare, h->bq_pause};
	if (h->bq_pause)
		h->bq_pause->next = NULL;
	for (int i = 0; i < 3; i++)
		while (lists[i]) {
			rh_bqbuf *b = lists[i];
			lists[i] = b->next;
			free(b);
		}
	h->bq_full = h->bq_spare = h->bq_pause = NULL;
	h->bq_n_spare = 0;
}

void rh_bq_flush(rh_mutator *m)
{
	rh_heap *h = m->heap;
	if (!m->bq || m->bq->n == 0)
		return;
	pthread_mutex_lock(&h->remset_lock);
	queue_full(h, m->bq);
	m->bq = take_spare(h);
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
	if (!m->bq)
		m->bq = rh_bq_new();
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
		spare(h, b);
	}
	if (h->bq_pause)
		file_buffer(h, h->bq_pause);
	for (rh_mutator *m = h->mutators; m; m = m->next)
		if (m->bq)
			file_buffer(h, m->bq);
}

/* rset.D1: a survivor's cross-region reference, listed in this pause
 * (which holds remset_lock) and filed by the transfer thread after it. */
void rh_remember_later(rh_heap *h, uintptr_t slot, uintptr_t target)
{
	if (h->offload_on) {
		/* rset.D2: the bit now, for the tracers; the card after. */
		size_t word;
		rh_region *tr = target_region(h, target, &word);
		int bit = rh_remset_set_target(&tr->remset, word, rh_remset_words(h, tr));
		if (bit < 0)
			rh_panic("remembered set: out of memory");
		/* A new bit is a new root of tr's marking: publish sends its
		 * roots again, as it did when the new card changed n_cards. */
		if (bit)
			tr->roots_cards = SIZE_MAX;
		tr->cards_pending = h->refresh.pause;
	}
	rh_bqbuf *b = h->bq_pause;
	if (!b || b->n == RH_BQ_CAP) {
		if (b)
			queue_full(h, b);
		b = h->bq_pause = take_spare(h);
		h->bq_pause_bufs++;
	}
	b->e[b->n][0] = slot;
	b->e[b->n][1] = target;
	b->n++;
}

/* The pause ends (remset_lock still held): its list to the transfer
 * thread. */
void rh_barrier_hand_over(rh_heap *h)
{
	/* scratch.K3: room for this pause's list, decaying by an eighth a
	 * pause, bounded by scratch.K2's limit. */
	uint32_t want = h->bq_spare_max - h->bq_spare_max / 8;
	if (want < h->bq_pause_bufs)
		want = h->bq_pause_bufs;
	size_t most = h->scratch.limit / sizeof(rh_bqbuf);
	h->bq_spare_max = want < most ? want : (uint32_t)most;
	h->bq_pause_bufs = 0;
	rh_bqbuf *b = h->bq_pause;
	if (!b || !b->n)
		return;
	queue_full(h, b);
	h->bq_pause = NULL;
	pthread_cond_signal(&h->bq_cond);
}

void rh_bq_deal(rh_heap *h, rh_bqbuf **chains, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		chains[i] = NULL;
	for (unsigned i = 0; h->bq_spare; i = (i + 1) % n) {
		rh_bqbuf *b = h->bq_spare;
		h->bq_spare = b->next;
		b->n = 0;
		b->next = chains[i];
		chains[i] = b;
	}
	h->bq_n_spare = 0;
}

void rh_bq_take_back(rh_heap *h, rh_bqbuf *chain)
{
	while (chain) {
		rh_bqbuf *b = chain;
		chain = b->next;
		if (b->n) {
			queue_full(h, b);
			h->bq_pause_bufs++; /* scratch.K3 */
		} else {
			spare(h, b);
		}
	}
}

/* Every remembered set was just cleared for a full collection to
 * rebuild: the references this pause listed name places objects had
 * before it (rset.D1). */
void rh_barrier_discard(rh_heap *h)
{
	while (h->bq_full) {
		rh_bqbuf *b = h->bq_full;
		h->bq_full = b->next;
		spare(h, b);
	}
	if (h->bq_pause)
		h->bq_pause->n = 0;
}
