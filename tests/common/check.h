/* The tests' one check harness. Every check counts; a failed one prints
 * where and why ("FILE:LINE: check failed: EXPR: message"); the last line
 * of every test is "N passed, N failed", and the exit status is 0 only if
 * nothing failed and something was checked (a test that checks nothing
 * cannot fail). Everything is static, so each test binary has its own
 * counters; they are atomic because tests check from several threads. */
#ifndef RH_TESTS_COMMON_CHECK_H
#define RH_TESTS_COMMON_CHECK_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long check_passed_n, check_failed_n;
/* Set to print "ok: ..." for checks that hold too (the transport
 * conformance suite lists every case it ran). */
static int check_verbose;

__attribute__((format(printf, 5, 6))) static inline int
check_one(int ok, const char *expr, const char *file, int line, const char *fmt, ...)
{
	__atomic_fetch_add(ok ? &check_passed_n : &check_failed_n, 1, __ATOMIC_RELAXED);
	if (ok && !check_verbose)
		return 1;
	/* fmt starts with a space so that CHECK(cond) has a non-empty one. */
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	const char *msg = buf + (buf[0] == ' ');
	if (ok)
		printf("ok: %s\n", msg[0] ? msg : expr);
	else
		fprintf(stderr, "%s:%d: check failed: %s%s%s\n", file, line, expr,
		        msg[0] ? ": " : "", msg);
	return ok;
}

/* CHECK(cond) or CHECK(cond, "fmt", args...): counts one check; returns
 * whether it held, so a test can stop following a broken structure. */
#define CHECK(cond, ...) check_one(!!(cond), #cond, __FILE__, __LINE__, " " __VA_ARGS__)

/* A line of commentary in the test's output ("# ..."), not a check. */
#define NOTE(...)                                                                                  \
	do {                                                                                       \
		printf("# " __VA_ARGS__);                                                          \
		printf("\n");                                                                      \
		fflush(stdout);                                                                    \
	} while (0)

/* How many checks have failed so far. */
static inline unsigned long check_failures(void)
{
	return __atomic_load_n(&check_failed_n, __ATOMIC_RELAXED);
}

/* Print the closing line and return the exit status. */
static inline int check_done(void)
{
	unsigned long p = __atomic_load_n(&check_passed_n, __ATOMIC_RELAXED);
	unsigned long f = __atomic_load_n(&check_failed_n, __ATOMIC_RELAXED);
	fflush(stderr);
	printf("%lu passed, %lu failed\n", p, f);
	fflush(stdout);
	return f == 0 && p > 0 ? 0 : 1;
}

/* Stop the test (counted as a failure) when going on makes no sense. */
#define REQUIRE(cond, ...)                                                                         \
	do {                                                                                       \
		if (!CHECK(cond, __VA_ARGS__)) {                                                   \
			fprintf(stderr, "giving up after the failed requirement\n");               \
			exit(check_done());                                                        \
		}                                                                                  \
	} while (0)

static inline int check_contains(const char *s, const char *sub)
{
	return s && sub && strstr(s, sub) != NULL;
}

#endif
