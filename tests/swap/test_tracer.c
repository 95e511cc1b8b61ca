/* rheap-tracerd's failure behaviour: bad command lines and configs, a busy
 * tracer refusing a second CPU server, a killed tracer reported to the VM
 * within 2 s, a hung (stopped) one within its timeout plus margin, and
 * tracers exiting when their CPU server dies.
 *
 * usage: test-tracer TRACERD PROVIDER
 */
#include <poll.h>
#include <sys/wait.h>
#include <time.h>

#include "runtime/internal.h"
#include "tests/common/check.h"
#include "tests/common/cluster.h"
#include "tests/swap/proc.h"

static const char *tracerd, *provider;

static double now_s(void)
{
	return (double)rh_now_ns() / 1e9;
}

static void test_command_line(const cluster *c)
{
	char out[4096], bad[400];
	char *a1[] = {(char *)tracerd, "--index", "0", NULL};
	CHECK(proc_run(a1, PROC_BOTH, NULL, out, sizeof out) == 2 && strstr(out, "--config"),
	      "no --config: exit 2 naming it (%s)", out);
	char *a2[] = {(char *)tracerd, "--config", (char *)c->config, "--index", "7", NULL};
	CHECK(proc_run(a2, PROC_BOTH, NULL, out, sizeof out) == 2 && strstr(out, "--index 7"),
	      "--index beyond the servers: exit 2 naming it (%s)", out);
	snprintf(bad, sizeof bad, "%s/bad.json", c->dir);
	FILE *f = fopen(bad, "w");
	fputs("{\"heap\": {\"size\": \"64MiB\"}, \"gc\": {\"order\": \"sideways\"}}", f);
	fclose(f);
	char *a3[] = {(char *)tracerd, "--config", bad, "--index", "0", NULL};
	CHECK(proc_run(a3, PROC_BOTH, NULL, out, sizeof out) == 2 && strstr(out, "gc.order"),
	      "bad config: exit 2 naming the key (%s)", out);
	char *a4[] = {(char *)tracerd, "--config", (char *)c->config, "--index", "0", "--listen",
	              "nocolon",       NULL};
	CHECK(proc_run(a4, PROC_BOTH, NULL, out, sizeof out) == 2 && strstr(out, "--listen"),
	      "bad --listen: exit 2 naming it (%s)", out);
	char *a5[] = {(char *)tracerd, "--version", NULL};
	CHECK(proc_run(a5, PROC_BOTH, NULL, out, sizeof out) == 0 && strstr(out, "rheap-tracerd"),
	      "--version (%s)", out);
}

static void test_busy(cluster *c)
{
	rh_error err;
	rh_heap *h = cluster_open(c, &err);
	CHECK(h != NULL, "open the heap: %s", h ? "" : err.msg);
	if (!h)
		return;
	/* A second CPU server with the same config: the first tracer refuses. */
	rh_config cfg;
	rh_config_load(c->config, &cfg, &err);
	rh_remote *r2 = NULL;
	int rc = rh_remote_open(&cfg, NULL, NULL, &r2, &err);
	CHECK(rc == RH_EBUSY && strstr(err.msg, "busy"),
	      "a second CPU server is refused as busy (rc %d: %s)", rc, err.msg);
	if (rc == RH_OK)
		rh_remote_close(r2);
	rh_heap_close(h);
}

/* A child VM keeps touching a heap larger than its cache; the parent kills
 * tracer 1 (SIGKILL) or hangs it (SIGSTOP). The child must end within the
 * limit with RH_EXIT_LOST and a message naming the tracer; the surviving
 * tracer must notice the dead CPU server and exit. The config's timeout is
 * 1 s: a dead tracer is seen at once (connection closed), a hung one when
 * it has been silent for the timeout. */
