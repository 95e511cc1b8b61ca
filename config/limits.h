/* Bounds on configuration values that other code sizes arrays by. The
 * loader rejects a config past them, and the code that keeps one slot per
 * thread relies on that, so both read the number from here. Not exported. */
#ifndef RH_CONFIG_LIMITS_H
#define RH_CONFIG_LIMITS_H

/* gc.copy_threads: threads copying objects in one pause. */
#define RH_COPY_THREADS_MAX 8

#endif
