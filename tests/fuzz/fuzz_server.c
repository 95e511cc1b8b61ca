/* libFuzzer harness for the tracer's message handling: serve() in
 * memserver/server.c (HELLO and its checks, TYPES chunk reassembly and the
 * table's decoding, FREE against the real partition in host.c, PING,
 * BYE, collector messages handed on, anything unexpected), reached by
 * compiling server.c into the harness. The transport and the collector
 * (fuzzed on its own by fuzz_dgc.c) are stubs: rh_tp_recv hands out the
 * input's messages, rh_tp_send keeps what the tracer answers.
 *
 * An input is one flags byte, then records: u16 length (LE), that many
 * bytes of message. Unless flags bit 0 is set a HELLO matching the
 * tracer's partition goes first, so the fuzzer starts past it.
 *
 * Properties beyond memory safety and leaks: every message the tracer
 * sends decodes; after HELLO_OK, a session that ends on a message rather
 * than at the end of the input has sent an ERROR naming why, and one that
 * ends at BYE or the input's end has sent none; the type table handed to
 * the collector is exactly the chunks' bytes in order (reassembled here
 * independently) and it was accepted by the decoder.
 */
#include "memserver/server.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HEAP_BASE 0x4b0000000000ull
#define REGION (1ull << 20)

static struct {
	const uint8_t *data;
	size_t size, pos;
	bool exhausted;
	unsigned sent, errors, hello_ok;
	bool types_set;
	uint8_t *types; /* the harness's own reassembly */
	uint32_t types_total, types_have;
	bool types_ok; /* every chunk so far fitted */
} io;

static rh_tp_conn *const fake_conn = (rh_tp_conn *)0x1000;
static int dgc_token;

/* ---- the transport ---- */

static void track_types(const uint8_t *msg, size_t len)
{
	rh_msg m;
	if (rh_msg_decode(msg, len, &m, NULL) != RH_OK || m.type != RH_MSG_TYPES)
		return;
	const rh_msg_types *t = &m.u.types;
	if (t->offset == 0) {
		free(io.types);
		io.types = t->total <= (64u << 20) ? malloc(t->total ? t->total : 1) : NULL;
		io.types_total = t->total;
		io.types_have = 0;
		io.types_ok = io.types != NULL;
	}
	if (!io.types_ok || t->total != io.types_total || t->offset != io.types_have ||
	    t->len > io.types_total - io.types_have) {
		io.types_ok = false;
		return;
	}
	memcpy(io.types + io.types_have, t->bytes, t->len);
	io.types_have += t->len;
}

int rh_tp_recv(rh_tp_conn *c, void *buf, size_t cap, size_t *len, int timeout_ms, rh_error *err)
{
	(void)c, (void)timeout_ms;
	if (io.pos + 2 > io.size) {
		io.exhausted = true;
		return rh_err_set(err, RH_EPEER, "fuzz: the input ended");
	}
	size_t n = (size_t)io.data[io.pos] | (size_t)io.data[io.pos + 1] << 8;
	io.pos += 2;
	if (n > io.size - io.pos)
		n = io.size - io.pos;
	if (n > cap)
		n = cap;
	memcpy(buf, io.data + io.pos, n);
	io.pos += n;
	*len = n;
	track_types(buf, n);
	return RH_OK;
}

int rh_tp_send(rh_tp_conn *c, const void *buf, size_t len, int timeout_ms, rh_error *err)
{
	(void)c, (void)timeout_ms, (void)err;
	rh_msg m;
	rh_error e;
	if (rh_msg_decode(buf, len, &m, &e) != RH_OK)
		rh_panic("fuzz-server: the tracer sent a message that does not decode: %s", e.msg);
	if (getenv("FUZZ_SERVER_TRACE")) /* seed checks: what each seed reaches */
		fprintf(stderr, "fuzz-server: sent %s %s\n", rh_msg_type_name(m.type),
		        m.type == RH_MSG_ERROR ? m.u.error.text : "");
	io.sent++;
	io.errors += m.type == RH_MSG_ERROR;
	io.hello_ok += m.type == RH_MSG_HELLO_OK;
	return RH_OK;
}

int rh_tp_reg(rh_tp_conn *c, void *addr, size_t len, int fd, uint64_t fd_off, unsigned flags,
              rh_error *err)
{
	(void)c, (void)addr, (void)len, (void)fd, (void)fd_off, (void)flags, (void)err;
	return RH_OK;
}

int rh_tp_fd(rh_tp_conn *c)
{
	(void)c;
	return -1;
}

void rh_tp_close(rh_tp_conn *c)
{
	(void)c;
}

int rh_tp_accept(rh_tp_listener *l, int timeout_ms, rh_tp_conn **out, rh_error *err)
{
	(void)l, (void)timeout_ms, (void)out;
	return rh_err_set(err, RH_ETIMEDOUT, "fuzz: no connections");
}

int rh_tp_listen(const rh_tp_opts *o, const char *host, uint16_t port, rh_tp_listener **out,
                 rh_error *err)
{
	(void)o, (void)host, (void)port, (void)out;
	return rh_err_set(err, RH_EIO, "fuzz: no listening");
}

