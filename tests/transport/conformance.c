/* rh-tp-conformance PROVIDER [--host H] [--port P]
 *
 * The transport conformance suite every provider must pass. It forks its
 * passive sides (a server driven by command messages, and two victims for
 * the kill and stop tests) and plays the active side itself. */
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define SECRET "conformance-secret"
#define LOCAL_SIZE (DATA_SIZE + ((size_t)1 << 20))

struct sess {
	rh_tp_conn *c;
	uint64_t base, size; /* the passive side's region */
	uint8_t *local;
};

static uint8_t *local_mem; /* shared by every session, registered per connection */

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int sess_open(const struct env *e, struct child *ch, const char *secret, uint32_t timeout_ms,
                     struct sess *s, rh_error *err)
{
	memset(s, 0, sizeof *s);
	rh_tp_opts o = opts_for(e, secret, timeout_ms);
	int rc = rh_tp_connect(&o, e->host, ch->port, &s->c, err);
	if (rc != RH_OK)
		return rc;
	struct cmd_msg m;
	size_t len = 0;
	rc = rh_tp_recv(s->c, &m, sizeof m, &len, 10000, err);
	if (rc == RH_OK && (len != sizeof m || m.cmd != CMD_READY))
		rc = RH_EPEER;
	if (rc == RH_OK) {
		s->base = m.a, s->size = m.b, s->local = local_mem;
		rc = rh_tp_reg(s->c, local_mem, LOCAL_SIZE, -1, 0, RH_TP_LOCAL, err);
	}
	if (rc != RH_OK) {
		rh_tp_close(s->c);
		s->c = NULL;
	}
	return rc;
}

static void sess_close(struct sess *s)
{
	if (!s->c)
		return;
	struct cmd_msg m = {CMD_BYE, 0, 0, 0};
	rh_tp_send(s->c, &m, sizeof m, 1000, NULL);
	rh_tp_close(s->c);
	s->c = NULL;
}

/* A command and its one-word reply; UINT64_MAX on transport error. */
static uint64_t cmd(struct sess *s, enum cmd k, uint64_t a, uint64_t b, uint64_t c)
{
	struct cmd_msg m = {k, a, b, c};
	rh_error err = {0};
	size_t len = 0;
	if (rh_tp_send(s->c, &m, sizeof m, -1, &err) != RH_OK ||
	    rh_tp_recv(s->c, &m, sizeof m, &len, 30000, &err) != RH_OK || len != sizeof m) {
		NOTE("command %d failed: %s", k, err.msg);
		return UINT64_MAX;
	}
	return m.a;
}

/* Post one operation and wait for it: the status. */
static int rw_wait(struct sess *s, bool wr, const rh_tp_sge *sg, size_t n, rh_error *err)
{
	static uint64_t id = 1000;
	uint64_t my = __atomic_fetch_add(&id, 1, __ATOMIC_RELAXED);
	int rc = wr ? rh_tp_write(s->c, sg, n, my, err) : rh_tp_read(s->c, sg, n, my, err);
	return rc != RH_OK ? rc : rh_tp_wait(s->c, my, -1, err);
}

static int one(struct sess *s, bool wr, uint64_t off, uint8_t *local, uint32_t len, rh_error *e)
{
	rh_tp_sge sg = {local, s->base + off, len};
	return rw_wait(s, wr, &sg, 1, e);
}

/* ---- tests ---- */

static void t_setup(const struct env *e, struct child *srv)
{
	CHECK(strstr(rh_tp_providers(), e->provider) != NULL, "provider %s is built (%s)",
	      e->provider, rh_tp_providers());
	rh_tp_opts o = opts_for(e, SECRET, 1000);
	o.provider = "no-such-provider";
	rh_tp_conn *c = NULL;
	rh_error err = {0};
	int rc = rh_tp_connect(&o, e->host, srv->port, &c, &err);
	CHECK(rc == RH_EINVAL && c == NULL, "unknown provider refused: %s", err.msg);
	o = opts_for(e, "", 1000);
	rc = rh_tp_connect(&o, e->host, srv->port, &c, &err);
	CHECK(rc == RH_EINVAL, "empty secret refused: %s", err.msg);
}

