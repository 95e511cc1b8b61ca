/* Live stats (docs/operations.md, "Live stats"): a program running on a
 * heap shows up in `rheapctl stats` as it opens, then with a collection
 * count that grows,
 * `--json` of stats and status parses, and the file is gone once the heap
 * is closed. This process is the program; rheapctl reads it from outside.
 *
 *   test-livestats RHEAPCTL */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/ops/ops.h"

static const char *ctl;
static char dir[64];

/* `rheapctl CMD --state-dir DIR ARGS`: its exit status, stdout in out[]. */
static int run(const char *cmd0, const char *args, char *out, size_t n)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "%s %s --state-dir %s %s", ctl, cmd0, dir, args);
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	size_t len = fread(out, 1, n - 1, p);
	out[len] = 0;
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* This process's collections as `rheapctl stats --json PID` reads them,
 * or -1. */
static long long collections_seen(void)
{
	static char out[1 << 16];
	char args[64];
	snprintf(args, sizeof args, "--json %d", (int)getpid());
	if (run("stats", args, out, sizeof out) != 0)
		return -1;
	json_t *a = json_loads(out, 0, NULL);
	long long c = -1;
	if (json_array_size(a) == 1)
		c = json_integer_value(json_object_get(
		        json_object_get(json_array_get(a, 0), "stats"), "collections"));
	json_decref(a);
	return c;
}

/* Partial collections over a fresh list each time, 100 ms apart (the
 * interval; a slow write, as under a sanitizer, makes the next wait
 * longer: operations.L1), until `rheapctl stats` shows more than `than`
 * collections; what it shows then, or -1 after 100 of them. */
static long long grows_past(rh_mutator *m, rh_type_id node, rh_type_id blob, void **head,
                            long long than)
{
	for (int i = 0; i < 100; i++) {
		*head = NULL;
		ops_keep_list(m, node, blob, head, 200, 10, 20000);
		rh_collect(m, 0);
		usleep(100000);
		long long c = collections_seen();
		if (c > than)
			return c;
	}
	return -1;
}

int main(int argc, char **argv)
{
	REQUIRE(argc == 2, "usage: test-livestats RHEAPCTL");
	ctl = argv[1];
	snprintf(dir, sizeof dir, "/tmp/rheap-livestats.XXXXXX");
	REQUIRE(mkdtemp(dir), "mkdtemp");
	setenv("RHEAP_STATE_DIR", dir, 1);
	unsetenv("RHEAP_LIVE_STATS");
	unsetenv("RHEAP_CONFIG");

	rh_config cfg;
	rh_config_default(&cfg);
	cfg.heap_size = 32ull << 20;
	rh_error err;
	static char out[1 << 16];
	char path[160];
	struct stat st;

	/* A program killed before rh_heap_close leaves its file, which the
	 * next `rheapctl stats` removes. Forked before this process has
	 * threads. */
	pid_t child = fork();
	if (child == 0) {
		if (rh_heap_open(&cfg, &err))
			kill(getpid(), SIGKILL);
		_exit(1);
	}
	int status;
	REQUIRE(child > 0 && waitpid(child, &status, 0) == child, "fork");
	CHECK(WIFSIGNALED(status), "the child opened its heap and was killed");
	snprintf(path, sizeof path, "%s/stats-%d-1.json", dir, (int)child);
	CHECK(stat(path, &st) == 0, "a killed program's file stays: %s", path);
	CHECK(run("stats", "", out, sizeof out) == 0 && stat(path, &st) != 0,
	      "rheapctl stats removes a dead process's file: %s", out);

	rh_heap *h = rh_heap_open(&cfg, &err);
	REQUIRE(h, "heap: %s", err.msg);
	rh_type_id node, blob;
	REQUIRE(ops_node_types(h, &node, &blob, &err) == RH_OK, "types: %s", err.msg);
	rh_mutator *m = rh_mutator_attach(h, &err);
	REQUIRE(m, "attach: %s", err.msg);
	void *head = NULL;
	rh_frame f;
	rh_push_frame(m, &f, &head, 1);

	CHECK(collections_seen() == 0, "rheapctl stats --json PID: the heap, 0 collections");
	long long c1 = grows_past(m, node, blob, &head, 0);
	CHECK(c1 >= 1, "rheapctl stats --json PID: %lld collections (-1: none in 100)", c1);
	long long c2 = grows_past(m, node, blob, &head, c1);
	CHECK(c2 > c1, "the collection count grows: %lld, then %lld", c1, c2);

	char pid[32];
	snprintf(pid, sizeof pid, "\n%-8d ", (int)getpid());
	CHECK(run("stats", "", out, sizeof out) == 0 && strstr(out, pid),
	      "the table lists this process:\n%s", out);
	CHECK(run("stats", "--json | python3 -c 'import json,sys; json.load(sys.stdin)'", out,
	          sizeof out) == 0,
	      "stats --json parses");
	/* No cluster in this state dir: exit 3, and still JSON. */
	CHECK(run("status",
	          "--json | python3 -c 'import json,sys; "
	          "d = json.load(sys.stdin); assert d[\"up\"] is False'",
	          out, sizeof out) == 0,
	      "status --json parses");

	rh_pop_frame(m, &f);
	rh_mutator_detach(m);
	rh_heap_close(h);
	char name[64];
	snprintf(name, sizeof name, "--json %d", (int)getpid());
	CHECK(run("stats", name, out, sizeof out) == 3, "no stats after rh_heap_close: %s", out);
	snprintf(path, sizeof path, "%s/stats-%d-1.json", dir, (int)getpid());
	CHECK(stat(path, &st) != 0, "%s is gone", path);
	/* What is left: nothing of ours (the stats file, its temporary). */
	snprintf(path, sizeof path, "rm -f %s/.*.tmp; rmdir %s", dir, dir);
	CHECK(system(path) == 0, "the state dir is empty after the heap closed");
	return check_done();
}
