/* A region written back while its tracer marks it is not evacuated on the
 * stale graph (docs/distributed-gc.md, msct.M1 and msct.M2; issue 24).
 *
 * The tracer's collector is driven on this thread (rh_dgc_new,
 * rh_dgc_handle, rh_dgc_mark_next, as tests/fuzz/fuzz_dgc.c does) over a
 * partition mapped at its heap addresses. Region 4 holds pairs: c, a chain
 * x1 .. xN longer than one marking step, then a and b, with a.p0 = b; the
 * epoch roots are c and x1. Between the first and second step of the
 * concurrent marking, when c is scanned and a is not, the "CPU server"
 * moves the reference and deletes its old path (c.p0 = a.p0; a.p0 = 0)
 * and writes both pages back under the tag protocol: tag dirty, pages,
 * log entries, head, tag clean. The marking then never sees b. The CSSC's
 * EVACUATE must still copy b: its remark rescans c, whose page was logged
 * after the marking began.
 *
 *   remark     b is copied (forwarded in the source, its copy in the
 *              destination, c's copy pointing at it), every byte reachable
 *              is. With the log position taken after the marking instead
 *              of before, b is unmarked and the tracer refuses the
 *              EVACUATE (a copied object points at an unmarked one): this
 *              case fails.
 *   no-remark  the control: with the remark skipped (RH_EVAC_NO_REMARK)
 *              the same run loses b, so the scenario does hide b from the
 *              marking and the first case passes for the reason it claims.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/common.h"
#include "gc/bitmap.h"
#include "gc/layout.h"
#include "gc/object.h"
#include "gc/types.h"
#include "memserver/dgc_int.h"
#include "tests/common/check.h"

#define HEAP_BASE 0x520000000000ull
#define REGION (256ull << 10)
#define N_REGIONS 8u
#define PART_BASE (HEAP_BASE + 4 * REGION) /* partition 1: regions 4..7 */
#define PART_SIZE (4 * REGION)
#define SRC 4u
#define DST 5u
#define PAIR 24u
#define CHAIN (STEP + 1000) /* a lies beyond the first marking step */

static rh_region_meta meta[4];
static rh_msg_evacuated last_evacuated;
static int evacuated_seen, errors_seen;
static int hook_calls;

/* Pair i of region 4: 0 is c, 1..CHAIN the chain, then a, then b. */
static uint64_t *pair(uint32_t i)
{
	return (uint64_t *)(uintptr_t)(PART_BASE + (uint64_t)i * PAIR);
}
#define C_IX 0u
#define A_IX (CHAIN + 1u)
#define B_IX (CHAIN + 2u)
#define N_PAIRS (CHAIN + 3u)

static int on_send(void *ctx, const rh_msg *m, rh_error *err)
{
	(void)ctx;
	(void)err;
	if (m->type == RH_MSG_EVACUATED) {
		last_evacuated = m->u.evacuated;
		evacuated_seen++;
	} else if (m->type == RH_MSG_ERROR) {
		fprintf(stderr, "tracer sent ERROR: %s\n", m->u.error.text);
		errors_seen++;
	}
	return RH_OK;
}

/* 0, or -1 when the collector refused the message (and sent ERROR). */
static int handle(rh_dgc *d, const rh_msg *m)
{
	static uint8_t buf[RH_PROTO_MAX];
	size_t n = rh_msg_encode(m, buf, sizeof buf);
	if (!n)
		rh_panic("test-stale: %s does not encode", rh_msg_type_name(m->type));
	return rh_dgc_handle(d, buf, n);
}

static void handle_ok(rh_dgc *d, const rh_msg *m)
{
	if (handle(d, m) != 0)
		rh_panic("test-stale: the collector refused a %s", rh_msg_type_name(m->type));
}

