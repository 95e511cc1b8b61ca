#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "transport/cq.h"

int rh_cq_init(struct rh_cq *q)
{
	memset(q, 0, sizeof *q);
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->cond, &a);
	pthread_condattr_destroy(&a);
	return RH_OK;
}

void rh_cq_fini(struct rh_cq *q)
{
	free(q->v);
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->cond);
}

static rh_tp_completion *at(struct rh_cq *q, size_t i)
{
	return &q->v[(q->head + i) % q->cap];
}

void rh_cq_push(struct rh_cq *q, uint64_t wr_id, int status)
{
	pthread_mutex_lock(&q->lock);
	if (q->n == q->cap) {
		size_t cap = q->cap ? 2 * q->cap : 64;
		rh_tp_completion *v = malloc(cap * sizeof *v);
		if (!v)
			rh_panic("transport: out of memory for completions");
		for (size_t i = 0; i < q->n; i++)
			v[i] = *at(q, i);
		free(q->v);
		q->v = v, q->cap = cap, q->head = 0;
	}
	*at(q, q->n) = (rh_tp_completion){wr_id, status};
	q->n++;
	if (q->waiters)
		pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

int rh_cq_poll(struct rh_cq *q, rh_tp_completion *out, int max)
{
	pthread_mutex_lock(&q->lock);
	int k = 0;
	while (k < max && q->n > 0) {
		out[k++] = q->v[q->head];
		q->head = (q->head + 1) % q->cap;
		q->n--;
	}
	pthread_mutex_unlock(&q->lock);
	return k;
}

/* Remove entry i, keeping the others in order. */
static int take(struct rh_cq *q, size_t i)
{
	int st = at(q, i)->status;
	for (; i > 0; i--)
		*at(q, i) = *at(q, i - 1);
	q->head = (q->head + 1) % q->cap;
	q->n--;
	return st;
}

int rh_cq_wait(struct rh_cq *q, uint64_t wr_id, int timeout_ms, rh_error *err)
{
	/* The clock is read only if we must sleep: completions are often
	 * already there (shm completes at post time). */
	uint64_t deadline = 0;
	struct timespec ts;
	pthread_mutex_lock(&q->lock);
	int st = -1;
	for (;;) {
		for (size_t i = 0; i < q->n; i++) {
			if (at(q, i)->wr_id == wr_id) {
				st = take(q, i);
				break;
			}
		}
		if (st >= 0)
			break;
		if (!deadline) {
			deadline = rh_now_ns() + (uint64_t)timeout_ms * 1000000ull;
			ts = (struct timespec){(time_t)(deadline / 1000000000ull),
			                       (long)(deadline % 1000000000ull)};
		}
		if (rh_now_ns() >= deadline) {
			st = rh_err_set(err, RH_ETIMEDOUT,
			                "transport: operation %" PRIu64 " did not complete in time",
			                wr_id);
			break;
		}
		q->waiters++;
		pthread_cond_timedwait(&q->cond, &q->lock, &ts);
		q->waiters--;
	}
	pthread_mutex_unlock(&q->lock);
	if (st > 0 && err && err->code != st)
		rh_err_set(err, st, "transport: operation %" PRIu64 " failed: %s", wr_id,
		           rh_status_name(st));
	return st;
}
