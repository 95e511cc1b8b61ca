/* A private state directory (docs/security.md, "The local state
 * directory"): created or checked before use, every file in it replaced
 * through the directory's descriptor, never through a symlink. rheapctl
 * keeps its pid, status and config files there; the runtime its live
 * stats files (runtime/livestats.c). */
#ifndef RH_COMMON_STATEDIR_H
#define RH_COMMON_STATEDIR_H

#include <stddef.h>
#include <sys/types.h>

/* Create `path` (mode 0700) or check the one there: a directory, not a
 * symlink, owned by this user, mode 0700 (security.S1). The descriptor, or
 * -1 with why[] saying what is wrong. */
int rh_state_open(const char *path, char *why, size_t n);
/* Replace `name` with len bytes: written to a fresh temporary with
 * O_EXCL|O_NOFOLLOW, then renamed over it (security.S2). 0 or -1 (errno). */
int rh_state_write(int dfd, const char *name, const void *data, size_t len, mode_t mode);

#endif
