/* Configuration: good configs round-trip through JSON, every bad value is
 * rejected with RH_ECONFIG and a message naming its key, hand-built structs
 * are judged like parsed ones, and the secret file rules hold.
 * argv[1]: the docs/examples directory (the shipped example configs). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/common/check.h"
#include "rheap/rheap.h"

#define MIB (1ull << 20)
#define GIB (1ull << 30)

static char tmpdir[256];

/* Test JSON is written with single quotes for readability; q() turns them
 * into double quotes (a rotating set of buffers, so several can be live). */
static const char *q(const char *s)
{
	static char buf[4][16384];
	static int k;
	if (!s)
		return NULL;
	char *b = buf[k++ % 4];
	size_t i = 0;
	for (; s[i] && i < sizeof buf[0] - 1; i++)
		b[i] = s[i] == '\'' ? '"' : s[i];
	b[i] = 0;
	return b;
}

static int has(const char *s, const char *want)
{
	return check_contains(s, q(want));
}

static int cfg_equal(const rh_config *a, const rh_config *b)
{
	if (a->heap_base != b->heap_base || a->heap_size != b->heap_size ||
	    a->region_size != b->region_size || a->cache_fraction != b->cache_fraction ||
	    a->fault_spin_us != b->fault_spin_us || a->faults != b->faults ||
	    a->readahead != b->readahead || a->readahead_adaptive != b->readahead_adaptive ||
	    a->checksum != b->checksum || strcmp(a->provider, b->provider) ||
	    a->timeout_ms != b->timeout_ms || a->n_servers != b->n_servers ||
	    a->pause_budget_us != b->pause_budget_us || a->order != b->order ||
	    a->young_fraction != b->young_fraction || a->full_threshold != b->full_threshold ||
	    a->offload != b->offload || a->tracer_threads != b->tracer_threads ||
	    a->copy_threads != b->copy_threads || a->reorder != b->reorder ||
	    a->verify != b->verify || a->preclean != b->preclean || a->pretouch != b->pretouch ||
	    a->redundancy != b->redundancy || a->write_copies != b->write_copies ||
	    a->n_spares != b->n_spares || strcmp(a->secret_file, b->secret_file) ||
	    a->secret_len != b->secret_len || memcmp(a->secret, b->secret, a->secret_len))
		return 0;
	for (size_t i = 0; i < a->n_servers; i++)
		if (strcmp(a->servers[i].host, b->servers[i].host) ||
		    a->servers[i].port != b->servers[i].port ||
		    a->servers[i].partition_size != b->servers[i].partition_size)
			return 0;
	return 1;
}

static void write_file(const char *path, const void *data, size_t len, mode_t mode)
{
	unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, data, len) != (ssize_t)len) {
		fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
		exit(2);
	}
	fchmod(fd, mode);
	close(fd);
}

static char *tpath(const char *name)
{
	static char buf[4][512];
	static int k;
	char *p = buf[k++ % 4];
	snprintf(p, 512, "%s/%s", tmpdir, name);
	return p;
}

static const char secret32[] = "0123456789abcdef0123456789ABCDEF";

/* ------------------------------------------------------------------ good */

static void test_defaults(void)
{
	rh_config c;
	rh_error err = {0};
	rh_config_default(&c);
	CHECK(c.heap_base == RH_DEFAULT_BASE && c.heap_size == GIB && c.region_size == 0);
	CHECK(c.cache_fraction == 1.0 && strcmp(c.provider, "shm") == 0 && c.timeout_ms == 2000);
	CHECK(c.fault_spin_us == 50 && c.faults == RH_FAULTS_THREAD);
	CHECK(c.readahead == 8 && c.readahead_adaptive == 1 && c.checksum == 1);
	CHECK(c.n_servers == 0 && c.pause_budget_us == 10000 && c.order == RH_ORDER_DFS);
	CHECK(c.young_fraction == 0.25 && c.full_threshold == 0.15 && c.offload == 1);
	CHECK(c.tracer_threads == 1 && c.reorder == 1 && c.verify == 0 && c.secret_len == 0 &&
	      c.concurrent_mark == 1 && c.copy_threads == 0 && c.preclean == 1 && c.pretouch == 1);
	CHECK(rh_config_check(&c, &err) == 0, "%s", err.msg);
	CHECK(c.region_size == MIB); /* 1 GiB / 1024 */

	rh_config p;
	CHECK(rh_config_parse(q("{}"), NULL, &p, &err) == 0, "%s", err.msg);
	CHECK(cfg_equal(&c, &p));
}

static void parse_ok(const char *js, rh_config *c)
{
	rh_error err = {0};
	int rc = rh_config_parse(q(js), tmpdir, c, &err);
	CHECK(rc == 0, "%s: %s", js, err.msg);
}

