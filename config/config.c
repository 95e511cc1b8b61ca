/* Configuration: JSON (jansson) to rh_config, validation, and back.
 *
 * The parser only converts types; every rule on values lives in check(), so
 * a config built by hand and one read from a file are rejected with the same
 * messages. Messages are "config: [FILE: ]KEY.PATH: reason". Unknown keys are
 * errors: a misspelt key silently falling back to its default is the kind of
 * mistake that costs an afternoon on a cluster.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "common/common.h"
#include "config/limits.h"
#include "rheap/rheap-config.h"

#define KIB (1ull << 10)
#define MIB (1ull << 20)
#define GIB (1ull << 30)
#define TIB (1ull << 40)
#define REGION_MIN (256 * KIB)
#define REGION_MAX GIB
#define REGION_DERIVED_MAX (64 * MIB)
#define REGION_DERIVED_DIV 1024 /* derived regions: about heap_size / 1024 */
#define MIN_REGIONS 8
#define USER_TOP 0x800000000000ull /* end of the x86-64/aarch64 user half (47 bits) */
#define SECRET_MIN 16
#define TIMEOUT_MAX_MS 600000
#define SPIN_MAX_US 10000
#define READAHEAD_MAX 64 /* pages: a quarter of the smallest region */
#define PAUSE_MAX_MS 600000
#define TRACER_THREADS_MAX 64
#define CONFIG_FILE_MAX (1 << 20)

struct ctx {
	rh_error *err;
	const char *file; /* NULL for text and hand-built configs */
};

/* Long paths would push the reason out of the 256-byte message: keep the tail. */
static const char *short_path(const char *p)
{
	size_t n = strlen(p);
	return n > 80 ? p + n - 80 : p;
}

static int fail(const struct ctx *c, const char *key, const char *fmt, ...) RH_PRINTF(3, 4);
static int fail(const struct ctx *c, const char *key, const char *fmt, ...)
{
	char why[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	const char *f = c->file ? short_path(c->file) : NULL;
	const char *fdots = f && f != c->file ? "..." : "";
	if (f && key)
		return rh_err_set(c->err, RH_ECONFIG, "config: %s%s: %s: %s", fdots, f, key, why);
	if (f)
		return rh_err_set(c->err, RH_ECONFIG, "config: %s%s: %s", fdots, f, why);
	if (key)
		return rh_err_set(c->err, RH_ECONFIG, "config: %s: %s", key, why);
	return rh_err_set(c->err, RH_ECONFIG, "config: %s", why);
}

static int range_fail(const struct ctx *c, const char *key, long long v, long long lo, long long hi)
{
	return fail(c, key, "%lld is out of range %lld..%lld", v, lo, hi);
}

/* "1 GiB" when exact, else "N bytes". */
static const char *fmt_size(uint64_t v, char buf[40])
{
	static const struct {
		uint64_t unit;
		const char *name;
	} units[] = {{TIB, "TiB"}, {GIB, "GiB"}, {MIB, "MiB"}, {KIB, "KiB"}};
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (v >= units[i].unit && v % units[i].unit == 0) {
			snprintf(buf, 40, "%llu %s", (unsigned long long)(v / units[i].unit),
			         units[i].name);
			return buf;
		}
	}
	snprintf(buf, 40, "%llu bytes", (unsigned long long)v);
	return buf;
}

/* ------------------------------------------------------------------ defaults */

void rh_config_default(rh_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->heap_base = RH_DEFAULT_BASE;
	cfg->heap_size = GIB;
	cfg->region_size = 0;
	cfg->cache_fraction = 1.0;
	cfg->faults = RH_FAULTS_THREAD;
	cfg->fault_spin_us = 50;
	cfg->readahead = 8;
	cfg->readahead_adaptive = 1;
	cfg->checksum = 1;
	strcpy(cfg->provider, "shm");
	cfg->timeout_ms = 2000;
	cfg->pause_budget_us = 10 * 1000;
	cfg->order = RH_ORDER_DFS;
	cfg->young_fraction = 0.25;
	cfg->full_threshold = 0.15;
	cfg->offload = 1;
	cfg->write_copies = 1;
	cfg->tracer_threads = 1;
	cfg->copy_threads = 0;
	cfg->reorder = 1;
	cfg->verify = 0;
	cfg->concurrent_mark = 1;
	cfg->remark = 1;
	cfg->preclean = 1;
	cfg->pretouch = 1;
	cfg->refresh = 1;
}

/* ------------------------------------------------------------------ validation */

static int is_pow2(uint64_t v)
{
	return v && (v & (v - 1)) == 0;
}

static int region_fits(const rh_config *cfg, uint64_t r)
{
	if (cfg->heap_size % r || cfg->heap_base % r)
		return 0;
	for (size_t i = 0; i < cfg->n_servers; i++)
		if (cfg->servers[i].partition_size % r)
			return 0;
	return 1;
}

/* The largest power of two <= heap_size / 1024, clamped to [256 KiB, 64 MiB],
 * halved until it divides the heap size, base and every partition. */
static uint64_t derive_region(const rh_config *cfg)
{
	uint64_t r = REGION_MIN;
	while (r * 2 <= REGION_DERIVED_MAX && r * 2 <= cfg->heap_size / REGION_DERIVED_DIV)
		r *= 2;
	while (r > REGION_MIN && !region_fits(cfg, r))
		r /= 2;
	return r;
}

static int check_provider(const struct ctx *c, const char *p, size_t cap)
{
	if (!memchr(p, 0, cap))
		return fail(c, "transport.provider", "not NUL-terminated");
	if (strcmp(p, "shm") && strcmp(p, "tcp") && strcmp(p, "verbs"))
		return fail(c, "transport.provider",
		            "expected \"shm\", \"tcp\" or \"verbs\", got \"%s\"", p);
	return 0;
}

