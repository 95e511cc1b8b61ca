/* Bottom layer shared by every part of rheap: error filling, logging and
 * clocks. Calls nothing else in rheap. */
#ifndef RH_COMMON_H
#define RH_COMMON_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "rheap/rheap.h"

#define RH_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* Fill err (if non-NULL) and return code. */
int rh_err_set(rh_error *err, int code, const char *fmt, ...) RH_PRINTF(3, 4);
/* As rh_err_set, appending ": strerror(errno)". */
int rh_err_errno(rh_error *err, int code, const char *fmt, ...) RH_PRINTF(3, 4);

enum rh_log_level { RH_LOG_ERROR = 0, RH_LOG_WARN = 1, RH_LOG_INFO = 2, RH_LOG_DEBUG = 3 };
/* One line per event: "rheap[pid] [   1.234s] LEVEL component: message",
 * the time in seconds since rh_log_start() (or the first line). The level
 * comes from RHEAP_LOG_LEVEL (error, warn, info, debug; default warn, with
 * a warning for anything else) unless rh_log_set_level() was called. */
void rh_log(int level, const char *component, const char *fmt, ...) RH_PRINTF(3, 4);
void rh_log_set_level(int level);
int rh_log_level_parse(const char *name); /* -1 if unknown */
/* Start the timestamps' clock (once per process: later calls keep it) and
 * settle the level, warning now about a bad RHEAP_LOG_LEVEL. */
void rh_log_start(void);
/* Whether a line at this level would be written. */
bool rh_log_enabled(int level);

static inline uint64_t rh_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* pthread_cond_timedwait for at most ms milliseconds (a waiter that also
 * polls some other condition). */
static inline void rh_cond_wait_ms(pthread_cond_t *c, pthread_mutex_t *m, long ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += ms * 1000000;
	ts.tv_sec += ts.tv_nsec / 1000000000;
	ts.tv_nsec %= 1000000000;
	pthread_cond_timedwait(c, m, &ts);
}

/* Abort with a message: an API precondition was violated (debug builds) or
 * an internal invariant broke. */
_Noreturn void rh_panic(const char *fmt, ...) RH_PRINTF(1, 2);

#endif
