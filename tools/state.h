/* rheapctl's state directory (docs/security.md, "The local state
 * directory"): created or checked before use, then every file in it is
 * opened through the directory's descriptor, never through a symlink. */
#ifndef RH_TOOLS_STATE_H
#define RH_TOOLS_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/statedir.h" /* rh_state_open, rh_state_write */

/* Read `name` (a regular file of this user, not a symlink) into buf,
 * NUL-terminated; the bytes read, or -1 (errno). */
ssize_t rh_state_read(int dfd, const char *name, char *buf, size_t cap);
/* True if pid is a process of this user running rheap-tracerd with
 * exactly this config and status file (security.S3). */
bool rh_state_is_tracer(pid_t pid, const char *config, const char *status);

#endif
