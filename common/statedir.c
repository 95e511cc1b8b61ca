/* A private state directory: see statedir.h and docs/security.md. */
#include "common/statedir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
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
