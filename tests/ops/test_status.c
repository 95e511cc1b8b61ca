/* rheapctl status: per tracer its state, regions hosted, bytes held, bytes
 * traced and last heartbeat, read from the tracers' status files, before,
 * during and after a workload that makes the tracers mark.
 *
 * usage: test-status RHEAPCTL TRACERD PROVIDER
 */
#include "tests/ops/ops.h"
#include "tests/swap/proc.h"

static const char *rheapctl, *tracerd;
/* Only its directory, secret and config: rheapctl starts the tracers. */
static cluster cl;

typedef struct row {
	int index, pid;
	char state[16];
	long long hosted, total;
	double held, traced;
	long long refused;
	char heartbeat[32];
} row;

/* Run rheapctl CMD on the config; its stdout in out. Exit status or -1.
 * The tracers 'up' starts inherit its stdout: that one writes to a file,
 * or reading would wait for them to exit. */
static int ctl(const char *cmd, char *out, size_t cap)
{
	char *argv[] = {(char *)rheapctl, (char *)cmd, "--config",      cl.config, "--state-dir",
	                cl.dir,           "--tracerd", (char *)tracerd, NULL};
	if (strcmp(cmd, "up"))
		return proc_run(argv, PROC_STDOUT, NULL, out, cap);
	char log[400];
	snprintf(log, sizeof log, "%s/up.log", cl.dir);
	return proc_run(argv, PROC_BOTH, log, out, cap);
}

/* The table's rows for tracers 0 and 1; how many parsed. */
static int parse(const char *out, row *rows)
{
	int n = 0;
	const char *l = strchr(out, '\n');
	CHECK(l && !strncmp(out, "tracer", 6) && strstr(out, "regions") &&
	              strstr(out, "held MiB") && strstr(out, "traced MiB") &&
	              strstr(out, "heartbeat"),
	      "the header names the columns: %.200s", out);
	for (; l && *++l && n < 2; l = strchr(l, '\n')) {
		row *r = &rows[n];
		char addr[64];
		int used = 0;
		memset(r, 0, sizeof *r);
		int k = sscanf(l, "%d %63s %15s %d %lld/%lld %lf %*s %lf %lld %n", &r->index, addr,
		               r->state, &r->pid, &r->hosted, &r->total, &r->held, &r->traced,
		               &r->refused, &used);
		if (k >= 3 && (!strcmp(r->state, "down") || !strcmp(r->state, "remote"))) {
			n++;
			continue;
		}
		if (k < 9)
			break;
		sscanf(l + used, "%31[^\n]", r->heartbeat);
		n++;
	}
	return n;
}

/* Old data far larger than the cache, collected repeatedly: the tracers
 * mark their mostly evicted regions. */
