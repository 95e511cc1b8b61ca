/* Test helper: a single-host cluster of rheap-tracerd processes. It writes
 * a secret file and a config into a fresh temporary directory, starts one
 * tracer per partition, and kills them at the end. */
#ifndef RH_TEST_CLUSTER_H
#define RH_TEST_CLUSTER_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rheap/rheap.h"

typedef struct cluster {
	char dir[256];
	char config[300];
	int n;
	pid_t pid[8];
	int port[8];
} cluster;

/* Where tracers listen: 127.0.0.1, or RH_TEST_HOST (the Soft-RoCE guest's
 * RDMA address: rdma_cm cannot use loopback). */
static inline const char *cluster_host(void)
{
	const char *h = getenv("RH_TEST_HOST");
	return h && *h ? h : "127.0.0.1";
}

static inline int cluster_write_config(cluster *c, const char *provider,
                                       unsigned long long heap_mib, double cache,
                                       unsigned timeout_ms, const char *extra_gc)
{
	FILE *f = fopen(c->config, "w");
	if (!f)
		return -1;
	fprintf(f,
	        "{\"heap\": {\"size\": \"%lluMiB\"}, \"cache\": {\"fraction\": %g},\n"
	        " \"transport\": {\"provider\": \"%s\", \"timeout_ms\": %u},\n"
	        " \"secret_file\": \"secret\", \"gc\": {%s},\n \"servers\": [",
	        heap_mib, cache, provider, timeout_ms, extra_gc ? extra_gc : "");
	for (int i = 0; i < c->n; i++)
		fprintf(f, "%s{\"host\": \"%s\", \"port\": %d}", i ? ", " : "", cluster_host(),
		        c->port[i]);
	fprintf(f, "]}\n");
	fclose(f);
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

/* Tracers listen on ports the kernel picks (--listen 127.0.0.1:0) and
 * report them in their status files; the CPU server's config is then
 * written with those ports. Ports picked in advance could collide with a
 * concurrent run. */
static inline int cluster_start(cluster *c, const char *tracerd, const char *provider, int n,
                                unsigned long long heap_mib, double cache, unsigned timeout_ms,
                                const char *extra_gc)
{
	memset(c, 0, sizeof *c);
	snprintf(c->dir, sizeof c->dir, "/tmp/rheap-test-XXXXXX");
	if (!mkdtemp(c->dir))
		return -1;
	char path[400];
	snprintf(path, sizeof path, "%s/secret", c->dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || write(fd, "test-secret-0123456789abcdef\n", 29) != 29)
		return -1;
	close(fd);
	snprintf(c->config, sizeof c->config, "%s/heap.json", c->dir);
	c->n = n;
	for (int i = 0; i < n; i++)
		c->port[i] = 1 + i; /* placeholders: the tracers listen elsewhere */
	if (cluster_write_config(c, provider, heap_mib, cache, timeout_ms, extra_gc) < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		if (p < 0)
			return -1;
		if (p == 0) {
			char idx[16], status[400], listen[300];
			snprintf(idx, sizeof idx, "%d", i);
			snprintf(listen, sizeof listen, "%s:0", cluster_host());
			snprintf(status, sizeof status, "%s/status-%d", c->dir, i);
			execl(tracerd, tracerd, "--config", c->config, "--index", idx,
			      "--foreground", "--listen", listen, "--status", status, "--wait-ms",
			      "60000", (char *)NULL);
			_exit(127);
		}
		c->pid[i] = p;
	}
	/* Up to 30 s: a loaded CI machine can take seconds to start them. */
	for (int i = 0; i < n; i++) {
		int port = -1;
		for (int t = 0; t < 3000 && (port = cluster_read_port(c, i)) <= 0; t++)
			usleep(10000);
		if (port <= 0)
			return -1;
		c->port[i] = port;
	}
	return cluster_write_config(c, provider, heap_mib, cache, timeout_ms, extra_gc);
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

static inline void cluster_stop(cluster *c)
{
	for (int i = 0; i < c->n; i++)
		if (c->pid[i] > 0) {
			kill(c->pid[i], SIGKILL);
			waitpid(c->pid[i], NULL, 0);
			c->pid[i] = 0;
		}
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", c->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cluster: could not remove %s\n", c->dir);
}

#endif
