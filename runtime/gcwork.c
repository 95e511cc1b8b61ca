/* Helper threads for a pause and the pool they share work through
 * (docs/collector.md, "Parallel copying"). */
#include "runtime/gcwork.h"

#include <stdlib.h>
#include <string.h>

#include "common/grow.h"

struct rh_crew {
	pthread_mutex_t lock;
	pthread_cond_t go;   /* helpers wait for a new round */
	pthread_cond_t idle; /* the caller waits for the round's end */
	unsigned n;          /* threads in all, the caller's included */
	unsigned started;    /* helpers created */
	unsigned running;    /* helpers still in this round's call */
	unsigned long round;
	bool stop;
	void (*fn)(void *arg, unsigned id);
	void *arg;
	struct helper {
		struct rh_crew *crew;
		unsigned id;
		pthread_t thread;
	} helpers[RH_COPY_THREADS_MAX];
};

static void *helper_main(void *p)
{
	struct helper *self = p;
	rh_crew *c = self->crew;
	unsigned long seen = 0;
	pthread_mutex_lock(&c->lock);
	for (;;) {
		while (!c->stop && c->round == seen)
			pthread_cond_wait(&c->go, &c->lock);
		if (c->stop)
			break;
		seen = c->round;
		void (*fn)(void *, unsigned) = c->fn;
		void *arg = c->arg;
		pthread_mutex_unlock(&c->lock);
		fn(arg, self->id);
		pthread_mutex_lock(&c->lock);
		if (--c->running == 0)
			pthread_cond_signal(&c->idle);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

rh_crew *rh_crew_new(unsigned n)
{
	if (n < 2 || n > RH_COPY_THREADS_MAX)
		return NULL;
	rh_crew *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->go, NULL);
	pthread_cond_init(&c->idle, NULL);
	c->n = n;
	for (unsigned i = 1; i < n; i++) {
		struct helper *hp = &c->helpers[i];
		hp->crew = c;
		hp->id = i;
		if (pthread_create(&hp->thread, NULL, helper_main, hp) != 0) {
			rh_crew_free(c);
			return NULL;
		}
		c->started = i;
	}
	return c;
}

void rh_crew_free(rh_crew *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->stop = true;
	pthread_cond_broadcast(&c->go);
	pthread_mutex_unlock(&c->lock);
	for (unsigned i = 1; i <= c->started; i++)
		pthread_join(c->helpers[i].thread, NULL);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->go);
	pthread_cond_destroy(&c->idle);
	free(c);
}

unsigned rh_crew_size(const rh_crew *c)
{
	return c ? c->n : 1;
}

void rh_crew_run(rh_crew *c, void (*fn)(void *arg, unsigned id), void *arg)
{
	pthread_mutex_lock(&c->lock);
	c->fn = fn;
	c->arg = arg;
	c->running = c->n - 1;
	c->round++;
	pthread_cond_broadcast(&c->go);
	pthread_mutex_unlock(&c->lock);
	fn(arg, 0);
	pthread_mutex_lock(&c->lock);
	while (c->running)
		pthread_cond_wait(&c->idle, &c->lock);
	pthread_mutex_unlock(&c->lock);
}

/* ---------------------------------------------------------------- pool */

void rh_pool_init(rh_pool *p, unsigned workers)
{
	memset(p, 0, sizeof *p);
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	p->workers = workers;
}

void rh_pool_fini(rh_pool *p)
{
	free(p->items);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
}

void rh_pool_give(rh_pool *p, void ***items, size_t n)
{
	pthread_mutex_lock(&p->lock);
	p->items = rh_grow(p->items, &p->cap, p->n + n, sizeof *p->items, 1024,
	                   "collector: shared work list");
	memcpy(p->items + p->n, items, n * sizeof *items);
	p->n += n;
	if (p->hungry)
		pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

size_t rh_pool_take(rh_pool *p, void ***out, size_t max)
{
	pthread_mutex_lock(&p->lock);
	p->idle++;
	while (p->n == 0 && !p->done) {
		if (p->idle == p->workers) {
			/* evac.P7: every worker is here with nothing: none holds work or
			 * can make more. */
			p->done = true;
			pthread_cond_broadcast(&p->cond);
			break;
		}
		__atomic_store_n(&p->hungry, p->hungry + 1, __ATOMIC_RELAXED);
		pthread_cond_wait(&p->cond, &p->lock);
		__atomic_store_n(&p->hungry, p->hungry - 1, __ATOMIC_RELAXED);
	}
	size_t k = 0;
	if (p->n > 0) {
		/* A share, not all: the others may be hungry too. */
		k = p->n / p->workers + 1;
		if (k > max)
			k = max;
		if (k > p->n)
			k = p->n;
		p->n -= k;
		memcpy(out, p->items + p->n, k * sizeof *out);
		p->idle--;
	}
	pthread_mutex_unlock(&p->lock);
	return k;
}