static void test_values(void)
{
	rh_config c;
	parse_ok("{'heap':{'base':'0x200000000000','size':'2GiB','region_size':'4 MiB'},"
	         "'cache':{'fraction':0.5,'fault_spin_us':0,'faults':'signal','readahead':0,"
	         "'readahead_adaptive':false,'checksum':false},"
	         "'transport':{'provider':'tcp','timeout_ms':500},'gc':{'pause_budget_ms':0.5,'"
	         "order':'bfs','young_fraction':0.5,"
	         "'full_threshold':0,'offload':false,'tracer_threads':4,'reorder':false,"
	         "'verify':true,'copy_threads':3,'preclean':false,'pretouch':false}}",
	         &c);
	CHECK(c.heap_base == 0x200000000000ull && c.heap_size == 2 * GIB &&
	      c.region_size == 4 * MIB);
	CHECK(c.cache_fraction == 0.5 && !strcmp(c.provider, "tcp") && c.timeout_ms == 500);
	CHECK(c.fault_spin_us == 0 && c.faults == RH_FAULTS_SIGNAL);
	CHECK(c.readahead == 0 && c.readahead_adaptive == 0 && c.checksum == 0);
	CHECK(c.pause_budget_us == 500 && c.order == RH_ORDER_BFS && c.young_fraction == 0.5);
	CHECK(c.full_threshold == 0 && !c.offload && c.tracer_threads == 4 && !c.reorder &&
	      c.verify && c.copy_threads == 3 && !c.preclean && !c.pretouch);

	/* the third order (its round trip: test_round_trip) */
	parse_ok("{'gc':{'order':'dfs-strict'}}", &c);
	CHECK(c.order == RH_ORDER_DFS_STRICT, "gc.order dfs-strict parses (%d)", (int)c.order);

	/* every spelling of a size */
	parse_ok("{'heap':{'base':70368744177664,'size':1073741824,'region_size':262144}}", &c);
	CHECK(c.heap_base == 0x400000000000ull && c.heap_size == GIB && c.region_size == 256 << 10);
	parse_ok("{'heap':{'base':'64TiB','size':'1G','region_size':'256K'}}", &c);
	CHECK(c.heap_base == 0x400000000000ull && c.heap_size == GIB && c.region_size == 256 << 10);
	parse_ok("{'heap':{'size':'1048576KiB','region_size':'1M'}}", &c);
	CHECK(c.heap_size == GIB && c.region_size == MIB);
	parse_ok("{'heap':{'size':'0x40000000','region_size':'0'}}", &c);
	CHECK(c.heap_size == GIB && c.region_size == MIB);
	parse_ok("{'cache':{'fraction':1}}", &c); /* integer where a number is expected */
	CHECK(c.cache_fraction == 1.0);
}

static void test_derivation(void)
{
	static const struct {
		const char *size;
		uint64_t region;
	} cases[] = {
	        {"1GiB", MIB},     {"64GiB", 64 * MIB},    {"1TiB", 64 * MIB},  {"8MiB", 256 << 10},
	        {"3GiB", 2 * MIB}, {"1000MiB", 512 << 10}, {"3MiB", 256 << 10},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char js[128];
		rh_config c;
		snprintf(js, sizeof js, "{'heap':{'size':'%s'}}", cases[i].size);
		parse_ok(js, &c);
		CHECK(c.region_size == cases[i].region, "%s: region %llu", cases[i].size,
		      (unsigned long long)c.region_size);
	}
	/* partitions pull the derived size down until it divides them */
	rh_config c;
	char js[512];
	snprintf(js, sizeof js,
	         "{'heap':{'size':'2GiB'},'servers':[{'host':'a','port':1,"
	         "'partition_size':'2047MiB'},{'host':'b','port':1,'partition_size':'1MiB'}],"
	         "'secret_file':'%s'}",
	         tpath("good.key"));
	parse_ok(js, &c);
	CHECK(c.region_size == MIB);
	/* no partition sizes: the regions are split evenly, the first get the rest */
	snprintf(js, sizeof js,
	         "{'servers':[{'host':'a','port':1},{'host':'a','port':2},{'host':'a',"
	         "'port':3}],'secret_file':'good.key'}");
	parse_ok(js, &c);
	CHECK(c.n_servers == 3 && c.servers[0].partition_size == 342 * MIB &&
	      c.servers[1].partition_size == 341 * MIB && c.servers[2].partition_size == 341 * MIB);
}

