/* Tracers that outlive a session (docs/operations.md, operations.R1 and
 * R2): the same two tracers serve CPU server after CPU server, releasing
 * what each session held (partition memory, descriptors, threads) and
 * listening again, after a clean close and after a CPU server SIGKILLed
 * mid-run; and an open against a tracer busy with silent connections
 * retries within the open timeout instead of failing and leaving the
 * other tracer holding a session nobody serves.
 *
 * usage: test-sessions TRACERD PROVIDER
 */
#include <dirent.h>
#include <sys/wait.h>

#include "runtime/remote.h"
#include "tests/ops/ops.h"

static const char *tracerd, *provider;

#define TIMEOUT_MS 1000
#define LIVE 24 /* MiB kept live in a 64 MiB heap with a 16 MiB cache */

/* Entries of /proc/PID/DIR (fd, task); -1 if it cannot be read. */
static int count_entries(pid_t p, const char *dir)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/%s", (int)p, dir);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	int n = 0;
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* A CPU server in a child: opens the heap, keeps LIVE arrays of 1 MiB
 * filled with a pattern (most of them evicted to the tracers), checks them
 * all, closes. With ready >= 0 it says so there once the tracers hold
 * pages, then allocates until killed. Exits 0 when every byte came back. */
static pid_t spawn_vm(cluster *c, int ready)
{
	pid_t p = fork();
	if (p != 0)
		return p;
	rh_error err;
	rh_heap *h = rh_heap_open_file(c->config, &err);
	if (!h) {
		fprintf(stderr, "vm: open: %s\n", err.msg);
		_exit(3);
	}
	rh_type_desc d = {
	        .name = "bytes", .layout = RH_LAYOUT_BYTE_ARRAY, .size = 16, .elem_size = 1};
	rh_type_id t = rh_type_register(h, &d, &err);
	rh_mutator *m = rh_mutator_attach(h, &err);
	void *slots[LIVE] = {0};
	rh_frame f;
	rh_push_frame(m, &f, slots, LIVE);
	for (unsigned i = 0; i < 2 * LIVE || ready >= 0; i++) {
		uint8_t *a = rh_alloc_array(m, t, 1 << 20);
		if (!a)
			_exit(4);
		memset(a + 16, (int)(i % LIVE) + 1, 1 << 20);
		slots[i % LIVE] = a;
		if (ready >= 0 && i == 2 * LIVE && write(ready, "r", 1) != 1)
			_exit(5);
	}
	for (int k = 0; k < LIVE; k++) {
		const uint8_t *a = slots[k];
		for (size_t b = 16; b < 16 + (1u << 20); b += 4096)
			if (a[b] != k + 1) {
				fprintf(stderr, "vm: array %d byte %zu is %d\n", k, b, a[b]);
				_exit(6);
			}
	}
	rh_pop_frame(m, &f);
	rh_mutator_detach(m);
	rh_heap_close(h);
	_exit(0);
}

