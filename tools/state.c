/* rheapctl's state directory: see state.h and docs/security.md. */
#include "state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

ssize_t rh_state_read(int dfd, const char *name, char *buf, size_t cap)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	size_t n = 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		close(fd);
		errno = EPERM;
		return -1;
	}
	while (n + 1 < cap) {
		ssize_t r = read(fd, buf + n, cap - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = 0;
	return (ssize_t)n;
}

/* The value following `opt` in a NUL-separated argument list, or NULL. */
static const char *arg_after(const char *args, size_t n, const char *opt)
{
	for (const char *a = args; a < args + n; a += strlen(a) + 1)
		if (!strcmp(a, opt) && a + strlen(a) + 1 < args + n)
			return a + strlen(a) + 1;
	return NULL;
}

bool rh_state_is_tracer(pid_t pid, const char *config, const char *status)
{
	char path[64], args[8192];
	struct stat st;
	snprintf(path, sizeof path, "/proc/%d", (int)pid);
	if (pid <= 0 || stat(path, &st) < 0 || st.st_uid != getuid())
		return false;
	snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, args, sizeof args - 1);
	close(fd);
	if (n <= 0)
		return false;
	args[n] = 0;
	const char *base = strrchr(args, '/');
	base = base ? base + 1 : args;
	const char *c = arg_after(args, (size_t)n, "--config");
	const char *s = arg_after(args, (size_t)n, "--status");
	return !strcmp(base, "rheap-tracerd") && c && !strcmp(c, config) && s && !strcmp(s, status);
}
