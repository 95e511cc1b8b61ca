/* Live stats of a running heap: see livestats.h. */
#include "runtime/livestats.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/statedir.h"
#include "runtime/internal.h"

#define DEFAULT_INTERVAL_MS 100

/* Heaps this process opened: the file name's N, so two heaps of one
 * process never share a file. */
static atomic_uint heaps_opened;

/* RHEAP_LIVE_STATS: unset or empty, the default; "off" or "0", none; else
 * milliseconds, 1..3600000. Anything else is named in a warning, not
 * ignored in silence, and the default stays. */
static int64_t interval_ms(void)
{
	const char *v = getenv("RHEAP_LIVE_STATS");
	if (!v || !*v)
		return DEFAULT_INTERVAL_MS;
	if (!strcmp(v, "off") || !strcmp(v, "0"))
		return 0;
	char *end;
	errno = 0;
	long long ms = strtoll(v, &end, 10);
	if (errno || *end || ms < 1 || ms > 3600000) {
		rh_log(RH_LOG_WARN, "stats",
		       "RHEAP_LIVE_STATS '%.40s' is not 'off' or milliseconds (1..3600000); "
		       "writing at most every %d ms",
		       v, DEFAULT_INTERVAL_MS);
		return DEFAULT_INTERVAL_MS;
	}
	return ms;
}

static uint64_t realtime_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The program's name, for the listing: /proc/self/comm, JSON-safe. */
static void program_name(char *out, size_t n)
{
	snprintf(out, n, "?");
	FILE *f = fopen("/proc/self/comm", "r");
	if (!f)
		return;
	if (fgets(out, (int)n, f)) {
		for (char *p = out; *p; p++)
			if (*p == '\n' || *p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
				*p = *p == '\n' ? 0 : '_';
	}
	fclose(f);
}

/* Writes the file; returns the earliest time of the next write. */
static uint64_t write_now(rh_heap *h)
{
	rh_livestats *ls = &h->live;
	uint64_t t0 = rh_now_ns();
	/* operations.L1: at most 1 % of the time in writes. rh_stats_json
	 * sorts every pause for its percentiles, so a write grows with the
	 * run: the next one waits 100 times as long as this one took if that
	 * is longer than the interval. */
	uint64_t next = t0 + ls->interval_ns;
	char *stats = rh_stats_json(h);
	if (!stats)
		return next;
	char prog[32];
	program_name(prog, sizeof prog);
	char *doc = NULL;
	int len = asprintf(&doc,
	                   "{\"pid\":%d,\"program\":\"%s\",\"written_ms\":%llu,"
	                   "\"n_servers\":%zu,\"cache_fraction\":%.3f,\"stats\":%s}\n",
	                   (int)getpid(), prog, (unsigned long long)realtime_ms(), h->cfg.n_servers,
	                   h->cfg.cache_fraction, stats);
	free(stats);
	if (len < 0)
		return next;
	/* security.S2: a fresh temporary renamed over the file; a reader sees
	 * the old file or the new one, never half of one. */
	if (rh_state_write(ls->dfd, ls->name, doc, (size_t)len, 0600) < 0)
		rh_log(RH_LOG_DEBUG, "stats", "cannot write %s: %s", ls->name, strerror(errno));
	free(doc);
	uint64_t t1 = rh_now_ns();
	return t1 + 100 * (t1 - t0) > next ? t1 + 100 * (t1 - t0) : next;
}

void rh_livestats_open(rh_heap *h)
{
	rh_livestats *ls = &h->live;
	*ls = (rh_livestats){.dfd = -1};
	int64_t ms = interval_ms();
	if (ms == 0)
		return;
	char dir[PATH_MAX];
	const char *env = getenv("RHEAP_STATE_DIR");
	if (env && *env)
		snprintf(dir, sizeof dir, "%s", env);
	else
		snprintf(dir, sizeof dir, "/tmp/rheap-%u", (unsigned)getuid());
	char why[PATH_MAX + 128];
	/* security.S1: the directory rheapctl would accept, or none. */
	ls->dfd = rh_state_open(dir, why, sizeof why);
	if (ls->dfd < 0) {
		rh_log(RH_LOG_WARN, "stats",
		       "live stats off: state dir refused: %s (RHEAP_STATE_DIR names another; "
		       "RHEAP_LIVE_STATS=off silences this)",
		       why);
		return;
	}
	snprintf(ls->name, sizeof ls->name, "stats-%d-%u.json", (int)getpid(),
	         atomic_fetch_add(&heaps_opened, 1) + 1);
	ls->interval_ns = (uint64_t)ms * 1000000ull;
	ls->next_ns = write_now(h);
	rh_log(RH_LOG_DEBUG, "stats", "live stats in %s/%s", dir, ls->name);
}

void rh_livestats_after_gc(rh_heap *h)
{
	rh_livestats *ls = &h->live;
	if (ls->dfd < 0)
		return;
	/* operations.L1: one write per interval at most, by whichever thread
	 * collected; a collection in between shows in the next write. Threads
	 * that collect one after another race only on this timestamp: the
	 * winner moves it a whole day on while it writes, the others skip. */
	uint64_t now = rh_now_ns(), next = __atomic_load_n(&ls->next_ns, __ATOMIC_RELAXED);
	if (now < next || !__atomic_compare_exchange_n(&ls->next_ns, &next, now + 86400000000000ull,
	                                               false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&ls->next_ns, write_now(h), __ATOMIC_RELAXED);
}

void rh_livestats_remove(rh_heap *h)
{
	if (h->live.dfd >= 0)
		unlinkat(h->live.dfd, h->live.name, 0);
}

void rh_livestats_close(rh_heap *h)
{
	rh_livestats *ls = &h->live;
	if (ls->dfd < 0)
		return;
	unlinkat(ls->dfd, ls->name, 0);
	close(ls->dfd);
	ls->dfd = -1;
}
