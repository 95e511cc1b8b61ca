/* Checks counted for the closing "N passed, N failed" line. */
#ifndef RH_TEST_SWAP_CHECK_H
#define RH_TEST_SWAP_CHECK_H

#include <stdio.h>

static int passed, failed;
#define CHECK(c, ...)                                                                              \
	do {                                                                                       \
		if (c) {                                                                           \
			passed++;                                                                  \
		} else {                                                                           \
			failed++;                                                                  \
			printf("not ok: " __VA_ARGS__);                                            \
			printf("\n");                                                              \
		}                                                                                  \
	} while (0)

#endif