static int check_heap(const struct ctx *c, const rh_config *cfg, uint64_t *region_out)
{
	char a[40], b[40];
	if (cfg->heap_size == 0)
		return fail(c, "heap.size", "must be positive");
	uint64_t r = cfg->region_size;
	int derived = r == 0;
	if (derived) {
		r = derive_region(cfg);
	} else if (!is_pow2(r)) {
		return fail(c, "heap.region_size", "%s is not a power of two", fmt_size(r, a));
	} else if (r < REGION_MIN || r > REGION_MAX) {
		return fail(c, "heap.region_size", "%s is outside 256 KiB..1 GiB", fmt_size(r, a));
	}
	const char *how = derived ? "derived " : "";
	if (cfg->heap_size % r)
		return fail(c, "heap.size", "%s is not a multiple of the %sregion size (%s)",
		            fmt_size(cfg->heap_size, a), how, fmt_size(r, b));
	if (cfg->heap_size / r < MIN_REGIONS)
		return fail(c, "heap.size", "%s holds %llu regions of %s; at least %d are needed",
		            fmt_size(cfg->heap_size, a), (unsigned long long)(cfg->heap_size / r),
		            fmt_size(r, b), MIN_REGIONS);
	if (cfg->heap_base == 0)
		return fail(c, "heap.base", "0 is not allowed (it is the null pointer)");
	if (cfg->heap_base >= USER_TOP)
		return fail(c, "heap.base",
		            "0x%llx is not a user-space address (must be below 0x%llx)",
		            (unsigned long long)cfg->heap_base, USER_TOP);
	if (cfg->heap_base % r)
		return fail(c, "heap.base", "0x%llx is not aligned to the %sregion size (%s)",
		            (unsigned long long)cfg->heap_base, how, fmt_size(r, b));
	if (cfg->heap_size > USER_TOP - cfg->heap_base)
		return fail(c, "heap.size", "%s at base 0x%llx ends above user space (0x%llx)",
		            fmt_size(cfg->heap_size, a), (unsigned long long)cfg->heap_base,
		            USER_TOP);
	*region_out = r;
	return 0;
}

/* Validates the servers; fills parts[] (given or split evenly by region). */
static int check_servers(const struct ctx *c, const rh_config *cfg, uint64_t region,
                         uint64_t parts[RH_MAX_SERVERS])
{
	char key[64], a[40], b[40];
	size_t n = cfg->n_servers, given = 0;
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++) {
		const rh_server_config *s = &cfg->servers[i];
		snprintf(key, sizeof key, "servers[%zu].host", i);
		if (!memchr(s->host, 0, RH_HOST_MAX))
			return fail(c, key, "longer than %d bytes", RH_HOST_MAX - 1);
		if (s->host[0] == 0)
			return fail(c, key, "must not be empty");
		snprintf(key, sizeof key, "servers[%zu].port", i);
		if (s->port == 0)
			return range_fail(c, key, 0, 1, 65535);
		for (size_t j = 0; j < i; j++) {
			if (cfg->servers[j].port == s->port &&
			    !strcmp(cfg->servers[j].host, s->host)) {
				snprintf(key, sizeof key, "servers[%zu]", i);
				return fail(c, key, "same host and port as servers[%zu] (%s:%u)", j,
				            s->host, s->port);
			}
		}
		snprintf(key, sizeof key, "servers[%zu].partition_size", i);
		if (s->partition_size % region)
			return fail(c, key, "%s is not a multiple of the region size (%s)",
			            fmt_size(s->partition_size, a), fmt_size(region, b));
		if (s->partition_size > cfg->heap_size)
			return fail(c, key, "%s is larger than heap.size (%s)",
			            fmt_size(s->partition_size, a), fmt_size(cfg->heap_size, b));
		given += s->partition_size != 0;
		sum += s->partition_size; /* at most 64 terms of at most 2^47: no overflow */
		parts[i] = s->partition_size;
	}
	if (n == 0)
		return 0;
	if (given == 0) {
		uint64_t regions = cfg->heap_size / region;
		if (regions < n)
			return fail(c, "servers", "%zu servers but the heap has only %llu regions",
			            n, (unsigned long long)regions);
		for (size_t i = 0; i < n; i++)
			parts[i] = (regions / n + (i < regions % n)) * region;
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (parts[i] == 0) {
			snprintf(key, sizeof key, "servers[%zu].partition_size", i);
			return fail(c, key,
			            "missing (give every server a partition_size, or none to split "
			            "the heap evenly)");
		}
	}
	if (sum != cfg->heap_size)
		return fail(c, "servers",
		            "partition sizes sum to %s (%llu) but heap.size is %s (%llu)",
		            fmt_size(sum, a), (unsigned long long)sum, fmt_size(cfg->heap_size, b),
		            (unsigned long long)cfg->heap_size);
	return 0;
}

/* gc.order's names, by rh_order value. */
static const char *const order_names[] = {
        [RH_ORDER_DFS] = "dfs", [RH_ORDER_BFS] = "bfs", [RH_ORDER_DFS_STRICT] = "dfs-strict"};
#define N_ORDERS (sizeof order_names / sizeof order_names[0])
#define ORDER_CHOICES "\"dfs\", \"bfs\" or \"dfs-strict\""

static int check_gc(const struct ctx *c, const rh_config *cfg)
{
	if (cfg->pause_budget_us == 0 || cfg->pause_budget_us > PAUSE_MAX_MS * 1000u)
		return fail(c, "gc.pause_budget_ms", "%g is outside (0, %d]",
		            cfg->pause_budget_us / 1000.0, PAUSE_MAX_MS);
	if ((unsigned)cfg->order >= N_ORDERS)
		return fail(c, "gc.order", "expected %s, got %d", ORDER_CHOICES, (int)cfg->order);
	if (!(cfg->young_fraction > 0 && cfg->young_fraction < 1))
		return fail(c, "gc.young_fraction", "%g is outside (0, 1)", cfg->young_fraction);
	if (!(cfg->full_threshold >= 0 && cfg->full_threshold < 1))
		return fail(c, "gc.full_threshold", "%g is outside [0, 1)", cfg->full_threshold);
	if (cfg->tracer_threads < 1 || cfg->tracer_threads > TRACER_THREADS_MAX)
		return range_fail(c, "gc.tracer_threads", cfg->tracer_threads, 1,
		                  TRACER_THREADS_MAX);
	if (cfg->copy_threads < 0 || cfg->copy_threads > RH_COPY_THREADS_MAX)
		return range_fail(c, "gc.copy_threads", cfg->copy_threads, 0, RH_COPY_THREADS_MAX);
	return 0;
}