static void test_lost_tracer(cluster *c, int sig, double limit_s)
{
	const char *how = sig == SIGKILL ? "killed" : "hung";
	int ready[2], errp;
	if (pipe(ready) < 0)
		return;
	pid_t vm = proc_fork(PROC_STDERR, &errp);
	if (vm < 0) {
		CHECK(0, "fork the VM (%s tracer)", how);
		return;
	}
	if (vm == 0) {
		rh_type_id t;
		rh_mutator *m;
		cluster_vm_open(c, &t, &m);
		void *slots[24] = {0};
		rh_frame f;
		rh_push_frame(m, &f, slots, 24);
		if (write(ready[1], "r", 1) != 1)
			_exit(4);
		for (unsigned i = 0;; i++) {
			/* Keep 24 MiB live in a 64 MiB heap: more than its 16 MiB cache. */
			uint8_t *a = rh_alloc_array(m, t, 1 << 20);
			if (!a)
				_exit(5); /* an API error instead of the fatal path */
			memset(a + 16, (int)i, 1 << 20);
			slots[i % 24] = a;
		}
	}
	close(ready[1]);
	char b;
	int got = read(ready[0], &b, 1) == 1;
	CHECK(got, "the VM started (%s tracer)", how);
	usleep(300000);
	double t0 = now_s();
	kill(c->pid[1], sig);
	int st = 0;
	pid_t w = 0;
	while (now_s() - t0 < 5 && (w = waitpid(vm, &st, WNOHANG)) == 0)
		usleep(10000);
	double dt = now_s() - t0;
	if (w == 0) {
		kill(vm, SIGKILL);
		waitpid(vm, &st, 0);
	}
	char out[4096];
	proc_drain(errp, out, sizeof out);
	/* A stopped tracer is resumed only to be killed. */
	kill(c->pid[1], SIGKILL);
	kill(c->pid[1], SIGCONT);
	waitpid(c->pid[1], NULL, 0);
	c->pid[1] = 0;
	CHECK(w == vm && WIFEXITED(st) && WEXITSTATUS(st) == RH_EXIT_LOST,
	      "%s tracer: the VM ended with exit status %d (got %s %d)", how, RH_EXIT_LOST,
	      w == vm ? (WIFEXITED(st) ? "exit" : "signal") : "no exit",
	      WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	CHECK(dt < limit_s, "%s tracer: within %.1f s (%.2f s)", how, limit_s, dt);
	if (check_failures())
		printf("# the VM said: %s\n", out);
	CHECK(strstr(out, "memory server 1") && strstr(out, "lost"),
	      "%s tracer: a message naming it: %s", how, out);

	/* Tracer 0 lost its CPU server: within its timeout it releases the
	 * partition and waits for the next one (operations.R1). */
	t0 = now_s();
	int released = cluster_wait_released(c, 0, 5000);
	dt = now_s() - t0;
	CHECK(released && waitpid(c->pid[0], NULL, WNOHANG) == 0,
	      "the surviving tracer released its partition and waits again after its CPU "
	      "server died");
	CHECK(dt < 3.0, "within its timeout plus a second (%.2f s)", dt);
	close(ready[0]);
}

int main(int argc, char **argv)
{
	if (cluster_args(argc, argv, 0, "", &tracerd, &provider))
		return 2;
	cluster c;
	if (cluster_start(&c, tracerd, provider, 2, 64, 0.25, 1000, NULL) < 0) {
		perror("cluster");
		return 2;
	}
	/* The killed-tracer test forks its VM before this process touches the
	 * transport: verbs device files may not be used across fork. */
	test_command_line(&c);
	test_lost_tracer(&c, SIGKILL, 2.0);
	cluster_stop(&c);
	if (cluster_start(&c, tracerd, provider, 2, 64, 0.25, 1000, NULL) < 0)
		return 2;
	test_lost_tracer(&c, SIGSTOP, 3.0);
	cluster_stop(&c);
	if (cluster_start(&c, tracerd, provider, 2, 64, 0.25, 1000, NULL) < 0)
		return 2;
	test_busy(&c);
	cluster_stop(&c);
	return check_done();
}
