/* A heap on two memory servers uses both partitions from the start
 * (docs/collector.md, region.P3).
 *
 * 24 MiB of long-lived nodes on a 128 MiB heap, two tracers of 64 MiB:
 * the regions in use are split between the partitions within a few
 * regions of half each; taken lowest address first, all of them were in
 * the first partition. The tracers' bytes held say the same.
 *
 * usage: test-stripe TRACERD PROVIDER
 */
#include "runtime/internal.h"
#include "runtime/remote.h"
#include "tests/common/check.h"
#include "tests/common/cluster.h"
#include "tests/dgc/forest.h"

static struct dgc_lnode *head; /* global root */

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	cluster_test ct = {.heap_mib = 128, .cache = 0.5, .timeout_ms = 5000};
	int rc = cluster_test_begin(&ct, argc, argv, "");
	if (rc)
		return rc;
	rh_heap *h = ct.heap;
	rh_error err;
	rh_type_id t = dgc_lnode_type(h, "st-node", &err);
	rh_global_add(h, (void **)&head);
	rh_mutator *m = rh_mutator_attach(h, &err);
	CHECK(t && m, "register the node type and attach: %s", err.msg);
	if (!t || !m)
		return cluster_test_end(&ct);
	uint64_t n = 24ull * 1024 * 1024 / sizeof(struct dgc_lnode);
	CHECK(dgc_lnode_push(m, t, &head, 0, n, &err), "allocating the nodes: %s", err.msg);
	rh_collect(m, 0);
	size_t used[2] = {0, 0};
	for (uint32_t i = 0; i < h->n_regions; i++) {
		rh_region_kind k = h->regions[i].kind;
		if (k == RH_REGION_FREE)
			continue;
		size_t host = rh_remote_host_of(h->remote, i);
		if (host < 2)
			used[host]++;
	}
	size_t all = used[0] + used[1];
	size_t diff = used[0] > used[1] ? used[0] - used[1] : used[1] - used[0];
	printf("regions in use: %zu in partition 0, %zu in partition 1\n", used[0], used[1]);
	CHECK(all * h->region_size >= 24ull << 20, "the data takes %zu regions of %zu KiB", all,
	      (size_t)(h->region_size >> 10));
	CHECK(diff * 8 <= all, "the two partitions hold %zu and %zu regions: within an eighth",
	      used[0], used[1]);
	uint64_t len = 0;
	for (struct dgc_lnode *x = head; x; x = x->next)
		len++;
	CHECK(len == n, "the list reads back whole (%llu of %llu nodes)", (unsigned long long)len,
	      (unsigned long long)n);
	rh_mutator_detach(m);
	return cluster_test_end(&ct);
}