static void t_rw(struct sess *s)
{
	static const uint32_t sizes[] = {1, 8, 100, 4096, 65536, 1u << 20};
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
		uint32_t n = sizes[i];
		uint64_t off = 4096 * (i + 1) + (n < 4096 ? 8 * i + 3 : 0);
		rh_error err = {0};
		fill(s->local, 11 + i, off, n);
		int rc = one(s, true, off, s->local, n, &err);
		CHECK(rc == RH_OK && cmd(s, CMD_CHECK, 11 + i, off, n) == 1,
		      "write %u bytes lands intact%s%s", n, rc ? ": " : "", rc ? err.msg : "");
		cmd(s, CMD_FILL, 21 + i, off, n);
		memset(s->local, 0, n);
		rc = one(s, false, off, s->local, n, &err);
		CHECK(rc == RH_OK && check(s->local, 21 + i, off, n), "read %u bytes intact%s%s", n,
		      rc ? ": " : "", rc ? err.msg : "");
	}
}

static void t_sg(struct sess *s)
{
	enum { PAGES = 64, PG = 4096 };
	rh_tp_sge sg[PAGES];
	/* Write: contiguous local pages to every other remote page. */
	for (int i = 0; i < PAGES; i++) {
		uint64_t off = (uint64_t)(2 * i) * PG;
		fill(s->local + i * PG, 31, off, PG);
		sg[i] = (rh_tp_sge){s->local + i * PG, s->base + off, PG};
	}
	rh_error err = {0};
	int rc = rw_wait(s, true, sg, PAGES, &err);
	int good = 0;
	for (int i = 0; i < PAGES && rc == RH_OK; i++)
		good += cmd(s, CMD_CHECK, 31, (uint64_t)(2 * i) * PG, PG) == 1;
	CHECK(rc == RH_OK && good == PAGES, "SG write of %d pages in one op (%d intact)%s%s", PAGES,
	      good, rc ? ": " : "", rc ? err.msg : "");
	/* Read: remote pages in reverse order into contiguous local pages. */
	cmd(s, CMD_FILL, 32, 0, 2 * PAGES * PG);
	memset(s->local, 0, PAGES * PG);
	for (int i = 0; i < PAGES; i++)
		sg[i] = (rh_tp_sge){s->local + i * PG,
		                    s->base + (uint64_t)(2 * (PAGES - 1 - i)) * PG, PG};
	rc = rw_wait(s, false, sg, PAGES, &err);
	good = 0;
	for (int i = 0; i < PAGES && rc == RH_OK; i++)
		good += check(s->local + i * PG, 32, (uint64_t)(2 * (PAGES - 1 - i)) * PG, PG);
	CHECK(rc == RH_OK && good == PAGES, "SG read of %d scattered pages in one op (%d intact)",
	      PAGES, good);
}

enum { THREADS = 4, FAA_EACH = 5000, CAS_EACH = 1000 };

struct atom_arg {
	struct sess *s;
	int id;
	uint8_t *seen; /* one flag per FAA result */
	int errors;
};

