/* Test helper: a single-host cluster of rheap-tracerd processes. It writes
 * a secret file and a config into a fresh temporary directory, starts one
 * tracer per partition, and kills them at the end. The tracers are killed
 * and the directory removed however the test ends: cluster_stop, exit
 * (atexit), or SIGTERM (meson's timeout), SIGINT, SIGHUP or SIGABRT; only
 * SIGKILL and crashes leave them.
 * cluster_test_begin/_end are the main() preamble and ending most cluster
 * tests share. */
#ifndef RH_TEST_CLUSTER_H
#define RH_TEST_CLUSTER_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rheap/rheap.h"
#include "tests/common/check.h"

typedef struct cluster {
	char dir[256];
	char config[300];
	int n;
	int n_spares; /* tracers started with --spare K, at pid[n + K] and port[n + K] */
	pid_t pid[8];
	int port[8];
	int reg; /* 1 + its entry in cluster_regs, or 0 */
} cluster;

/* Spares (redundancy.spares) the next cluster_start starts beside its
 * servers; with RHEAP_TEST_REDUNDANCY set, the config lists them. */
static int cluster_spares;

/* ---------------------------------------------------------------- cleanup */

/* What the exit and signal handlers clean up for each cluster this process
 * started and has not stopped: a copy kept here, since the caller's
 * struct may be gone by exit (a return from main). */
#define CLUSTER_LIVE_MAX 4
typedef struct cluster_reg {
	char dir[256];
	pid_t pid[8];
} cluster_reg;
static cluster_reg cluster_regs[CLUSTER_LIVE_MAX];
static pid_t cluster_owner; /* forked children must not clean up */

/* Async-signal-safe: kill the tracers still running as our children (a
 * pid the test reaped itself may belong to another process by now), and
 * rm -rf the directory in a child (fork, execv and waitpid are safe in a
 * handler; system() and opendir are not). */
static inline void cluster_kill(pid_t *pid, int n)
{
	for (int i = 0; i < n; i++)
		if (pid[i] > 0) {
			if (waitpid(pid[i], NULL, WNOHANG) == 0) {
				kill(pid[i], SIGKILL);
				waitpid(pid[i], NULL, 0);
			}
			pid[i] = 0;
		}
}

/* rm -rf dir in a child; 1 if it went. */
static inline int cluster_rm(const char *dir)
{
	pid_t p = fork();
	if (p == 0) {
		char *const argv[] = {"rm", "-rf", "--", (char *)dir, NULL};
		execv("/bin/rm", argv);
		_exit(127);
	}
	int st = 1;
	return p > 0 && waitpid(p, &st, 0) == p && st == 0;
}

/* The directory goes first: once its tracers die, the heap's threads may
 * end the process (memory server lost, status 75) before anything else
 * here runs. A tracer still running may write its status file between
 * rm's listing and its rmdir (a session it sees end rewrites the file),
 * so a removal that failed is tried again once the tracers are gone. */
static inline void cluster_reap(char *dir, pid_t *pid, int n)
{
	int gone = !dir[0] || cluster_rm(dir);
	cluster_kill(pid, n);
	if (!gone && !cluster_rm(dir)) {
		static const char msg[] = "cluster: could not remove the test directory\n";
		if (write(2, msg, sizeof msg - 1) < 0)
			gone = 0;
	}
	dir[0] = 0;
}

static inline void cluster_reap_all(void)
{
	if (getpid() != cluster_owner)
		return;
	for (int i = 0; i < CLUSTER_LIVE_MAX; i++)
		cluster_reap(cluster_regs[i].dir, cluster_regs[i].pid, 8);
}

static inline void cluster_on_signal(int sig)
{
	cluster_reap_all();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Once per process: the handlers; then c's directory is registered. */
static inline void cluster_track(cluster *c)
{
	if (!cluster_owner) {
		cluster_owner = getpid();
		atexit(cluster_reap_all);
		struct sigaction sa = {.sa_handler = cluster_on_signal};
		sigemptyset(&sa.sa_mask);
		/* SIGTERM is meson's timeout; SIGABRT a failed assertion. */
		int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGABRT};
		for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
			sigaction(sigs[i], &sa, NULL);
	}
	for (int i = 0; i < CLUSTER_LIVE_MAX; i++)
		if (!cluster_regs[i].dir[0]) {
			memcpy(cluster_regs[i].dir, c->dir, sizeof c->dir);
			c->reg = i + 1;
			return;
		}
}

