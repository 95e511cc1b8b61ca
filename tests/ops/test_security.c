/* The tracer's refusals, end to end against rheap-tracerd: a wrong secret,
 * a replayed handshake, access outside the partition and oversize
 * messages are each refused, and each refusal is logged on the tracer.
 * (tests/transport/conformance.c and tests/fuzz/ cover the same at the
 * transport level.)
 *
 * usage: test-security TRACERD PROVIDER
 */
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>

#include "tests/ops/client.h"
#include "transport/auth.h"

static const char *tracerd, *provider;

static int count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* A man in the middle on TCP: forwards one connection to the tracer and
 * records what the connecting side sent. */
typedef struct proxy {
	int lfd, port, target;
	uint8_t rec[4096];
	size_t n;
} proxy;

static void *proxy_main(void *arg)
{
	proxy *p = arg;
	int a = accept(p->lfd, NULL, NULL), b = cluster_tcp_connect(p->target);
	if (a < 0 || b < 0)
		return NULL;
	struct pollfd fds[2] = {{.fd = a, .events = POLLIN}, {.fd = b, .events = POLLIN}};
	uint8_t buf[4096];
	for (;;) {
		if (poll(fds, 2, 5000) <= 0)
			break;
		int from = fds[0].revents ? 0 : 1;
		ssize_t r = read(fds[from].fd, buf, sizeof buf);
		if (r <= 0)
			break;
		if (from == 0 && p->n + (size_t)r <= sizeof p->rec) {
			memcpy(p->rec + p->n, buf, (size_t)r);
			p->n += (size_t)r;
		}
		if (write(fds[!from].fd, buf, (size_t)r) != r)
			break;
	}
	close(a);
	close(b);
	return NULL;
}

static void test_secret_and_replay(void)
{
	cluster c;
	char log[65536];
	rh_error err;
	if (client_start_tracer(&c, tracerd, provider) < 0)
		return;
	client bad = {0};
	int rc = client_connect(&bad, &c, provider, c.port[0], "not-the-secret-at-all", &err);
	CHECK(rc == RH_EAUTH, "wrong secret: refused with RH_EAUTH (%d: %s)", rc, err.msg);
	if (rc == RH_OK)
		rh_tp_close(bad.conn);
	CHECK(client_wait_log(
	              &c, "warn tracerd: refused a connection: transport: authentication failed",
	              log, sizeof log),
	      "wrong secret: logged on the tracer: %s", log);

	/* The tracer still serves the real CPU server. */
	client good = {0};
	rc = client_open(&good, &c, provider, &err);
	CHECK(rc == RH_OK, "after it, the right secret gets HELLO_OK (%s)", rc ? err.msg : "");

	if (strcmp(provider, "tcp") == 0) {
		/* Record a genuine handshake through a relay... */
		proxy p = {.target = c.port[0]};
		if ((p.lfd = cluster_bind_any(&p.port)) < 0 || listen(p.lfd, 1) < 0) {
			CHECK(0, "proxy");
			return;
		}
		pthread_t thr;
		pthread_create(&thr, NULL, proxy_main, &p);
		client rec = {0};
		rc = client_connect(&rec, &c, provider, p.port, NULL, &err);
		rh_msg m;
		int rc2 = rc == RH_OK ? client_recv(&rec, &m, &err) : rc;
		CHECK(rc == RH_OK && rc2 == RH_OK && m.type == RH_MSG_ERROR &&
		              m.u.error.code == RH_EBUSY,
		      "a genuine second CPU server authenticates and is refused as busy (%s)",
		      err.msg);
		if (rc == RH_OK)
			rh_tp_close(rec.conn);
		pthread_join(thr, NULL);
		close(p.lfd);
		CHECK(p.n >= RH_AUTH_HELLO_LEN, "the relay recorded its handshake (%zu bytes)",
		      p.n);
		/* ...and play it back on a fresh connection: the tracer's new
		 * nonce makes the recorded proof worthless. */
		int fd = cluster_tcp_connect(c.port[0]);
		CHECK(fd >= 0 && write(fd, p.rec, p.n) == (ssize_t)p.n, "replay sent");
		uint8_t junk[4096];
		size_t got = 0;
		ssize_t r;
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		while (poll(&pf, 1, 4000) == 1 && (r = read(fd, junk, sizeof junk)) > 0)
			got += (size_t)r;
		if (fd >= 0)
			close(fd);
		/* The challenge and a verdict, never a message. */
		CHECK(got < 200, "replay: the connection closed after the handshake (%zu bytes)",
		      got);
		/* The wrong secret earlier, and now the replay. */
		const char *auth = "warn tracerd: refused a connection: transport: authentication "
		                   "failed";
		for (int t = 0; t < 100 && count(cluster_log(&c, 0, log, sizeof log), auth) < 2;
		     t++)
			usleep(30000);
		CHECK(count(log, auth) == 2, "replay: refused and logged: %s", log);
		const char *busy = "refused a second CPU server: busy";
		for (int t = 0; t < 100 && count(cluster_log(&c, 0, log, sizeof log), busy) < 1;
		     t++)
			usleep(30000);
		CHECK(count(log, busy) == 1, "replay: never taken for an authenticated CPU server");
	}
	if (good.conn)
		rh_tp_close(good.conn);
	char bad_line[256];
	CHECK(ops_log_well_formed(cluster_log(&c, 0, log, sizeof log), bad_line, sizeof bad_line),
	      "one event per line: %s", bad_line);
	cluster_stop(&c);
}