static int wait_vm(pid_t vm, double limit_s)
{
	int st = 0;
	double t0 = ops_now();
	pid_t w = 0;
	while ((w = waitpid(vm, &st, WNOHANG)) == 0 && ops_now() - t0 < limit_s)
		usleep(20000);
	if (w != vm) {
		kill(vm, SIGKILL);
		waitpid(vm, &st, 0);
		return -1;
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Both tracers released their session within the timeout and a second, and
 * hold no more descriptors or threads than before any session. */
static void check_released(cluster *c, const char *after, const int *fds, const int *tasks)
{
	for (int i = 0; i < 2; i++) {
		CHECK(cluster_wait_released(c, i, TIMEOUT_MS + 1500) &&
		              waitpid(c->pid[i], NULL, WNOHANG) == 0,
		      "%s: tracer %d released its partition and waits again", after, i);
		int nf = count_entries(c->pid[i], "fd"), nt = count_entries(c->pid[i], "task");
		CHECK(nf == fds[i] && nt == tasks[i],
		      "%s: tracer %d holds %d descriptors and %d threads, as before any session "
		      "(%d, %d)",
		      after, i, nf, nt, fds[i], tasks[i]);
	}
}

static void test_sessions(void)
{
	cluster c;
	if (cluster_start_with(&c, tracerd, provider, 2, 64, 0.25, TIMEOUT_MS, NULL,
	                       OPS_TRACERS(NULL)) < 0) {
		CHECK(0, "start two tracers");
		return;
	}
	int fds[2], tasks[2];
	for (int i = 0; i < 2; i++) {
		fds[i] = count_entries(c.pid[i], "fd");
		tasks[i] = count_entries(c.pid[i], "task");
	}
	int st = wait_vm(spawn_vm(&c, -1), 60);
	CHECK(st == 0, "a first CPU server runs and finds its data (status %d)", st);
	check_released(&c, "after a clean close", fds, tasks);
	st = wait_vm(spawn_vm(&c, -1), 60);
	CHECK(st == 0, "a second CPU server on the same tracers finds its data (status %d)", st);
	check_released(&c, "after the second", fds, tasks);

	int p[2];
	if (pipe(p) < 0) {
		CHECK(0, "pipe");
		cluster_stop(&c);
		return;
	}
	pid_t vm = spawn_vm(&c, p[1]);
	close(p[1]);
	char b;
	CHECK(read(p[0], &b, 1) == 1, "a third CPU server evicted pages to the tracers");
	close(p[0]);
	usleep(200000);
	kill(vm, SIGKILL);
	waitpid(vm, NULL, 0);
	check_released(&c, "after a CPU server was SIGKILLed", fds, tasks);
	st = wait_vm(spawn_vm(&c, -1), 60);
	CHECK(st == 0, "then a fourth CPU server finds its data (status %d)", st);
	char log[65536], bad[256];
	for (int i = 0; i < 2; i++) {
		cluster_log(&c, i, log, sizeof log);
		CHECK(strstr(log, "CPU server lost") && strstr(log, "released; waiting"),
		      "tracer %d logged the lost CPU server and the release", i);
		CHECK(ops_log_well_formed(log, bad, sizeof bad), "one event per line: %s", bad);
	}
	cluster_stop(&c);
}

/* 16 connections that never speak, held against tracer 1 with its 8
 * handshake slots: the CPU server's first handshake there waits two
 * deadlines and times out after one. The open tries again (after a BYE
 * to tracer 0, which releases that session) and gets in within
 * RH_PROTO_OPEN_TIMEOUTS deadlines. */
static void test_silent(void)
{
	cluster c;
	if (cluster_start_with(&c, tracerd, provider, 2, 64, 0.25, TIMEOUT_MS, NULL,
	                       OPS_TRACERS(NULL)) < 0) {
		CHECK(0, "start two tracers");
		return;
	}
	int silent[16], opened = 0;
	for (int i = 0; i < 16; i++)
		opened += (silent[i] = cluster_tcp_connect(c.port[1])) >= 0;
	CHECK(opened == 16, "16 silent connections to tracer 1 (%d)", opened);
	usleep(100000);
	rh_error err;
	double t0 = ops_now();
	rh_heap *h = rh_heap_open_file(c.config, &err);
	double dt = ops_now() - t0;
	double bound = RH_PROTO_OPEN_TIMEOUTS * TIMEOUT_MS / 1000.0 + 0.5;
	printf("# the open took %.2f s\n", dt);
	CHECK(h != NULL, "the open gets in despite them: %s", h ? "" : err.msg);
	CHECK(dt > 0.9 && dt < bound, "after its first attempt timed out, within %.1f s (%.2f s)",
	      bound, dt);
	if (h) {
		CHECK(ops_heap_works(h), "and the heap works");
		rh_heap_close(h);
	}
	for (int i = 0; i < 16; i++)
		if (silent[i] >= 0)
			close(silent[i]);
	for (int i = 0; i < 2; i++)
		CHECK(cluster_wait_released(&c, i, TIMEOUT_MS + 1500) &&
		              waitpid(c.pid[i], NULL, WNOHANG) == 0,
		      "tracer %d waits again after that session", i);
	cluster_stop(&c);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s TRACERD PROVIDER\n", argv[0]);
		return 2;
	}
	tracerd = argv[1];
	provider = argv[2];
	signal(SIGPIPE, SIG_IGN);
	test_sessions();
	if (!strcmp(provider, "tcp"))
		test_silent();
	return check_done();
}