/* The tracers' pids, copied for the handlers once they are known. */
static inline void cluster_track_pids(const cluster *c)
{
	if (c->reg)
		memcpy(cluster_regs[c->reg - 1].pid, c->pid, sizeof c->pid);
}

/* Kill the tracers and remove the directory; safe to call twice, and on a
 * cluster whose start failed. */
static inline void cluster_stop(cluster *c)
{
	const char *sd = getenv("RHEAP_STATE_DIR");
	if (sd && c->dir[0] && !strcmp(sd, c->dir))
		unsetenv("RHEAP_STATE_DIR");
	cluster_reap(c->dir, c->pid, c->n + c->n_spares);
	if (c->reg) {
		memset(&cluster_regs[c->reg - 1], 0, sizeof cluster_regs[0]);
		c->reg = 0;
	}
	c->n = 0;
}

/* ---------------------------------------------------------------- start */

/* How cluster_start_with runs each tracer beyond the defaults; NULL for none. */
typedef struct cluster_tracers {
	/* extra[i]: NULL-terminated further arguments for tracer i, or NULL. */
	const char *const *const *extra;
	/* Tracer i logs at level info to DIR/log-i (cluster_log reads it back)
	 * instead of at its default level to the test's stderr. */
	int log;
} cluster_tracers;

/* Where tracers listen: 127.0.0.1, or RH_TEST_HOST (the Soft-RoCE guest's
 * RDMA address: rdma_cm cannot use loopback). */
static inline const char *cluster_host(void)
{
	const char *h = getenv("RH_TEST_HOST");
	return h && *h ? h : "127.0.0.1";
}

/* A TCP socket bound to cluster_host() on a port the kernel picks, which
 * is stored in *port; the descriptor, or -1. */