static void test_round_trip(void)
{
	static const char *const good[] = {
	        "{}",
	        "{'heap':{'size':'3GiB','region_size':'1MiB'},'cache':{'fraction':0.13}}",
	        "{'heap':{'base':'0x7f0000000000','size':'1000MiB'},'gc':"
	        "{'pause_budget_ms':12.345,'young_fraction':0.1,'full_threshold':0.3}}",
	        "{'transport':{'provider':'verbs','timeout_ms':600000},'servers':["
	        "{'host':'10.0.0.1','port':7400,'partition_size':'768MiB'},{'host':'10.0.0.2',"
	        "'port':7400,'partition_size':'256MiB'}],'secret_file':'good.key'}",
	        "{'servers':[{'host':'127.0.0.1','port':65535}],'secret_file':'good.key','gc':"
	        "{'order':'bfs','tracer_threads':64,'offload':false,'verify':true}}",
	        "{'heap':{'size':'2MiB','region_size':'256KiB'}}",
	        "{'gc':{'order':'dfs-strict'}}",
	        "{'servers':[{'host':'a','port':1},{'host':'b','port':1}],'secret_file':'good.key',"
	        "'gc':{'offload':false},'redundancy':{'mode':'replicate'}}",
	        "{'servers':[{'host':'a','port':1},{'host':'b','port':1}],'secret_file':'good.key',"
	        "'gc':{'offload':false},'redundancy':{'mode':'replicate','write_copies':false}}",
	        "{'servers':[{'host':'a','port':1},{'host':'b','port':1}],'secret_file':'good.key',"
	        "'gc':{'offload':false},'redundancy':{'mode':'replicate','spares':[{'host':'c',"
	        "'port':2},{'host':'d','port':2}]}}",
	        /* needs all 17 digits to come back as the same double */
	        "{'gc':{'young_fraction':0.30000000000000004}}",
	};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		rh_config a, b;
		rh_error err = {0};
		int rc = rh_config_parse(q(good[i]), tmpdir, &a, &err);
		CHECK(rc == 0, "case %zu: %s", i, err.msg);
		if (rc)
			continue;
		char *js = rh_config_to_json(&a);
		CHECK(js != NULL);
		/* the secret itself never leaves the process */
		CHECK(!has(js, "0123456789abcdef"), "case %zu: secret in %s", i, js);
		if (i == 0) /* short form for human-typed values */
			CHECK(has(js, "'full_threshold': 0.15,"), "%s", js);
		rc = rh_config_parse(js, NULL, &b, &err);
		CHECK(rc == 0, "case %zu: %s\n%s", i, err.msg, js);
		CHECK(cfg_equal(&a, &b), "case %zu differs after round trip:\n%s", i, js);
		/* and the check of a parsed config is idempotent */
		rh_config c = a;
		CHECK(rh_config_check(&c, &err) == 0 && cfg_equal(&a, &c));
		free(js);
	}
}

/* ------------------------------------------------------------------ bad */

struct bad {
	const char *json;
	const char *want; /* substring of the message, the key path at least */
};

