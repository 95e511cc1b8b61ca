/* rh-rxe-smoke: the verbs provider end to end on a real (soft) RDMA device.
 *
 * Runs inside the rxe guest (tests/rxe/run.sh): a forked passive side and
 * this process talk over the one rxe device. Covers scatter/gather READ
 * and WRITE beyond max_sge, atomics, write8, bounds errors, message flow
 * control, withdrawal, a wrong secret, and dead and silent peers. The
 * provider-neutral suite is rh-tp-conformance; this one exercises the
 * verbs-specific paths (chained WRs, credits, CM events).
 *
 * usage: rh-rxe-smoke [HOST]   (default $RH_RXE_ADDR, else 10.77.0.1)
 */
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/common/check.h"
#include "transport/transport.h"

#define REGION (4u << 20)
#define PAGE 4096u
#define TMO 5000

static const char *host;

static uint8_t pat(uint64_t seed, uint64_t off)
{
	uint64_t x = (off + 1) * 0x9e3779b97f4a7c15ull ^ seed;
	return (uint8_t)(x >> 29);
}

static void *region(void)
{
	void *p = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	return p;
}

static rh_tp_opts opts(const char *secret)
{
	return (rh_tp_opts){.provider = "verbs",
	                    .secret = (const uint8_t *)secret,
	                    .secret_len = strlen(secret),
	                    .timeout_ms = TMO};
}

struct cmd {
	char op[8];
	uint64_t a, b;
};

/* ---- passive side (child) ---- */

static void serve_one(rh_tp_conn *c)
{
	rh_error err = {0};
	uint8_t *mem = region();
	for (size_t i = 0; i < REGION; i++)
		mem[i] = pat(1, i);
	if (rh_tp_reg(c, mem, REGION, -1, 0, RH_TP_REMOTE, &err)) {
		fprintf(stderr, "child reg: %s\n", err.msg);
		_exit(3);
	}
	struct cmd m = {"ready", (uint64_t)(uintptr_t)mem, REGION};
	rh_tp_send(c, &m, sizeof m, TMO, &err);
	static uint8_t buf[64 * 1024];
	for (;;) {
		size_t len;
		if (rh_tp_recv(c, &m, sizeof m, &len, 20000, &err))
			return;
		if (!strcmp(m.op, "echo")) {
			/* Slow receiver: the sender must be held back by credits. */
			for (uint64_t i = 0; i < m.a; i++) {
				if (rh_tp_recv(c, buf, sizeof buf, &len, TMO, &err) ||
				    (i % 16 == 0 && usleep(2000)) ||
				    rh_tp_send(c, buf, len, TMO, &err)) {
					fprintf(stderr, "passive side: echo %llu: %s\n",
					        (unsigned long long)i, err.msg);
					return;
				}
			}
		} else if (!strcmp(m.op, "dereg")) {
			m.a = rh_tp_dereg(c, mem, REGION, &err);
			rh_tp_send(c, &m, sizeof m, TMO, &err);
		} else if (!strcmp(m.op, "exit")) {
			_exit(0); /* dies without closing: the peer must notice */
		} else if (!strcmp(m.op, "stop")) {
			kill(getpid(), SIGSTOP); /* silent: alive but not answering */
		} else {
			return;
		}
	}
}

static void child(int fd)
{
	rh_error err = {0};
	rh_tp_opts o = opts("right secret");
	rh_tp_listener *l;
	if (rh_tp_listen(&o, host, 0, &l, &err)) {
		fprintf(stderr, "listen on %s: %s\n", host, err.msg);
		_exit(3);
	}
	uint16_t port = rh_tp_listener_port(l);
	if (write(fd, &port, sizeof port) != sizeof port)
		_exit(3);
	for (int i = 0; i < 4; i++) {
		rh_tp_conn *c;
		int rc = rh_tp_accept(l, 30000, &c, &err);
		char r = (char)rc;
		if (write(fd, &r, 1) != 1)
			_exit(3);
		if (rc == RH_OK) {
			serve_one(c);
			rh_tp_close(c);
		}
	}
	rh_tp_listener_close(l);
	_exit(0);
}

/* ---- active side ---- */