static void types(rh_dgc *d)
{
	static const uint32_t offs[] = {8, 16};
	rh_type_table t;
	rh_error err = {0};
	if (rh_typetab_init(&t) ||
	    !rh_typetab_add(
	            &t,
	            &(rh_type_desc){.name = "pair", .size = PAIR, .ptr_offsets = offs, .n_ptrs = 2},
	            &err))
		rh_panic("test-stale: type table: %s", err.msg);
	char *j = rh_typetab_to_json(&t);
	size_t n = strlen(j);
	uint8_t *buf = malloc(n + 1);
	if (!buf)
		rh_panic("test-stale: out of memory");
	buf[0] = PSEUDO_TYPES;
	memcpy(buf + 1, j, n);
	if (rh_dgc_handle(d, buf, n + 1) != 0)
		rh_panic("test-stale: type table refused");
	free(buf);
	free(j);
	rh_typetab_free(&t);
}

static void image(void)
{
	memset((void *)(uintptr_t)PART_BASE, 0, PART_SIZE);
	memset(meta, 0, sizeof meta);
	for (uint32_t i = 0; i < N_PAIRS; i++)
		pair(i)[0] = rh_header_make(1, PAIR);
	for (uint32_t i = 1; i <= CHAIN; i++)
		pair(i)[1] = (uintptr_t)pair(i + 1); /* x_CHAIN's next is a */
	pair(A_IX)[1] = (uintptr_t)pair(B_IX);
}

/* An eviction batch of region 4's pages holding c and a, as the CPU
 * server's evictor writes it (docs/swap.md, "Eviction"): the move and
 * the delete are already in the pages it writes. */
static void write_back(void *ctx)
{
	(void)ctx;
	if (hook_calls++)
		return;
	rh_region_meta *m = &meta[0];
	uint64_t v = m->tag;
	__atomic_store_n(&m->tag, v + 3, __ATOMIC_RELEASE); /* <1, v+1> */
	pair(C_IX)[1] = pair(A_IX)[1];
	pair(A_IX)[1] = 0;
	uint64_t head = m->log_head;
	m->log[head % RH_LOG_ENTRIES] = (uint32_t)(((uintptr_t)pair(C_IX) - PART_BASE) >> 12);
	m->log[(head + 1) % RH_LOG_ENTRIES] = (uint32_t)(((uintptr_t)pair(A_IX) - PART_BASE) >> 12);
	__atomic_store_n(&m->log_head, head + 2, __ATOMIC_RELEASE);
	__atomic_store_n(&m->tag, v + 4, __ATOMIC_RELEASE); /* <0, v+2> */
}

static void config(rh_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->heap_base = HEAP_BASE;
	cfg->heap_size = N_REGIONS * REGION;
	cfg->region_size = REGION;
	cfg->n_servers = 2;
	cfg->servers[0].partition_size = PART_SIZE;
	cfg->servers[1].partition_size = PART_SIZE;
	cfg->tracer_threads = 1;
	cfg->order = RH_ORDER_DFS;
}

/* One MSCT with the write-back inside it, then the CSSC's remark roots
 * and EVACUATE: the bytes the tracer copied if b was among them, 0 if b
 * stayed behind, UINT64_MAX if the tracer refused the evacuation. */
