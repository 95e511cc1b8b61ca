/* A thread that works between pauses (gate.c): the cleaner (preclean.c)
 * and the pretouch thread (pretouch.c). It holds the gate's lock while it
 * does one step of its work; a pause holds the lock from its start to its
 * end, and a pause waiting for it makes the thread yield between steps
 * (docs/runtime.md, "Threads between pauses", gate.G1). Not exported. */
#ifndef RH_RUNTIME_GATE_H
#define RH_RUNTIME_GATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

typedef struct rh_gate {
	bool on; /* the thread runs */
	pthread_t thread;
	/* gate.G1: the thread's for one step, a pause's from start to end.
	 * The owner's state that the thread and the pauses share is guarded
	 * by it. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	atomic_int pause_wanted; /* pauses waiting for the lock */
	atomic_bool stop;
	/* The thread's work, called with the lock held: is there any, and
	 * do one step of it (a step returns within a millisecond or so: a
	 * pause may be waiting for it). */
	bool (*has_work)(void *arg);
	void (*step)(void *arg);
	void *arg;
} rh_gate;

/* The lock and condition set up; no thread yet. */
void rh_gate_init(rh_gate *g);
/* Starts the thread; an error status if it cannot be created. */
int rh_gate_start(rh_gate *g, bool (*has_work)(void *), void (*step)(void *), void *arg);
/* Stops and joins the thread, if it runs; the lock stays usable. */
void rh_gate_stop(rh_gate *g);
/* A pause's start and end: no step runs in between. No-ops without a
 * thread. rh_gate_pause_end wakes the thread to look for work again. */
void rh_gate_pause_begin(rh_gate *g);
void rh_gate_pause_end(rh_gate *g);

#endif
