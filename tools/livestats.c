/* `rheapctl stats`: see livestats.h. */
#include "livestats.h"

#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "state.h"

/* stats-PID-N.json: the PID, or 0 for any other name. */
static pid_t pid_of(const char *name)
{
	int pid, n, len = 0;
	if (sscanf(name, "stats-%d-%d.json%n", &pid, &n, &len) != 2 || len == 0 || name[len] != 0 ||
	    pid <= 0)
		return 0;
	return (pid_t)pid;
}

static bool alive(pid_t pid)
{
	return kill(pid, 0) == 0 || errno == EPERM;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

#define MIB(x) ((double)(x) / 1048576.0)

static void print_row(json_t *doc)
{
	json_t *s = json_object_get(doc, "stats");
#define F(name) ((unsigned long long)json_integer_value(json_object_get(s, name)))
	unsigned long long used = (F("regions_total") - F("regions_free")) * F("region_size");
	long long age = (long long)(now_ms() - (uint64_t)json_integer_value(
	                                               json_object_get(doc, "written_ms")));
	const char *prog = json_string_value(json_object_get(doc, "program"));
	char mem[64] = "-";
	if (json_integer_value(json_object_get(doc, "n_servers")))
		snprintf(mem, sizeof mem, "%llu %.0f/%.0f", F("faults"), MIB(F("bytes_fetched")),
		         MIB(F("bytes_evicted")));
	printf("%-8lld %-16s %8.0f %8.0f %7llu %5llu %8.2f %8.1f %8.1f %20s %8.1f\n",
	       (long long)json_integer_value(json_object_get(doc, "pid")), prog ? prog : "?",
	       MIB(F("heap_size")), MIB(used), F("collections"), F("full_collections"),
	       (double)F("gc_ns") / 1e9, (double)F("p99_pause_ns") / 1e6,
	       (double)F("max_pause_ns") / 1e6, mem, (double)age / 1e3);
#undef F
}

int rh_ctl_stats(int dfd, const char *dir, pid_t pid, bool json)
{
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		fprintf(stderr, "rheapctl: cannot list %s: %s\n", dir, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	json_t *all = json_array();
	struct dirent *de;
	while ((de = readdir(d))) {
		pid_t p = pid_of(de->d_name);
		if (!p || (pid > 0 && p != pid))
			continue;
		if (!alive(p)) {
			/* Killed before rh_heap_close: its file would only mislead. */
			unlinkat(dfd, de->d_name, 0);
			continue;
		}
		char text[65536];
		/* security.S2: a regular file of this user, read through the
		 * directory's descriptor. */
		ssize_t n = rh_state_read(dfd, de->d_name, text, sizeof text);
		json_t *doc = n > 0 ? json_loadb(text, (size_t)n, 0, NULL) : NULL;
		if (doc && json_is_object(json_object_get(doc, "stats")))
			json_array_append_new(all, doc);
		else
			json_decref(doc);
	}
	closedir(d);
	size_t n = json_array_size(all);
	if (json) {
		json_dumpf(all, stdout, JSON_INDENT(1));
		putchar('\n');
	} else if (n == 0) {
		if (pid > 0)
			printf("no live stats of pid %d in %s\n", (int)pid, dir);
		else
			printf("no running heap writes live stats in %s\n", dir);
	} else {
		printf("%-8s %-16s %8s %8s %7s %5s %8s %8s %8s %20s %8s\n", "pid", "program",
		       "heap MiB", "used MiB", "colls", "full", "gc s", "p99 ms", "max ms",
		       "faults in/out MiB", "age s");
		for (size_t i = 0; i < n; i++)
			print_row(json_array_get(all, i));
	}
	json_decref(all);
	return pid > 0 && n == 0 ? 3 : 0;
}
