/* Range tables: sorted arrays searched by binary search. A heap registers
 * few, large ranges, so an array beats a tree here. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "transport/provider.h"

void rh_tp_ranges_init(struct rh_tp_ranges *t)
{
	memset(t, 0, sizeof *t);
	pthread_mutex_init(&t->lock, NULL);
}

void rh_tp_ranges_fini(struct rh_tp_ranges *t)
{
	free(t->v);
	pthread_mutex_destroy(&t->lock);
	memset(t, 0, sizeof *t);
}

/* Index of the first range whose end is above addr. */
static size_t lower(const struct rh_tp_ranges *t, uint64_t addr)
{
	size_t lo = 0, hi = t->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->v[mid].addr + t->v[mid].len <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int rh_tp_ranges_add(struct rh_tp_ranges *t, const struct rh_tp_range *r, rh_error *err)
{
	if (r->len == 0 || r->addr + r->len < r->addr)
		return rh_err_set(err, RH_EINVAL, "transport: bad range 0x%" PRIx64 "+%" PRIu64,
		                  r->addr, r->len);
	int rc = RH_OK;
	pthread_mutex_lock(&t->lock);
	size_t i = lower(t, r->addr);
	if (i < t->n && t->v[i].addr < r->addr + r->len) {
		rc = rh_err_set(err, RH_EINVAL,
		                "transport: range 0x%" PRIx64 "+%" PRIu64
		                " overlaps registered range 0x%" PRIx64 "+%" PRIu64,
		                r->addr, r->len, t->v[i].addr, t->v[i].len);
	} else if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 8;
		struct rh_tp_range *v = realloc(t->v, cap * sizeof *v);
		if (!v)
			rc = rh_err_set(err, RH_ENOMEM, "transport: out of memory for ranges");
		else
			t->v = v, t->cap = cap;
	}
	if (rc == RH_OK) {
		memmove(t->v + i + 1, t->v + i, (t->n - i) * sizeof *t->v);
		t->v[i] = *r;
		t->n++;
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

int rh_tp_ranges_del(struct rh_tp_ranges *t, uint64_t addr, uint64_t len, struct rh_tp_range *out,
                     rh_error *err)
{
	int rc = RH_OK;
	pthread_mutex_lock(&t->lock);
	size_t i = lower(t, addr);
	if (i < t->n && t->v[i].addr == addr && t->v[i].len == len) {
		if (out)
			*out = t->v[i];
		memmove(t->v + i, t->v + i + 1, (t->n - i - 1) * sizeof *t->v);
		t->n--;
	} else {
		rc = rh_err_set(err, RH_ERANGE,
		                "transport: no registered range 0x%" PRIx64 "+%" PRIu64, addr, len);
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

bool rh_tp_ranges_find(struct rh_tp_ranges *t, uint64_t addr, uint64_t len, unsigned flags,
                       struct rh_tp_range *out)
{
	if (addr + len < addr)
		return false;
	bool ok = false;
	pthread_mutex_lock(&t->lock);
	size_t i = lower(t, addr);
	if (i < t->n) {
		const struct rh_tp_range *r = &t->v[i];
		ok = r->addr <= addr && addr + len <= r->addr + r->len &&
		     (r->flags & flags) == flags;
		if (ok && out)
			*out = *r;
	}
	pthread_mutex_unlock(&t->lock);
	return ok;
}

bool rh_tp_ranges_overlap(struct rh_tp_ranges *t, uint64_t addr, uint64_t len)
{
	pthread_mutex_lock(&t->lock);
	size_t i = lower(t, addr);
	bool hit = i < t->n && t->v[i].addr < addr + len;
	pthread_mutex_unlock(&t->lock);
	return hit;
}

void rh_tp_ranges_each(struct rh_tp_ranges *t, void (*fn)(struct rh_tp_range *r, void *arg),
                       void *arg)
{
	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->n; i++)
		fn(&t->v[i], arg);
	pthread_mutex_unlock(&t->lock);
}