/* Read the secret: a regular file, private to its owner, 16..RH_SECRET_MAX
 * bytes after dropping one trailing newline. */
static int read_secret(const struct ctx *c, const char *path, uint8_t out[RH_SECRET_MAX],
                       size_t *len_out)
{
	const char *sp = short_path(path);
	/* O_NONBLOCK: a FIFO given by mistake must not hang startup. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return fail(c, "secret_file", "cannot open %s: %s", sp, strerror(errno));
	struct stat st;
	int rc = 0;
	uint8_t buf[RH_SECRET_MAX + 3];
	size_t n = 0;
	if (fstat(fd, &st) != 0) {
		rc = fail(c, "secret_file", "cannot stat %s: %s", sp, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = fail(c, "secret_file", "%s is not a regular file", sp);
		goto out;
	}
	/* Another user's file: that user knows the secret, or can change it
	 * (security.S4). */
	if (st.st_uid != geteuid()) {
		rc = fail(c, "secret_file", "%s is owned by uid %u, not by this user (uid %u)", sp,
		          (unsigned)st.st_uid, (unsigned)geteuid());
		goto out;
	}
	if (st.st_mode & 077) {
		rc = fail(c, "secret_file",
		          "%s has mode %04o; group and others must have no access (chmod 600)", sp,
		          (unsigned)(st.st_mode & 07777));
		goto out;
	}
	while (n < sizeof buf) {
		ssize_t r = read(fd, buf + n, sizeof buf - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = fail(c, "secret_file", "cannot read %s: %s", sp, strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > 0 && buf[n - 1] == '\n') {
		n--;
		if (n > 0 && buf[n - 1] == '\r')
			n--;
	}
	if (n > RH_SECRET_MAX) {
		rc = fail(c, "secret_file", "%s holds %lld bytes; at most %d are allowed", sp,
		          (long long)st.st_size, RH_SECRET_MAX);
		goto out;
	}
	if (n < SECRET_MIN) {
		rc = fail(c, "secret_file", "%s holds %zu bytes; at least %d are needed", sp, n,
		          SECRET_MIN);
		goto out;
	}
	memcpy(out, buf, n);
	*len_out = n;
out:
	explicit_bzero(buf, sizeof buf);
	close(fd);
	return rc;
}

/* red.C1: replication needs a second server to hold each copy, and for
 * now a heap whose tracers do not write their partitions: evacuation,
 * card fixing and a full marking's fillers change pages on the owner
 * alone, which the replica would miss (docs/resilience.md, R3, not built
 * yet). */
static int check_redundancy(const struct ctx *c, const rh_config *cfg)
{
	if (cfg->redundancy != RH_REDUNDANCY_NONE && cfg->redundancy != RH_REDUNDANCY_REPLICATE)
		return fail(c, "redundancy.mode", "expected \"none\" or \"replicate\", got %d",
		            (int)cfg->redundancy);
	if (cfg->n_spares > RH_MAX_SPARES)
		return fail(c, "redundancy.spares", "%zu spares given; at most %d are allowed",
		            cfg->n_spares, RH_MAX_SPARES);
	char key[64];
	for (size_t i = 0; i < cfg->n_spares; i++) {
		const rh_server_config *sp = &cfg->spares[i];
		snprintf(key, sizeof key, "redundancy.spares[%zu].host", i);
		if (!memchr(sp->host, 0, RH_HOST_MAX) || sp->host[0] == 0)
			return fail(c, key, "must be 1 to %d bytes", RH_HOST_MAX - 1);
		snprintf(key, sizeof key, "redundancy.spares[%zu]", i);
		if (sp->port == 0)
			return range_fail(c, key, 0, 1, 65535);
		for (size_t j = 0; j < cfg->n_servers; j++)
			if (cfg->servers[j].port == sp->port &&
			    !strcmp(cfg->servers[j].host, sp->host))
				return fail(c, key, "same host and port as servers[%zu] (%s:%u)", j,
				            sp->host, sp->port);
		for (size_t j = 0; j < i; j++)
			if (cfg->spares[j].port == sp->port &&
			    !strcmp(cfg->spares[j].host, sp->host))
				return fail(c, key, "same host and port as redundancy.spares[%zu]",
				            j);
	}
	if (cfg->redundancy == RH_REDUNDANCY_NONE) {
		if (cfg->n_spares)
			return fail(c, "redundancy.spares",
			            "a spare takes a lost server's place from its copies: it needs "
			            "\"mode\": \"replicate\"");
		return 0;
	}
	if (cfg->n_servers < 2)
		return fail(c, "redundancy.mode",
		            "\"replicate\" keeps each partition's copy on another memory server: "
		            "it needs at least 2 servers, the config has %zu",
		            cfg->n_servers);
	if (cfg->offload)
		return fail(c, "redundancy.mode",
		            "\"replicate\" does not yet cover what tracers write into their "
		            "partitions (docs/resilience.md, R3): set gc.offload to false");
	return 0;
}

/* Everything is computed into locals and written back only on success, so a
 * rejected hand-built config is left as it was. */
static int check(const struct ctx *c, rh_config *cfg)
{
	if (cfg->n_servers > RH_MAX_SERVERS)
		return fail(c, "servers", "%zu servers given; at most %d are allowed",
		            cfg->n_servers, RH_MAX_SERVERS);
	uint64_t region = 0, parts[RH_MAX_SERVERS];
	int rc = check_heap(c, cfg, &region);
	if (rc)
		return rc;
	if (!(cfg->cache_fraction > 0 && cfg->cache_fraction <= 1))
		return fail(c, "cache.fraction", "%g is outside (0, 1]", cfg->cache_fraction);
	if (cfg->faults != RH_FAULTS_THREAD && cfg->faults != RH_FAULTS_SIGNAL)
		return fail(c, "cache.faults", "expected \"thread\" or \"signal\", got %d",
		            (int)cfg->faults);
	if (cfg->fault_spin_us > SPIN_MAX_US)
		return range_fail(c, "cache.fault_spin_us", cfg->fault_spin_us, 0, SPIN_MAX_US);
	if (cfg->readahead > READAHEAD_MAX)
		return range_fail(c, "cache.readahead", cfg->readahead, 0, READAHEAD_MAX);
	if (cfg->readahead_adaptive != 0 && cfg->readahead_adaptive != 1)
		return fail(c, "cache.readahead_adaptive", "expected 0 or 1, got %d",
		            cfg->readahead_adaptive);
	if (cfg->checksum != 0 && cfg->checksum != 1)
		return fail(c, "cache.checksum", "expected 0 or 1, got %d", cfg->checksum);
	if ((rc = check_provider(c, cfg->provider, sizeof cfg->provider)))
		return rc;
	if (cfg->timeout_ms < 1 || cfg->timeout_ms > TIMEOUT_MAX_MS)
		return range_fail(c, "transport.timeout_ms", cfg->timeout_ms, 1, TIMEOUT_MAX_MS);
	if ((rc = check_servers(c, cfg, region, parts)))
		return rc;
	if ((rc = check_gc(c, cfg)) || (rc = check_redundancy(c, cfg)))
		return rc;

	uint8_t secret[RH_SECRET_MAX];
	size_t secret_len = cfg->secret_len;
	if (!memchr(cfg->secret_file, 0, sizeof cfg->secret_file))
		return fail(c, "secret_file", "path longer than %d bytes", RH_PATH_MAX - 1);
	if (cfg->secret_file[0]) {
		if ((rc = read_secret(c, cfg->secret_file, secret, &secret_len)))
			return rc;
	} else if (secret_len > RH_SECRET_MAX || (secret_len > 0 && secret_len < SECRET_MIN)) {
		return fail(c, "secret", "%zu bytes; it must hold %d..%d", secret_len, SECRET_MIN,
		            RH_SECRET_MAX);
	} else if (secret_len == 0 && cfg->n_servers > 0) {
		return fail(c, "secret_file",
		            "required when servers are given (connections to memory servers are "
		            "authenticated)");
	}

	cfg->region_size = region;
	for (size_t i = 0; i < cfg->n_servers; i++)
		cfg->servers[i].partition_size = parts[i];
	if (cfg->secret_file[0]) {
		memcpy(cfg->secret, secret, secret_len);
		cfg->secret_len = secret_len;
		explicit_bzero(secret, sizeof secret);
	}
	cfg->offload = !!cfg->offload;
	cfg->write_copies = !!cfg->write_copies;
	cfg->reorder = !!cfg->reorder;
	cfg->verify = !!cfg->verify;
	cfg->concurrent_mark = !!cfg->concurrent_mark;
	cfg->remark = !!cfg->remark;
	cfg->preclean = !!cfg->preclean;
	cfg->pretouch = !!cfg->pretouch;
	cfg->refresh = !!cfg->refresh;
	return 0;
}

int rh_config_check(rh_config *cfg, rh_error *err)
{
	struct ctx c = {err, NULL};
	return check(&c, cfg);
}

/* ------------------------------------------------------------------ JSON in */

static const char *jtype(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a real number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	default:
		return "null";
	}
}

static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[64];
	if (la >= 64 || lb >= 64)
		return 64;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

static void join(char *out, size_t cap, const char *prefix, const char *key)
{
	if (prefix)
		snprintf(out, cap, "%s.%.60s", prefix, key);
	else
		snprintf(out, cap, "%.60s", key);
}

/* obj must be an object whose keys all appear in known (NULL-terminated). */
static int check_object(const struct ctx *c, const json_t *obj, const char *path,
                        const char *const *known)
{
	if (!json_is_object(obj))
		return fail(c, path ? path : "(top level)", "expected an object, got %s",
		            jtype(obj));
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)obj, k, v)
	{
		const char *near = NULL;
		size_t best = 3;
		size_t i = 0;
		for (; known[i] && strcmp(known[i], k) != 0; i++) {
			size_t d = edit_distance(k, known[i]);
			if (d < best) {
				best = d;
				near = known[i];
			}
		}
		if (known[i])
			continue;
		char key[128];
		join(key, sizeof key, path, k);
		if (near)
			return fail(c, key, "unknown key (did you mean \"%s\"?)", near);
		return fail(c, key, "unknown key");
	}
	return 0;
}

