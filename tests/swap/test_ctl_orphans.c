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
#include <errno.h>
#include <stdbool.h>
#include <sys/prctl.h>

#include "tests/ops/ops.h"
#include "tests/swap/proc.h"

static const char *rheapctl, *tracerd;
/* Its config and directory (rheapctl's --state-dir); no tracer of its own. */
static cluster c;

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
	snprintf(path, sizeof path, "%s/tracer-%d-%d.pid", c.dir, c.port[i], i);
	return (pid_t)read_long(path);
}

/* rheapctl CMD on the config, started with its output appended to
 * DIR/ctl.log (its tracers inherit that); extra is NULL or a
 * NULL-terminated tail of arguments ("--", PROGRAM...). */
static pid_t ctl_start(const char *cmd, const char *const *extra)
{
	char log[400];
	snprintf(log, sizeof log, "%s/ctl.log", c.dir);
	const char *argv[16] = {rheapctl,      cmd,   "--config",  c.config,
	                        "--state-dir", c.dir, "--tracerd", tracerd};
	int k = 8;
	for (; extra && *extra && k < 15; extra++)
		argv[k++] = *extra;
	argv[k] = NULL;
	return proc_spawn((char *const *)argv, PROC_BOTH, log);
}

/* Wait up to secs for child p (a tracer reparented here, or rheapctl) to
 * exit; true if it did. */
static bool reaped_within(pid_t p, double secs)
{
	double t0 = ops_now();
	do {
		pid_t r = waitpid(p, NULL, WNOHANG);
		if (r == p || (r < 0 && errno == ECHILD))
			return true;
		usleep(20000);
	} while (ops_now() - t0 < secs);
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
	snprintf(prog_pid, sizeof prog_pid, "%s/prog.pid", c.dir);
	snprintf(script, sizeof script, "echo $$ > '%s.tmp' && mv '%s.tmp' '%s' && exec sleep 60",
	         prog_pid, prog_pid, prog_pid);
	const char *extra[] = {"--", "/bin/sh", "-c", script, NULL};
	pid_t run = ctl_start("run", extra);
	CHECK(run > 0, "fork rheapctl run");
	if (run <= 0)
		return;
	/* The program starts only once both tracers report ready. */
	pid_t prog = 0;
	for (double t0 = ops_now(); ops_now() - t0 < 20 && !(prog = (pid_t)read_long(prog_pid));)
		usleep(20000);
	CHECK(prog > 0, "rheapctl run started the tracers and the program within 20 s");
	pid_t tr[2] = {tracer_pid(0), tracer_pid(1)};
	for (int i = 0; i < 2; i++)
		CHECK(tr[i] > 0 && kill(tr[i], 0) == 0, "tracer %d running under run (pid %d)", i,
		      (int)tr[i]);

	kill(run, SIGKILL);
	CHECK(reaped_within(run, 5), "rheapctl died of SIGKILL");
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
	pid_t up = ctl_start("up", NULL);
	int st = up > 0 ? proc_wait(up) : -1;
	CHECK(st == 0, "rheapctl up exits 0 (%d)", st);
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
	if (cluster_init(&c, 2) < 0)
		return 2;
	for (int i = 0; i < 2; i++)
		if ((c.port[i] = cluster_free_port()) <= 0)
			return 2;
	if (cluster_write_config(&c, provider, 64, 0.25, 3000, NULL) < 0)
		return 2;

	supervised();
	daemons();

	/* Anything else reparented here (nothing, if all went well). */
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	if (check_failures()) {
		char path[400];
		snprintf(path, sizeof path, "%s/ctl.log", c.dir);
		FILE *f = fopen(path, "r");
		char line[512];
		while (f && fgets(line, sizeof line, f))
			printf("# %s", line);
		if (f)
			fclose(f);
	}
	cluster_stop(&c);
	return check_done();
}
