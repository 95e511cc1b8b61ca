/* A completion queue: providers push, applications poll or wait for one
 * wr_id. Completions are reported in push order; wait removes only the
 * awaited one. */
#ifndef RH_TP_CQ_H
#define RH_TP_CQ_H

#include <pthread.h>

#include "transport/transport.h"

struct rh_cq {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	rh_tp_completion *v; /* ring */
	size_t head, n, cap;
	int waiters;
};

int rh_cq_init(struct rh_cq *q);
void rh_cq_fini(struct rh_cq *q);
/* Never fails for want of memory: it grows, and aborts only if malloc
 * fails (the provider cannot drop a completion). */
void rh_cq_push(struct rh_cq *q, uint64_t wr_id, int status);
int rh_cq_poll(struct rh_cq *q, rh_tp_completion *out, int max);
/* The status of wr_id, or RH_ETIMEDOUT (err filled) after timeout_ms. */
int rh_cq_wait(struct rh_cq *q, uint64_t wr_id, int timeout_ms, rh_error *err);

#endif