static void test_outside(void)
{
	cluster c;
	char log[65536];
	rh_error err;
	client k = {0};
	if (client_start(&c, &k, tracerd, provider, &err) < 0)
		return;
	static uint8_t local[8192];
	int rc = rh_tp_reg(k.conn, local, sizeof local, -1, 0, RH_TP_LOCAL, &err);
	CHECK(rc == RH_OK, "register a local buffer (%s)", rc ? err.msg : "");
	rh_tp_sge in = {.local = local, .remote = k.part.base + 4096, .len = 4096};
	rc = rh_tp_read(k.conn, &in, 1, 1, &err);
	if (rc == RH_OK)
		rc = rh_tp_wait(k.conn, 1, 2000, &err);
	CHECK(rc == RH_OK, "a read inside the partition works (%s)", rc ? err.msg : "");
	rh_tp_sge past = {.local = local, .remote = k.part.base + k.part.size - 2048, .len = 4096};
	rc = rh_tp_read(k.conn, &past, 1, 2, &err);
	CHECK(rc == RH_ERANGE, "a read across the partition's end is refused (%d: %s)", rc,
	      err.msg);
	rh_tp_sge before = {.local = local, .remote = k.part.base - 4096, .len = 4096};
	rc = rh_tp_write(k.conn, &before, 1, 3, &err);
	CHECK(rc == RH_ERANGE, "a write below the partition is refused (%d: %s)", rc, err.msg);

	/* FREE of a region this tracer does not host. */
	uint32_t region = k.part.first_region + k.part.n_regions;
	rh_msg m = {.type = RH_MSG_FREE, .seq = 1};
	m.u.free.n = 1;
	m.u.free.regions = (const uint8_t *)&region;
	rc = client_send(&k, &m, &err);
	rh_msg ans;
	int rc2 = rc == RH_OK ? client_recv(&k, &ans, &err) : rc;
	CHECK(rc2 == RH_OK && ans.type == RH_MSG_ERROR && strstr(ans.u.error.text, "outside"),
	      "FREE outside the partition is answered with ERROR (%s)",
	      rc2 == RH_OK && ans.type == RH_MSG_ERROR ? ans.u.error.text : err.msg);
	CHECK(client_wait_log(&c, "error tracerd: CPU server lost: tracer: FREE of region", log,
	                      sizeof log),
	      "and logged: %s", log);
	rh_tp_close(k.conn);
	CHECK(cluster_wait_released(&c, 0, 3000) && waitpid(c.pid[0], NULL, WNOHANG) == 0,
	      "the tracer released its partition and waits for the next CPU server");
	cluster_stop(&c);
}

static void test_oversize(void)
{
	cluster c;
	char log[65536];
	rh_error err;
	client k = {0};
	if (client_start(&c, &k, tracerd, provider, &err) < 0)
		return;
	static uint8_t big[RH_PROTO_MAX + 1];
	int rc = rh_tp_send(k.conn, big, sizeof big, 2000, &err);
	CHECK(rc == RH_EINVAL, "a message over 64 KiB is refused before it leaves (%d: %s)", rc,
	      err.msg);
	/* A type table announced larger than the tracer accepts. */
	rh_msg m = {.type = RH_MSG_TYPES};
	m.u.types = (rh_msg_types){
	        .offset = 0, .total = 65u << 20, .len = 2, .bytes = (const uint8_t *)"{}"};
	rc = client_send(&k, &m, &err);
	rh_msg ans;
	int rc2 = rc == RH_OK ? client_recv(&k, &ans, &err) : rc;
	CHECK(rc2 == RH_OK && ans.type == RH_MSG_ERROR && strstr(ans.u.error.text, "64 MiB"),
	      "a 65 MiB type table is answered with ERROR (%s)",
	      rc2 == RH_OK && ans.type == RH_MSG_ERROR ? ans.u.error.text : err.msg);
	CHECK(client_wait_log(&c, "exceeds 64 MiB", log, sizeof log) &&
	              strstr(log, "error tracerd: CPU server lost"),
	      "and logged: %s", log);
	rh_tp_close(k.conn);
	cluster_stop(&c);
}

int main(int argc, char **argv)
{
	if (cluster_args(argc, argv, 0, "", &tracerd, &provider))
		return 2;
	signal(SIGPIPE, SIG_IGN);
	test_secret_and_replay();
	test_outside();
	test_oversize();
	return check_done();
}