static void *faa_thread(void *p)
{
	struct atom_arg *a = p;
	uint64_t ctr = a->s->base + CTR_OFF;
	for (int i = 0; i < FAA_EACH; i++) {
		uint64_t old = UINT64_MAX, wr = ((uint64_t)a->id << 32) | (uint64_t)i;
		rh_error err = {0};
		if (rh_tp_faa(a->s->c, ctr, 1, &old, wr, &err) != RH_OK ||
		    rh_tp_wait(a->s->c, wr, -1, &err) != RH_OK || old >= THREADS * FAA_EACH) {
			a->errors++;
			continue;
		}
		__atomic_fetch_add(&a->seen[old], 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *cas_thread(void *p)
{
	struct atom_arg *a = p;
	uint64_t ctr = a->s->base + CTR_OFF + 8, guess = 0;
	uint64_t wr = (uint64_t)(a->id + 100) << 32;
	for (int done = 0; done < CAS_EACH;) {
		uint64_t old = 0;
		rh_error err = {0};
		if (rh_tp_cas(a->s->c, ctr, guess, guess + 1, &old, ++wr, &err) != RH_OK ||
		    rh_tp_wait(a->s->c, wr, -1, &err) != RH_OK) {
			a->errors++;
			return NULL;
		}
		if (old == guess)
			done++, guess++;
		else
			guess = old;
	}
	return NULL;
}

static void t_atomics(struct sess *s)
{
	uint8_t *seen = calloc(THREADS * FAA_EACH, 1);
	struct atom_arg args[THREADS];
	pthread_t th[THREADS];
	for (int k = 0; k < 2; k++) {
		for (int i = 0; i < THREADS; i++) {
			args[i] = (struct atom_arg){s, i, seen, 0};
			pthread_create(&th[i], NULL, k ? cas_thread : faa_thread, &args[i]);
		}
		int errors = 0;
		for (int i = 0; i < THREADS; i++) {
			pthread_join(th[i], NULL);
			errors += args[i].errors;
		}
		uint64_t v = cmd(s, CMD_GET64, 0, CTR_OFF + 8 * (uint64_t)k, 0);
		if (k == 0) {
			int once = 0;
			for (int i = 0; i < THREADS * FAA_EACH; i++)
				once += seen[i] == 1;
			CHECK(errors == 0 && v == THREADS * FAA_EACH && once == THREADS * FAA_EACH,
			      "FAA from %d threads: counter %" PRIu64 " of %d, %d distinct old "
			      "values, %d errors",
			      THREADS, v, THREADS * FAA_EACH, once, errors);
		} else {
			CHECK(errors == 0 && v == THREADS * CAS_EACH,
			      "CAS increments from %d threads: counter %" PRIu64
			      " of %d, %d errors",
			      THREADS, v, THREADS * CAS_EACH, errors);
		}
	}
	free(seen);
	rh_error err = {0};
	uint64_t w = s->base + CTR_OFF + 16;
	int rc = rh_tp_write8(s->c, w, 0x0123456789abcdefull, 77, &err);
	rc = rc ? rc : rh_tp_wait(s->c, 77, -1, &err);
	CHECK(rc == RH_OK && cmd(s, CMD_GET64, 0, CTR_OFF + 16, 0) == 0x0123456789abcdefull,
	      "aligned write8 lands");
	uint64_t old;
	rc = rh_tp_write8(s->c, w + 4, 1, 78, &err);
	CHECK(rc == RH_EINVAL, "unaligned write8 refused: %s", err.msg);
	rc = rh_tp_cas(s->c, w + 1, 0, 1, &old, 79, &err);
	CHECK(rc == RH_EINVAL, "unaligned CAS refused: %s", err.msg);
}

static void t_messages(struct sess *s)
{
	uint8_t *buf = malloc(64 * 1024 + 1);
	rh_error err = {0};
	/* Ordering and flow control: the passive side takes messages far
	 * slower than we send, with a window of SLOW_CREDITS. */
	enum { COUNT = 2000 };
	struct cmd_msg m = {CMD_SLOWRECV, COUNT, 0, 0};
	int rc = rh_tp_send(s->c, &m, sizeof m, -1, &err), sent = 0;
	for (uint64_t i = 0; i < COUNT && rc == RH_OK; i++, sent++) {
		size_t len = 8 + (i * 37) % 2000;
		memcpy(buf, &i, 8);
		fill(buf + 8, i, 0, len - 8);
		rc = rh_tp_send(s->c, buf, len, 5000, &err);
	}
	size_t len = 0;
	if (rc == RH_OK)
		rc = rh_tp_recv(s->c, &m, sizeof m, &len, 30000, &err);
	CHECK(rc == RH_OK && m.a == COUNT,
	      "%d messages to a slow receiver (window %d): %d sent, %" PRIu64
	      " arrived in order and intact%s%s",
	      COUNT, SLOW_CREDITS, sent, m.a, rc ? ": " : "", rc ? err.msg : "");
	/* Largest message, echoed. */
	size_t max = 64 * 1024;
	struct cmd_msg echo = {CMD_ECHO, 0, 0, 0};
	memcpy(buf, &echo, sizeof echo);
	fill(buf + sizeof echo, 5, 0, max - sizeof echo);
	rc = rh_tp_send(s->c, buf, max, -1, &err);
	memset(buf, 0, max);
	if (rc == RH_OK)
		rc = rh_tp_recv(s->c, buf, max, &len, 10000, &err);
	CHECK(rc == RH_OK && len == max && check(buf + sizeof echo, 5, 0, max - sizeof echo),
	      "message of max_msg (%zu) bytes round-trips intact", max);
	rc = rh_tp_send(s->c, buf, max + 1, -1, &err);
	CHECK(rc == RH_EINVAL, "message of max_msg+1 bytes refused: %s", err.msg);
	/* rh_tp_fd wakes a poll loop when a message arrives. An eventfd-style
	 * (non-blocking) fd is drained first so that the check means
	 * something; other fds are only polled. */
	int fd = rh_tp_fd(s->c);
	uint64_t drain;
	if (fd >= 0 && (fcntl(fd, F_GETFL) & O_NONBLOCK))
		while (read(fd, &drain, sizeof drain) == sizeof drain)
			;
	rc = rh_tp_send(s->c, buf, sizeof echo, -1, &err);
	struct pollfd pf = {fd, POLLIN, 0};
	int ready = fd >= 0 ? poll(&pf, 1, 5000) : -1;
	int rc4 = rh_tp_recv(s->c, buf, max, &len, 5000, &err);
	CHECK(rc == RH_OK && rc4 == RH_OK && (fd < 0 || ready == 1),
	      "rh_tp_fd (%d) is readable once a message arrived", fd);
	/* A receive buffer too small leaves the message queued. */
	memcpy(buf, &echo, sizeof echo);
	rc = rh_tp_send(s->c, buf, 100, -1, &err);
	len = 0;
	int rc2 = rh_tp_recv(s->c, buf, 10, &len, 10000, &err);
	size_t len2 = 0;
	int rc3 = rh_tp_recv(s->c, buf, 100, &len2, 10000, &err);
	CHECK(rc == RH_OK && rc2 == RH_EINVAL && len == 100 && rc3 == RH_OK && len2 == 100,
	      "short receive buffer: RH_EINVAL with the size, message kept");
	free(buf);
}

static void t_large(struct sess *s)
{
	rh_error err = {0};
	fill(s->local, 41, 0, DATA_SIZE);
	int rc = one(s, true, 0, s->local, (uint32_t)DATA_SIZE, &err);
	CHECK(rc == RH_OK && cmd(s, CMD_CHECK, 41, 0, DATA_SIZE) == 1,
	      "64 MiB write in one op lands intact%s%s", rc ? ": " : "", rc ? err.msg : "");
	memset(s->local, 0, DATA_SIZE);
	rc = one(s, false, 0, s->local, (uint32_t)DATA_SIZE, &err);
	CHECK(rc == RH_OK && check(s->local, 41, 0, DATA_SIZE), "64 MiB read in one op intact");
}

static bool names_addr(const rh_error *e, uint64_t addr)
{
	char hex[32];
	snprintf(hex, sizeof hex, "0x%" PRIx64, addr);
	return strstr(e->msg, hex) != NULL;
}

static void t_bounds(struct sess *s)
{
	rh_error err = {0};
	uint64_t below = s->base - 8, end = s->base + s->size - 8;
	rh_tp_sge sg = {s->local, below, 8};
	int rc = rh_tp_read(s->c, &sg, 1, 90, &err);
	CHECK(rc == RH_ERANGE && names_addr(&err, below), "read below the range refused: %s",
	      err.msg);
	sg = (rh_tp_sge){s->local, end, 16};
	rc = rh_tp_write(s->c, &sg, 1, 91, &err);
	CHECK(rc == RH_ERANGE && names_addr(&err, end), "write straddling the end refused: %s",
	      err.msg);
	rh_tp_sge two[2] = {{s->local, s->base, 8}, {s->local, s->base + s->size, 8}};
	rc = rh_tp_read(s->c, two, 2, 92, &err);
	CHECK(rc == RH_ERANGE, "SG list with one bad element refused: %s", err.msg);
	uint64_t junk[2];
	sg = (rh_tp_sge){junk, s->base, 8};
	rc = rh_tp_read(s->c, &sg, 1, 93, &err);
	CHECK(rc == RH_ERANGE, "unregistered local buffer refused: %s", err.msg);
	uint64_t old;
	rc = rh_tp_faa(s->c, s->base + s->size, 1, &old, 94, &err);
	CHECK(rc == RH_ERANGE, "FAA past the end refused: %s", err.msg);
	rh_tp_completion cq[8];
	CHECK(rh_tp_poll(s->c, cq, 8, &err) == 0, "refused operations complete nothing");
	/* A withdrawn range is refused; the withdrawal is ordered before the
	 * reply message. */
	rc = cmd(s, CMD_DEREG, 0, 0, 0) == 1 ? RH_OK : RH_EIO;
	sg = (rh_tp_sge){s->local, s->base, 8};
	int rc2 = rh_tp_read(s->c, &sg, 1, 95, &err);
	CHECK(rc == RH_OK && rc2 == RH_ERANGE, "read of a withdrawn range refused: %s", err.msg);
}

static void t_auth(const struct env *e, struct child *srv)
{
	struct sess s;
	rh_error err = {0};
	int rc = sess_open(e, srv, "wrong-secret", 5000, &s, &err);
	CHECK(rc == RH_EAUTH, "wrong secret: connector gets RH_EAUTH: %s", err.msg);
	int code = child_report(srv, 5000);
	CHECK(code == RH_EAUTH, "wrong secret: listener gets RH_EAUTH (got %d)", code);
	rc = sess_open(e, srv, SECRET, 5000, &s, &err);
	CHECK(rc == RH_OK && cmd(&s, CMD_GET64, 0, CTR_OFF, 0) != UINT64_MAX,
	      "listener keeps serving after a failed handshake%s%s", rc ? ": " : "",
	      rc ? err.msg : "");
	sess_close(&s);
}

static void t_killed(const struct env *e, struct child *victim)
{
	struct sess s;
	rh_error err = {0};
	int rc = sess_open(e, victim, SECRET, 1000, &s, &err);
	CHECK(rc == RH_OK, "connect to the victim%s%s", rc ? ": " : "", err.msg);
	if (rc)
		return;
	/* Transfers in flight when the peer dies. */
	enum { INFLIGHT = 8, CHUNK = 1 << 20 };
	for (uint64_t i = 0; i < INFLIGHT; i++) {
		rh_tp_sge sg = {s.local + i * CHUNK, s.base + i * CHUNK, CHUNK};
		rh_tp_write(s.c, &sg, 1, 500 + i, &err);
	}
	kill(victim->pid, SIGKILL);
	uint64_t t0 = now_ms();
	int first = RH_OK;
	for (uint64_t i = 0; first == RH_OK && now_ms() - t0 < 5000; i++) {
		rh_tp_sge sg = {s.local, s.base + (i % 64) * CHUNK, CHUNK};
		rc = rh_tp_write(s.c, &sg, 1, 600 + i, &err);
		if (rc == RH_OK)
			rc = rh_tp_wait(s.c, 600 + i, -1, &err);
		first = rc;
	}
	uint64_t dt = now_ms() - t0;
	CHECK(first == RH_EPEER || first == RH_ETIMEDOUT,
	      "peer killed mid-transfer: error %d (%s) after %" PRIu64 " ms", first,
	      rh_status_name(first), dt);
	CHECK(dt <= 1000 + 500, "error within the timeout (1000 ms): %" PRIu64 " ms", dt);
	int done = 0, bad = 0;
	for (uint64_t i = 0; i < INFLIGHT; i++) {
		int st = rh_tp_wait(s.c, 500 + i, 2000, &err);
		done += st != RH_ETIMEDOUT;
		bad += st != RH_OK && st != RH_EPEER && st != RH_ETIMEDOUT;
	}
	CHECK(bad == 0 && done == INFLIGHT,
	      "in-flight operations all complete, with OK or RH_EPEER (%d of %d reported)", done,
	      INFLIGHT);
	size_t len;
	uint8_t b[64];
	rc = rh_tp_recv(s.c, b, sizeof b, &len, 2000, &err);
	CHECK(rc == RH_EPEER, "recv from a dead peer: RH_EPEER: %s", err.msg);
	rh_tp_close(s.c);
	child_stop(victim);
}

static void t_stopped(const struct env *e, struct child *victim)
{
	struct sess s;
	rh_error err = {0};
	int rc = sess_open(e, victim, SECRET, 1000, &s, &err);
	CHECK(rc == RH_OK, "connect to the victim%s%s", rc ? ": " : "", err.msg);
	if (rc)
		return;
	kill(victim->pid, SIGSTOP);
	usleep(50000);
	struct cmd_msg m = {CMD_GET64, 0, CTR_OFF, 0};
	rc = rh_tp_send(s.c, &m, sizeof m, -1, &err);
	uint64_t t0 = now_ms();
	size_t len;
	if (rc == RH_OK)
		rc = rh_tp_recv(s.c, &m, sizeof m, &len, -1, &err);
	uint64_t dt = now_ms() - t0;
	CHECK(rc == RH_ETIMEDOUT && dt >= 900 && dt <= 2500,
	      "stopped peer: request/reply gives RH_ETIMEDOUT after %" PRIu64 " ms (timeout 1000)",
	      dt);
	rh_tp_sge sg = {s.local, s.base, 4096};
	t0 = now_ms();
	rc = rh_tp_read(s.c, &sg, 1, 700, &err);
	if (rc == RH_OK)
		rc = rh_tp_wait(s.c, 700, -1, &err);
	dt = now_ms() - t0;
	/* Where the NIC's role needs no CPU of the peer (shm, verbs), the
	 * read completes; where it does (tcp), it must time out. */
	CHECK((rc == RH_OK && dt < 900) || (rc == RH_ETIMEDOUT && dt >= 900 && dt <= 2500),
	      "stopped peer: one-sided read %s after %" PRIu64 " ms",
	      rc == RH_OK ? "completed without the peer's CPU" : rh_status_name(rc), dt);
	rh_tp_close(s.c);
	child_stop(victim);
}

static int usage(void)
{
	fprintf(stderr,
	        "usage: rh-tp-conformance PROVIDER [--host H] [--port P]\n"
	        "  PROVIDER: one of the built providers (%s)\n",
	        rh_tp_providers());
	return 2;
}

int main(int argc, char **argv)
{
	check_verbose = 1; /* every case it ran, as the log of a conformance run */
	if (argc < 2 || argv[1][0] == '-')
		return usage();
	struct env e = {argv[1], "127.0.0.1", 0};
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--host") == 0 && i + 1 < argc)
			e.host = argv[++i];
		else if (strcmp(argv[i], "--port") == 0 && i + 1 < argc)
			e.port = (uint16_t)atoi(argv[++i]);
		else
			return usage();
	}
	signal(SIGPIPE, SIG_IGN);
	printf("# rh-tp-conformance %s host %s\n", e.provider, e.host);
	/* Fork every passive side before this process starts any thread. */
	struct child srv = {0}, killv = {0}, stopv = {0};
	if (child_start(&e, e.port, 64, &srv) ||
	    child_start(&e, e.port ? e.port + 1 : 0, 1, &killv) ||
	    child_start(&e, e.port ? e.port + 2 : 0, 1, &stopv)) {
		CHECK(false, "start the passive sides (provider %s)", e.provider);
		child_stop(&srv), child_stop(&killv), child_stop(&stopv);
		return check_done();
	}
	local_mem =
	        mmap(NULL, LOCAL_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	t_setup(&e, &srv);
	void (*const cases[])(struct sess *) = {t_rw,       t_sg,    t_atomics,
	                                        t_messages, t_large, t_bounds};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct sess s;
		rh_error err = {0};
		int rc = sess_open(&e, &srv, SECRET, 5000, &s, &err);
		if (rc != RH_OK) {
			CHECK(false, "connect for case %zu: %s", i, err.msg);
			continue;
		}
		cases[i](&s);
		sess_close(&s);
	}
	t_auth(&e, &srv);
	t_killed(&e, &killv);
	t_stopped(&e, &stopv);
	child_stop(&srv);
	return check_done();
}