/* "4MiB", "4 MiB", "4194304", "0x400000" (hex takes no suffix). */
static int parse_size_text(const char *s, uint64_t *out)
{
	static const struct {
		const char *sfx;
		uint64_t mul;
	} sfx[] = {{"", 1},      {"B", 1},   {"K", KIB},   {"KiB", KIB}, {"M", MIB},
	           {"MiB", MIB}, {"G", GIB}, {"GiB", GIB}, {"T", TIB},   {"TiB", TIB}};
	uint64_t v = 0;
	const char *p = s;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		p += 2;
		if (!*p)
			return -1;
		for (; *p; p++) {
			int d = *p >= '0' && *p <= '9'   ? *p - '0'
			        : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
			        : *p >= 'A' && *p <= 'F' ? *p - 'A' + 10
			                                 : -1;
			if (d < 0 || v > (UINT64_MAX >> 4))
				return -1;
			v = v << 4 | (uint64_t)d;
		}
		*out = v;
		return 0;
	}
	if (!(*p >= '0' && *p <= '9'))
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *p - '0', &v))
			return -1;
	}
	if (*p == ' ')
		p++;
	for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++) {
		if (strcmp(p, sfx[i].sfx) == 0)
			return __builtin_mul_overflow(v, sfx[i].mul, out) ? -1 : 0;
	}
	return -1;
}

