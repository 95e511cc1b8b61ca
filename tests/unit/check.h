/* A minimal check harness for the unit tests: every check counts, failures
 * print where and why, and the last line is "N passed, N failed". */
#ifndef RH_TEST_CHECK_H
#define RH_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

static int t_passed, t_failed;

#define CHECK(cond) CHECKF(cond, "%s", "")

#define CHECKF(cond, ...)                                                                          \
	do {                                                                                       \
		if (cond) {                                                                        \
			t_passed++;                                                                \
		} else {                                                                           \
			t_failed++;                                                                \
			fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);   \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
		}                                                                                  \
	} while (0)

static inline int t_contains(const char *s, const char *sub)
{
	return s && sub && strstr(s, sub) != NULL;
}

static inline int t_finish(void)
{
	printf("%d passed, %d failed\n", t_passed, t_failed);
	return t_failed != 0;
}

#endif
