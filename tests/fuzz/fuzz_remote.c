/* libFuzzer harness for the CPU server's handling of tracer replies:
 * runtime/remote.c's on_message (MARKED, MARK_ACK, FULL_DONE, EVAC_REFS,
 * CARDS_FIXED, EVACUATED, FREE_OK, ERROR, and MARK_REFS relayed between
 * tracers), reached by compiling remote.c into the harness (the seam its
 * header comment names); the transport calls it makes are stubs here.
 *
 * The CPU server has two tracers of four 1 MiB regions each. An input is
 * one state byte, then records: u8 host (mod 2), u16 length (LE), that
 * many bytes of message as a tracer would send it. State byte bits: 1 an
 * EVACUATE to host 0 is waiting (sources 1, 2; destination 3), 2
 * FIX_CARDS to host 1 are waiting (two messages), 4 a full marking is in
 * progress with 3 batches outstanding at host 0. Records are handled in
 * order until one loses its host, as the monitor thread does.
 *
 * Properties beyond memory safety and leaks: a record that loses its host
 * calls the fatal handler exactly once and sets lost, one that does not
 * calls neither; an EVACUATED that is taken names the regions asked and
 * destination tops within a region; CARDS_FIXED entries taken for a
 * message that was not refused lie in the host's partition; outstanding
 * batches never exceed what was counted in; a relayed MARK_REFS goes
 * out unchanged to the other host.
 */
#include "runtime/remote.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REGION (1ull << 20)

static struct {
	int fatal;
	size_t relayed_len;
	uint8_t relayed[RH_PROTO_MAX];
	size_t to_host;
} out;

/* The transport, as remote.c sees it: a fake connection per host. */
static rh_tp_conn *const fake_conn[2] = {(rh_tp_conn *)0x1000, (rh_tp_conn *)0x2000};

int rh_tp_send(rh_tp_conn *c, const void *buf, size_t len, int timeout_ms, rh_error *err)
{
	(void)timeout_ms;
	(void)err;
	out.to_host = c == fake_conn[1];
	out.relayed_len = len;
	memcpy(out.relayed, buf, len);
	return RH_OK;
}

int rh_tp_recv(rh_tp_conn *c, void *buf, size_t cap, size_t *len, int timeout_ms, rh_error *err)
{
	(void)c, (void)buf, (void)cap, (void)len, (void)timeout_ms;
	return rh_err_set(err, RH_ETIMEDOUT, "fuzz: nothing to receive");
}

int rh_tp_connect(const rh_tp_opts *o, const char *host, uint16_t port, rh_tp_conn **c,
                  rh_error *err)
{
	(void)o, (void)host, (void)port, (void)c;
	return rh_err_set(err, RH_EPEER, "fuzz: no connections");
}

void rh_tp_close(rh_tp_conn *c)
{
	(void)c;
}

int rh_tp_fd(rh_tp_conn *c)
{
	(void)c;
	return -1;
}

static void on_fatal(void *data, const rh_error *e)
{
	(void)data;
	(void)e;
	out.fatal++;
}

static rh_config cfg;

static rh_remote *make(void)
{
	cfg.heap_base = 0x100000000000ull;
	cfg.region_size = REGION;
	cfg.heap_size = 8 * REGION;
	cfg.timeout_ms = 1000;
	cfg.n_servers = 2;
	for (int i = 0; i < 2; i++) {
		snprintf(cfg.servers[i].host, sizeof cfg.servers[i].host, "127.0.0.1");
		cfg.servers[i].port = (uint16_t)(7000 + i);
		cfg.servers[i].partition_size = 4 * REGION;
	}
	rh_remote *r = calloc(1, sizeof *r);
	r->cfg = &cfg;
	r->fatal = on_fatal;
	r->n_hosts = 2;
	r->n_regions = 8;
	r->hosts = calloc(2, sizeof *r->hosts);
	r->last_heard = calloc(2, sizeof *r->last_heard);
	r->free_acked = calloc(2, sizeof *r->free_acked);
	r->marked = calloc(8, sizeof *r->marked);
	r->has_marked = calloc(8, 1);
	r->evac = calloc(2, sizeof *r->evac);
	r->fix = calloc(2, sizeof *r->fix);
	r->full.outstanding = calloc(2, sizeof *r->full.outstanding);
	r->full.done = calloc(2, sizeof *r->full.done);
	r->full.live = calloc(8, sizeof *r->full.live);
	r->full.reported = calloc(8, 1);
	if (!r->hosts || !r->last_heard || !r->free_acked || !r->marked || !r->has_marked ||
	    !r->evac || !r->fix || !r->full.outstanding || !r->full.done || !r->full.live ||
	    !r->full.reported)
		rh_panic("fuzz-remote: out of memory");
	pthread_mutex_init(&r->send_lock, NULL);
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	for (size_t i = 0; i < 2; i++) {
		rh_partition_of(&cfg, (uint32_t)i, &r->hosts[i].part);
		snprintf(r->hosts[i].name, sizeof r->hosts[i].name, "memory server %zu", i);
		r->hosts[i].conn = fake_conn[i];
	}
	return r;
}

