/* `rheapctl stats`: the live stats files running heaps write in the state
 * directory (runtime/livestats.c; docs/operations.md, "Live stats"). */
#ifndef RH_TOOLS_LIVESTATS_H
#define RH_TOOLS_LIVESTATS_H

#include <stdbool.h>
#include <sys/types.h>

/* Every running heap's stats, or only pid's (pid > 0): a table, or with
 * json a JSON array of the files' objects. Files of processes that have
 * exited (killed before rh_heap_close) are removed. 0; 3 when pid was
 * asked for and has no file. */
int rh_ctl_stats(int dfd, const char *dir, pid_t pid, bool json);

#endif
