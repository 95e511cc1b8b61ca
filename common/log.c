/* Logging: one line per event, "rheap[PID] [  S.mmms] LEVEL component:
 * message" (docs/operations.md, "Logs"). */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"

static atomic_int level = -1;
/* The clock the timestamps count from: the first heap open (or the
 * tracer's start), else the first line logged. */
static _Atomic uint64_t epoch_ns;
static atomic_flag warned = ATOMIC_FLAG_INIT;
static const char *const level_names[] = {"error", "warn", "info", "debug"};

int rh_log_level_parse(const char *name)
{
	for (int i = 0; i < 4; i++)
		if (name && strcmp(name, level_names[i]) == 0)
			return i;
	return -1;
}

void rh_log_set_level(int l)
{
	atomic_store(&level, l);
}

static void start_clock(void)
{
	uint64_t zero = 0;
	atomic_compare_exchange_strong(&epoch_ns, &zero, rh_now_ns());
}

/* RHEAP_LOG_LEVEL, or warn. A value that is not a level is not ignored in
 * silence: a warning names it and the accepted ones, once, and the
 * default stays. */
static int current_level(void)
{
	int l = atomic_load(&level);
	if (l >= 0)
		return l;
	const char *env = getenv("RHEAP_LOG_LEVEL");
	l = rh_log_level_parse(env);
	if (l < 0)
		l = RH_LOG_WARN;
	atomic_store(&level, l);
	if (env && *env && rh_log_level_parse(env) < 0 && !atomic_flag_test_and_set(&warned))
		rh_log(RH_LOG_WARN, "log",
		       "RHEAP_LOG_LEVEL '%.40s' is not a level (error, warn, info, debug); "
		       "logging at warn",
		       env);
	return l;
}

void rh_log_start(void)
{
	start_clock();
	current_level();
}

bool rh_log_enabled(int l)
{
	return l <= current_level();
}

void rh_log(int l, const char *component, const char *fmt, ...)
{
	if (l > current_level())
		return;
	start_clock();
	uint64_t ns = rh_now_ns() - atomic_load(&epoch_ns);
	char line[1024];
	int n = snprintf(line, sizeof line, "rheap[%d] [%4llu.%03llus] %s %s: ", (int)getpid(),
	                 (unsigned long long)(ns / 1000000000ull),
	                 (unsigned long long)(ns / 1000000ull % 1000ull),
	                 level_names[l < 0   ? 0
	                             : l > 3 ? 3
	                                     : l],
	                 component);
	va_list ap;
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < sizeof line)
		vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
	va_end(ap);
	/* One write per line so concurrent processes do not interleave. */
	size_t len = strnlen(line, sizeof line - 2);
	line[len++] = '\n';
	ssize_t w = write(2, line, len);
	(void)w;
}