static void test_bad(void)
{
	char host300[400], many[8192], *p;
	memset(host300, 'h', 300);
	host300[300] = 0;
	char longhost[600];
	snprintf(longhost, sizeof longhost, "{'servers':[{'host':'%s','port':1}]}", host300);
	p = many + sprintf(many, "{'servers':[");
	for (int i = 0; i < RH_MAX_SERVERS + 1; i++)
		p += sprintf(p, "%s{'host':'h','port':%d}", i ? "," : "", i + 1);
	strcpy(p, "]}");

	const struct bad bad[] = {
	        /* structure, unknown keys, types */
	        {"[]", "(top level): expected an object, got an array"},
	        {"{'hepa':{}}", "config: hepa: unknown key (did you mean 'heap'?)"},
	        {"{'gc':{'ordr':'dfs'}}", "gc.ordr: unknown key (did you mean 'order'?)"},
	        {"{'gc':{'colour':1}}", "gc.colour: unknown key"},
	        /* red.C1 */
	        {"{'redundancy':{'mode':'mirror'}}",
	         "redundancy.mode: expected \"none\" or \"replicate\""},
	        {"{'redundancy':{'mode':'erasure'}}", "redundancy.mode: \"erasure\" is designed"},
	        {"{'redundancy':{'copies':2}}", "redundancy.copies: unknown key"},
	        {"{'redundancy':{'spares':{}}}", "redundancy.spares: expected an array"},
	        {"{'redundancy':{'spares':[{'host':'a'}]}}", "redundancy.spares[0].port: missing"},
	        {"{'redundancy':{'spares':[{'host':'a','port':1,'size':2}]}}",
	         "redundancy.spares[0].size: unknown key"},
	        {"{'redundancy':{'spares':[{'host':'a','port':1}]}}",
	         "redundancy.spares: a spare takes a lost"},
	        {"{'servers':[{'host':'a','port':1},{'host':'b','port':1}],'secret_file':'good.key'"
	         ","
	         "'gc':{'offload':false},'redundancy':{'mode':'replicate','spares':[{'host':'a',"
	         "'port':1}]}}",
	         "redundancy.spares[0]: same host and port as servers[0]"},
	        {"{'servers':[{'host':'a','port':1},{'host':'b','port':1}],'secret_file':'good.key'"
	         ","
	         "'gc':{'offload':false},'redundancy':{'mode':'replicate','spares':[{'host':'c',"
	         "'port':1},{'host':'c','port':1}]}}",
	         "redundancy.spares[1]: same host and port as redundancy.spares[0]"},
	        {"{'redundancy':{'mode':'replicate'},'gc':{'offload':false}}",
	         "it needs at least 2 servers, the config has 0"},
	        {"{'servers':[{'host':'a','port':1},{'host':'b','port':1}],'secret_file':'good.key'"
	         ","
	         "'redundancy':{'mode':'replicate'}}",
	         "redundancy.mode: \"replicate\" does not yet cover what tracers write"},
	        {"{'servers':[{'host':'a','port':1,'size':1}]}", "servers[0].size: unknown key"},
	        {"{'heap':[]}", "heap: expected an object, got an array"},
	        {"{'heap':{'size':true}}", "heap.size: expected a size"},
	        {"{'heap':{'size':1.5}}", "heap.size: expected a size"},
	        {"{'heap':{'size':'1GB'}}", "heap.size: cannot read '1GB' as a size"},
	        {"{'heap':{'size':' 1GiB'}}", "heap.size: cannot read"},
	        {"{'heap':{'size':'99999999999999999999'}}", "heap.size: cannot read"},
	        {"{'heap':{'size':'16777216TiB'}}", "heap.size: cannot read"},
	        {"{'heap':{'base':'0x'}}", "heap.base: cannot read"},
	        {"{'heap':{'size':-1}}", "heap.size: -1 is negative"},
	        {"{'cache':{'fraction':'0.5'}}", "cache.fraction: expected a number, got a string"},
	        {"{'gc':{'offload':1}}", "gc.offload: expected true or false, got an integer"},
	        {"{'gc':{'tracer_threads':1.5}}", "gc.tracer_threads: expected an integer"},
	        {"{'gc':{'order':5}}", "gc.order: expected a string, got an integer"},
	        {"{'transport':{'timeout_ms':'2000'}}",
	         "transport.timeout_ms: expected an integer"},
	        {"{'servers':{}}", "servers: expected an array, got an object"},
	        {"{'servers':['a:1']}", "servers[0]: expected an object, got a string"},
	        {"{'servers':[{'host':'a','port':'7400'}]}",
	         "servers[0].port: expected an integer"},
	        {"{'secret_file':5}", "secret_file: expected a string, got an integer"},
	        {"{'secret_file':''}", "secret_file: must not be empty"},
	        /* heap */
	        {"{'heap':{'size':0}}", "heap.size: must be positive"},
	        {"{'heap':{'region_size':'3MiB'}}",
	         "heap.region_size: 3 MiB is not a power of two"},
	        {"{'heap':{'region_size':'128KiB'}}", "heap.region_size: 128 KiB is outside"},
	        {"{'heap':{'size':'4GiB','region_size':'2GiB'}}",
	         "heap.region_size: 2 GiB is outside"},
	        {"{'heap':{'size':'1MiB'}}",
	         "heap.size: 1 MiB holds 4 regions of 256 KiB; at least 8"},
	        {"{'heap':{'size':1000}}",
	         "heap.size: 1000 bytes is not a multiple of the derived region size"},
	        {"{'heap':{'size':'1GiB','region_size':'256MiB'}}",
	         "heap.size: 1 GiB holds 4 regions"},
	        {"{'heap':{'size':'1025MiB','region_size':'2MiB'}}",
	         "heap.size: 1025 MiB is not a multiple"},
	        {"{'heap':{'base':0}}", "heap.base: 0 is not allowed"},
	        {"{'heap':{'base':'0x400000100000','region_size':'4MiB'}}",
	         "heap.base: 0x400000100000 is not aligned to the region size (4 MiB)"},
	        {"{'heap':{'base':'0x800000000000'}}",
	         "heap.base: 0x800000000000 is not a user-space"},
	        {"{'heap':{'base':'0x7fffc0000000','size':'2GiB'}}",
	         "heap.size: 2 GiB at base 0x7fffc0000000 ends above"},
	        /* cache, transport */
	        {"{'cache':{'fraction':0}}", "cache.fraction: 0 is outside (0, 1]"},
	        {"{'cache':{'fraction':1.5}}", "cache.fraction: 1.5 is outside"},
	        {"{'cache':{'fraction':-0.25}}", "cache.fraction: -0.25 is outside"},
	        {"{'transport':{'provider':'rdma'}}",
	         "transport.provider: expected 'shm', 'tcp' or 'verbs', got 'rdma'"},
	        {"{'transport':{'provider':'a-very-long-provider-name'}}",
	         "transport.provider: expected"},
	        {"{'cache':{'faults':'sigbus'}}",
	         "cache.faults: expected \"thread\" or \"signal\", got \"sigbus\""},
	        {"{'cache':{'faults':1}}", "cache.faults: expected a string"},
	        {"{'cache':{'fault_spin_us':10001}}",
	         "cache.fault_spin_us: 10001 is out of range 0..10000"},
	        {"{'cache':{'fault_spin_us':-1}}",
	         "cache.fault_spin_us: -1 is out of range 0..10000"},
	        {"{'cache':{'fault_spin_us':2.5}}", "cache.fault_spin_us: expected an integer"},
	        {"{'cache':{'readahead':65}}", "cache.readahead: 65 is out of range 0..64"},
	        {"{'cache':{'readahead':-1}}", "cache.readahead: -1 is out of range 0..64"},
	        {"{'cache':{'readahead_adaptive':1}}",
	         "cache.readahead_adaptive: expected true or false"},
	        {"{'cache':{'checksum':'on'}}", "cache.checksum: expected true or false"},
	        {"{'transport':{'timeout_ms':0}}",
	         "transport.timeout_ms: 0 is out of range 1..600000"},
	        {"{'transport':{'timeout_ms':600001}}",
	         "transport.timeout_ms: 600001 is out of range"},
	        /* servers */
	        {many, "servers: 65 servers given; at most 64"},
	        {"{'servers':[{'host':'','port':1}]}", "servers[0].host: must not be empty"},
	        {longhost, "servers[0].host: longer than 255 bytes"},
	        {"{'servers':[{'port':1}]}", "servers[0].host: missing"},
	        {"{'servers':[{'host':'a'}]}", "servers[0].port: missing"},
	        {"{'servers':[{'host':'a','port':0}]}",
	         "servers[0].port: 0 is out of range 1..65535"},
	        {"{'servers':[{'host':'a','port':65536}]}",
	         "servers[0].port: 65536 is out of range"},
	        {"{'servers':[{'host':'a','port':1},{'host':'a','port':1}]}",
	         "servers[1]: same host and port as servers[0]"},
	        {"{'servers':[{'host':'a','port':1,'partition_size':'512MiB'},{'host':'b','port':1,"
	         "'partition_size':'256MiB'}],'secret_file':'good.key'}",
	         "servers: partition sizes sum to 768 MiB (805306368) "
	         "but heap.size is 1 GiB (1073741824)"},
	        {"{'heap':{'region_size':'1MiB'},"
	         "'servers':[{'host':'a','port':1,'partition_size':'512MiB'},"
	         "{'host':'b','port':1,'partition_size':'1536KiB'}]}",
	         "servers[1].partition_size: 1536 KiB is not a multiple of the region size "
	         "(1 MiB)"},
	        {"{'servers':[{'host':'a','port':1,'partition_size':'1GiB'},{'host':'b','port':1}],"
	         "'secret_file':'good.key'}",
	         "servers[1].partition_size: missing"},
	        {"{'servers':[{'host':'a','port':1,'partition_size':'2GiB'}]}",
	         "servers[0].partition_size: 2 GiB is larger than heap.size"},
	        {"{'heap':{'size':'2MiB'},'servers':[{'host':'a','port':1},{'host':'a','port':2},"
	         "{'host':'a','port':3},{'host':'a','port':4},{'host':'a','port':5},"
	         "{'host':'a','port':6},{'host':'a','port':7},{'host':'a','port':8},"
	         "{'host':'a','port':9}],'secret_file':'good.key'}",
	         "servers: 9 servers but the heap has only 8 regions"},
	        {"{'servers':[{'host':'a','port':1}]}",
	         "secret_file: required when servers are given"},
	        /* gc */
	        {"{'gc':{'pause_budget_ms':0}}", "gc.pause_budget_ms: 0 is outside (0, 600000]"},
	        {"{'gc':{'pause_budget_ms':-5}}", "gc.pause_budget_ms: -5 is outside"},
	        {"{'gc':{'pause_budget_ms':0.0001}}", "gc.pause_budget_ms: 0.0001 is outside"},
	        {"{'gc':{'pause_budget_ms':1e9}}", "gc.pause_budget_ms: 1e+09 is outside"},
	        {"{'gc':{'order':'xyz'}}",
	         "config: gc.order: expected 'dfs', 'bfs' or 'dfs-strict', got 'xyz'"},
	        {"{'gc':{'young_fraction':0}}", "gc.young_fraction: 0 is outside (0, 1)"},
	        {"{'gc':{'young_fraction':1}}", "gc.young_fraction: 1 is outside"},
	        {"{'gc':{'full_threshold':1}}", "gc.full_threshold: 1 is outside [0, 1)"},
	        {"{'gc':{'full_threshold':-0.5}}", "gc.full_threshold: -0.5 is outside"},
	        {"{'gc':{'tracer_threads':0}}", "gc.tracer_threads: 0 is out of range 1..64"},
	        {"{'gc':{'tracer_threads':65}}", "gc.tracer_threads: 65 is out of range"},
	        {"{'gc':{'copy_threads':-1}}", "gc.copy_threads: -1 is out of range 0..8"},
	        {"{'gc':{'copy_threads':9}}", "gc.copy_threads: 9 is out of range 0..8"},
	        /* JSON itself */
	        {"{\n  'heap': {\n    'size': 1,,\n  }\n}", "config: line 3, column"},
	        {"{'gc':{},'gc':{}}", "duplicate"},
	        {"", "config: line 1"},
	        {"{} {}", "config: line 1"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		rh_config c;
		rh_error err = {0};
		int rc = rh_config_parse(q(bad[i].json), tmpdir, &c, &err);
		CHECK(rc == RH_ECONFIG && err.code == RH_ECONFIG, "case %zu accepted: %.200s", i,
		      bad[i].json);
		CHECK(has(err.msg, bad[i].want), "case %zu:\n  got  %s\n  want %s", i, err.msg,
		      bad[i].want);
		CHECK(strncmp(err.msg, "config: ", 8) == 0, "case %zu: %s", i, err.msg);
	}
	/* the exact form the documentation promises */
	rh_config c;
	rh_error err;
	rh_config_parse(q("{'gc':{'order':'xyz'}}"), NULL, &c, &err);
	CHECK(strcmp(err.msg,
	             q("config: gc.order: expected 'dfs', 'bfs' or 'dfs-strict', got 'xyz'")) == 0);
	CHECK(rh_config_parse(NULL, NULL, &c, &err) == RH_ECONFIG);
}

/* A hand-built struct is judged by the same rules, with the same messages. */
static void test_check_same(void)
{
	/* each case: JSON text and the same value set on a default struct */
	rh_config hand, parsed;
	rh_error e1, e2;
	const char *js[] = {
	        "{'heap':{'region_size':'3MiB'}}",
	        "{'heap':{'size':'1MiB'}}",
	        "{'heap':{'base':'0x400000100000','region_size':'4MiB'}}",
	        "{'cache':{'fraction':0}}",
	        "{'transport':{'provider':'rdma'}}",
	        "{'transport':{'timeout_ms':0}}",
	        "{'gc':{'tracer_threads':65}}",
	        "{'gc':{'young_fraction':1}}",
	        "{'gc':{'full_threshold':-0.5}}",
	        "{'gc':{'pause_budget_ms':0}}",
	        "{'servers':[{'host':'a','port':0}]}",
	        "{'servers':[{'host':'a','port':1}]}",
	        ("{'servers':[{'host':'a','port':1,'partition_size':'512MiB'},{'host':'b',"
	         "'port':2,'partition_size':'256MiB'}],'secret_file':'good.key'}"),
	};
	for (size_t i = 0; i < sizeof js / sizeof js[0]; i++) {
		rh_config_default(&hand);
		switch (i) {
		case 0:
			hand.region_size = 3 * MIB;
			break;
		case 1:
			hand.heap_size = MIB;
			break;
		case 2:
			hand.heap_base = 0x400000100000ull;
			hand.region_size = 4 * MIB;
			break;
		case 3:
			hand.cache_fraction = 0;
			break;
		case 4:
			strcpy(hand.provider, "rdma");
			break;
		case 5:
			hand.timeout_ms = 0;
			break;
		case 6:
			hand.tracer_threads = 65;
			break;
		case 7:
			hand.young_fraction = 1;
			break;
		case 8:
			hand.full_threshold = -0.5;
			break;
		case 9:
			hand.pause_budget_us = 0;
			break;
		case 10:
		case 11:
		case 12:
			hand.n_servers = i == 12 ? 2 : 1;
			strcpy(hand.servers[0].host, "a");
			hand.servers[0].port = i == 10 ? 0 : 1;
			if (i == 12) {
				strcpy(hand.servers[1].host, "b");
				hand.servers[1].port = 2;
				hand.servers[0].partition_size = 512 * MIB;
				hand.servers[1].partition_size = 256 * MIB;
				snprintf(hand.secret_file, sizeof hand.secret_file, "%s",
				         tpath("good.key"));
			}
			break;
		}
		memset(&e1, 0, sizeof e1);
		memset(&e2, 0, sizeof e2);
		uint64_t region_before = hand.region_size;
		int r1 = rh_config_check(&hand, &e1);
		int r2 = rh_config_parse(q(js[i]), tmpdir, &parsed, &e2);
		CHECK(r1 == RH_ECONFIG && r2 == RH_ECONFIG, "case %zu: %d %d", i, r1, r2);
		CHECK(strcmp(e1.msg, e2.msg) == 0, "case %zu:\n  check: %s\n  parse: %s", i, e1.msg,
		      e2.msg);
		/* a rejected struct is left as it was */
		CHECK(hand.region_size == region_before);
	}
	/* what only a struct can get wrong */
	rh_config_default(&hand);
	hand.n_servers = RH_MAX_SERVERS + 1;
	CHECK(rh_config_check(&hand, &e1) == RH_ECONFIG && has(e1.msg, "servers: 65"));
	rh_config_default(&hand);
	hand.order = (rh_order)7;
	CHECK(rh_config_check(&hand, &e1) == RH_ECONFIG && has(e1.msg, "gc.order"));
	rh_config_default(&hand);
	memset(hand.provider, 'x', sizeof hand.provider);
	CHECK(rh_config_check(&hand, &e1) == RH_ECONFIG && has(e1.msg, "transport.provider"));
	rh_config_default(&hand);
	hand.secret_len = 8;
	CHECK(rh_config_check(&hand, &e1) == RH_ECONFIG && has(e1.msg, "secret"));
	/* a secret supplied directly satisfies the servers' requirement */
	rh_config_default(&hand);
	hand.n_servers = 1;
	strcpy(hand.servers[0].host, "a");
	hand.servers[0].port = 9;
	memcpy(hand.secret, secret32, 32);
	hand.secret_len = 32;
	CHECK(rh_config_check(&hand, &e1) == 0, "%s", e1.msg);
	CHECK(hand.servers[0].partition_size == GIB);
	hand.cache_fraction = 0.0 / 0.0; /* NaN must not slip through comparisons */
	CHECK(rh_config_check(&hand, &e1) == RH_ECONFIG && has(e1.msg, "cache.fraction"));
}

/* Single-byte mutations of a full config: each parses or fails cleanly. */
static void test_mutations(void)
{
	static const char base[] =
	        "{'heap':{'base':'0x400000000000','size':'1GiB','region_size':'1MiB'},'cache':"
	        "{'fraction':0.25},'transport':{'provider':'shm','timeout_ms':2000},'servers':["
	        "{'host':'127.0.0.1','port':7400,'partition_size':'512MiB'},{'host':'127.0.0.1',"
	        "'port':7401,'partition_size':'512MiB'}],'gc':{'pause_budget_ms':50,"
	        "'order':'dfs','young_fraction':0.25,'full_threshold':0.15,'offload':true,"
	        "'tracer_threads':1,'reorder':true,'verify':false},'secret_file':'good.key'}";
	static const char repl[] = {'0', '1', '9', '"', '[', ']', '{',  '}',       ',',
	                            ':', 'x', '-', ' ', '.', 'e', '\\', (char)0xc3};
	char buf[sizeof base];
	int clean = 1, accepted = 0, rejected = 0;
	rh_config c;
	rh_error err;
	for (size_t pos = 0; pos < sizeof base - 1; pos++) {
		for (size_t r = 0; r < sizeof repl; r++) {
			memcpy(buf, base, sizeof base);
			buf[pos] = repl[r];
			memset(&err, 0, sizeof err);
			int rc = rh_config_parse(q(buf), tmpdir, &c, &err);
			if (rc == 0) {
				accepted++;
				rh_config d = c;
				if (rh_config_check(&d, &err) != 0)
					clean = 0;
			} else {
				rejected++;
				if (rc != RH_ECONFIG || strncmp(err.msg, "config: ", 8) != 0) {
					clean = 0;
					fprintf(stderr, "unclean: %s -> %d %s\n", buf, rc, err.msg);
				}
			}
		}
	}
	CHECK(clean);
	CHECK(accepted > 0 && rejected > 0, "accepted %d rejected %d", accepted, rejected);
}

/* ------------------------------------------------------------------ secret */

static int load_secret(const char *name, rh_config *c, rh_error *err)
{
	char js[600];
	snprintf(js, sizeof js, "{'secret_file':'%s'}", name);
	memset(err, 0, sizeof *err);
	return rh_config_parse(q(js), tmpdir, c, err);
}

static void test_secret(void)
{
	rh_config c;
	rh_error err;
	char buf[300];

	write_file(tpath("s.key"), secret32, 32, 0600);
	CHECK(load_secret("s.key", &c, &err) == 0, "%s", err.msg);
	CHECK(c.secret_len == 32 && memcmp(c.secret, secret32, 32) == 0);
	CHECK(strcmp(c.secret_file, tpath("s.key")) == 0); /* resolved against base_dir */

	/* one trailing newline (or CRLF) is not part of the secret */
	memcpy(buf, secret32, 32);
	memcpy(buf + 32, "\n", 1);
	write_file(tpath("s.key"), buf, 33, 0400);
	CHECK(load_secret("s.key", &c, &err) == 0 && c.secret_len == 32);
	memcpy(buf + 32, "\r\n", 2);
	write_file(tpath("s.key"), buf, 34, 0600);
	CHECK(load_secret("s.key", &c, &err) == 0 && c.secret_len == 32);
	CHECK(memcmp(c.secret, secret32, 32) == 0);

	/* modes: group and others get nothing, execute bits included */
	static const mode_t modes[] = {0640, 0604, 0660, 0601, 0610, 0644, 0777};
	for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
		write_file(tpath("s.key"), secret32, 32, modes[i]);
		char want[16];
		snprintf(want, sizeof want, "mode %04o", (unsigned)modes[i]);
		CHECK(load_secret("s.key", &c, &err) == RH_ECONFIG && has(err.msg, want) &&
		              has(err.msg, "secret_file"),
		      "mode %o: %s", (unsigned)modes[i], err.msg);
	}
	write_file(tpath("s.key"), secret32, 32, 0700);
	CHECK(load_secret("s.key", &c, &err) == 0, "%s", err.msg);

	/* lengths: 16..128 after the newline is dropped */
	memset(buf, 'k', sizeof buf);
	static const struct {
		size_t len;
		const char *tail;
		int ok;
	} lens[] = {{15, "", 0},  {16, "", 1},    {15, "\n", 0}, {16, "\n", 1},
	            {128, "", 1}, {128, "\n", 1}, {129, "", 0},  {129, "\n", 0},
	            {200, "", 0}, {0, "", 0},     {0, "\n", 0}};
	for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		memset(buf, 'k', lens[i].len);
		memcpy(buf + lens[i].len, lens[i].tail, strlen(lens[i].tail));
		write_file(tpath("s.key"), buf, lens[i].len + strlen(lens[i].tail), 0600);
		int rc = load_secret("s.key", &c, &err);
		if (lens[i].ok)
			CHECK(rc == 0 && c.secret_len == lens[i].len, "len %zu: %s", lens[i].len,
			      err.msg);
		else
			CHECK(rc == RH_ECONFIG && has(err.msg, "secret_file") &&
			              has(err.msg,
			                  lens[i].len < 16 ? "at least 16" : "at most 128"),
			      "len %zu: %s", lens[i].len, err.msg);
	}

	/* not a regular file; missing; a FIFO must not hang */
	mkdir(tpath("dir.key"), 0700);
	CHECK(load_secret("dir.key", &c, &err) == RH_ECONFIG && has(err.msg, "not a regular file"));
	CHECK(load_secret("missing.key", &c, &err) == RH_ECONFIG &&
	      has(err.msg, "secret_file: cannot open"));
	unlink(tpath("fifo.key"));
	if (mkfifo(tpath("fifo.key"), 0600) == 0)
		CHECK(load_secret("fifo.key", &c, &err) == RH_ECONFIG &&
		      has(err.msg, "not a regular file"));

	/* an absolute path is taken as is */
	write_file(tpath("s.key"), secret32, 32, 0600);
	snprintf(buf, sizeof buf, "%s", tpath("s.key"));
	CHECK(rh_config_parse(q("{'secret_file':'s.key'}"), "/nonexistent", &c, &err) ==
	      RH_ECONFIG);
	CHECK(load_secret(buf, &c, &err) == 0 && c.secret_len == 32);

	/* the secret never appears in the JSON form */
	char *js = rh_config_to_json(&c);
	CHECK(js && !has(js, "0123456789") && has(js, "s.key"));
	free(js);
}