static int j_size(const struct ctx *c, const char *key, const json_t *v, uint64_t *out)
{
	if (!v)
		return 0;
	if (json_is_integer(v)) {
		if (json_integer_value(v) < 0)
			return fail(c, key, "%lld is negative", (long long)json_integer_value(v));
		*out = (uint64_t)json_integer_value(v);
		return 0;
	}
	if (!json_is_string(v))
		return fail(c, key,
		            "expected a size (an integer or a string like \"4MiB\"), got %s",
		            jtype(v));
	if (parse_size_text(json_string_value(v), out))
		return fail(c, key,
		            "cannot read \"%.40s\" as a size (bytes, or a number with K, KiB, M, "
		            "MiB, G, GiB, T or TiB, or 0x-hex)",
		            json_string_value(v));
	return 0;
}

static int j_int(const struct ctx *c, const char *key, const json_t *v, long long lo, long long hi,
                 long long *out)
{
	if (!v)
		return 0;
	if (!json_is_integer(v))
		return fail(c, key, "expected an integer, got %s", jtype(v));
	long long x = json_integer_value(v);
	if (x < lo || x > hi)
		return range_fail(c, key, x, lo, hi);
	*out = x;
	return 0;
}

static int j_num(const struct ctx *c, const char *key, const json_t *v, double *out)
{
	if (!v)
		return 0;
	if (!json_is_number(v))
		return fail(c, key, "expected a number, got %s", jtype(v));
	*out = json_number_value(v);
	return 0;
}

static int j_bool(const struct ctx *c, const char *key, const json_t *v, int *out)
{
	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return fail(c, key, "expected true or false, got %s", jtype(v));
	*out = json_is_true(v);
	return 0;
}

static int j_str(const struct ctx *c, const char *key, const json_t *v, const char **out)
{
	if (!v)
		return 0;
	if (!json_is_string(v))
		return fail(c, key, "expected a string, got %s", jtype(v));
	*out = json_string_value(v);
	return 0;
}

/* A string naming one of two choices: *out = 0 for n0, 1 for n1; unchanged
 * when the key is absent. */
static int j_choice(const struct ctx *c, const char *key, const json_t *v, const char *n0,
                    const char *n1, int *out)
{
	const char *s = NULL;
	int rc = j_str(c, key, v, &s);
	if (rc || !s)
		return rc;
	if (strcmp(s, n0) == 0)
		*out = 0;
	else if (strcmp(s, n1) == 0)
		*out = 1;
	else
		return fail(c, key, "expected \"%s\" or \"%s\", got \"%.40s\"", n0, n1, s);
	return 0;
}

/* gc.order: one of order_names; unchanged when absent. */
static int j_order(const struct ctx *c, const json_t *v, rh_order *out)
{
	const char *s = NULL;
	int rc = j_str(c, "gc.order", v, &s);
	if (rc || !s)
		return rc;
	for (size_t i = 0; i < N_ORDERS; i++)
		if (strcmp(s, order_names[i]) == 0) {
			*out = (rh_order)i;
			return 0;
		}
	return fail(c, "gc.order", "expected %s, got \"%.40s\"", ORDER_CHOICES, s);
}

static const char *const top_keys[] = {"heap", "cache",       "transport",  "servers",
                                       "gc",   "secret_file", "redundancy", NULL};
static const char *const redundancy_keys[] = {"mode", "write_copies", "spares", NULL};
static const char *const spare_keys[] = {"host", "port", NULL};
static const char *const heap_keys[] = {"base", "size", "region_size", NULL};
static const char *const cache_keys[] = {
        "fraction", "faults", "fault_spin_us", "readahead", "readahead_adaptive", "checksum", NULL};
static const char *const transport_keys[] = {"provider", "timeout_ms", NULL};
static const char *const server_keys[] = {"host", "port", "partition_size", NULL};
static const char *const gc_keys[] = {
        "pause_budget_ms", "order",    "young_fraction", "full_threshold", "offload",
        "tracer_threads",  "reorder",  "verify",         "remark",         "concurrent_mark",
        "copy_threads",    "preclean", "pretouch",       "refresh",        NULL};

#define GET(obj, k) json_object_get(obj, k)

/* host and port of one entry of an array of servers (servers[], spares[]). */
static int parse_address(const struct ctx *c, const char *path, const json_t *e,
                         rh_server_config *sc)
{
	char key[64];
	const char *host = NULL;
	long long port = -1;
	int rc;
	snprintf(key, sizeof key, "%s.host", path);
	if ((rc = j_str(c, key, GET(e, "host"), &host)))
		return rc;
	if (!host)
		return fail(c, key, "missing");
	if (strlen(host) >= RH_HOST_MAX)
		return fail(c, key, "longer than %d bytes", RH_HOST_MAX - 1);
	strcpy(sc->host, host);
	snprintf(key, sizeof key, "%s.port", path);
	if ((rc = j_int(c, key, GET(e, "port"), 1, 65535, &port)))
		return rc;
	if (port < 0)
		return fail(c, key, "missing");
	sc->port = (uint16_t)port;
	return 0;
}

static int parse_servers(const struct ctx *c, const json_t *arr, rh_config *cfg)
{
	if (!arr)
		return 0;
	if (!json_is_array(arr))
		return fail(c, "servers", "expected an array, got %s", jtype(arr));
	if (json_array_size(arr) > RH_MAX_SERVERS)
		return fail(c, "servers", "%zu servers given; at most %d are allowed",
		            json_array_size(arr), RH_MAX_SERVERS);
	char path[32], key[64];
	int rc;
	for (size_t i = 0; i < json_array_size(arr); i++) {
		const json_t *s = json_array_get(arr, i);
		rh_server_config *sc = &cfg->servers[i];
		snprintf(path, sizeof path, "servers[%zu]", i);
		if ((rc = check_object(c, s, path, server_keys)) ||
		    (rc = parse_address(c, path, s, sc)))
			return rc;
		snprintf(key, sizeof key, "%s.partition_size", path);
		if ((rc = j_size(c, key, GET(s, "partition_size"), &sc->partition_size)))
			return rc;
		cfg->n_servers = i + 1;
	}
	return 0;
}