static int wait_ok(rh_tp_conn *c, uint64_t id, rh_error *err)
{
	return rh_tp_wait(c, id, TMO, err);
}

static rh_tp_conn *open_conn(uint16_t port, struct cmd *ready)
{
	rh_error err = {0};
	rh_tp_opts o = opts("right secret");
	rh_tp_conn *c = NULL;
	int rc = rh_tp_connect(&o, host, port, &c, &err);
	CHECK(rc == RH_OK, "connect to %s:%u (%s)", host, port, rc ? err.msg : "");
	if (rc)
		return NULL;
	size_t len = 0;
	rc = rh_tp_recv(c, ready, sizeof *ready, &len, TMO, &err);
	CHECK(rc == RH_OK && !strcmp(ready->op, "ready"), "passive side advertised its region");
	return c;
}

static void test_data(rh_tp_conn *c, const struct cmd *ready)
{
	rh_error err = {0};
	uint64_t rbase = ready->a;
	uint8_t *loc = region();
	int rc = rh_tp_reg(c, loc, REGION, -1, 0, RH_TP_LOCAL, &err);
	CHECK(rc == RH_OK, "register local buffer (%s)", rc ? err.msg : "");

	/* 64 contiguous remote pages into local pages in reverse order. */
	rh_tp_sge sg[600];
	for (int i = 0; i < 64; i++)
		sg[i] = (rh_tp_sge){loc + (63 - i) * PAGE, rbase + (uint64_t)i * PAGE, PAGE};
	rc = rh_tp_read(c, sg, 64, 1, &err);
	rc = rc ? rc : wait_ok(c, 1, &err);
	bool good = rc == RH_OK;
	for (int i = 0; i < 64 && good; i++)
		for (uint32_t b = 0; b < PAGE; b += 97)
			good &= loc[(63 - i) * PAGE + b] == pat(1, (uint64_t)i * PAGE + b);
	CHECK(good, "READ of 64 pages gathered into reversed local pages (%s)", rc ? err.msg : "");

	/* 600 x 512 B, alternating remote gaps: many WRs, one completion. */
	for (int i = 0; i < 600; i++) {
		memset(loc + 2 * REGION / 4 + i * 512, (uint8_t)(i * 7 + 3), 512);
		sg[i] = (rh_tp_sge){loc + 2 * REGION / 4 + i * 512,
		                    rbase + (uint64_t)i * 1024 + (i % 2) * 512, 512};
	}
	rc = rh_tp_write(c, sg, 600, 2, &err);
	rc = rc ? rc : wait_ok(c, 2, &err);
	CHECK(rc == RH_OK, "WRITE of 600 segments (%s)", rc ? err.msg : "");
	memset(loc, 0, 600 * 1024);
	sg[0] = (rh_tp_sge){loc, rbase, 600 * 1024};
	rc = rh_tp_read(c, sg, 1, 3, &err);
	rc = rc ? rc : wait_ok(c, 3, &err);
	good = rc == RH_OK;
	for (int i = 0; i < 600 && good; i++) {
		good &= loc[i * 1024 + (i % 2) * 512] == (uint8_t)(i * 7 + 3);
		good &= loc[i * 1024 + (1 - i % 2) * 512] ==
		        pat(1, (uint64_t)i * 1024 + (1 - i % 2) * 512);
	}
	CHECK(good, "READ back of 600 KiB: written segments and untouched gaps");

	/* Atomics and write8 on one word. */
	uint64_t w = rbase + 3 * 1024 * 1024, old = 0, expect = 0;
	sg[0] = (rh_tp_sge){loc, w, 8};
	rh_tp_read(c, sg, 1, 4, &err);
	wait_ok(c, 4, &err);
	memcpy(&expect, loc, 8);
	rc = rh_tp_cas(c, w, expect, 42, &old, 5, &err);
	rc = rc ? rc : wait_ok(c, 5, &err);
	CHECK(rc == RH_OK && old == expect, "CAS succeeds, returns the prior value");
	rc = rh_tp_cas(c, w, expect, 99, &old, 6, &err);
	rc = rc ? rc : wait_ok(c, 6, &err);
	CHECK(rc == RH_OK && old == 42, "CAS with a stale expectation fails, returns 42");
	rc = rh_tp_faa(c, w, 5, &old, 7, &err);
	rc = rc ? rc : wait_ok(c, 7, &err);
	CHECK(rc == RH_OK && old == 42, "FAA returns 42");
	rc = rh_tp_write8(c, w + 8, 0x1122334455667788ull, 8, &err);
	rc = rc ? rc : wait_ok(c, 8, &err);
	sg[0] = (rh_tp_sge){loc, w, 16};
	rc = rc ? rc : rh_tp_read(c, sg, 1, 9, &err);
	rc = rc ? rc : wait_ok(c, 9, &err);
	uint64_t v[2];
	memcpy(v, loc, 16);
	CHECK(rc == RH_OK && v[0] == 47 && v[1] == 0x1122334455667788ull,
	      "FAA result 47 and write8 value are visible remotely");

	/* Many ops in flight, reaped by poll. */
	for (int i = 0; i < 200; i++) {
		sg[0] = (rh_tp_sge){loc + i * 64, rbase + (uint64_t)i * 64, 64};
		rc = rh_tp_read(c, sg, 1, 1000 + (uint64_t)i, &err);
		if (rc)
			break;
	}
	int seen = 0, bad = 0;
	uint64_t t0 = (uint64_t)time(NULL);
	while (rc == RH_OK && seen < 200 && (uint64_t)time(NULL) - t0 < 10) {
		rh_tp_completion cq[32];
		int n = rh_tp_poll(c, cq, 32, &err);
		if (n < 0)
			break;
		for (int k = 0; k < n; k++)
			bad += cq[k].status != RH_OK || cq[k].wr_id != 1000 + (uint64_t)seen + k;
		seen += n;
	}
	CHECK(seen == 200 && bad == 0, "200 reads in flight: %d completions by poll, in order",
	      seen);

	rc = rh_tp_read(c, &(rh_tp_sge){loc, rbase + REGION - 8, 16}, 1, 10, &err);
	CHECK(rc == RH_ERANGE, "READ past the advertised range: RH_ERANGE (%d)", rc);
	CHECK(rh_tp_wait(c, 12345, 100, &err) != RH_OK, "wait for an unknown wr_id fails");

	/* Messages: more than the window, slow receiver, sizes 0 .. 64 KiB. */
	static uint8_t msg[64 * 1024], got[64 * 1024];
	struct cmd m = {"echo", 300, 0};
	rc = rh_tp_send(c, &m, sizeof m, TMO, &err);
	int sent = 0, recvd = 0;
	bool order = true;
	for (; rc == RH_OK && sent < 300; sent++) {
		size_t len = (size_t)(sent * 997) % sizeof msg;
		if (sent % 50 == 0)
			len = sent % 100 ? sizeof msg : 0;
		memset(msg, (uint8_t)sent, len);
		rc = rh_tp_send(c, msg, len, TMO, &err);
		/* Read the echoes lazily, so both directions run out of credit. */
		while (rc == RH_OK && sent - recvd > 100) {
			size_t gl;
			rc = rh_tp_recv(c, got, sizeof got, &gl, TMO, &err);
			order &= rc == RH_OK && (gl == 0 || got[gl - 1] == (uint8_t)recvd);
			recvd++;
		}
	}
	while (rc == RH_OK && recvd < 300) {
		size_t gl;
		rc = rh_tp_recv(c, got, sizeof got, &gl, TMO, &err);
		order &= rc == RH_OK && (gl == 0 || got[gl - 1] == (uint8_t)recvd);
		recvd++;
	}
	CHECK(rc == RH_OK && order && recvd == 300,
	      "300 messages echoed in order through credits (%s)", rc ? err.msg : "");

	/* Withdrawal: afterwards the range is refused before posting. */
	m = (struct cmd){"dereg", 0, 0};
	rc = rh_tp_send(c, &m, sizeof m, TMO, &err);
	size_t len;
	rc = rc ? rc : rh_tp_recv(c, &m, sizeof m, &len, TMO, &err);
	CHECK(rc == RH_OK && m.a == RH_OK, "passive side withdrew its region");
	rc = rh_tp_read(c, &(rh_tp_sge){loc, rbase, 64}, 1, 11, &err);
	CHECK(rc == RH_ERANGE, "READ of a withdrawn range: RH_ERANGE (%d)", rc);
	rh_tp_dereg(c, loc, REGION, &err);
	munmap(loc, REGION);
}