static void set_state(rh_remote *r, uint8_t flags)
{
	rh_error e;
	if (flags & 1) {
		static const uint32_t src[] = {1, 2}, dst[] = {3};
		rh_remote_evacuate(r, 0, 11, 0, src, 2, dst, 1, &e);
	}
	if (flags & 2) {
		static const uint32_t moved[] = {1};
		/* Enough cards for two messages. */
		static uint64_t cards[9000];
		for (size_t k = 0; k < 9000; k++)
			cards[k] = cfg.heap_base + 4 * REGION + k * 256;
		rh_remote_fix_cards(r, 1, 12, moved, 1, cards, 9000, NULL, 0, &e);
	}
	if (flags & 4) {
		rh_remote_full_begin(r, 13, false, &e);
		r->full.outstanding[0] = 3;
	}
}

static void check(rh_remote *r, size_t host, size_t len, int rc, int fatal_before,
                  uint64_t outstanding_before[2], uint64_t relayed_before)
{
	bool lost = rh_remote_lost(r);
	if ((rc < 0) != lost || out.fatal != fatal_before + (rc < 0))
		rh_panic("fuzz-remote: on_message returned %d, lost %d, fatal called %d times", rc,
		         lost, out.fatal - fatal_before);
	for (size_t i = 0; i < 2; i++) {
		/* Relays count batches in; only acks count them out. */
		uint64_t in = outstanding_before[i] + (r->full.relayed - relayed_before);
		if (r->full.outstanding[i] > in)
			rh_panic("fuzz-remote: host %zu has %llu batches outstanding, at most %llu",
			         i, (unsigned long long)r->full.outstanding[i],
			         (unsigned long long)in);
	}
	if (rc == 0 && r->full.relayed != relayed_before &&
	    (out.to_host == host || out.relayed_len != len || memcmp(out.relayed, r->rbuf, len)))
		rh_panic("fuzz-remote: a MARK_REFS was relayed changed or back to its sender");
	rh_remote_evac *ev = &r->evac[0];
	if (!lost && ev->done) {
		if (ev->n_src != 2 || ev->src[0].region != 1 || ev->src[1].region != 2 ||
		    ev->n_dst != 1 || ev->dst[0].region != 3 || ev->dst[0].top > REGION)
			rh_panic("fuzz-remote: an EVACUATED that does not answer was taken");
	}
	rh_remote_fix *fx = &r->fix[1];
	const rh_partition *p = &r->hosts[1].part;
	for (size_t k = 0; !lost && k < fx->n; k++)
		if (fx->ents[k].addr - p->base >= p->size)
			rh_panic("fuzz-remote: CARDS_FIXED entry outside the partition taken");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	static int quiet;
	if (!quiet++)
		rh_log_set_level(RH_LOG_ERROR);
	memset(&out, 0, sizeof out);
	rh_remote *r = make();
	set_state(r, data[0]);
	for (size_t i = 1; i + 3 <= size && !rh_remote_lost(r);) {
		size_t host = data[i] % 2;
		size_t len = (size_t)data[i + 1] | (size_t)data[i + 2] << 8;
		i += 3;
		if (len > size - i)
			len = size - i;
		if (len > sizeof r->rbuf)
			len = sizeof r->rbuf;
		memcpy(r->rbuf, data + i, len);
		i += len;
		int fatal_before = out.fatal;
		uint64_t ob[2] = {r->full.outstanding[0], r->full.outstanding[1]};
		uint64_t relayed_before = r->full.relayed;
		int rc = on_message(r, host, len);
		check(r, host, len, rc, fatal_before, ob, relayed_before);
	}
	rh_remote_close(r);
	return 0;
}
