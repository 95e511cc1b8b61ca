/* rh-bench-transport PROVIDER [--host H] [--json FILE]
 *
 * READ/WRITE latency (one operation in flight) and bandwidth (16 in
 * flight) for sizes 8 B .. 1 MiB and for 4 KiB page batches of 16 and 64
 * pages per scatter/gather operation, each next to a reference measured in
 * the same run: memcpy to a shared mapping for shm, a plain TCP socket for
 * tcp (and for any other provider). */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ref.h"
#include "transport/transport.h"

#define REGION ((size_t)64 << 20)
#define DEPTH 16
#define SECRET "bench-secret"

struct ctx {
	const char *provider, *host;
	rh_tp_conn *c;
	uint64_t base;
	uint8_t *local;
	int ref_fd;      /* tcp reference */
	uint8_t *shared; /* shm reference: a MAP_SHARED memfd mapping */
	uint64_t wr;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static rh_tp_opts opts(const char *provider)
{
	return (rh_tp_opts){.provider = provider,
	                    .secret = (const uint8_t *)SECRET,
	                    .secret_len = strlen(SECRET),
	                    .timeout_ms = 10000};
}

static void die(const char *what, const rh_error *e)
{
	fprintf(stderr, "rh-bench-transport: %s: %s\n", what, e ? e->msg : "failed");
	exit(1);
}

/* The passive side: a region and, for the tcp reference, a plain server. */
static void passive(const char *provider, const char *host, int pipefd)
{
	rh_tp_opts o = opts(provider);
	rh_tp_listener *l;
	rh_error err = {0};
	uint16_t ports[2] = {0, 0};
	if (rh_tp_listen(&o, host, 0, &l, &err) != RH_OK || ref_server_start(&ports[1]) != 0)
		die("listen", &err);
	ports[0] = rh_tp_listener_port(l);
	(void)!write(pipefd, ports, sizeof ports);
	int fd = memfd_create("rh-bench", 0);
	if (ftruncate(fd, REGION) < 0)
		die("ftruncate", NULL);
	uint8_t *m = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	memset(m, 1, REGION);
	rh_tp_conn *c;
	if (rh_tp_accept(l, 30000, &c, &err) != RH_OK ||
	    rh_tp_reg(c, m, REGION, fd, 0, RH_TP_REMOTE, &err) != RH_OK)
		die("accept", &err);
	uint64_t a = (uint64_t)(uintptr_t)m;
	rh_tp_send(c, &a, sizeof a, -1, &err);
	size_t len;
	/* Serve until the benchmark says goodbye (or goes away). */
	while (rh_tp_recv(c, &a, sizeof a, &len, 600000, &err) == RH_ETIMEDOUT)
		;
	_exit(0);
}

/* n segments of `len` bytes (pages spread over the region when n > 1),
 * `depth` operations in flight; returns seconds per round. */
static double round_tp(struct ctx *x, int wr, size_t len, int n, int depth)
{
	rh_tp_sge sg[64];
	rh_error err = {0};
	for (int i = 0; i < n; i++)
		sg[i] = (rh_tp_sge){x->local + (size_t)i * len, x->base + (size_t)(2 * i) * len,
		                    (uint32_t)len};
	uint64_t first = x->wr;
	for (int d = 0; d < depth; d++) {
		int rc = wr ? rh_tp_write(x->c, sg, (size_t)n, x->wr++, &err)
		            : rh_tp_read(x->c, sg, (size_t)n, x->wr++, &err);
		if (rc != RH_OK)
			die("post", &err);
	}
	for (uint64_t id = first; id < x->wr; id++)
		if (rh_tp_wait(x->c, id, -1, &err) != RH_OK)
			die("wait", &err);
	return 0;
}

static void round_ref(struct ctx *x, int wr, size_t len, int n, int depth)
{
	if (x->shared) {
		for (int d = 0; d < depth; d++)
			for (int i = 0; i < n; i++) {
				uint8_t *r = x->shared + (size_t)(2 * i) * len;
				uint8_t *l = x->local + (size_t)i * len;
				wr ? memcpy(r, l, len) : memcpy(l, r, len);
			}
	} else {
		ref_tcp(x->ref_fd, wr, len * (size_t)n, depth, x->local);
	}
}

/* Seconds per operation in one trial: at least 30 ms and 20 rounds; the
 * clock is read once per batch so that its cost does not count. */
static double trial(struct ctx *x, int ref, int wr, size_t len, int n, int depth)
{
	ref ? round_ref(x, wr, len, n, depth) : (void)round_tp(x, wr, len, n, depth); /* warm */
	double t0 = now_s(), t;
	long rounds = 0, batch = 1;
	do {
		for (long i = 0; i < batch; i++)
			ref ? round_ref(x, wr, len, n, depth)
			    : (void)round_tp(x, wr, len, n, depth);
		rounds += batch;
		t = now_s() - t0;
		if (t < 0.003)
			batch *= 2;
	} while (t < 0.03 || rounds < 20);
	return t / (double)(rounds * depth);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

#define TRIALS 7

/* Provider and reference trials alternate, so that load from other
 * processes hits both alike; each result is the median of its trials. */
static void measure(struct ctx *x, int wr, size_t len, int n, int depth, double *tp, double *ref)
{
	double a[TRIALS], b[TRIALS];
	for (int i = 0; i < TRIALS; i++) {
		a[i] = trial(x, 0, wr, len, n, depth);
		b[i] = trial(x, 1, wr, len, n, depth);
	}
	qsort(a, TRIALS, sizeof *a, cmp_double);
	qsort(b, TRIALS, sizeof *b, cmp_double);
	*tp = a[TRIALS / 2], *ref = b[TRIALS / 2];
}

static json_t *row(struct ctx *x, int wr, size_t len, int n)
{
	size_t bytes = len * (size_t)n;
	double lat, rlat, op, rop;
	measure(x, wr, len, n, 1, &lat, &rlat);
	measure(x, wr, len, n, DEPTH, &op, &rop);
	double bw = (double)bytes / op / 1e6, rbw = (double)bytes / rop / 1e6;
	char what[32];
	if (n > 1)
		snprintf(what, sizeof what, "%d x 4 KiB", n);
	else
		snprintf(what, sizeof what, "%zu B", len);
	printf("%-6s %-12s %10.2f %10.2f %7.2f %10.1f %10.1f %7.2f\n", wr ? "write" : "read", what,
	       lat * 1e6, rlat * 1e6, lat / rlat, bw, rbw, rbw / bw);
	fflush(stdout);
	return json_pack("{s:s, s:I, s:i, s:f, s:f, s:f, s:f, s:f, s:f}", "op",
	                 wr ? "write" : "read", "bytes", (json_int_t)bytes, "pages", n, "lat_us",
	                 lat * 1e6, "ref_lat_us", rlat * 1e6, "lat_ratio", lat / rlat, "bw_MBps",
	                 bw, "ref_bw_MBps", rbw, "bw_ratio", rbw / bw);
}

int main(int argc, char **argv)
{
	if (argc < 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: rh-bench-transport PROVIDER [--host H] [--json FILE]\n");
		return 2;
	}
	struct ctx x = {.provider = argv[1], .host = "127.0.0.1", .ref_fd = -1, .wr = 1};
	const char *json_path = NULL;
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
			json_path = argv[++i];
		else if (strcmp(argv[i], "--host") == 0 && i + 1 < argc)
			x.host = argv[++i];
		else
			return fprintf(stderr, "unknown argument %s\n", argv[i]), 2;
	}
	int p[2];
	if (pipe(p) < 0)
		return 1;
	pid_t pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		passive(x.provider, x.host, p[1]);
	}
	uint16_t ports[2];
	if (read(p[0], ports, sizeof ports) != sizeof ports)
		die("passive side did not start", NULL);
	rh_tp_opts o = opts(x.provider);
	rh_error err = {0};
	if (rh_tp_connect(&o, x.host, ports[0], &x.c, &err) != RH_OK)
		die("connect", &err);
	size_t len;
	if (rh_tp_recv(x.c, &x.base, sizeof x.base, &len, 10000, &err) != RH_OK)
		die("recv", &err);
	x.local = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(x.local, 2, REGION);
	if (rh_tp_reg(x.c, x.local, REGION, -1, 0, RH_TP_LOCAL, &err) != RH_OK)
		die("reg", &err);
	const char *ref_name = "plain TCP socket";
	if (strcmp(x.provider, "shm") == 0) {
		int fd = memfd_create("rh-bench-ref", 0);
		if (ftruncate(fd, REGION) < 0)
			die("ftruncate", NULL);
		x.shared = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		memset(x.shared, 3, REGION);
		ref_name = "memcpy to a shared mapping";
	} else if ((x.ref_fd = ref_connect(x.host, ports[1])) < 0) {
		die("reference connect", NULL);
	}
	printf("# rh-bench-transport %s; reference: %s; bandwidth with %d ops in flight;\n"
	       "# medians of %d alternating trials; ratio = provider time / reference time\n",
	       x.provider, ref_name, DEPTH, TRIALS);
	printf("%-6s %-12s %10s %10s %7s %10s %10s %7s\n", "op", "size", "lat_us", "ref_us",
	       "ratio", "MB/s", "ref_MB/s", "ratio");
	json_t *rows = json_array();
	for (int wr = 0; wr < 2; wr++) {
		static const size_t sizes[] = {8, 64, 512, 4096, 32768, 262144, 1048576};
		for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
			json_array_append_new(rows, row(&x, wr, sizes[i], 1));
		json_array_append_new(rows, row(&x, wr, 4096, 16));
		json_array_append_new(rows, row(&x, wr, 4096, 64));
	}
	uint64_t bye = 0;
	rh_tp_send(x.c, &bye, sizeof bye, -1, &err);
	rh_tp_close(x.c);
	waitpid(pid, NULL, 0);
	json_t *doc = json_pack("{s:s, s:s, s:i, s:o}", "provider", x.provider, "reference",
	                        ref_name, "depth", DEPTH, "results", rows);
	if (json_path && json_dump_file(doc, json_path, JSON_INDENT(2)) != 0)
		return fprintf(stderr, "cannot write %s\n", json_path), 1;
	json_decref(doc);
	return 0;
}