/* ------------------------------------------------------------------ files */

static void test_load(const char *examples)
{
	rh_config c;
	rh_error err = {0};
	const char *js = "{\n'gc': {\n'order': 'dfs',\n'oops' 1\n}\n}\n";
	write_file(tpath("bad.json"), q(js), strlen(js), 0644);
	CHECK(rh_config_load(tpath("bad.json"), &c, &err) == RH_ECONFIG);
	char want[512];
	snprintf(want, sizeof want, "config: %s: line 4", tpath("bad.json"));
	CHECK(has(err.msg, want), "%s", err.msg);

	js = "{'gc':{'order':'xyz'}}";
	write_file(tpath("bad2.json"), q(js), strlen(js), 0644);
	CHECK(rh_config_load(tpath("bad2.json"), &c, &err) == RH_ECONFIG);
	snprintf(want, sizeof want, "config: %s: gc.order: expected", tpath("bad2.json"));
	CHECK(has(err.msg, want), "%s", err.msg);

	CHECK(rh_config_load(tpath("nope.json"), &c, &err) == RH_ECONFIG &&
	      has(err.msg, "cannot open"));
	CHECK(rh_config_load(tmpdir, &c, &err) == RH_ECONFIG && has(err.msg, "not a regular file"));

	/* relative secret_file resolves against the config file's directory */
	mkdir(tpath("conf"), 0700);
	write_file(tpath("conf/cluster.key"), secret32, 32, 0600);
	js = "{'servers':[{'host':'127.0.0.1','port':7400}],'secret_file':'cluster.key'}";
	write_file(tpath("conf/c.json"), q(js), strlen(js), 0644);
	CHECK(rh_config_load(tpath("conf/c.json"), &c, &err) == 0, "%s", err.msg);
	CHECK(c.secret_len == 32 && strcmp(c.secret_file, tpath("conf/cluster.key")) == 0);

	/* the shipped examples */
	if (!examples) {
		CHECK(0, "%s", "no examples directory given (argv[1])");
		return;
	}
	char path[1024];
	snprintf(path, sizeof path, "%s/local.json", examples);
	CHECK(rh_config_load(path, &c, &err) == 0, "%s", err.msg);
	CHECK(c.n_servers == 0);

	/* two-tracers-shm.json names a secret file next to it: copy it to a
	 * directory where one exists */
	snprintf(path, sizeof path, "%s/two-tracers-shm.json", examples);
	FILE *f = fopen(path, "r");
	CHECK(f != NULL, "%s", path);
	if (!f)
		return;
	static char text[65536];
	size_t n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	mkdir(tpath("ex"), 0700);
	write_file(tpath("ex/two-tracers-shm.json"), text, n, 0644);
	write_file(tpath("ex/rheap.secret"), secret32, 32, 0600);
	CHECK(rh_config_load(tpath("ex/two-tracers-shm.json"), &c, &err) == 0, "%s", err.msg);
	CHECK(c.n_servers == 2 && !strcmp(c.provider, "shm") &&
	      c.servers[0].partition_size + c.servers[1].partition_size == c.heap_size);
	/* and without its secret it is refused, naming the key */
	unlink(tpath("ex/rheap.secret"));
	CHECK(rh_config_load(tpath("ex/two-tracers-shm.json"), &c, &err) == RH_ECONFIG &&
	      has(err.msg, "secret_file"));
}

static void rm_tree(void)
{
	static const char *const files[] = {
	        "s.key",          "good.key",         "fifo.key",    "bad.json",
	        "bad2.json",      "conf/cluster.key", "conf/c.json", "ex/two-tracers-shm.json",
	        "ex/rheap.secret"};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
		unlink(tpath(files[i]));
	rmdir(tpath("dir.key"));
	rmdir(tpath("conf"));
	rmdir(tpath("ex"));
	rmdir(tmpdir);
}

int main(int argc, char **argv)
{
	const char *t = getenv("TMPDIR");
	snprintf(tmpdir, sizeof tmpdir, "%s/rheap-test-config.XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 2;
	}
	write_file(tpath("good.key"), secret32, 32, 0600);
	test_defaults();
	test_values();
	test_derivation();
	test_round_trip();
	test_bad();
	test_check_same();
	test_mutations();
	test_secret();
	test_load(argc > 1 ? argv[1] : NULL);
	rm_tree();
	return check_done();
}
