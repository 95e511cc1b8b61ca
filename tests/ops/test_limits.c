/* Tracer limits: a tracer past its --memory-limit refuses its CPU server
 * with an error naming it (the VM ends with RH_EXIT_LOST and that message,
 * not SIGBUS, not a hang); a flood of connections that never speak holds
 * at most --max-handshakes descriptors, each for one handshake deadline,
 * and the real CPU server still gets in.
 *
 * usage: test-limits TRACERD PROVIDER memory|flood
 */
#include <dirent.h>
#include <jansson.h>
#include <poll.h>
#include <sys/socket.h>

#include "tests/ops/ops.h"
#include "tests/swap/proc.h"

static const char *tracerd, *provider;

/* A VM in a child: keeps 40 MiB live in a 64 MiB heap with a 16 MiB cache,
 * so both tracers receive evicted pages; stops after `rounds` MiB (0 =
 * never). Its stderr is read from *errfd. */
static pid_t spawn_vm(cluster *c, unsigned rounds, int *errfd)
{
	pid_t vm = proc_fork(PROC_STDERR, errfd);
	if (vm != 0)
		return vm;
	rh_type_id t;
	rh_mutator *m;
	rh_heap *h = cluster_vm_open(c, &t, &m);
	void *slots[40] = {0};
	rh_frame f;
	rh_push_frame(m, &f, slots, 40);
	for (unsigned i = 0; !rounds || i < rounds; i++) {
		uint8_t *a = rh_alloc_array(m, t, 1 << 20);
		if (!a) {
			fprintf(stderr, "alloc: %s\n", rh_last_error()->msg);
			_exit(5);
		}
		memset(a + 16, (int)i | 1, 1 << 20);
		slots[i % 40] = a;
	}
	rh_pop_frame(m, &f);
	rh_mutator_detach(m);
	rh_heap_close(h);
	_exit(0);
}

static int wait_exit(pid_t p, double limit_s, int *st)
{
	double t0 = ops_now();
	pid_t w = 0;
	while (ops_now() - t0 < limit_s && (w = waitpid(p, st, WNOHANG)) == 0)
		usleep(10000);
	if (w == p)
		return 1;
	kill(p, SIGKILL);
	waitpid(p, st, 0);
	return 0;
}

static json_t *status_of(const cluster *c, int i)
{
	char path[400];
	snprintf(path, sizeof path, "%s/status-%d", c->dir, i);
	return json_load_file(path, 0, NULL);
}

static void test_memory(void)
{
	char out[4096], log[16384], bad[256];
	/* A size that is none is refused up front, naming the option. */
	cluster c;
	const char *lim_bad[] = {"--memory-limit", "lots", NULL};
	const char *const *ex_bad[] = {NULL, lim_bad};
	int rc = cluster_start_with(&c, tracerd, provider, 2, 64, 0.25, 1000, NULL,
	                            OPS_TRACERS(ex_bad));
	CHECK(rc < 0, "a tracer with --memory-limit lots does not start");
	usleep(200000);
	CHECK(strstr(cluster_log(&c, 1, log, sizeof log), "--memory-limit"),
	      "and says which option is wrong: %s", log);
	cluster_stop(&c);

	/* Within a generous limit the same workload completes. */
	const char *lim_ok[] = {"--memory-limit", "256MiB", NULL};
	const char *const *ex_ok[] = {NULL, lim_ok};
	if (cluster_start_with(&c, tracerd, provider, 2, 64, 0.25, 1000, NULL, OPS_TRACERS(ex_ok)) <
	    0) {
		CHECK(0, "start a cluster with a 256 MiB limit");
		return;
	}
	int errp;
	pid_t vm = spawn_vm(&c, 120, &errp);
	if (vm < 0) {
		CHECK(0, "fork a VM");
		cluster_stop(&c);
		return;
	}
	int st = 0;
	int done = wait_exit(vm, 60, &st);
	proc_drain(errp, out, sizeof out);
	CHECK(done && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "within the limit the VM finishes (status %d): %s",
	      WIFEXITED(st) ? WEXITSTATUS(st) : -1, out);
	cluster_stop(&c);

	/* 4 MiB for tracer 1, which receives about half of what is evicted. */
	/* --once: the exit, with its status, is what this checks. */
	const char *lim[] = {"--memory-limit", "4MiB", "--once", NULL};
	const char *const *ex[] = {NULL, lim};
	if (cluster_start_with(&c, tracerd, provider, 2, 64, 0.25, 1000, NULL, OPS_TRACERS(ex)) <
	    0) {
		CHECK(0, "start a cluster with a 4 MiB limit");
		return;
	}
	json_t *j = status_of(&c, 1);
	CHECK(j && json_integer_value(json_object_get(j, "memory_limit")) == 4 << 20,
	      "the status file shows the limit");
	json_decref(j);
	double t0 = ops_now();
	vm = spawn_vm(&c, 0, &errp);
	if (vm < 0) {
		CHECK(0, "fork a VM");
		cluster_stop(&c);
		return;
	}
	done = wait_exit(vm, 20, &st);
	double dt = ops_now() - t0;
	proc_drain(errp, out, sizeof out);
	CHECK(done && WIFEXITED(st) && WEXITSTATUS(st) == RH_EXIT_LOST,
	      "past the limit the VM ends with status %d (got %s %d): %s", RH_EXIT_LOST,
	      !done           ? "no exit"
	      : WIFEXITED(st) ? "exit"
	                      : "signal",
	      WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), out);
	CHECK(dt < 20, "within 20 s (%.1f s)", dt);
	CHECK(strstr(out, "memory server 1") && strstr(out, "memory limit"),
	      "the VM's message names the tracer and its limit: %s", out);
	int tst;
	CHECK(wait_exit(c.pid[1], 5, &tst), "the tracer past its limit exits");
	c.pid[1] = 0;
	cluster_log(&c, 1, log, sizeof log);
	CHECK(strstr(log, "error tracerd: CPU server lost: tracer 1: memory limit reached"),
	      "its log says why, at level error: %s", log);
	CHECK(ops_log_well_formed(log, bad, sizeof bad), "one event per line: %s", bad);
	cluster_stop(&c);
}

