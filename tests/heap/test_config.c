/* Configuration errors surface through rh_heap_open/rh_heap_open_file: a bad
 * value gives NULL with RH_ECONFIG and a message naming the key; a missing
 * or malformed file gives NULL and a message, never a crash. Valid configs
 * open, and a second heap on a reserved range is refused. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "th.h"

static void bad_struct(const char *why, const char *key, rh_config *cfg)
{
	rh_error err = {0};
	rh_heap *h = rh_heap_open(cfg, &err);
	CHECK(h == NULL, "%s: opened", why);
	if (h)
		rh_heap_close(h);
	CHECK(err.code == RH_ECONFIG, "%s: code %d (%s), want RH_ECONFIG", why, err.code,
	      rh_status_name(err.code));
	CHECK(strstr(err.msg, key) != NULL, "%s: message '%s' does not name '%s'", why, err.msg,
	      key);
}

/* Run fn in a child; its exit status says whether fn's checks held. */
static int in_child(int (*fn)(void))
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(fn());
	int st = 0;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	return st;
}

static int null_config(void)
{
	rh_error err = {0};
	rh_heap *h = rh_heap_open(NULL, &err);
	if (h || err.code == RH_OK || !err.msg[0]) {
		fprintf(stderr, "rh_heap_open(NULL): heap %p code %d msg '%s'\n", (void *)h,
		        err.code, err.msg);
		return 1;
	}
	return 0;
}

static int null_err(void)
{
	rh_config c;
	th_config(&c, 64, 256);
	c.region_size = 3u << 18;
	return rh_heap_open(&c, NULL) != NULL;
}

