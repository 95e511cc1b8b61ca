/* The roots' values, sorted (runtime/rootvals.h). */
#include <stdlib.h>

#include "common/grow.h"
#include "runtime/internal.h"
#include "runtime/rootvals.h"

static void add_word(void *ctx, uintptr_t w)
{
	rh_rootvals *rv = ctx;
	rv->v = rh_grow(rv->v, &rv->cap, rv->n + 1, sizeof *rv->v, 256, "collector: roots");
	rv->v[rv->n++] = w;
}

static void add_slot(void *ctx, void **slot)
{
	add_word(ctx, (uintptr_t)*slot);
}

static void ignore_word(void *ctx, uintptr_t w)
{
	(void)ctx;
	(void)w;
}

void rh_rootvals_gather(rh_heap *h, rh_rootvals *rv, bool conservative)
{
	rv->n = 0;
	for (rh_mutator *m = h->mutators; m; m = m->next)
		rh_stack_scan(m, conservative ? add_word : ignore_word, add_slot, rv);
	for (size_t i = 0; i < h->n_globals; i++)
		add_slot(rv, h->globals[i]);
	if (rv->n)
		qsort(rv->v, rv->n, sizeof *rv->v, rh_cmp_addr);
}

const uintptr_t *rh_rootvals_in(const rh_rootvals *rv, uintptr_t lo, uintptr_t hi, size_t *n)
{
	size_t a = 0, b = rv->n;
	while (a < b) {
		size_t mid = a + (b - a) / 2;
		if (rv->v[mid] < lo)
			a = mid + 1;
		else
			b = mid;
	}
	size_t k = a;
	while (k < rv->n && rv->v[k] < hi)
		k++;
	*n = k - a;
	return rv->v + a;
}

void rh_rootvals_free(rh_rootvals *rv)
{
	free(rv->v);
	*rv = (rh_rootvals){0};
}