static inline int cluster_bind_any(int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof a;
	inet_pton(AF_INET, cluster_host(), &a.sin_addr);
	if (fd >= 0 && (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 ||
	                getsockname(fd, (struct sockaddr *)&a, &len) < 0)) {
		close(fd);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

/* A port nothing listens on at the moment, for a config written before
 * its tracers start (by rheapctl, say). */
static inline int cluster_free_port(void)
{
	int port = -1, fd = cluster_bind_any(&port);
	if (fd < 0)
		return -1;
	close(fd);
	return port;
}

/* A plain TCP connection to cluster_host():port, speaking no protocol. */
static inline int cluster_tcp_connect(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	inet_pton(AF_INET, cluster_host(), &a.sin_addr);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static inline int cluster_write_config(cluster *c, const char *provider,
                                       unsigned long long heap_mib, double cache,
                                       unsigned timeout_ms, const char *extra_gc)
{
	/* RHEAP_TEST_FAULTS=signal runs a test with faults served by the
	 * faulting threads (meson.build's "-signal" variants). */
	const char *faults = getenv("RHEAP_TEST_FAULTS");
	/* RHEAP_TEST_CHECKSUM=0 or 1 sets cache.checksum; unset, the default. */
	const char *sums = getenv("RHEAP_TEST_CHECKSUM");
	/* RHEAP_TEST_REDUNDANCY holds the "redundancy" object's keys, e.g.
	 * "\"mode\": \"replicate\"". */
	const char *red = getenv("RHEAP_TEST_REDUNDANCY");
	FILE *f = fopen(c->config, "w");
	if (!f)
		return -1;
	if (red && *red) {
		fprintf(f, "{\"redundancy\": {%s", red);
		for (int k = 0; k < c->n_spares; k++)
			fprintf(f, "%s{\"host\": \"%s\", \"port\": %d}",
			        k ? ", " : ", \"spares\": [", cluster_host(), c->port[c->n + k]);
		fprintf(f, "%s},\n ", c->n_spares ? "]" : "");
	} else {
		fputc('{', f);
	}
	fprintf(f,
	        "\"heap\": {\"size\": \"%lluMiB\"},\n"
	        " \"cache\": {\"fraction\": %g, \"faults\": \"%s\"%s%s},\n"
	        " \"transport\": {\"provider\": \"%s\", \"timeout_ms\": %u},\n"
	        " \"secret_file\": \"secret\", \"gc\": {%s},\n \"servers\": [",
	        heap_mib, cache, faults && *faults ? faults : "thread",
	        sums && *sums ? ", \"checksum\": " : "",
	        sums && *sums ? (strcmp(sums, "0") ? "true" : "false") : "", provider, timeout_ms,
	        extra_gc ? extra_gc : "");
	for (int i = 0; i < c->n; i++)
		fprintf(f, "%s{\"host\": \"%s\", \"port\": %d}", i ? ", " : "", cluster_host(),
		        c->port[i]);
	fprintf(f, "]}\n");
	fclose(f);
	return 0;
}

/* The temporary directory with its secret, for n servers on placeholder
 * ports; no config written yet and no tracer started. cluster_stop removes
 * it, also after a failed start; the exit and signal handlers remove it if
 * the test never calls cluster_stop. */
static inline int cluster_init(cluster *c, int n)
{
	memset(c, 0, sizeof *c);
	snprintf(c->dir, sizeof c->dir, "/tmp/rheap-test-XXXXXX");
	if (n < 1 || n > (int)(sizeof c->pid / sizeof c->pid[0]) || !mkdtemp(c->dir)) {
		c->dir[0] = 0;
		return -1;
	}
	cluster_track(c);
	char path[400];
	snprintf(path, sizeof path, "%s/secret", c->dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || write(fd, "test-secret-0123456789abcdef\n", 29) != 29) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	snprintf(c->config, sizeof c->config, "%s/heap.json", c->dir);
	/* The heaps this process and its children open keep their live stats
	 * in the cluster's directory, which goes with it, not in the user's
	 * default state directory: a VM a test kills, or ends with _exit,
	 * cannot remove its file. */
	setenv("RHEAP_STATE_DIR", c->dir, 1);
	c->n = n;
	c->n_spares = cluster_spares;
	if (n + c->n_spares > (int)(sizeof c->pid / sizeof c->pid[0]))
		return -1;
	for (int i = 0; i < (int)(sizeof c->port / sizeof c->port[0]); i++)
		c->port[i] = 1 + i;
	return 0;
}

/* The port tracer i listens on, from its status file; -1 until it is up. */
static inline int cluster_read_port(cluster *c, int i)
{
	char path[400], buf[1024];
	snprintf(path, sizeof path, "%s/status-%d", c->dir, i);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strstr(buf, "\"port\":");
	return p ? atoi(p + 7) : -1;
}

/* Whether tracer i's status file says it waits for a CPU server holding no
 * partition memory: after a session, that it released everything and
 * listens again (docs/operations.md, operations.R1). */
static inline int cluster_waiting_empty(const cluster *c, int i)
{
	char path[400], buf[2048];
	snprintf(path, sizeof path, "%s/status-%d", c->dir, i);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	return strstr(buf, "\"state\":\"waiting\"") && strstr(buf, "\"regions_hosted\":0,") &&
	       (strstr(buf, "\"bytes_held\":0,") || strstr(buf, "\"bytes_held\":0}"));
}

/* Wait up to limit_ms for cluster_waiting_empty; 1 if it came. */
static inline int cluster_wait_released(const cluster *c, int i, int limit_ms)
{
	for (int t = 0; t < limit_ms / 10; t++) {
		if (cluster_waiting_empty(c, i))
			return 1;
		usleep(10000);
	}
	return cluster_waiting_empty(c, i);
}

/* In the child: become tracer i. Does not return. */
static inline void cluster_exec_tracer(const cluster *c, int i, const char *tracerd,
                                       const cluster_tracers *t)
{
	char idx[16], status[400], listen[300], log[400];
	/* Entries past the servers are spares (red.S1). */
	snprintf(idx, sizeof idx, "%d", i < c->n ? i : i - c->n);
	snprintf(listen, sizeof listen, "%s:0", cluster_host());
	snprintf(status, sizeof status, "%s/status-%d", c->dir, i);
	const char *argv[48] = {
	        tracerd,    "--config",     c->config,   i < c->n ? "--index" : "--spare",
	        idx,        "--foreground", "--listen",  listen,
	        "--status", status,         "--wait-ms", "60000"};
	int k = 12;
	if (t && t->log) {
		snprintf(log, sizeof log, "%s/log-%d", c->dir, i);
		int lfd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (lfd >= 0)
			dup2(lfd, 2);
		argv[k++] = "--log-level";
		argv[k++] = "info";
	}
	const int max = (int)(sizeof argv / sizeof argv[0]) - 1;
	for (const char *const *e = t && t->extra ? t->extra[i] : NULL; e && *e; e++) {
		/* Dropping an argument would test something else: refuse. */
		if (k == max) {
			fprintf(stderr, "cluster: too many arguments for tracer %d\n", i);
			_exit(127);
		}
		argv[k++] = *e;
	}
	argv[k] = NULL;
	execv(tracerd, (char *const *)argv);
	_exit(127);
}

/* Tracers listen on ports the kernel picks (--listen 127.0.0.1:0) and
 * report them in their status files; the CPU server's config is then
 * written with those ports. Ports picked in advance could collide with a
 * concurrent run. Fails at once when a tracer exits while starting (a
 * test may expect that: its log says why). */
static inline int cluster_start_with(cluster *c, const char *tracerd, const char *provider, int n,
                                     unsigned long long heap_mib, double cache, unsigned timeout_ms,
                                     const char *extra_gc, const cluster_tracers *t)
{
	if (cluster_init(c, n) < 0)
		return -1;
	if (cluster_write_config(c, provider, heap_mib, cache, timeout_ms, extra_gc) < 0)
		goto fail;
	int all = n + c->n_spares;
	for (int i = 0; i < all; i++) {
		pid_t p = fork();
		if (p < 0)
			goto fail;
		if (p == 0)
			cluster_exec_tracer(c, i, tracerd, t);
		c->pid[i] = p;
		cluster_track_pids(c);
	}
	/* Up to 30 s: a loaded CI machine can take seconds to start them. */
	for (int i = 0; i < all; i++) {
		int port = -1;
		for (int k = 0; k < 3000 && (port = cluster_read_port(c, i)) <= 0; k++) {
			if (waitpid(c->pid[i], NULL, WNOHANG) == c->pid[i]) {
				c->pid[i] = 0;
				goto fail;
			}
			usleep(10000);
		}
		if (port <= 0)
			goto fail;
		c->port[i] = port;
	}
	if (cluster_write_config(c, provider, heap_mib, cache, timeout_ms, extra_gc) == 0)
		return 0;
fail:
	/* The directory stays for the tracers' logs until cluster_stop (or
	 * the exit handler) removes it. */
	cluster_kill(c->pid, c->n + c->n_spares);
	return -1;
}

/* Tracers with their default arguments and logging. */
static inline int cluster_start(cluster *c, const char *tracerd, const char *provider, int n,
                                unsigned long long heap_mib, double cache, unsigned timeout_ms,
                                const char *extra_gc)
{
	return cluster_start_with(c, tracerd, provider, n, heap_mib, cache, timeout_ms, extra_gc,
	                          NULL);
}

/* Open the heap, retrying while the tracers start listening. */
static inline rh_heap *cluster_open(cluster *c, rh_error *err)
{
	for (int attempt = 0; attempt < 100; attempt++) {
		rh_heap *h = rh_heap_open_file(c->config, err);
		if (h ||
		    (err->code != RH_EIO && err->code != RH_EPEER && err->code != RH_ETIMEDOUT))
			return h;
		usleep(50000);
	}
	return NULL;
}

/* In a forked VM: the cluster's heap, a byte-array type "bytes" in *bytes
 * and this thread attached in *m. On failure the VM exits 3, the reason on
 * stderr. */
static inline rh_heap *cluster_vm_open(cluster *c, rh_type_id *bytes, rh_mutator **m)
{
	rh_error err;
	rh_heap *h = cluster_open(c, &err);
	if (!h) {
		fprintf(stderr, "open: %s\n", err.msg);
		_exit(3);
	}
	rh_type_desc d = {
	        .name = "bytes", .layout = RH_LAYOUT_BYTE_ARRAY, .size = 16, .elem_size = 1};
	*bytes = rh_type_register(h, &d, &err);
	*m = rh_mutator_attach(h, &err);
	if (!*m) {
		fprintf(stderr, "attach: %s\n", err.msg);
		_exit(3);
	}
	return h;
}

/* Tracer i's log so far (started with cluster_tracers.log), NUL-terminated
 * and truncated to cap. */
static inline const char *cluster_log(const cluster *c, int i, char *buf, size_t cap)
{
	char path[400];
	snprintf(path, sizeof path, "%s/log-%d", c->dir, i);
	buf[0] = 0;
	FILE *f = fopen(path, "r");
	if (!f)
		return buf;
	size_t n = fread(buf, 1, cap - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

/* ---------------------------------------------------------------- main */

/* A cluster test's set-up: fill in the cluster's shape, then
 * cluster_test_begin parses TRACERD PROVIDER from argv, starts the
 * tracers and opens the heap; cluster_test_end closes and stops. */
typedef struct cluster_test {
	int n;                       /* tracers (default 2) */
	unsigned long long heap_mib; /* default 64 */
	double cache;                /* fraction of the heap (default 0.25) */
	unsigned timeout_ms;         /* default 2000 */
	const char *extra_gc;        /* further "gc" keys, or NULL */
	const char *tracerd, *provider;
	cluster c;
	rh_heap *heap;
} cluster_test;

/* A cluster test's arguments: TRACERD PROVIDER, then at least n_more
 * further ones (named in `more` for the usage line). 0 with *tracerd and
 * *provider set, or 2, main's status for bad usage, after the usage. */
static inline int cluster_args(int argc, char **argv, int n_more, const char *more,
                               const char **tracerd, const char **provider)
{
	if (argc < 3 + n_more) {
		fprintf(stderr, "usage: %s TRACERD PROVIDER%s%s\n", argv[0], more[0] ? " " : "",
		        more);
		return 2;
	}
	*tracerd = argv[1];
	*provider = argv[2];
	return 0;
}

/* 0 once the heap is open; otherwise the exit status for main: 2 on bad
 * usage or when the tracers do not start, 1 (a failed check) when the heap
 * does not open. `usage` names the arguments after PROVIDER. */
static inline int cluster_test_begin(cluster_test *t, int argc, char **argv, const char *usage)
{
	if (cluster_args(argc, argv, 0, usage, &t->tracerd, &t->provider))
		return 2;
	if (cluster_start(&t->c, t->tracerd, t->provider, t->n ? t->n : 2,
	                  t->heap_mib ? t->heap_mib : 64, t->cache > 0 ? t->cache : 0.25,
	                  t->timeout_ms ? t->timeout_ms : 2000, t->extra_gc) < 0) {
		perror("cluster");
		return 2;
	}
	rh_error err;
	t->heap = cluster_open(&t->c, &err);
	if (!CHECK(t->heap != NULL, "open a disaggregated heap on %d tracers (%s): %s", t->c.n,
	           t->provider, t->heap ? "" : err.msg)) {
		cluster_stop(&t->c);
		check_done();
		return 1;
	}
	return 0;
}

/* Close the heap, stop the tracers, print the closing line. */
static inline int cluster_test_end(cluster_test *t)
{
	if (t->heap)
		rh_heap_close(t->heap);
	t->heap = NULL;
	cluster_stop(&t->c);
	return check_done();
}

/* The whole of main() for a test with no arguments past PROVIDER whose
 * body is one function: output line-buffered (a timed-out test's log
 * still shows how far it got), the cluster up, *heap set, run(), the
 * cluster down. */
static inline int cluster_test_main(cluster_test *t, int argc, char **argv, rh_heap **heap,
                                    void (*run)(void))
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	int rc = cluster_test_begin(t, argc, argv, "");
	if (rc)
		return rc;
	*heap = t->heap;
	run();
	return cluster_test_end(t);
}

#endif