static void test_struct(void)
{
	rh_config c;
	th_config(&c, 64, 256);
	c.heap_size = (64ull << 20) + 4096;
	bad_struct("heap size not a region multiple", "size", &c);

	th_config(&c, 64, 256);
	c.heap_size = 0;
	bad_struct("heap size 0", "size", &c);

	th_config(&c, 64, 256);
	c.region_size = 3u << 18;
	bad_struct("region size not a power of two", "region_size", &c);

	th_config(&c, 64, 256);
	c.region_size = 64u << 10;
	bad_struct("region size below 256 KiB", "region_size", &c);

	th_config(&c, 64, 256);
	c.heap_base = RH_DEFAULT_BASE + 4096;
	bad_struct("base not region-aligned", "base", &c);

	th_config(&c, 64, 256);
	c.cache_fraction = 0.0;
	bad_struct("cache fraction 0", "fraction", &c);

	th_config(&c, 64, 256);
	c.cache_fraction = 1.5;
	bad_struct("cache fraction 1.5", "fraction", &c);

	th_config(&c, 64, 256);
	c.fault_spin_us = 20000;
	bad_struct("fault spin 20 ms", "fault_spin_us", &c);

	th_config(&c, 64, 256);
	c.readahead = 65;
	bad_struct("readahead 65 pages", "readahead", &c);

	th_config(&c, 64, 256);
	c.readahead_adaptive = 2;
	bad_struct("readahead_adaptive 2", "readahead_adaptive", &c);

	th_config(&c, 64, 256);
	c.checksum = -1;
	bad_struct("checksum -1", "checksum", &c);

	th_config(&c, 64, 256);
	c.faults = (rh_faults)7;
	bad_struct("fault mode 7", "faults", &c);

	th_config(&c, 64, 256);
	snprintf(c.provider, sizeof c.provider, "pigeon");
	bad_struct("unknown provider", "provider", &c);

	th_config(&c, 64, 256);
	c.young_fraction = 1.0;
	bad_struct("young fraction 1", "young_fraction", &c);

	th_config(&c, 64, 256);
	c.full_threshold = 1.0;
	bad_struct("full threshold 1", "full_threshold", &c);

	th_config(&c, 64, 256);
	c.order = (rh_order)7;
	bad_struct("unknown order", "order", &c);

	th_config(&c, 64, 256);
	c.tracer_threads = -1;
	bad_struct("negative tracer threads", "tracer_threads", &c);

	th_config(&c, 64, 256);
	c.copy_threads = 9;
	bad_struct("nine copying threads", "copy_threads", &c);

	th_config(&c, 64, 256);
	c.n_servers = RH_MAX_SERVERS + 1;
	bad_struct("too many servers", "servers", &c);

	th_config(&c, 64, 256);
	c.n_servers = 1;
	snprintf(c.servers[0].host, sizeof c.servers[0].host, "127.0.0.1");
	c.servers[0].port = 1;
	c.servers[0].partition_size = 12345;
	bad_struct("partition not a region multiple", "partition_size", &c);

	/* In a child: a crash here must not hide the other results. */
	int st = in_child(null_config);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rh_heap_open(NULL, &err): %s %d",
	      WIFSIGNALED(st) ? "killed by signal" : "exit status",
	      WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	st = in_child(null_err);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "bad config with NULL err: %s %d",
	      WIFSIGNALED(st) ? "killed by signal" : "exit status",
	      WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

static void test_good_and_busy(void)
{
	rh_config c;
	th_config(&c, 64, 256);
	rh_error err = {0};
	rh_heap *h = rh_heap_open(&c, &err);
	CHECK(h != NULL, "valid config refused: %s", err.msg);
	if (!h)
		return;
	rh_stats s = th_stats(h);
	CHECK(s.heap_size == 64ull << 20 && s.region_size == 256u << 10,
	      "stats say heap %llu region %llu", (unsigned long long)s.heap_size,
	      (unsigned long long)s.region_size);

	/* The same range again (and an overlapping one): refused, no crash. */
	rh_error e2 = {0};
	rh_heap *h2 = rh_heap_open(&c, &e2);
	CHECK(h2 == NULL && e2.code != RH_OK && e2.msg[0], "second heap on the same range: code %d",
	      e2.code);
	if (h2)
		rh_heap_close(h2);
	c.heap_base += 32ull << 20;
	memset(&e2, 0, sizeof e2);
	h2 = rh_heap_open(&c, &e2);
	CHECK(h2 == NULL && e2.code != RH_OK, "overlapping heap opened");
	if (h2)
		rh_heap_close(h2);

	/* A disjoint range is fine while the first heap is open. */
	c.heap_base = RH_DEFAULT_BASE + (1ull << 36);
	memset(&e2, 0, sizeof e2);
	h2 = rh_heap_open(&c, &e2);
	CHECK(h2 != NULL, "disjoint second heap refused: %s", e2.msg);
	if (h2)
		rh_heap_close(h2);
	rh_heap_close(h);

	/* region_size 0 is derived from the heap size. */
	th_config(&c, 128, 0);
	memset(&err, 0, sizeof err);
	h = rh_heap_open(&c, &err);
	CHECK(h != NULL, "region_size 0 refused: %s", err.msg);
	if (h) {
		s = th_stats(h);
		CHECK(s.region_size >= (256u << 10) && (s.region_size & (s.region_size - 1)) == 0 &&
		              s.heap_size % s.region_size == 0,
		      "derived region size %llu", (unsigned long long)s.region_size);
		rh_heap_close(h);
	}
}

static char tmpdir[] = "/tmp/rh-heap-config-XXXXXX";

static const char *write_file(const char *name, const char *text)
{
	static char path[512];
	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	FILE *f = fopen(path, "w");
	REQUIRE(f != NULL, "cannot write %s", path);
	fputs(text, f);
	fclose(f);
	return path;
}

static void bad_file(const char *why, const char *path, int code, const char *key)
{
	rh_error err = {0};
	rh_heap *h = rh_heap_open_file(path, &err);
	CHECK(h == NULL, "%s: opened", why);
	if (h)
		rh_heap_close(h);
	if (code)
		CHECK(err.code == code, "%s: code %d (%s), want %s", why, err.code,
		      rh_status_name(err.code), rh_status_name(code));
	else
		CHECK(err.code != RH_OK, "%s: no error code", why);
	CHECK(err.msg[0] != '\0', "%s: no message", why);
	if (key)
		CHECK(strstr(err.msg, key) != NULL, "%s: message '%s' does not name '%s'", why,
		      err.msg, key);
}

static void test_files(void)
{
	REQUIRE(mkdtemp(tmpdir) != NULL);
	bad_file("missing file", "/nonexistent/rheap.json", 0, "/nonexistent/rheap.json");
	bad_file("a directory", tmpdir, 0, NULL);
	bad_file("empty file", write_file("empty.json", ""), RH_ECONFIG, NULL);
	bad_file("truncated JSON", write_file("trunc.json", "{\"heap\": {\"size\": 67108864"),
	         RH_ECONFIG, NULL);
	bad_file("not an object", write_file("arr.json", "[1, 2, 3]"), RH_ECONFIG, NULL);
	bad_file("size is a string", write_file("str.json", "{\"heap\": {\"size\": \"big\"}}"),
	         RH_ECONFIG, "size");
	bad_file("negative size", write_file("neg.json", "{\"heap\": {\"size\": -1}}"), RH_ECONFIG,
	         "size");
	bad_file("bad order",
	         write_file("order.json", "{\"heap\": {\"size\": 67108864, \"region_size\": "
	                                  "262144}, \"gc\": {\"order\": \"zigzag\"}}"),
	         RH_ECONFIG, "order");
	bad_file("bad fraction",
	         write_file("frac.json", "{\"heap\": {\"size\": 67108864, \"region_size\": "
	                                 "262144}, \"cache\": {\"fraction\": 2}}"),
	         RH_ECONFIG, "fraction");
	bad_file("binary garbage", write_file("bin.json", "\x7f\x45\x4c\x46\x01\x02"), RH_ECONFIG,
	         NULL);

	const char *good = write_file("good.json", "{\"heap\": {\"size\": 67108864, "
	                                           "\"region_size\": 262144}, "
	                                           "\"gc\": {\"order\": \"bfs\"}}");
	rh_error err = {0};
	rh_heap *h = rh_heap_open_file(good, &err);
	CHECK(h != NULL, "valid file refused: %s", err.msg);
	if (h) {
		rh_stats s = th_stats(h);
		CHECK(s.heap_size == 64ull << 20 && s.region_size == 256u << 10,
		      "file values not applied: heap %llu region %llu",
		      (unsigned long long)s.heap_size, (unsigned long long)s.region_size);
		rh_heap_close(h);
	}
	const char *names[] = {"empty.json", "trunc.json", "arr.json", "str.json", "neg.json",
	                       "order.json", "frac.json",  "bin.json", "good.json"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		char p[512];
		snprintf(p, sizeof p, "%s/%s", tmpdir, names[i]);
		unlink(p);
	}
	rmdir(tmpdir);
}

int main(void)
{
	test_struct();
	test_good_and_busy();
	test_files();
	return check_done();
}
