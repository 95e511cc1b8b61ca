/* rh-rxe-perf: the verbs provider measured the way perftest measures, so
 * the two can be compared in one guest (tests/rxe/bench.sh). A benchmark,
 * not a test: it asserts nothing but that the operations succeed.
 *
 * usage: rh-rxe-perf HOST read_lat SIZE ITERS | write_bw SIZE ITERS DEPTH
 *   read_lat: one READ in flight; prints "@@RH read_lat SIZE AVG_US TYPICAL_US"
 *   write_bw: DEPTH WRITEs in flight; prints "@@RH write_bw SIZE MB_PER_S"
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "transport/transport.h"

#define REGION ((size_t)16 << 20)
#define SECRET "rxe-perf"

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static rh_tp_opts opts(void)
{
	return (rh_tp_opts){.provider = "verbs",
	                    .secret = (const uint8_t *)SECRET,
	                    .secret_len = strlen(SECRET),
	                    .timeout_ms = 10000};
}

static void fail(const char *what, const rh_error *e)
{
	fprintf(stderr, "rh-rxe-perf: %s: %s\n", what, e->msg);
	exit(1);
}

static void passive(const char *host, int fd)
{
	rh_tp_opts o = opts();
	rh_error err = {0};
	rh_tp_listener *l;
	if (rh_tp_listen(&o, host, 0, &l, &err))
		fail("listen", &err);
	uint16_t port = rh_tp_listener_port(l);
	if (write(fd, &port, sizeof port) != sizeof port)
		exit(1);
	uint8_t *m = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(m, 7, REGION);
	rh_tp_conn *c;
	if (rh_tp_accept(l, 30000, &c, &err) || rh_tp_reg(c, m, REGION, -1, 0, RH_TP_REMOTE, &err))
		fail("accept", &err);
	uint64_t a = (uint64_t)(uintptr_t)m;
	rh_tp_send(c, &a, sizeof a, -1, &err);
	size_t len;
	rh_tp_recv(c, &a, sizeof a, &len, 600000, &err);
	_exit(0);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: rh-rxe-perf HOST read_lat SIZE ITERS | "
		                "HOST write_bw SIZE ITERS DEPTH\n");
		return 2;
	}
	const char *host = argv[1], *what = argv[2];
	uint32_t size = (uint32_t)atoi(argv[3]);
	int iters = atoi(argv[4]), depth = argc > 5 ? atoi(argv[5]) : 1;
	if (size == 0 || size > REGION / 2 || iters <= 0 || depth <= 0 || depth > 256)
		return fprintf(stderr, "rh-rxe-perf: bad size, iterations or depth\n"), 2;
	int p[2];
	if (pipe(p))
		return 1;
	pid_t pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		passive(host, p[1]);
	}
	uint16_t port;
	if (read(p[0], &port, sizeof port) != sizeof port)
		return 1;
	rh_tp_opts o = opts();
	rh_error err = {0};
	rh_tp_conn *c;
	uint64_t base;
	size_t len;
	if (rh_tp_connect(&o, host, port, &c, &err) ||
	    rh_tp_recv(c, &base, sizeof base, &len, 10000, &err))
		fail("connect", &err);
	uint8_t *loc =
	        mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(loc, 1, REGION);
	if (rh_tp_reg(c, loc, REGION, -1, 0, RH_TP_LOCAL, &err))
		fail("reg", &err);
	uint64_t id = 1;
	if (!strcmp(what, "read_lat")) {
		double *t = malloc((size_t)iters * sizeof *t), sum = 0, post = 0;
		rh_tp_sge sg = {loc, base, size};
		for (int i = -100; i < iters; i++) { /* 100 warm-up rounds */
			double t0 = now_us();
			if (rh_tp_read(c, &sg, 1, id, &err))
				fail("read", &err);
			double t1 = now_us();
			if (rh_tp_wait(c, id, -1, &err))
				fail("read", &err);
			id++;
			if (i >= 0) {
				sum += t[i] = now_us() - t0;
				post += t1 - t0;
			}
		}
		qsort(t, (size_t)iters, sizeof *t, cmp);
		printf("@@RH read_lat %u %.2f %.2f\n", size, sum / iters, t[iters / 2]);
		/* Soft-RoCE runs the requester inside the post system call. */
		printf("# of which in rh_tp_read: %.2f us per op\n", post / iters);
	} else if (!strcmp(what, "write_bw")) {
		/* Ring of `depth` WRITEs: reap the oldest, post the next. */
		double t0 = 0;
		for (int i = 0; i < iters + depth; i++) {
			if (i == depth)
				t0 = now_us(); /* the first window is warm-up */
			if (i >= depth && rh_tp_wait(c, id - (uint64_t)depth, -1, &err))
				fail("wait", &err);
			if (i < iters) {
				uint64_t off = (uint64_t)(i % depth) * size;
				rh_tp_sge sg = {loc + off, base + off, size};
				if (rh_tp_write(c, &sg, 1, id, &err))
					fail("write", &err);
			}
			id++;
		}
		double us = now_us() - t0;
		printf("@@RH write_bw %u %.2f\n", size, (double)size * (iters - depth) / us);
	} else {
		return fprintf(stderr, "rh-rxe-perf: unknown measurement %s\n", what), 2;
	}
	uint64_t bye = 0;
	rh_tp_send(c, &bye, sizeof bye, -1, &err);
	rh_tp_close(c);
	waitpid(pid, NULL, 0);
	return 0;
}
