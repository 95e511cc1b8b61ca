/* rheapctl's state directory: see state.h and docs/security.md. */
#include "state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int rh_state_open(const char *path, char *why, size_t n)
{
	if (mkdir(path, 0700) < 0 && errno != EEXIST) {
		snprintf(why, n, "cannot create %s: %s", path, strerror(errno));
		return -1;
	}
	/* O_NOFOLLOW: a symlink planted at the path is refused, not followed
	 * to a directory of the planter's choosing. */
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0) {
		bool link = lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
		snprintf(why, n, "%s %s", path,
		         link               ? "is a symlink; it must be a directory of its own"
		         : errno == ENOTDIR ? "is not a directory"
		                            : strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0)
		snprintf(why, n, "cannot stat %s: %s", path, strerror(errno));
	else if (st.st_uid != geteuid())
		snprintf(why, n, "%s is owned by uid %u, not by you (uid %u)", path,
		         (unsigned)st.st_uid, (unsigned)geteuid());
	else if ((st.st_mode & 07777) != 0700)
		snprintf(why, n, "%s has mode %04o; it must be 0700 (private to you)", path,
		         (unsigned)(st.st_mode & 07777));
	else
		return fd;
	close(fd);
	return -1;
}

int rh_state_write(int dfd, const char *name, const void *data, size_t len, mode_t mode)
{
	char tmp[300];
	if (snprintf(tmp, sizeof tmp, ".%s.tmp", name) >= (int)sizeof tmp) {
		errno = ENAMETOOLONG;
		return -1;
	}
	unlinkat(dfd, tmp, 0);
	int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -1;
	const char *p = data;
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = errno;
			close(fd);
			unlinkat(dfd, tmp, 0);
			errno = e;
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	if (close(fd) < 0 || renameat(dfd, tmp, dfd, name) < 0) {
		int e = errno;
		unlinkat(dfd, tmp, 0);
		errno = e;
		return -1;
	}
	return 0;
}

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
