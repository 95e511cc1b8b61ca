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

/* Ports from the pid, so that concurrent test binaries do not collide. */
static inline int cluster_port(int i)
{
	return 20000 + (int)(getpid() % 20000) * 2 + i;
}

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
	FILE *f = fopen(c->config, "w");
	if (!f)
		return -1;
	fprintf(f,
	        "{\"heap\": {\"size\": \"%lluMiB\"}, \"cache\": {\"fraction\": %g},\n"
	        " \"transport\": {\"provider\": \"%s\", \"timeout_ms\": %u},\n"
	        " \"secret_file\": \"secret\", \"gc\": {%s},\n \"servers\": [",
	        heap_mib, cache, provider, timeout_ms, extra_gc ? extra_gc : "");
	for (int i = 0; i < n; i++) {
		c->port[i] = cluster_port(i);
		fprintf(f, "%s{\"host\": \"127.0.0.1\", \"port\": %d}", i ? ", " : "", c->port[i]);
	}
	fprintf(f, "]}\n");
	fclose(f);
	c->n = n;
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		if (p < 0)
			return -1;
		if (p == 0) {
			char idx[16];
			snprintf(idx, sizeof idx, "%d", i);
			execl(tracerd, tracerd, "--config", c->config, "--index", idx,
			      "--foreground", "--wait-ms", "60000", (char *)NULL);
			_exit(127);
		}
		c->pid[i] = p;
	}
	return 0;
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