static uint64_t run(int remark)
{
	rh_config cfg;
	config(&cfg);
	rh_partition part;
	rh_partition_of(&cfg, 1, &part);
	rh_dgc *d;
	rh_error err;
	if (rh_dgc_new(&d, &cfg, &part, meta, on_send, NULL, &err) != RH_OK)
		rh_panic("test-stale: %s", err.msg);
	image();
	types(d);
	rh_region_desc reg = {.region = SRC,
	                      .ident = 1,
	                      .top = N_PAIRS * PAIR,
	                      .kind = RH_REGION_OLD,
	                      .evicted_pct = 100};
	rh_msg m = {.type = RH_MSG_REGIONS};
	m.u.regions = (rh_msg_regions){
	        .epoch = 1, .flags = RH_REGIONS_FIRST | RH_REGIONS_LAST, .n = 1, .ents = &reg};
	handle_ok(d, &m);
	/* Word offsets: x1 then c, so that c is marked in the first step in
	 * either traversal order. */
	static const uint32_t roots[] = {(1 * PAIR) / 8, 0};
	m = (rh_msg){.type = RH_MSG_ROOTS};
	m.u.roots = (rh_msg_roots){.region = SRC, .flags = RH_ROOTS_FIRST, .n = 2, .offs = roots};
	handle_ok(d, &m);

	hook_calls = 0;
	d->step_hook = write_back;
	CHECK(rh_dgc_mark_next(d), "MSCT marked no region");
	d->step_hook = NULL;
	CHECK(hook_calls >= 1,
	      "the marking ended within one step (%d hook calls): the write-back did not land "
	      "inside it",
	      hook_calls);
	CHECK(!rh_bit_get(d->marks, ((uintptr_t)pair(B_IX) - part.base) >> 3),
	      "the concurrent marking reached b: the scenario hides nothing");

	m = (rh_msg){.type = RH_MSG_ROOTS};
	m.u.roots = (rh_msg_roots){
	        .region = SRC, .flags = RH_ROOTS_FIRST | RH_ROOTS_REMARK, .n = 2, .offs = roots};
	handle_ok(d, &m);
	static const uint32_t regions[] = {SRC, DST};
	m = (rh_msg){.type = RH_MSG_EVACUATE};
	m.u.evacuate = (rh_msg_evacuate){.id = 7,
	                                 .flags = remark ? 0 : RH_EVAC_NO_REMARK,
	                                 .n_src = 1,
	                                 .n_dst = 1,
	                                 .regions = regions};
	evacuated_seen = 0;
	errors_seen = 0;
	if (handle(d, &m) != 0) {
		/* The tracer's own check (a copied object pointing at an
		 * unmarked one) refused the evacuation: b was not marked. */
		CHECK(errors_seen == 1, "EVACUATE refused with %d ERRORs sent", errors_seen);
		rh_dgc_close(d);
		return UINT64_MAX;
	}
	CHECK(evacuated_seen == 1 && errors_seen == 0, "EVACUATED %d, ERROR %d", evacuated_seen,
	      errors_seen);
	uint64_t copied = last_evacuated.bytes_copied;
	uint64_t hb = *pair(B_IX);
	int b_moved = rh_hdr_is_fwd(hb);
	if (b_moved) {
		uint64_t *to = rh_hdr_fwd_addr(hb);
		CHECK((uintptr_t)to >= PART_BASE + REGION && (uintptr_t)to < PART_BASE + 2 * REGION,
		      "b forwarded to %p, outside the destination", (void *)to);
		CHECK(to[0] == rh_header_make(1, PAIR), "b's copy has header %#llx",
		      (unsigned long long)to[0]);
	}
	uint64_t hc = *pair(C_IX);
	if (rh_hdr_is_fwd(hc) && b_moved) {
		uint64_t *c2 = rh_hdr_fwd_addr(hc);
		CHECK(c2[1] == (uintptr_t)rh_hdr_fwd_addr(hb),
		      "c's copy points at %#llx, b's copy is at %p", (unsigned long long)c2[1],
		      rh_hdr_fwd_addr(hb));
	}
	rh_dgc_close(d);
	return b_moved ? copied : 0;
}

int main(void)
{
	rh_log_set_level(RH_LOG_ERROR);
	void *p = mmap((void *)(uintptr_t)PART_BASE, PART_SIZE, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p != (void *)(uintptr_t)PART_BASE) {
		fprintf(stderr, "cannot map the partition at %#llx\n", PART_BASE);
		return 1;
	}
	uint64_t all = (uint64_t)N_PAIRS * PAIR;

	uint64_t with = run(1);
	CHECK(with != UINT64_MAX, "remark: the marks missed b, and the tracer refused the "
	                          "evacuation rather than lose it");
	CHECK(with == all || with == UINT64_MAX,
	      "remark: b lost or bytes missing: %llu of %llu bytes copied",
	      (unsigned long long)with, (unsigned long long)all);
	if (with == UINT64_MAX)
		printf("remark: evacuation refused\n");
	else
		printf("remark: %llu of %llu bytes copied%s\n", (unsigned long long)with,
		       (unsigned long long)all, with ? ", b among them" : ", b not");

	uint64_t without = run(0);
	CHECK(without == 0 || without == UINT64_MAX,
	      "no-remark: b was copied all the same (%llu bytes): the scenario "
	      "does not hide it",
	      (unsigned long long)without);
	printf("no-remark (control): b %s\n", without == 0 ? "lost, as it must be"
	                                      : without == UINT64_MAX
	                                              ? "unmarked (evacuation refused)"
	                                              : "copied");

	return check_done();
}