static int parse_gc(const struct ctx *c, const json_t *gc, rh_config *cfg)
{
	int rc;
	if (!gc)
		return 0;
	if ((rc = check_object(c, gc, "gc", gc_keys)))
		return rc;
	double ms = -1;
	if ((rc = j_num(c, "gc.pause_budget_ms", GET(gc, "pause_budget_ms"), &ms)))
		return rc;
	if (GET(gc, "pause_budget_ms")) {
		double us = ms * 1000 + 0.5;
		if (!(us >= 1 && ms <= PAUSE_MAX_MS))
			return fail(c, "gc.pause_budget_ms", "%g is outside (0, %d]", ms,
			            PAUSE_MAX_MS);
		cfg->pause_budget_us = (uint32_t)us;
	}
	if ((rc = j_order(c, GET(gc, "order"), &cfg->order)))
		return rc;
	long long threads = cfg->tracer_threads, copiers = cfg->copy_threads;
	if ((rc = j_num(c, "gc.young_fraction", GET(gc, "young_fraction"), &cfg->young_fraction)) ||
	    (rc = j_num(c, "gc.full_threshold", GET(gc, "full_threshold"), &cfg->full_threshold)) ||
	    (rc = j_bool(c, "gc.offload", GET(gc, "offload"), &cfg->offload)) ||
	    (rc = j_int(c, "gc.tracer_threads", GET(gc, "tracer_threads"), 1, TRACER_THREADS_MAX,
	                &threads)) ||
	    (rc = j_bool(c, "gc.reorder", GET(gc, "reorder"), &cfg->reorder)) ||
	    (rc = j_bool(c, "gc.verify", GET(gc, "verify"), &cfg->verify)) ||
	    (rc = j_bool(c, "gc.concurrent_mark", GET(gc, "concurrent_mark"),
	                 &cfg->concurrent_mark)) ||
	    (rc = j_bool(c, "gc.remark", GET(gc, "remark"), &cfg->remark)) ||
	    (rc = j_bool(c, "gc.preclean", GET(gc, "preclean"), &cfg->preclean)) ||
	    (rc = j_bool(c, "gc.pretouch", GET(gc, "pretouch"), &cfg->pretouch)) ||
	    (rc = j_bool(c, "gc.refresh", GET(gc, "refresh"), &cfg->refresh)) ||
	    (rc = j_int(c, "gc.copy_threads", GET(gc, "copy_threads"), 0, RH_COPY_THREADS_MAX,
	                &copiers)))
		return rc;
	cfg->tracer_threads = (int)threads;
	cfg->copy_threads = (int)copiers;
	return 0;
}

static int parse_spares(const struct ctx *c, const json_t *arr, rh_config *cfg)
{
	if (!arr)
		return 0;
	if (!json_is_array(arr))
		return fail(c, "redundancy.spares", "expected an array, got %s", jtype(arr));
	if (json_array_size(arr) > RH_MAX_SPARES)
		return fail(c, "redundancy.spares", "%zu spares given; at most %d are allowed",
		            json_array_size(arr), RH_MAX_SPARES);
	char path[48];
	int rc;
	for (size_t i = 0; i < json_array_size(arr); i++) {
		const json_t *e = json_array_get(arr, i);
		snprintf(path, sizeof path, "redundancy.spares[%zu]", i);
		if ((rc = check_object(c, e, path, spare_keys)) ||
		    (rc = parse_address(c, path, e, &cfg->spares[i])))
			return rc;
		cfg->spares[i].partition_size = 0;
	}
	cfg->n_spares = json_array_size(arr);
	return 0;
}

static const char *const redundancy_names[] = {"none", "replicate"};
#define N_REDUNDANCY (sizeof redundancy_names / sizeof redundancy_names[0])

static int parse_redundancy(const struct ctx *c, const json_t *red, rh_config *cfg)
{
	if (!red)
		return 0;
	int rc;
	const char *mode = NULL;
	if ((rc = check_object(c, red, "redundancy", redundancy_keys)) ||
	    (rc = j_str(c, "redundancy.mode", GET(red, "mode"), &mode)) ||
	    (rc = j_bool(c, "redundancy.write_copies", GET(red, "write_copies"),
	                 &cfg->write_copies)) ||
	    (rc = parse_spares(c, GET(red, "spares"), cfg)))
		return rc;
	if (!mode)
		return 0;
	for (size_t i = 0; i < N_REDUNDANCY; i++)
		if (!strcmp(mode, redundancy_names[i])) {
			cfg->redundancy = (rh_redundancy)i;
			return 0;
		}
	if (!strcmp(mode, "erasure"))
		return fail(c, "redundancy.mode",
		            "\"erasure\" is designed (docs/resilience.md) but not built yet; use "
		            "\"replicate\"");
	return fail(c, "redundancy.mode", "expected \"none\" or \"replicate\", got \"%.40s\"",
	            mode);
}