/* Both passive sides are forked before this process touches a verbs
 * device: an inherited uverbs file cannot be used by the child (the kernel
 * refuses it: "changed security contexts"). */
static pid_t spawn(int *fd, uint16_t *port)
{
	int p[2];
	if (pipe(p))
		exit(2);
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		child(p[1]);
	}
	close(p[1]);
	*fd = p[0];
	if (pid < 0 || read(p[0], port, sizeof *port) != sizeof *port) {
		CHECK(0, "the passive side starts");
		exit(1);
	}
	return pid;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	check_verbose = 1; /* every case, as the guest's log */
	host = argc > 1 ? argv[1] : getenv("RH_RXE_ADDR") ? getenv("RH_RXE_ADDR") : "10.77.0.1";
	setvbuf(stdout, NULL, _IOLBF, 0);
	int fd, fd2;
	uint16_t port, port2;
	pid_t pid = spawn(&fd, &port);
	pid_t pid2 = spawn(&fd2, &port2);
	char acc;
	rh_error err = {0};
	struct cmd ready;

	/* 1: the data path. */
	rh_tp_conn *c = open_conn(port, &ready);
	if (c) {
		test_data(c, &ready);
		struct cmd m = {"bye", 0, 0};
		rh_tp_send(c, &m, sizeof m, TMO, &err);
		rh_tp_close(c);
	}
	CHECK(read(fd, &acc, 1) == 1 && acc == RH_OK, "passive side accepted connection 1");

	/* 2: wrong secret, refused on both sides. */
	rh_tp_opts o = opts("wrong secret");
	int rc = rh_tp_connect(&o, host, port, &c, &err);
	CHECK(rc == RH_EAUTH, "connect with a wrong secret: RH_EAUTH (%d %s)", rc,
	      rc ? err.msg : "");
	if (rc == RH_OK)
		rh_tp_close(c);
	acc = -1;
	if (read(fd, &acc, 1) != 1)
		acc = -1;
	CHECK(acc == RH_EAUTH, "passive side refused it: RH_EAUTH (%d)", acc);

	/* 3: the peer process dies: RH_EPEER well within the timeout. */
	c = open_conn(port, &ready);
	if (c) {
		if (read(fd, &acc, 1) != 1)
			acc = -1;
		struct cmd m = {"exit", 0, 0};
		rh_tp_send(c, &m, sizeof m, TMO, &err);
		double t = now_s();
		size_t len;
		rc = rh_tp_recv(c, &m, sizeof m, &len, TMO, &err);
		t = now_s() - t;
		CHECK(rc == RH_EPEER && t < TMO / 1000.0,
		      "dead peer: recv gives RH_EPEER after %.2f s", t);
		uint64_t old;
		rc = rh_tp_faa(c, ready.a, 1, &old, 1, &err);
		if (rc == RH_OK)
			rc = rh_tp_wait(c, 1, TMO, &err);
		CHECK(rc == RH_EPEER, "dead peer: later operations fail with RH_EPEER (%d)", rc);
		rh_tp_close(c);
	}
	waitpid(pid, NULL, 0);

	/* 4: the peer stops answering: RH_ETIMEDOUT after the timeout. */
	c = open_conn(port2, &ready);
	if (c) {
		struct cmd m = {"stop", 0, 0};
		rh_tp_send(c, &m, sizeof m, TMO, &err);
		double t = now_s();
		size_t len;
		rc = rh_tp_recv(c, &m, sizeof m, &len, 700, &err);
		t = now_s() - t;
		CHECK(rc == RH_ETIMEDOUT && t >= 0.6 && t < 3,
		      "silent peer: RH_ETIMEDOUT after %.2f s", t);
		rh_tp_close(c);
	}
	kill(pid2, SIGKILL);
	waitpid(pid2, NULL, 0);
	return check_done();
}
