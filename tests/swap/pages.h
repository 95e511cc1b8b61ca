/* What the page-level swap tests share: a byte pattern that differs from
 * page to page, a way to wait for a fault to be fully served, and the
 * pages the resident count must say. */
#ifndef RH_TEST_SWAP_PAGES_H
#define RH_TEST_SWAP_PAGES_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "swap/internal.h"

static inline uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 131 + (i >> 12) * 7 + 1);
}

/* A fault wakes the faulting thread when it installs the page and sets
 * the page's state just after: wait for the faults being handled. */
static inline void settle(rh_swap *s)
{
	pthread_rwlock_wrlock(&s->fault_lock);
	pthread_rwlock_unlock(&s->fault_lock);
}

/* Pages of the heap CLEAN or DIRTY: what the resident count must say. */
static inline size_t count_resident(rh_swap *s)
{
	size_t k = 0;
	for (size_t pg = 0; pg < s->n_pages; pg++) {
		uint8_t st = rh_swap_get(s, pg);
		k += st == RH_PAGE_CLEAN || st == RH_PAGE_DIRTY;
	}
	return k;
}

#endif