static void workload(rh_mutator *m, rh_type_id node, rh_type_id blob)
{
	void *head = NULL;
	rh_frame f;
	rh_push_frame(m, &f, &head, 1);
	/* Garbage between the survivors, so collections have work. */
	ops_keep_list(m, node, blob, &head, 24000, 4, 4000);
	rh_pop_frame(m, &f);
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
	if (cluster_init(&cl, 2) < 0)
		return 2;
	/* 'up' starts the tracers on the config's ports: pick them now. */
	for (int i = 0; i < 2; i++)
		if ((cl.port[i] = cluster_free_port()) < 0)
			return 2;
	if (cluster_write_config(&cl, provider, 64, 0.1, 3000, NULL) < 0)
		return 2;

	char out[8192];
	row rows[2];
	CHECK(ctl("status", out, sizeof out) == 3, "before up: status exits 3 (tracers down)");
	CHECK(parse(out, rows) == 2 && !strcmp(rows[0].state, "down"), "and says down: %s", out);
	CHECK(ctl("up", out, sizeof out) == 0, "up");
	CHECK(ctl("status", out, sizeof out) == 0, "status while waiting exits 0: %s", out);
	int n = parse(out, rows);
	CHECK(n == 2, "two rows: %s", out);
	for (int i = 0; i < n; i++) {
		CHECK(!strcmp(rows[i].state, "waiting") && rows[i].pid > 0,
		      "tracer %d waiting, with its pid: %s", i, out);
		CHECK(rows[i].total == 128 && rows[i].hosted == 0,
		      "tracer %d: no region of its 128 hosted yet (%lld/%lld)", i, rows[i].hosted,
		      rows[i].total);
		CHECK(!strcmp(rows[i].heartbeat, "-"), "tracer %d: no heartbeat yet (%s)", i,
		      rows[i].heartbeat);
	}

	rh_error err;
	rh_heap *h = NULL;
	for (int t = 0; t < 50 && !h; t++)
		if (!(h = rh_heap_open_file(cl.config, &err)))
			usleep(100000);
	CHECK(h != NULL, "open the heap: %s", h ? "" : err.msg);
	if (h) {
		rh_type_id node, blob;
		ops_node_types(h, &node, &blob, &err);
		rh_mutator *m = rh_mutator_attach(h, &err);
		workload(m, node, blob);
		/* Tracers mark concurrently: give them a few collections and
		 * seconds (status files are rewritten each second). */
		double t0 = ops_now();
		double traced = 0;
		while (ops_now() - t0 < 15) {
			rh_collect(m, 0);
			rh_mutator_park(m);
			usleep(300000);
			rh_mutator_unpark(m);
			if (ctl("status", out, sizeof out) == 0 && parse(out, rows) == 2 &&
			    (traced = rows[0].traced + rows[1].traced) > 0 && ops_now() - t0 > 1.5)
				break;
		}
		rh_stats s;
		rh_stats_get(h, &s);
		printf("# %s", out);
		printf("# bytes marked remotely per the VM: %llu\n",
		       (unsigned long long)s.bytes_marked_remote);
		for (int i = 0; i < 2; i++) {
			CHECK(!strcmp(rows[i].state, "serving"), "tracer %d serving (%s)", i,
			      rows[i].state);
			CHECK(rows[i].hosted <= rows[i].total, "tracer %d: %lld/%lld regions", i,
			      rows[i].hosted, rows[i].total);
			/* 64 MiB over 256 regions: 0.25 MiB each. */
			CHECK(rows[i].held <= rows[i].hosted * 0.25 + 0.05 &&
			              (rows[i].hosted == 0) == (rows[i].held < 0.05),
			      "tracer %d: %.1f MiB held fits %lld regions hosted", i, rows[i].held,
			      rows[i].hosted);
			long long ago = -1;
			CHECK(sscanf(rows[i].heartbeat, "%lld ms ago", &ago) == 1 && ago >= 0 &&
			              ago < 3000,
			      "tracer %d heard from the CPU server recently (%s)", i,
			      rows[i].heartbeat);
		}
		CHECK(rows[0].hosted + rows[1].hosted > 0 && rows[0].held + rows[1].held > 1.0,
		      "the evicted heap is hosted: %lld regions, %.1f MiB",
		      rows[0].hosted + rows[1].hosted, rows[0].held + rows[1].held);
		CHECK(traced > 0, "the tracers report bytes traced (%.2f MiB)", traced);
		rh_mutator_detach(m);
		rh_heap_close(h);
	}
	/* An 'up' cluster serves run after run (operations.R1): after the
	 * session both tracers wait again with nothing held, and the next
	 * program opens the heap at once. */
	int again = 0;
	for (int t = 0; t < 100 && !again; t++) {
		again = ctl("status", out, sizeof out) == 0 && parse(out, rows) == 2 &&
		        !strcmp(rows[0].state, "waiting") && !strcmp(rows[1].state, "waiting") &&
		        rows[0].hosted + rows[1].hosted == 0 && rows[0].held + rows[1].held < 0.05;
		if (!again)
			usleep(100000);
	}
	CHECK(again, "after the session both wait again, holding nothing: %s", out);
	h = rh_heap_open_file(cl.config, &err);
	CHECK(h != NULL, "a second program opens the heap on the same tracers: %s",
	      h ? "" : err.msg);
	if (h) {
		rh_type_desc bd = {
		        .name = "blob", .layout = RH_LAYOUT_BYTE_ARRAY, .size = 16, .elem_size = 1};
		rh_type_id blob = rh_type_register(h, &bd, &err);
		rh_mutator *m = rh_mutator_attach(h, &err);
		void *slot = NULL;
		rh_frame f;
		rh_push_frame(m, &f, &slot, 1);
		slot = rh_alloc_array(m, blob, 100);
		CHECK(slot != NULL, "and allocates");
		rh_pop_frame(m, &f);
		rh_mutator_detach(m);
		rh_heap_close(h);
	}
	CHECK(ctl("down", out, sizeof out) == 0, "down");
	int st = ctl("status", out, sizeof out);
	CHECK(st == 3 && parse(out, rows) == 2 && !strcmp(rows[0].state, "down") &&
	              !strcmp(rows[1].state, "down"),
	      "after down both are down, exit 3: %s", out);
	cluster_stop(&cl);
	return check_done();
}