uint16_t rh_tp_listener_port(const rh_tp_listener *l)
{
	(void)l;
	return 0;
}

void rh_tp_listener_close(rh_tp_listener *l)
{
	(void)l;
}

/* ---- the collector ---- */

int rh_dgc_open(rh_dgc **out, const rh_config *cfg, const rh_partition *part, rh_region_meta *meta,
                rh_dgc_send_fn send, void *send_ctx, rh_error *err)
{
	(void)cfg, (void)part, (void)meta, (void)send, (void)send_ctx, (void)err;
	*out = (rh_dgc *)&dgc_token;
	return RH_OK;
}

void rh_dgc_close(rh_dgc *d)
{
	(void)d;
}

int rh_dgc_set_types(rh_dgc *d, const char *json, size_t len, rh_error *err)
{
	(void)d, (void)err;
	if (!io.types_ok || io.types_have != io.types_total || len != io.types_total ||
	    memcmp(json, io.types, len))
		rh_panic("fuzz-server: the collector got a type table other than the chunks sent");
	io.types_set = true;
	if (getenv("FUZZ_SERVER_TRACE"))
		fprintf(stderr, "fuzz-server: type table of %zu bytes handed on\n", len);
	return RH_OK;
}

int rh_dgc_post(rh_dgc *d, const uint8_t *msg, size_t len, rh_error *err)
{
	(void)d, (void)msg, (void)len, (void)err;
	return RH_OK;
}

int rh_dgc_status(rh_dgc *d, rh_error *err)
{
	(void)d, (void)err;
	return RH_OK;
}

void rh_dgc_stats_get(rh_dgc *d, rh_dgc_stats *out)
{
	(void)d;
	memset(out, 0, sizeof *out);
}

/* ---- the harness ---- */

static rh_config cfg;
static rh_server_opts opts;
static server *srv;

static void init(void)
{
	cfg.heap_base = HEAP_BASE;
	cfg.region_size = REGION;
	cfg.heap_size = 8 * REGION;
	cfg.timeout_ms = 1000;
	snprintf(cfg.provider, sizeof cfg.provider, "shm");
	cfg.n_servers = 2;
	for (int i = 0; i < 2; i++) {
		snprintf(cfg.servers[i].host, sizeof cfg.servers[i].host, "127.0.0.1");
		cfg.servers[i].port = (uint16_t)(7000 + i);
		cfg.servers[i].partition_size = 4 * REGION;
	}
	opts = (rh_server_opts){.cfg = &cfg, .index = 1};
	srv = calloc(1, sizeof *srv);
	if (!srv)
		rh_panic("fuzz-server: out of memory");
	srv->o = &opts;
	pthread_mutex_init(&srv->st_lock, NULL);
	pthread_mutex_init(&srv->send_lock, NULL);
	pthread_mutex_init(&srv->conn_lock, NULL);
	pthread_cond_init(&srv->conn_cond, NULL);
	rh_typetab_init(&srv->types);
	rh_error err;
	if (rh_host_open(&srv->host, &cfg, 1, &err) != RH_OK)
		rh_panic("fuzz-server: %s", err.msg);
	rh_log_set_level(RH_LOG_ERROR);
}

/* A fresh session on the same partition, as next_session leaves it
 * (without remapping: FREE only punches pages out). */
static void reset(void)
{
	rh_typetab_free(&srv->types);
	rh_typetab_init(&srv->types);
	free(srv->types_buf);
	srv->types_buf = NULL;
	srv->types_total = srv->types_have = 0;
	srv->st = (rh_server_status){0};
	srv->dgc = NULL;
	srv->conn = fake_conn;
	free(io.types);
	memset(&io, 0, sizeof io);
}

static size_t hello(uint8_t *buf, size_t cap)
{
	rh_partition p;
	rh_partition_of(&cfg, 1, &p);
	rh_msg m = {.type = RH_MSG_HELLO};
	m.u.hello = (rh_msg_hello){.partition = 1,
	                           .heap_base = cfg.heap_base,
	                           .heap_size = cfg.heap_size,
	                           .region_size = cfg.region_size,
	                           .part_base = p.base,
	                           .part_size = p.size};
	return rh_msg_encode(&m, buf, cap);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (!srv)
		init();
	reset();
	/* The input, with the HELLO record in front unless it says not to. */
	uint8_t *in = malloc(size + 2 + 256);
	size_t n = 0;
	if (!(data[0] & 1)) {
		size_t h = hello(in + 2, 256);
		in[0] = (uint8_t)h, in[1] = (uint8_t)(h >> 8);
		n = 2 + h;
	}
	memcpy(in + n, data + 1, size - 1);
	io.data = in;
	io.size = n + size - 1;
	rh_error err;
	int rc = serve(srv, &err);
	bool bye = rc == RH_OK;
	if (io.hello_ok && !io.exhausted && !bye && !io.errors)
		rh_panic("fuzz-server: the session ended on a message (%s) without an ERROR",
		         err.msg);
	if ((io.exhausted || bye) && io.errors)
		rh_panic("fuzz-server: an ERROR went out but the session did not end on it");
	if (io.types_set && srv->types.n < 1)
		rh_panic("fuzz-server: a type table was handed on that did not decode");
	free(in);
	return 0;
}