static int parse_root(const struct ctx *c, const json_t *root, const char *base_dir, rh_config *cfg)
{
	int rc;
	if ((rc = check_object(c, root, NULL, top_keys)))
		return rc;
	const json_t *heap = GET(root, "heap"), *cache = GET(root, "cache"),
	             *tr = GET(root, "transport");
	if (heap) {
		if ((rc = check_object(c, heap, "heap", heap_keys)) ||
		    (rc = j_size(c, "heap.base", GET(heap, "base"), &cfg->heap_base)) ||
		    (rc = j_size(c, "heap.size", GET(heap, "size"), &cfg->heap_size)) ||
		    (rc = j_size(c, "heap.region_size", GET(heap, "region_size"),
		                 &cfg->region_size)))
			return rc;
	}
	if (cache) {
		long long spin = cfg->fault_spin_us, ra = cfg->readahead;
		int by_signal = cfg->faults == RH_FAULTS_SIGNAL;
		if ((rc = check_object(c, cache, "cache", cache_keys)) ||
		    (rc = j_num(c, "cache.fraction", GET(cache, "fraction"),
		                &cfg->cache_fraction)) ||
		    (rc = j_choice(c, "cache.faults", GET(cache, "faults"), "thread", "signal",
		                   &by_signal)) ||
		    (rc = j_int(c, "cache.fault_spin_us", GET(cache, "fault_spin_us"), 0,
		                SPIN_MAX_US, &spin)) ||
		    (rc = j_int(c, "cache.readahead", GET(cache, "readahead"), 0, READAHEAD_MAX,
		                &ra)) ||
		    (rc = j_bool(c, "cache.readahead_adaptive", GET(cache, "readahead_adaptive"),
		                 &cfg->readahead_adaptive)) ||
		    (rc = j_bool(c, "cache.checksum", GET(cache, "checksum"), &cfg->checksum)))
			return rc;
		cfg->faults = by_signal ? RH_FAULTS_SIGNAL : RH_FAULTS_THREAD;
		cfg->fault_spin_us = (uint32_t)spin;
		cfg->readahead = (uint32_t)ra;
	}
	if (tr) {
		const char *prov = NULL;
		long long timeout = cfg->timeout_ms;
		if ((rc = check_object(c, tr, "transport", transport_keys)) ||
		    (rc = j_str(c, "transport.provider", GET(tr, "provider"), &prov)) ||
		    (rc = j_int(c, "transport.timeout_ms", GET(tr, "timeout_ms"), 1, TIMEOUT_MAX_MS,
		                &timeout)))
			return rc;
		if (prov) {
			if (strlen(prov) >= sizeof cfg->provider)
				return fail(c, "transport.provider",
				            "expected \"shm\", \"tcp\" or \"verbs\", got \"%.40s\"",
				            prov);
			strcpy(cfg->provider, prov);
		}
		cfg->timeout_ms = (uint32_t)timeout;
	}
	if ((rc = parse_servers(c, GET(root, "servers"), cfg)) ||
	    (rc = parse_gc(c, GET(root, "gc"), cfg)) ||
	    (rc = parse_redundancy(c, GET(root, "redundancy"), cfg)))
		return rc;
	const char *sf = NULL;
	if ((rc = j_str(c, "secret_file", GET(root, "secret_file"), &sf)))
		return rc;
	if (sf) {
		if (!*sf)
			return fail(c, "secret_file", "must not be empty");
		int n;
		if (sf[0] != '/' && base_dir && *base_dir)
			n = snprintf(cfg->secret_file, sizeof cfg->secret_file, "%s/%s", base_dir,
			             sf);
		else
			n = snprintf(cfg->secret_file, sizeof cfg->secret_file, "%s", sf);
		if (n < 0 || (size_t)n >= sizeof cfg->secret_file)
			return fail(c, "secret_file", "path longer than %d bytes", RH_PATH_MAX - 1);
	}
	return check(c, cfg);
}

static int parse_text(const struct ctx *c, const char *json, size_t len, const char *base_dir,
                      rh_config *cfg)
{
	rh_config_default(cfg);
	json_error_t jerr;
	json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return fail(c, NULL, "line %d, column %d: %s", jerr.line, jerr.column, jerr.text);
	int rc = parse_root(c, root, base_dir, cfg);
	json_decref(root);
	return rc;
}

int rh_config_parse(const char *json, const char *base_dir, rh_config *cfg, rh_error *err)
{
	struct ctx c = {err, NULL};
	if (!json)
		return fail(&c, NULL, "no JSON text");
	return parse_text(&c, json, strlen(json), base_dir, cfg);
}

int rh_config_load(const char *path, rh_config *cfg, rh_error *err)
{
	struct ctx c = {err, path};
	if (!path || !*path)
		return rh_err_set(err, RH_ECONFIG, "config: no file name");
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return fail(&c, NULL, "cannot open: %s", strerror(errno));
	struct stat st;
	char *text = NULL;
	int rc = 0;
	if (fstat(fd, &st) != 0) {
		rc = fail(&c, NULL, "cannot stat: %s", strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > CONFIG_FILE_MAX) {
		rc = fail(&c, NULL, "not a regular file of at most %d bytes", CONFIG_FILE_MAX);
		goto out;
	}
	text = malloc((size_t)st.st_size + 1);
	if (!text) {
		rc = fail(&c, NULL, "out of memory");
		goto out;
	}
	size_t n = 0;
	while (n < (size_t)st.st_size) {
		ssize_t r = read(fd, text + n, (size_t)st.st_size - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = fail(&c, NULL, "cannot read: %s",
			          r < 0 ? strerror(errno) : "file shrank");
			goto out;
		}
		n += (size_t)r;
	}
	text[n] = 0;
	char dir[RH_PATH_MAX];
	const char *slash = strrchr(path, '/');
	if (!slash)
		strcpy(dir, ".");
	else if (slash == path)
		strcpy(dir, "/");
	else
		snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
	rc = parse_text(&c, text, n, dir, cfg);
out:
	free(text);
	close(fd);
	return rc;
}

/* ------------------------------------------------------------------ JSON out */

static json_t *size_json(uint64_t v)
{
	static const struct {
		uint64_t unit;
		const char *sfx;
	} units[] = {{TIB, "TiB"}, {GIB, "GiB"}, {MIB, "MiB"}, {KIB, "KiB"}};
	char buf[40];
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (v >= units[i].unit && v % units[i].unit == 0) {
			snprintf(buf, sizeof buf, "%llu%s", (unsigned long long)(v / units[i].unit),
			         units[i].sfx);
			return json_string(buf);
		}
	}
	snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
	return json_string(buf);
}

