/* The pause gate of a thread that works between pauses (gate.h,
 * docs/runtime.md, "Threads between pauses"). */
#include "runtime/gate.h"

#include "common/common.h"

static void *gate_main(void *arg)
{
	rh_gate *g = arg;
	pthread_mutex_lock(&g->lock);
	for (;;) {
		/* gate.G1: no step while a pause waits or runs. */
		while (!atomic_load(&g->stop) &&
		       (atomic_load(&g->pause_wanted) || !g->has_work(g->arg)))
			pthread_cond_wait(&g->cond, &g->lock);
		if (atomic_load(&g->stop))
			break;
		g->step(g->arg);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

void rh_gate_init(rh_gate *g)
{
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
}

int rh_gate_start(rh_gate *g, bool (*has_work)(void *), void (*step)(void *), void *arg)
{
	g->has_work = has_work;
	g->step = step;
	g->arg = arg;
	if (pthread_create(&g->thread, NULL, gate_main, g) != 0)
		return RH_ENOMEM;
	g->on = true;
	return RH_OK;
}

void rh_gate_stop(rh_gate *g)
{
	if (!g->on)
		return;
	pthread_mutex_lock(&g->lock);
	atomic_store(&g->stop, true);
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	pthread_join(g->thread, NULL);
	g->on = false;
}

void rh_gate_pause_begin(rh_gate *g)
{
	if (!g->on)
		return;
	/* gate.G1: the thread sees the count after its step and waits. */
	atomic_fetch_add(&g->pause_wanted, 1);
	pthread_mutex_lock(&g->lock);
}

void rh_gate_pause_end(rh_gate *g)
{
	if (!g->on)
		return;
	atomic_fetch_sub(&g->pause_wanted, 1);
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
}
