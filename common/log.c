#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"

static atomic_int level = -1;
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

static int current_level(void)
{
	int l = atomic_load(&level);
	if (l < 0) {
		l = rh_log_level_parse(getenv("RHEAP_LOG_LEVEL"));
		if (l < 0)
			l = RH_LOG_WARN;
		atomic_store(&level, l);
	}
	return l;
}

void rh_log(int l, const char *component, const char *fmt, ...)
{
	if (l > current_level())
		return;
	char line[1024];
	int n = snprintf(line, sizeof line, "rheap[%d] %s %s: ", (int)getpid(),
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