static json_t *bounded_string(const char *s, size_t cap)
{
	return json_stringn(s, strnlen(s, cap));
}

static int short_real_ok(double v)
{
	char buf[40];
	snprintf(buf, sizeof buf, "%.15g", v);
	return strtod(buf, NULL) == v;
}

/* Adds v to obj; remembers any failure (NULL value or no memory) in *ok. */
static void put(json_t *obj, const char *k, json_t *v, int *ok)
{
	if (!v || !obj) {
		json_decref(v);
		*ok = 0;
	} else if (json_object_set_new(obj, k, v)) {
		*ok = 0; /* set_new released v */
	}
}

char *rh_config_to_json(const rh_config *cfg)
{
	int ok = 1;
	char buf[40];
	json_t *root = json_object();
	json_t *heap = json_object(), *cache = json_object(), *tr = json_object(),
	       *gc = json_object();
	snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)cfg->heap_base);
	put(heap, "base", json_string(buf), &ok);
	put(heap, "size", size_json(cfg->heap_size), &ok);
	put(heap, "region_size", size_json(cfg->region_size), &ok);
	put(root, "heap", heap, &ok);
	put(cache, "fraction", json_real(cfg->cache_fraction), &ok);
	put(cache, "faults", json_string(cfg->faults == RH_FAULTS_SIGNAL ? "signal" : "thread"),
	    &ok);
	put(cache, "fault_spin_us", json_integer(cfg->fault_spin_us), &ok);
	put(cache, "readahead", json_integer(cfg->readahead), &ok);
	put(cache, "readahead_adaptive", json_boolean(cfg->readahead_adaptive), &ok);
	put(cache, "checksum", json_boolean(cfg->checksum), &ok);
	put(root, "cache", cache, &ok);
	put(tr, "provider", bounded_string(cfg->provider, sizeof cfg->provider), &ok);
	put(tr, "timeout_ms", json_integer(cfg->timeout_ms), &ok);
	put(root, "transport", tr, &ok);
	if (cfg->n_servers > 0) {
		json_t *arr = json_array();
		for (size_t i = 0; arr && i < cfg->n_servers && i < RH_MAX_SERVERS; i++) {
			const rh_server_config *s = &cfg->servers[i];
			json_t *e = json_object();
			put(e, "host", bounded_string(s->host, RH_HOST_MAX), &ok);
			put(e, "port", json_integer(s->port), &ok);
			put(e, "partition_size", size_json(s->partition_size), &ok);
			if (!e || json_array_append_new(arr, e))
				ok = 0;
		}
		put(root, "servers", arr, &ok);
	}
	if (cfg->pause_budget_us % 1000 == 0)
		put(gc, "pause_budget_ms", json_integer(cfg->pause_budget_us / 1000), &ok);
	else
		put(gc, "pause_budget_ms", json_real(cfg->pause_budget_us / 1000.0), &ok);
	/* Any other value was refused by check_gc; "dfs" as before. */
	put(gc, "order",
	    json_string((unsigned)cfg->order < N_ORDERS ? order_names[cfg->order] : "dfs"), &ok);
	put(gc, "young_fraction", json_real(cfg->young_fraction), &ok);
	put(gc, "full_threshold", json_real(cfg->full_threshold), &ok);
	put(gc, "offload", json_boolean(cfg->offload), &ok);
	put(gc, "tracer_threads", json_integer(cfg->tracer_threads), &ok);
	put(gc, "copy_threads", json_integer(cfg->copy_threads), &ok);
	put(gc, "reorder", json_boolean(cfg->reorder), &ok);
	put(gc, "verify", json_boolean(cfg->verify), &ok);
	put(gc, "concurrent_mark", json_boolean(cfg->concurrent_mark), &ok);
	put(gc, "preclean", json_boolean(cfg->preclean), &ok);
	put(gc, "pretouch", json_boolean(cfg->pretouch), &ok);
	put(gc, "refresh", json_boolean(cfg->refresh), &ok);
	if (!cfg->remark) /* a debug switch: only shown when set */
		put(gc, "remark", json_boolean(cfg->remark), &ok);
	put(root, "gc", gc, &ok);
	if (cfg->redundancy != RH_REDUNDANCY_NONE || !cfg->write_copies) {
		json_t *red = json_object();
		put(red, "mode",
		    json_string((unsigned)cfg->redundancy < N_REDUNDANCY
		                        ? redundancy_names[cfg->redundancy]
		                        : "none"),
		    &ok);
		if (!cfg->write_copies) /* a debug switch: only shown when set */
			put(red, "write_copies", json_boolean(0), &ok);
		if (cfg->n_spares) {
			json_t *arr = json_array();
			for (size_t i = 0; arr && i < cfg->n_spares && i < RH_MAX_SPARES; i++) {
				json_t *e = json_object();
				put(e, "host", bounded_string(cfg->spares[i].host, RH_HOST_MAX),
				    &ok);
				put(e, "port", json_integer(cfg->spares[i].port), &ok);
				if (!e || json_array_append_new(arr, e))
					ok = 0;
			}
			put(red, "spares", arr, &ok);
		}
		put(root, "redundancy", red, &ok);
	}
	if (cfg->secret_file[0])
		put(root, "secret_file", bounded_string(cfg->secret_file, RH_PATH_MAX), &ok);
	/* 15 digits print 0.15 as 0.15; 17 only when needed to read back the same double. */
	int exact15 = short_real_ok(cfg->cache_fraction) && short_real_ok(cfg->young_fraction) &&
	              short_real_ok(cfg->full_threshold) &&
	              short_real_ok(cfg->pause_budget_us / 1000.0);
	size_t flags =
	        JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(exact15 ? 15 : 17);
	char *s = ok ? json_dumps(root, flags) : NULL;
	json_decref(root);
	return s;
}
