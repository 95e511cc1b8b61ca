/* Helpers for the operations tests: a single-host cluster like
 * tests/swap/cluster.h, but each tracer may get extra arguments and writes
 * its log (level info) to DIR/log-N, which the tests read back. */
#ifndef RH_TEST_OPS_H
#define RH_TEST_OPS_H

#include <time.h>

#include "tests/swap/check.h"
#include "tests/swap/cluster.h"

static inline double ops_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* extra[i]: NULL-terminated further arguments for tracer i, or NULL. */
static inline int ops_start(cluster *c, const char *tracerd, const char *provider, int n,
                            unsigned long long heap_mib, double cache, unsigned timeout_ms,
                            const char *extra_gc, const char *const *const *extra)
{
	memset(c, 0, sizeof *c);
	snprintf(c->dir, sizeof c->dir, "/tmp/rheap-ops-XXXXXX");
	if (!mkdtemp(c->dir))
		return -1;
	char path[400];
	snprintf(path, sizeof path, "%s/secret", c->dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || write(fd, "ops-test-secret-0123456789abcdef\n", 33) != 33)
		return -1;
	close(fd);
	snprintf(c->config, sizeof c->config, "%s/heap.json", c->dir);
	c->n = n;
	for (int i = 0; i < n; i++)
		c->port[i] = 1 + i; /* placeholders until the tracers report theirs */
	if (cluster_write_config(c, provider, heap_mib, cache, timeout_ms, extra_gc) < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		if (p < 0)
			return -1;
		if (p == 0) {
			char idx[16], status[400], listen[300], log[400];
			snprintf(idx, sizeof idx, "%d", i);
			snprintf(listen, sizeof listen, "%s:0", cluster_host());
			snprintf(status, sizeof status, "%s/status-%d", c->dir, i);
			snprintf(log, sizeof log, "%s/log-%d", c->dir, i);
			int lfd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
			if (lfd >= 0)
				dup2(lfd, 2);
			const char *argv[40] = {
			        tracerd,        "--config", c->config,     "--index",  idx,
			        "--foreground", "--listen", listen,        "--status", status,
			        "--wait-ms",    "60000",    "--log-level", "info"};
			int k = 14;
			for (const char *const *e = extra ? extra[i] : NULL; e && *e && k < 39; e++)
				argv[k++] = *e;
			argv[k] = NULL;
			execv(tracerd, (char *const *)argv);
			_exit(127);
		}
		c->pid[i] = p;
	}
	for (int i = 0; i < n; i++) {
		int port = -1;
		for (int t = 0; t < 500 && (port = cluster_read_port(c, i)) <= 0; t++)
			usleep(10000);
		if (port <= 0)
			return -1;
		c->port[i] = port;
	}
	return cluster_write_config(c, provider, heap_mib, cache, timeout_ms, extra_gc);
}

/* Tracer i's log so far (NUL-terminated, truncated to cap). */
static inline const char *ops_log(const cluster *c, int i, char *buf, size_t cap)
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

/* Every line of a tracer log is one event: "rheap[PID] LEVEL component: ...". */
static inline int ops_log_well_formed(const char *log, char *bad, size_t cap)
{
	for (const char *l = log; *l;) {
		const char *e = strchr(l, '\n');
		size_t n = e ? (size_t)(e - l) : strlen(l);
		int pid, used = 0;
		char level[8];
		if (sscanf(l, "rheap[%d] %7s %n", &pid, level, &used) != 2 || !used ||
		    (strcmp(level, "error") && strcmp(level, "warn") && strcmp(level, "info") &&
		     strcmp(level, "debug"))) {
			snprintf(bad, cap, "%.*s", (int)(n < 200 ? n : 200), l);
			return 0;
		}
		if (!e)
			break;
		l = e + 1;
	}
	return 1;
}

#endif
