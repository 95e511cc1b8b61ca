/* Restoring redundancy on spares (rebuild.h, docs/resilience.md, red.S1-S3).
 *
 * One thread, woken by a survived loss: for every slot the swap system has
 * down, the next unused spare says HELLO as that slot's server
 * (rh_remote_spare_hello), the control path takes it in (rh_remote_adopt:
 * pings and frees go to it), and the swap system rebuilds the slot's share
 * on it (rh_swap_rebuild). A spare that cannot be reached, or is lost
 * during its rebuild, is used up; the next one is tried. With none left the
 * heap runs on its copies, as without spares. */
#include <stdlib.h>

#include "runtime/internal.h"
#include "runtime/remote.h"
#include "swap/swap.h"

/* Slot i gets spare k. */
static void rebuild_one(rh_heap *h, size_t k, size_t i)
{
	rh_error e;
	rh_swap_host *sp = calloc(1, sizeof *sp);
	if (!sp) {
		rh_log(RH_LOG_ERROR, "rebuild", "out of memory for spare %zu", k);
		return;
	}
	if (rh_remote_spare_hello(h->remote, k, i, sp, &e) != RH_OK) {
		rh_log(RH_LOG_ERROR, "rebuild",
		       "spare %zu cannot take memory server %zu's place: %s", k, i, e.msg);
		free(sp);
		return;
	}
	if (rh_remote_adopt(h->remote, i, sp, &e) != RH_OK) {
		rh_log(RH_LOG_ERROR, "rebuild", "%s", e.msg);
		rh_tp_close(sp->conn);
		free(sp);
		return;
	}
	rh_log(RH_LOG_ERROR, "rebuild", "%s takes memory server %zu's place: rebuilding", sp->name,
	       i);
	/* The swap system owns sp from here; its connection is the remote's. */
	if (rh_swap_rebuild(h->swap, i, sp, &e) != RH_OK)
		rh_log(RH_LOG_ERROR, "rebuild", "the rebuild of memory server %zu failed: %s", i,
		       e.msg);
}

static void *rebuild_main(void *arg)
{
	rh_heap *h = arg;
	rh_rebuild *rb = &h->rb;
	size_t n_slots;
	rh_remote_hosts(h->remote, &n_slots);
	pthread_mutex_lock(&rb->lock);
	for (;;) {
		while (!rb->stop && !rb->kicked)
			pthread_cond_wait(&rb->cond, &rb->lock);
		if (rb->stop)
			break;
		rb->kicked = false;
		for (size_t i = 0; i < n_slots && !rb->stop; i++) {
			if (!rh_swap_host_down(h->swap, i) || rb->spares_used >= h->cfg.n_spares)
				continue;
			size_t k = rb->spares_used++;
			pthread_mutex_unlock(&rb->lock);
			rebuild_one(h, k, i);
			pthread_mutex_lock(&rb->lock);
			/* A slot still down (its spare failed) is looked at again. */
			if (rh_swap_host_down(h->swap, i))
				rb->kicked = true;
		}
	}
	pthread_mutex_unlock(&rb->lock);
	return NULL;
}

int rh_rebuild_init(rh_heap *h)
{
	rh_rebuild *rb = &h->rb;
	if (!h->cfg.n_spares || !h->swap)
		return RH_OK;
	pthread_mutex_init(&rb->lock, NULL);
	pthread_cond_init(&rb->cond, NULL);
	if (pthread_create(&rb->thread, NULL, rebuild_main, h) != 0) {
		pthread_mutex_destroy(&rb->lock);
		pthread_cond_destroy(&rb->cond);
		return RH_EIO;
	}
	rb->started = true;
	return RH_OK;
}

void rh_rebuild_kick(rh_heap *h)
{
	rh_rebuild *rb = &h->rb;
	if (!rb->started)
		return;
	pthread_mutex_lock(&rb->lock);
	rb->kicked = true;
	pthread_cond_broadcast(&rb->cond);
	pthread_mutex_unlock(&rb->lock);
}

void rh_rebuild_stop(rh_heap *h)
{
	rh_rebuild *rb = &h->rb;
	if (rb->started) {
		pthread_mutex_lock(&rb->lock);
		rb->stop = true;
		pthread_cond_broadcast(&rb->cond);
		pthread_mutex_unlock(&rb->lock);
		rh_swap_rebuild_cancel(h->swap);
		pthread_join(rb->thread, NULL);
		rb->started = false;
		pthread_mutex_destroy(&rb->lock);
		pthread_cond_destroy(&rb->cond);
	}
}
