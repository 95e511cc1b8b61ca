/* What the page-level swap tests share: a byte pattern that differs from
 * page to page, a way to wait for a fault to be fully served, the pages
 * the resident count must say, a deadline and the byte-array type their
 * pages live in. */
#ifndef RH_TEST_SWAP_PAGES_H
#define RH_TEST_SWAP_PAGES_H

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "rheap/rheap.h"
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

static inline void swap_stuck(int sig)
{
	static const char msg[] = "not ok: stuck\n";
	ssize_t w = write(1, msg, sizeof msg - 1);
	(void)w;
	(void)sig;
	_exit(1);
}

/* A test still running after `seconds` fails, saying so, before the
 * harness's timeout would (a fault served forever, a lost wake-up). */
static inline void swap_deadline(unsigned seconds)
{
	signal(SIGALRM, swap_stuck);
	alarm(seconds);
}

/* The byte-array type the tests fill pages of. */
static inline rh_type_id swap_bytes_type(rh_heap *h, rh_error *err)
{
	rh_type_desc bytes = {
	        .name = "bytes", .layout = RH_LAYOUT_BYTE_ARRAY, .size = 16, .elem_size = 1};
	return rh_type_register(h, &bytes, err);
}

/* A byte array rooted at *root holding n whole pages, filled with
 * pattern(): the address of its first whole page, or 0 if the array
 * could not be allocated. The caller allocates nothing more while it
 * uses the pages, so nothing collects and nothing moves. */
static inline uintptr_t swap_pattern_pages(rh_mutator *m, rh_type_id t_bytes, void **root, size_t n)
{
	*root = rh_alloc_array(m, t_bytes, (n + 1) * RH_PAGE_SIZE);
	if (!*root)
		return 0;
	uintptr_t p0 = ((uintptr_t)*root + 16 + RH_PAGE_SIZE - 1) & ~(uintptr_t)(RH_PAGE_SIZE - 1);
	uint8_t *pages = (uint8_t *)p0;
	for (size_t i = 0; i < n * RH_PAGE_SIZE; i++)
		pages[i] = pattern(i);
	return p0;
}

#endif