static int count_sockets(pid_t p)
{
	char dir[64], link[64], path[400];
	snprintf(dir, sizeof dir, "/proc/%d/fd", (int)p);
	DIR *d = opendir(dir);
	int n = 0;
	for (struct dirent *e; d && (e = readdir(d));) {
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		ssize_t k = readlink(path, link, sizeof link - 1);
		if (k > 0) {
			link[k] = 0;
			n += !strncmp(link, "socket:", 7);
		}
	}
	if (d)
		closedir(d);
	return n;
}

/* Wait until the tracer closes each of fds; returns how many it closed and
 * the time of the first close. */
static int wait_closed(int *fds, int n, double t_open, double limit_s, double *first)
{
	int closed = 0;
	*first = 0;
	while (closed < n && ops_now() - t_open < limit_s) {
		for (int i = 0; i < n; i++) {
			if (fds[i] < 0)
				continue;
			struct pollfd p = {.fd = fds[i], .events = POLLIN};
			char b;
			if (poll(&p, 1, 0) == 1 && recv(fds[i], &b, 1, MSG_DONTWAIT) <= 0) {
				if (!closed)
					*first = ops_now() - t_open;
				close(fds[i]);
				fds[i] = -1;
				closed++;
			}
		}
		usleep(20000);
	}
	return closed;
}

static void flood(int idle, int max_hs)
{
	char hs[16], log[65536], bad[256];
	snprintf(hs, sizeof hs, "%d", max_hs);
	const char *args[] = {"--max-handshakes", hs, NULL};
	const char *const *ex[] = {args, NULL};
	cluster c;
	if (cluster_start_with(&c, tracerd, provider, 2, 64, 0.25, 1000, NULL, OPS_TRACERS(ex)) <
	    0) {
		CHECK(0, "start a cluster");
		return;
	}
	int fds[64];
	double t_open = ops_now();
	int opened = 0;
	for (int i = 0; i < idle; i++)
		opened += (fds[i] = cluster_tcp_connect(c.port[0])) >= 0;
	CHECK(opened == idle, "%d idle connections opened (%d)", idle, opened);
	usleep(300000);
	int socks = count_sockets(c.pid[0]);
	/* The listener plus the connections in their handshake. */
	CHECK(socks <= max_hs + 1, "%d idle: the tracer holds %d sockets, at most %d", idle, socks,
	      max_hs + 1);
	rh_error err;
	double t0 = ops_now();
	rh_heap *h = idle < max_hs ? rh_heap_open_file(c.config, &err) : cluster_open(&c, &err);
	double dt = ops_now() - t0;
	CHECK(h != NULL, "%d idle: the CPU server gets in: %s", idle, h ? "" : err.msg);
	/* With fewer silent clients than handshake slots it is not delayed
	 * at all; with more, by the handshake deadlines ahead of it. */
	double bound = idle < max_hs ? 0.9 : 1.0 * ((idle + max_hs - 1) / max_hs) + 2.0;
	CHECK(dt < bound, "%d idle: it got in within %.1f s (%.2f s)", idle, bound, dt);
	if (h)
		CHECK(ops_heap_works(h), "%d idle: and the heap works", idle);
	double first;
	double limit = 1.0 * ((idle + max_hs - 1) / max_hs) + 4.0;
	int closed = wait_closed(fds, idle, t_open, limit, &first);
	CHECK(closed == idle, "%d idle: the tracer closed all of them within %.0f s (%d)", idle,
	      limit, closed);
	CHECK(first >= 0.8, "%d idle: none before its handshake deadline (first after %.2f s)",
	      idle, first);
	for (int i = 0; i < idle; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	/* The status file is rewritten each second. */
	usleep(1200000);
	json_t *j = status_of(&c, 0);
	json_int_t refused = j ? json_integer_value(json_object_get(j, "connections_refused")) : -1;
	CHECK(refused >= idle, "%d idle: status counts them refused (%lld)", idle,
	      (long long)refused);
	CHECK(j && json_integer_value(json_object_get(j, "max_handshakes")) == max_hs,
	      "status shows the handshake limit");
	json_decref(j);
	if (h)
		rh_heap_close(h);
	cluster_log(&c, 0, log, sizeof log);
	CHECK(strstr(log, "warn tracerd: refused a connection: "),
	      "%d idle: refusals are logged as warnings", idle);
	CHECK(ops_log_well_formed(log, bad, sizeof bad), "one event per line: %s", bad);
	cluster_stop(&c);
}

int main(int argc, char **argv)
{
	if (cluster_args(argc, argv, 1, "memory|flood", &tracerd, &provider))
		return 2;
	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(argv[3], "memory")) {
		test_memory();
	} else if (!strcmp(argv[3], "flood")) {
		flood(6, 8);
		flood(40, 16);
	} else {
		fprintf(stderr, "unknown mode %s\n", argv[3]);
		return 2;
	}
	return check_done();
}
