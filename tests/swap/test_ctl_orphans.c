/* Tracers started by rheapctl die with it when it supervises them in the
 * foreground ('run'), even when it is killed with SIGKILL and cannot bring
 * them down; tracers started by 'up' are daemons and outlive it.
 *
 * This process makes itself a child subreaper: the orphans are reparented
 * to it, so it can reap them and see exactly when they exit, and kill any
 * left over whatever init does in this container.
 *
 * usage: test-ctl-orphans RHEAPCTL TRACERD PROVIDER
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/swap/check.h"
#include "tests/swap/cluster.h"

static const char *rheapctl, *tracerd;
static char dir[256], config[300];
static int ports[2];

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static long read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = 0;
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

/* Tracer i's pid as rheapctl recorded it, 0 if not (yet). */
static pid_t tracer_pid(int i)
{
	char path[400];
	snprintf(path, sizeof path, "%s/tracer-%d-%d.pid", dir, ports[i], i);
	return (pid_t)read_long(path);
}

/* rheapctl CMD on the config, its output appended to DIR/ctl.log; extra is
 * NULL or a NULL-terminated tail of arguments ("--", PROGRAM...). */
static pid_t ctl_start(const char *cmd, const char *const *extra)
{
	pid_t p = fork();
	if (p != 0)
		return p;
	char log[400];
	snprintf(log, sizeof log, "%s/ctl.log", dir);
	int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
	}
	const char *argv[16] = {rheapctl,      cmd, "--config",  config,
	                        "--state-dir", dir, "--tracerd", tracerd};
	int k = 8;
	for (; extra && *extra && k < 15; extra++)
		argv[k++] = *extra;
	argv[k] = NULL;
	execv(rheapctl, (char *const *)argv);
	_exit(127);
}

/* Wait up to secs for child p (a tracer reparented here, or rheapctl) to
 * exit; true if it did. */
static bool reaped_within(pid_t p, double secs)
{
	double t0 = now_s();
	do {
		pid_t r = waitpid(p, NULL, WNOHANG);
		if (r == p || (r < 0 && errno == ECHILD))
			return true;
		usleep(20000);
	} while (now_s() - t0 < secs);
	return false;
}

static bool alive(pid_t p)
{
	return p > 0 && waitpid(p, NULL, WNOHANG) == 0;
}

/* Kill and reap whatever a failed check left running. */
static void cleanup(pid_t p)
{
	if (p > 0 && alive(p)) {
		kill(p, SIGKILL);
		waitpid(p, NULL, 0);
	}
}

/* 'run': rheapctl supervises the tracers and a program; killed outright,
 * it cannot stop them, so they must notice on their own. */
static void supervised(void)
{
	char prog_pid[400], script[1300];
	snprintf(prog_pid, sizeof prog_pid, "%s/prog.pid", dir);
	snprintf(script, sizeof script, "echo $$ > '%s.tmp' && mv '%s.tmp' '%s' && exec sleep 60",
	         prog_pid, prog_pid, prog_pid);
	const char *extra[] = {"--", "/bin/sh", "-c", script, NULL};
	pid_t ctl = ctl_start("run", extra);
	CHECK(ctl > 0, "fork rheapctl run");
	if (ctl <= 0)
		return;
	/* The program starts only once both tracers report ready. */
	pid_t prog = 0;
	for (double t0 = now_s(); now_s() - t0 < 20 && !(prog = (pid_t)read_long(prog_pid));)
		usleep(20000);
	CHECK(prog > 0, "rheapctl run started the tracers and the program within 20 s");
	pid_t tr[2] = {tracer_pid(0), tracer_pid(1)};
	for (int i = 0; i < 2; i++)
		CHECK(tr[i] > 0 && kill(tr[i], 0) == 0, "tracer %d running under run (pid %d)", i,
		      (int)tr[i]);

	kill(ctl, SIGKILL);
	CHECK(reaped_within(ctl, 5), "rheapctl died of SIGKILL");
	/* Its children are ours now; a few seconds of grace for a loaded
	 * machine. */
	for (int i = 0; i < 2; i++)
		CHECK(tr[i] > 0 && reaped_within(tr[i], 5),
		      "tracer %d (pid %d) exited within 5 s of rheapctl's death", i, (int)tr[i]);
	for (int i = 0; i < 2; i++)
		cleanup(tr[i]);
	cleanup(prog);
}

/* 'up': daemons, meant to outlive the rheapctl that started them. */
static void daemons(void)
{
	pid_t ctl = ctl_start("up", NULL);
	int st = -1;
	CHECK(ctl > 0 && waitpid(ctl, &st, 0) == ctl && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "rheapctl up exits 0");
	pid_t tr[2] = {tracer_pid(0), tracer_pid(1)};
	/* As long as the supervised tracers were given to die in. */
	usleep(2000000);
	for (int i = 0; i < 2; i++)
		CHECK(alive(tr[i]),
		      "tracer %d (pid %d) from up still runs 2 s after rheapctl exited", i,
		      (int)tr[i]);
	/* They are this process's children now: stop them the way 'down'
	 * does, and reap them here ('down' would wait on zombies). */
	for (int i = 0; i < 2; i++)
		if (tr[i] > 0)
			kill(tr[i], SIGTERM);
	for (int i = 0; i < 2; i++)
		CHECK(tr[i] > 0 && reaped_within(tr[i], 5), "tracer %d stops on SIGTERM", i);
	for (int i = 0; i < 2; i++)
		cleanup(tr[i]);
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s RHEAPCTL TRACERD PROVIDER\n", argv[0]);
		return 2;
	}
	rheapctl = argv[1];
	tracerd = argv[2];
	const char *provider = argv[3];
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
		perror("PR_SET_CHILD_SUBREAPER");
		return 2;
	}
	snprintf(dir, sizeof dir, "/tmp/rheap-orphans-XXXXXX");
	if (!mkdtemp(dir))
		return 2;
	char path[400];
	snprintf(path, sizeof path, "%s/secret", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || write(fd, "orphans-test-secret-0123456789\n", 31) != 31)
		return 2;
	close(fd);
	ports[0] = cluster_free_port();
	ports[1] = cluster_free_port();
	snprintf(config, sizeof config, "%s/heap.json", dir);
	FILE *f = fopen(config, "w");
	if (!f || ports[0] <= 0 || ports[1] <= 0)
		return 2;
	fprintf(f,
	        "{\"heap\": {\"size\": \"64MiB\"}, \"cache\": {\"fraction\": 0.25},\n"
	        " \"transport\": {\"provider\": \"%s\", \"timeout_ms\": 3000},\n"
	        " \"secret_file\": \"secret\",\n \"servers\": [{\"host\": \"127.0.0.1\", \"port\": "
	        "%d}, {\"host\": \"127.0.0.1\", \"port\": %d}]}\n",
	        provider, ports[0], ports[1]);
	fclose(f);

	supervised();
	daemons();

	/* Anything else reparented here (nothing, if all went well). */
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	if (failed) {
		snprintf(path, sizeof path, "%s/ctl.log", dir);
		f = fopen(path, "r");
		char line[512];
		while (f && fgets(line, sizeof line, f))
			printf("# %s", line);
		if (f)
			fclose(f);
	}
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
