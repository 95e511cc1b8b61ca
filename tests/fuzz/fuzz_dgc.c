/* libFuzzer harness for the tracer's collection messages (memserver/dgc*.c)
 * together with the heap image they point into; the input format is in
 * dgc_input.h.
 *
 * The collector state is driven on this thread (rh_dgc_new, rh_dgc_handle,
 * rh_dgc_mark_next), as the marking thread would drive it, over a real
 * partition mapped at its heap addresses: REGIONS, ROOTS, EVACUATE, FULL,
 * MARK_REFS, FIX_CARDS and FREE reach marking, remark, evacuation, full
 * marking and card fixing over whatever bytes the input wrote. Beyond
 * memory safety, leaks and UB, checked: every message the tracer sends
 * encodes (the CPU server could decode it); a handler that refuses its
 * message has sent an ERROR and stopped the collector (security.M1), one
 * that accepts it has sent none; after a refusal nothing more is handled,
 * as on the real thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/common.h"
#include "gc/layout.h"
#include "memserver/dgc_int.h"
#include "tests/fuzz/dgc_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static rh_region_meta *meta;
static uint8_t *image;
static unsigned errors_sent;
static int trace; /* FUZZ_DGC_TRACE set: name each message sent (seed checks) */

static void setup(void)
{
	void *p = mmap((void *)(uintptr_t)DGC_PART_BASE, DGC_PART_SIZE, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p != (void *)(uintptr_t)DGC_PART_BASE)
		rh_panic("fuzz_dgc: cannot map the partition at %#llx", DGC_PART_BASE);
	image = p;
	meta = calloc(DGC_REGIONS / 2, sizeof *meta);
	if (!meta)
		rh_panic("fuzz_dgc: out of memory");
	rh_log_set_level(RH_LOG_ERROR);
	trace = getenv("FUZZ_DGC_TRACE") != NULL;
}

static int on_send(void *ctx, const rh_msg *m, rh_error *err)
{
	(void)ctx;
	(void)err;
	static uint8_t buf[RH_PROTO_MAX];
	if (!rh_msg_encode(m, buf, sizeof buf))
		rh_panic("fuzz_dgc: the tracer sent a %s that does not encode",
		         rh_msg_type_name(m->type));
	if (m->type == RH_MSG_ERROR)
		errors_sent++;
	if (trace && m->type == RH_MSG_EVACUATED)
		fprintf(stderr, "sent EVACUATED: %llu bytes copied\n",
		        (unsigned long long)m->u.evacuated.bytes_copied);
	else if (trace && m->type == RH_MSG_FULL_DONE)
		fprintf(stderr, "sent FULL_DONE: %llu bytes marked\n",
		        (unsigned long long)m->u.full_done.bytes_marked);
	else if (trace)
		fprintf(stderr, "sent %s\n", rh_msg_type_name(m->type));
	return RH_OK;
}

static void config(rh_config *cfg, uint8_t opts)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->heap_base = DGC_HEAP_BASE;
	cfg->heap_size = DGC_REGIONS * DGC_REGION;
	cfg->region_size = DGC_REGION;
	cfg->n_servers = 2;
	cfg->servers[0].partition_size = DGC_PART_SIZE;
	cfg->servers[1].partition_size = DGC_PART_SIZE;
	cfg->tracer_threads = 1;
	cfg->order = opts & 1 ? RH_ORDER_BFS : RH_ORDER_DFS;
}

/* Copy bytes at a u32 offset into [dst, dst + cap), clipped. */
static void patch(uint8_t *dst, size_t cap, const uint8_t *p, size_t n)
{
	if (n < 4)
		return;
	size_t off =
	        ((size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 | (size_t)p[3] << 24) % cap;
	n -= 4;
	memcpy(dst + off, p + 4, n < cap - off ? n : cap - off);
}

/* One record; -1 once the collector has refused something. */
static int apply(rh_dgc *d, uint8_t tag, const uint8_t *p, size_t n)
{
	static uint8_t msg[1 + RH_PROTO_MAX];
	size_t len = 0;
	switch (tag % DGC_TAGS) {
	case DGC_IMAGE:
		patch(image, DGC_PART_SIZE, p, n);
		return 0;
	case DGC_META:
		patch((uint8_t *)meta, DGC_REGIONS / 2 * sizeof *meta, p, n);
		return 0;
	case DGC_MARK:
		rh_dgc_mark_next(d);
		break;
	case DGC_TYPES:
		msg[0] = PSEUDO_TYPES;
		memcpy(msg + 1, p, n);
		len = n + 1;
		break;
	default: {
		if (n < 1 || n - 1 > RH_PROTO_MAX - RH_PROTO_HDR)
			return 0;
		uint32_t plen = (uint32_t)(n - 1);
		uint8_t h[RH_PROTO_HDR] = {
		        RH_PROTO_MAGIC & 0xff, RH_PROTO_MAGIC >> 8,
		        RH_PROTO_VERSION,      dgc_msg_types[p[0] % sizeof dgc_msg_types],
		        (uint8_t)plen,         (uint8_t)(plen >> 8),
		        (uint8_t)(plen >> 16), (uint8_t)(plen >> 24)};
		memcpy(msg, h, sizeof h);
		memcpy(msg + sizeof h, p + 1, plen);
		len = sizeof h + plen;
	}
	}
	unsigned before = errors_sent;
	int rc = len ? rh_dgc_handle(d, msg, len) : 0;
	rh_error e;
	int failed = rh_dgc_status(d, &e);
	if ((rc < 0) != (failed != 0) || (rc < 0) != (errors_sent > before))
		rh_panic("fuzz_dgc: handler returned %d, collector %s, %u ERROR(s) sent", rc,
		         failed ? "failed" : "running", errors_sent - before);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	if (!ready) {
		setup();
		ready = 1;
	}
	if (size < 1)
		return 0;
	memset(image, 0, DGC_PART_SIZE);
	memset(meta, 0, DGC_REGIONS / 2 * sizeof *meta);
	rh_config cfg;
	config(&cfg, data[0]);
	rh_partition part;
	rh_partition_of(&cfg, 1, &part);
	rh_dgc *d;
	rh_error err;
	if (rh_dgc_new(&d, &cfg, &part, meta, on_send, NULL, &err) != RH_OK)
		rh_panic("fuzz_dgc: %s", err.msg);
	errors_sent = 0;
	for (size_t i = 1; i + 3 <= size;) {
		size_t n = (size_t)data[i + 1] | (size_t)data[i + 2] << 8;
		if (n > size - i - 3)
			n = size - i - 3;
		if (apply(d, data[i], data + i + 3, n) < 0)
			break;
		i += 3 + n;
	}
	rh_dgc_close(d);
	return 0;
}
